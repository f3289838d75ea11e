// SPDX-License-Identifier: Apache-2.0
// Avro Object Container Files (the specification's "Object Container Files"):
// the header (magic, metadata, sync marker), then blocks of datums, each
// block compressed by the file's codec and followed by the sync marker.
#include "avro.hpp"

#include <lzma.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace weir::format::avro {

namespace {

error invalid(std::string msg) { return make_error(errc::invalid_argument, std::move(msg)); }

constexpr std::size_t sync_size = 16;
/// A block above this size (compressed or not) is taken as corrupt.
constexpr std::uint64_t max_block_bytes = std::uint64_t{1} << 30;

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

// A zig-zag varint from `f`; false at end of file or on a varint longer
// than 10 bytes.
bool read_long(std::FILE* f, std::int64_t& out) {
  std::uint64_t v = 0;
  for (int shift = 0, i = 0; i < 10; ++i, shift += 7) {
    const int b = std::fgetc(f);
    if (b == EOF)
      return false;
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      out = static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
      return true;
    }
  }
  return false;
}

bool read_exact(std::FILE* f, std::string& out, std::uint64_t n) {
  out.resize(static_cast<std::size_t>(n));
  return n == 0 || std::fread(out.data(), 1, out.size(), f) == out.size();
}

std::uint64_t file_size(std::FILE* f) {
  const long here = std::ftell(f);
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fseek(f, here, SEEK_SET);
  return size < 0 ? 0 : static_cast<std::uint64_t>(size);
}

expected<container_header> read_header(std::FILE* f, const std::string& path) {
  const auto not_avro = [&](std::string why) {
    return invalid(path + " is not an Avro container file: " + why);
  };
  char magic[4];
  if (std::fread(magic, 1, 4, f) != 4 || std::memcmp(magic, "Obj\x01", 4) != 0)
    return not_avro("no 'Obj\\x01' magic");
  const auto size = file_size(f);
  container_header h;
  std::string schema_json;
  h.codec = "null";
  for (;;) {
    std::int64_t count = 0;
    if (!read_long(f, count))
      return not_avro("truncated metadata");
    if (count == 0)
      break;
    if (count < 0) {
      std::int64_t bytes = 0;
      if (count == INT64_MIN || !read_long(f, bytes))
        return not_avro("truncated metadata");
      count = -count;
    }
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t klen = 0, vlen = 0;
      std::string key, value;
      if (!read_long(f, klen) || klen < 0 || static_cast<std::uint64_t>(klen) > size
          || !read_exact(f, key, static_cast<std::uint64_t>(klen)) || !read_long(f, vlen)
          || vlen < 0 || static_cast<std::uint64_t>(vlen) > size
          || !read_exact(f, value, static_cast<std::uint64_t>(vlen)))
        return not_avro("truncated metadata");
      if (key == "avro.schema")
        schema_json = std::move(value);
      else if (key == "avro.codec")
        h.codec = std::move(value);
    }
  }
  if (!read_exact(f, h.sync, sync_size))
    return not_avro("no sync marker");
  if (schema_json.empty())
    return not_avro("no avro.schema in its metadata");
  if (h.codec != "null" && h.codec != "deflate" && h.codec != "xz")
    return invalid(path + ": Avro codec '" + h.codec
                   + "' is not supported (null, deflate and xz are)");
  auto s = parse_schema(schema_json);
  if (!s)
    return invalid(path + ": " + s.error().message);
  h.schema = std::move(*s);
  h.data_offset = static_cast<std::uint64_t>(std::ftell(f));
  return h;
}

