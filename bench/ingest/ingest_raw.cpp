// SPDX-License-Identifier: Apache-2.0
// weir_ingest_raw: the raw parse loop of the ingest benchmark (bench/README.md,
// `bench/run ingest`), no framework: the limit a file source is measured against.
//
//   weir_ingest_raw jsonl|csv FILE --fields auction,price,date_time
//
// Reads FILE in 16 MiB chunks (read(2), cut at the last newline) and decodes
// the named fields of every record, in file order, one thread (for jsonl,
// a simdjson built with threads runs the next window's stage 1 on a second):
//   jsonl  simdjson on-demand, iterate_many over each chunk; an int64 field
//          with get_int64(), a string field with get_string() (unescaped)
//   csv    the header line names the columns; each line is scanned with
//          memchr for the delimiter (a quoted field to its closing quote),
//          int64 fields parsed with std::from_chars, strings as views
// and folds them into a checksum so that nothing is optimised away. Prints
// {"records":N,"bytes":B,"seconds":S,"checksum":C} (S includes the reads).
#include <simdjson.h>

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t chunk_size = std::size_t{16} << 20;

// The fields a query reads, with their types (the Nexmark bid schema).
struct field {
  std::string name;
  bool is_string = false;
};

struct totals {
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;
};

int usage() {
  std::fprintf(stderr, "usage: weir_ingest_raw jsonl|csv FILE --fields a,b,c\n");
  return 2;
}

/// Reads the file chunk by chunk; calls f(data, size) with whole lines (the
/// buffer has simdjson's padding after them).
template <class F>
bool for_each_chunk(const char* path, totals& t, F&& f) {
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) {
    std::perror(path);
    return false;
  }
  std::vector<char> buf(chunk_size + simdjson::SIMDJSON_PADDING);
  std::size_t have = 0;
  for (;;) {
    if (have == chunk_size) {
      // One line longer than a chunk: grow.
      buf.resize(buf.size() * 2);
    }
    const std::size_t room = buf.size() - simdjson::SIMDJSON_PADDING - have;
    const ssize_t n = ::read(fd, buf.data() + have, room);
    if (n < 0) {
      std::perror(path);
      ::close(fd);
      return false;
    }
    t.bytes += static_cast<std::uint64_t>(n);
    have += static_cast<std::size_t>(n);
    if (n == 0) {
      if (have > 0) {
        std::memset(buf.data() + have, 0, simdjson::SIMDJSON_PADDING);
        f(buf.data(), have);
      }
      break;
    }
    const void* nl = ::memrchr(buf.data(), '\n', have);
    if (nl == nullptr)
      continue;
    const std::size_t whole = static_cast<const char*>(nl) - buf.data() + 1;
    f(buf.data(), whole);
    std::memmove(buf.data(), buf.data() + whole, have - whole);
    have -= whole;
  }
  ::close(fd);
  return true;
}

bool run_jsonl(const char* path, const std::vector<field>& fields, totals& t) {
  simdjson::ondemand::parser parser;
  bool ok = true;
  const bool read = for_each_chunk(path, t, [&](char* data, std::size_t size) {
    // iterate_many needs padding after size; the bytes after it are the next
    // lines (or zeros), readable, which is all the padding is for.
    simdjson::ondemand::document_stream docs;
    if (parser.iterate_many(data, size, std::size_t{1} << 20).get(docs)) {
      ok = false;
      return;
    }
    for (auto doc : docs) {
      simdjson::ondemand::object obj;
      if (doc.get_object().get(obj)) {
        ok = false;
        return;
      }
      for (const auto& fd : fields) {
        if (fd.is_string) {
          std::string_view s;
          if (obj[fd.name].get_string().get(s)) {
            ok = false;
            return;
          }
          t.checksum += s.size();
        } else {
          std::int64_t v = 0;
          if (obj[fd.name].get_int64().get(v)) {
            ok = false;
            return;
          }
          t.checksum += static_cast<std::uint64_t>(v);
        }
      }
      ++t.records;
    }
  });
  return read && ok;
}

