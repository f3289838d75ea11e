// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/format/format.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace doctest {
template <>
struct StringMaker<weir::value> {
  static String convert(const weir::value& v) {
    std::string out;
    weir::format::append_json(v, weir::type_id::null_type, out);
    return out.c_str();
  }
};
template <>
struct StringMaker<std::vector<weir::value>> {
  static String convert(const std::vector<weir::value>& row) {
    std::string out = "[";
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0)
        out += ", ";
      weir::format::append_json(row[i], weir::type_id::null_type, out);
    }
    out += "]";
    return out.c_str();
  }
};
} // namespace doctest

namespace weir::format::test {

/// Result of decoding a whole text with one decoder.
struct decoded {
  std::vector<std::vector<value>> rows;
  std::vector<event_time> timestamps;
  std::vector<std::string> bad;   ///< reasons, in order
  std::size_t skipped = 0;
  std::vector<event_time> controls; ///< replay-clock advances, in order
};

/// Splits `text` with `next_record` (as the file reader does, stripping
/// "\n" / "\r\n") and decodes every record.
inline decoded decode_text(record_decoder& dec, std::string_view text) {
  decoded out;
  batch_builder b{dec.output_schema()};
  std::string reason;
  while (!text.empty()) {
    std::size_t lines = 0;
    std::size_t n = dec.next_record(text, true, lines);
    REQUIRE(n > 0);
    std::string_view rec = text.substr(0, n);
    text.remove_prefix(n);
    if (!rec.empty() && rec.back() == '\n')
      rec.remove_suffix(1);
    if (!rec.empty() && rec.back() == '\r')
      rec.remove_suffix(1);
    reason.clear();
    switch (dec.decode(rec, b, reason)) {
      case record_decoder::status::ok:
        break;
      case record_decoder::status::skipped:
        ++out.skipped;
        break;
      case record_decoder::status::bad:
        out.bad.push_back(reason);
        break;
      case record_decoder::status::control:
        out.controls.push_back(dec.control_time());
        break;
    }
  }
  auto batch = b.finish();
  for (std::size_t r = 0; r < batch->num_rows; ++r) {
    std::vector<value> row;
    for (const auto& c : batch->columns)
      row.push_back(c.get(r));
    out.rows.push_back(std::move(row));
  }
  out.timestamps.assign(batch->timestamps.begin(), batch->timestamps.end());
  return out;
}

inline std::unique_ptr<record_decoder> decoder(decoder_options opts) {
  auto d = make_decoder(opts);
  REQUIRE(d);
  return std::move(*d);
}

/// A scratch directory under the system temp dir, removed on destruction.
class temp_dir {
public:
  explicit temp_dir(std::string_view name) {
    path_ = std::filesystem::temp_directory_path()
            / ("weir-format-test-" + std::string{name} + "-"
               + std::to_string(static_cast<unsigned long>(::getpid())));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  std::string file(std::string_view name, std::string_view content) const {
    auto p = path_ / std::string{name};
    std::ofstream f{p, std::ios::binary};
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    return p.string();
  }
  std::filesystem::path path() const { return path_; }

private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream f{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{f}, std::istreambuf_iterator<char>{}};
}

inline value S(std::string s) { return value{std::move(s)}; }
inline value I(std::int64_t i) { return value{i}; }
inline value F(double d) { return value{d}; }
inline value B(bool b) { return value{b}; }
inline const value N{};

} // namespace weir::format::test