// Decompresses one block; false with `why` on a codec error.
bool inflate_block(const std::string& codec, const std::string& in, std::string& out,
                   std::string& why) {
  if (codec == "null") {
    out = in;
    return true;
  }
  out.clear();
  char buf[1 << 16];
  if (codec == "deflate") {
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) {
      why = "zlib cannot start";
      return false;
    }
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) {
        why = std::string{"deflate: "} + (z.msg ? z.msg : "truncated data");
        inflateEnd(&z);
        return false;
      }
      out.append(buf, sizeof buf - z.avail_out);
      if (out.size() > max_block_bytes) {
        why = "deflate: the block inflates beyond 1 GiB";
        inflateEnd(&z);
        return false;
      }
      if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
        why = "deflate: truncated data";
        inflateEnd(&z);
        return false;
      }
    }
    inflateEnd(&z);
    return true;
  }
  // xz
  lzma_stream z = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&z, max_block_bytes, 0) != LZMA_OK) {
    why = "xz: liblzma cannot start";
    return false;
  }
  z.next_in = reinterpret_cast<const std::uint8_t*>(in.data());
  z.avail_in = in.size();
  lzma_ret rc = LZMA_OK;
  while (rc != LZMA_STREAM_END) {
    z.next_out = reinterpret_cast<std::uint8_t*>(buf);
    z.avail_out = sizeof buf;
    rc = lzma_code(&z, LZMA_FINISH);
    if (rc != LZMA_OK && rc != LZMA_STREAM_END) {
      why = "xz: corrupt or truncated data (liblzma code " + std::to_string(rc) + ")";
      lzma_end(&z);
      return false;
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > max_block_bytes) {
      why = "xz: the block inflates beyond 1 GiB";
      lzma_end(&z);
      return false;
    }
  }
  lzma_end(&z);
  return true;
}

class container_reader final : public source_reader {
public:
  container_reader(file_source_options opts, file_ptr f, container_header h, resolution plan,
                   internal::common_options co, bad_record_handler on_bad)
    : opts_(std::move(opts)), f_(std::move(f)), header_(std::move(h)), plan_(std::move(plan)),
      co_(std::move(co)), on_bad_(std::move(on_bad)), builder_(opts_.decoder.schema),
      size_(file_size(f_.get())) {}

  const schema_ptr& output_schema() const override { return opts_.decoder.schema; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (done_)
      return nullptr;
    std::size_t consumed = 0;
    std::string reason;
    while (builder_.rows() < max_rows && consumed < max_rows + 4096) {
      if (remaining_ == 0) {
        if (!next_block(true)) {
          done_ = true;
          break;
        }
        continue;
      }
      reason.clear();
      std::size_t used = 0;
      const std::string_view rest = std::string_view{block_}.substr(pos_);
      const auto st = decode_datum(plan_, rest, co_, builder_, reason, used, true);
      ++records_;
      --remaining_;
      ++consumed;
      if (st == record_decoder::status::ok) {
        pos_ += used;
        continue;
      }
      // A datum that does not decode leaves the rest of its block unframed.
      const auto skipped = remaining_;
      if (skipped > 0)
        reason += " (the block's " + std::to_string(skipped) + " records after it skipped)";
      records_ += skipped;
      remaining_ = 0;
      // 0-based: the bad datum is the record before the skipped ones.
      report(records_ - skipped - 1, reason, rest.substr(0, std::max<std::size_t>(used, 1)));
    }
    if (done_ && builder_.rows() == 0)
      return nullptr;
    return builder_.finish();
  }

  std::vector<source_position> positions() const override {
    return {source_position{opts_.path, position_unit::event_number, records_, done_}};
  }

  void seek(const std::vector<source_position>& to) override {
    const auto target = select_position(to, opts_.path, position_unit::event_number);
    std::string reason;
    while (records_ < target) {
      if (remaining_ == 0) {
        if (!next_block(false))
          throw std::runtime_error("cannot resume " + opts_.path + " at record "
                                   + std::to_string(target) + ": it has "
                                   + std::to_string(records_));
        continue;
      }
      if (target - records_ >= remaining_) {
        records_ += remaining_;
        remaining_ = 0;
        continue;
      }
      batch_builder scratch{opts_.decoder.schema};
      std::size_t used = 0;
      reason.clear();
      const auto st = decode_datum(plan_, std::string_view{block_}.substr(pos_), co_, scratch,
                                   reason, used, true);
      ++records_;
      --remaining_;
      if (st == record_decoder::status::ok) {
        pos_ += used;
      } else {
        records_ += remaining_;
        remaining_ = 0;
      }
    }
  }

private:
  // Reads the next block into block_; false at the end of the file. A
  // corrupt block is reported (when `report_bad`) and skipped to the next
  // sync marker.
  bool next_block(bool report_bad) {
    std::FILE* f = f_.get();
    for (;;) {
      block_offset_ = static_cast<std::uint64_t>(std::ftell(f));
      if (block_offset_ >= size_)
        return false;
      std::int64_t count = 0, bytes = 0;
      std::string why;
      std::string raw, sync;
      if (!read_long(f, count) || !read_long(f, bytes))
        why = "truncated block header";
      else if (count < 0 || bytes < 0)
        why = "negative block count or size";
      else if (static_cast<std::uint64_t>(bytes) > size_ - block_offset_
               || static_cast<std::uint64_t>(bytes) > max_block_bytes)
        why = "block size " + std::to_string(bytes) + " beyond the file's end";
      else if (!read_exact(f, raw, static_cast<std::uint64_t>(bytes))
               || !read_exact(f, sync, sync_size))
        why = "truncated block";
      else if (sync != header_.sync)
        why = "sync marker mismatch after the block";
      else
        (void) inflate_block(header_.codec, raw, block_, why); // sets why when it fails
      // A forged count of datums that take no bytes (a record of no
      // fields) would yield rows forever.
      if (why.empty() && static_cast<std::uint64_t>(count) > block_.size()
          && count > (std::int64_t{1} << 20))
        why = "block count " + std::to_string(count) + " exceeds its "
              + std::to_string(block_.size()) + " bytes";
      if (why.empty()) {
        remaining_ = static_cast<std::uint64_t>(count);
        pos_ = 0;
        return true;
      }
      if (report_bad)
        report(records_, "corrupt Avro block at byte " + std::to_string(block_offset_) + ": "
                           + why + "; resuming at the next sync marker",
               {});
      if (!resync())
        return false;
    }
  }