bool run_csv(const char* path, const std::vector<field>& fields, totals& t) {
  // column index -> 0 not read, 1 int64, 2 string; known after the header.
  std::vector<int> wanted;
  bool header = true;
  bool ok = true;
  const bool read = for_each_chunk(path, t, [&](char* data, std::size_t size) {
    const char* p = data;
    const char* const end = data + size;
    while (p < end && ok) {
      const char* eol = static_cast<const char*>(std::memchr(p, '\n', end - p));
      if (eol == nullptr)
        eol = end;
      const char* line_end = (eol > p && eol[-1] == '\r') ? eol - 1 : eol;
      if (header) {
        header = false;
        std::string_view h(p, line_end - p);
        std::size_t found = 0;
        while (true) {
          const auto comma = h.find(',');
          const std::string_view name = h.substr(0, comma);
          int kind = 0;
          for (const auto& fd : fields)
            if (fd.name == name) {
              kind = fd.is_string ? 2 : 1;
              ++found;
            }
          wanted.push_back(kind);
          if (comma == std::string_view::npos)
            break;
          h.remove_prefix(comma + 1);
        }
        if (found != fields.size()) {
          std::fprintf(stderr, "weir_ingest_raw: the header lacks a field\n");
          ok = false;
        }
        p = eol + 1;
        continue;
      }
      if (line_end == p) { // an empty line
        p = eol + 1;
        continue;
      }
      const char* f = p;
      for (std::size_t col = 0; col < wanted.size(); ++col) {
        const char* fend;
        std::string_view value;
        if (f < line_end && *f == '"') {
          // A quoted field: to the closing quote ("" is an escaped quote).
          const char* q = f + 1;
          for (;;) {
            q = static_cast<const char*>(std::memchr(q, '"', line_end - q));
            if (q == nullptr || q + 1 >= line_end || q[1] != '"')
              break;
            q += 2;
          }
          if (q == nullptr) {
            ok = false;
            break;
          }
          value = std::string_view(f + 1, q - f - 1);
          fend = q + 1;
        } else {
          fend = static_cast<const char*>(std::memchr(f, ',', line_end - f));
          if (fend == nullptr)
            fend = line_end;
          value = std::string_view(f, fend - f);
        }
        if (wanted[col] == 1) {
          std::int64_t v = 0;
          const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
          if (ec != std::errc{} || ptr != value.data() + value.size()) {
            ok = false;
            break;
          }
          t.checksum += static_cast<std::uint64_t>(v);
        } else if (wanted[col] == 2) {
          t.checksum += value.size();
        }
        f = fend + 1;
      }
      ++t.records;
      p = eol + 1;
    }
  });
  return read && ok;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5 || std::strcmp(argv[3], "--fields") != 0)
    return usage();
  const std::string_view format = argv[1];
  std::vector<field> fields;
  std::string_view list = argv[4];
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string name{list.substr(0, comma)};
    fields.push_back({name, name == "channel" || name == "url" || name == "extra"});
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
  totals t;
  const auto start = std::chrono::steady_clock::now();
  bool ok = false;
  if (format == "jsonl")
    ok = run_jsonl(argv[2], fields, t);
  else if (format == "csv")
    ok = run_csv(argv[2], fields, t);
  else
    return usage();
  const double seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ok) {
    std::fprintf(stderr, "weir_ingest_raw: %s: a record could not be read\n", argv[2]);
    return 1;
  }
  std::printf("{\"records\":%llu,\"bytes\":%llu,\"seconds\":%.6f,\"checksum\":%llu}\n",
              static_cast<unsigned long long>(t.records),
              static_cast<unsigned long long>(t.bytes), seconds,
              static_cast<unsigned long long>(t.checksum));
  return 0;
}