  // Moves just past the first sync marker after the corrupt block's start;
  // false when there is none.
  bool resync() {
    std::FILE* f = f_.get();
    std::fseek(f, static_cast<long>(block_offset_ + 1), SEEK_SET);
    std::string window;
    int c = 0;
    while ((c = std::fgetc(f)) != EOF) {
      window += static_cast<char>(c);
      if (window.size() > sync_size)
        window.erase(0, 1);
      if (window == header_.sync)
        return true;
    }
    return false;
  }

  void report(std::uint64_t record, const std::string& reason, std::string_view raw) {
    if (!on_bad_)
      return;
    bad_record r;
    r.source = bad_record_source::file;
    r.origin = opts_.path;
    r.line = record + 1;
    r.offset = block_offset_;
    r.reason = reason;
    r.raw = internal::hex_prefix(raw);
    on_bad_(r); // may throw (on_bad_record = "fail")
  }

  file_source_options opts_;
  file_ptr f_;
  container_header header_;
  resolution plan_;
  internal::common_options co_;
  bad_record_handler on_bad_;
  batch_builder builder_;
  std::uint64_t size_ = 0;
  std::string block_;            ///< the current block, decompressed
  std::size_t pos_ = 0;          ///< next datum's offset in block_
  std::uint64_t remaining_ = 0;  ///< datums left in block_
  std::uint64_t block_offset_ = 0;
  std::uint64_t records_ = 0;    ///< records consumed (good and bad)
  bool done_ = false;
};

} // namespace

expected<container_header> read_container_header(const std::string& path) {
  file_ptr f{std::fopen(path.c_str(), "rb")};
  if (!f)
    return make_error(errc::io_error, "cannot open " + path + ": " + std::strerror(errno));
  return read_header(f.get(), path);
}

expected<source_reader_ptr> make_container_reader(const file_source_options& opts,
                                                  bad_record_handler on_bad) {
  file_source_options o = opts;
  if (!o.event_time_field.empty())
    o.decoder.event_time_field = o.event_time_field;
  if (!o.decoder.schema)
    return invalid("format avro needs a schema (the fields to read)");
  auto co = internal::make_common_options(o.decoder, o.decoder.schema);
  if (!co)
    return co.error();
  file_ptr f{std::fopen(o.path.c_str(), "rb")};
  if (!f)
    return make_error(errc::io_error, "cannot open " + o.path + ": " + std::strerror(errno));
  auto h = read_header(f.get(), o.path);
  if (!h)
    return h.error();
  auto plan = resolve(h->schema, *o.decoder.schema, co->read);
  if (!plan)
    return invalid(o.path + ": " + plan.error().message);
  std::fseek(f.get(), static_cast<long>(h->data_offset), SEEK_SET);
  return source_reader_ptr{std::make_unique<container_reader>(
    std::move(o), std::move(f), std::move(*h), std::move(*plan), std::move(*co),
    std::move(on_bad))};
}

} // namespace weir::format::avro
