// SPDX-License-Identifier: Apache-2.0
// weir_decode_bench: weir's file source reader alone (format/format.hpp's
// make_file_source_reader: chunked reads, record splitting, the decoder,
// batch building), no job around it, over a file of Nexmark bids as
// `bench/run ingest` caches them (~/.cache/weir-bench/bids-N.jsonl|csv).
//
//   weir_decode_bench jsonl|csv FILE [--read auction,price,date_time]
//                     [--rounds 3] [--batch 8192] [--per-line] [--window BYTES]
//
// --read names the fields some operator reads (projection push-down,
// decoder_options::read_fields; date_time, the event time, is always read);
// without it every field is decoded. --per-line decodes record by record
// (file_source_options::batch_decode = false: next_record + decode, jsonl's
// simdjson On-Demand per line) instead of whole chunks (jsonl: simdjson
// iterate_many); --window sets jsonl's iterate_many window
// (decoder_options::batch_window). Each round reads the whole file; prints
// one JSON line per round and a last one with the best:
// {"records":N,"cpu_seconds":S,"records_per_cpu_second":R,
//  "allocations_per_record":A,"checksum":C}. Allocations are counted by a
// replacement of the global operator new, over the polls only.
#include "weir/format/format.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<std::uint64_t> allocations{0};
} // namespace

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc{};
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  using namespace weir;
  if (argc < 3) {
    std::fprintf(stderr, "usage: weir_decode_bench jsonl|csv FILE [--read a,b] [--rounds N] "
                         "[--batch ROWS]\n");
    return 2;
  }
  const std::string fmt = argv[1];
  format::file_source_options o;
  o.path = argv[2];
  int rounds = 3;
  std::size_t batch = 8192;
  std::vector<std::string> read;
  bool per_line = false;
  std::size_t window = 0;
  for (int i = 3; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--per-line") {
      per_line = true;
      continue;
    }
    if (i + 1 >= argc)
      break;
    if (k == "--window")
      window = static_cast<std::size_t>(std::atoll(argv[i + 1]));
    else if (k == "--read")
      read = split_list(argv[i + 1]);
    else if (k == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (k == "--batch")
      batch = static_cast<std::size_t>(std::atoll(argv[i + 1]));
    ++i;
  }
  o.batch_decode = !per_line;
  o.decoder.batch_window = window;
  o.decoder.kind = fmt == "csv" ? format::format_kind::csv : format::format_kind::jsonl;
  o.decoder.schema = make_schema({{"auction", type_id::int64},
                                  {"bidder", type_id::int64},
                                  {"price", type_id::int64},
                                  {"channel", type_id::string},
                                  {"url", type_id::string},
                                  {"date_time", type_id::timestamp},
                                  {"extra", type_id::string}});
  o.event_time_field = "date_time";
  if (!read.empty()) {
    o.decoder.read_fields.assign(o.decoder.schema->size(), false);
    for (const auto& f : read)
      if (auto i = o.decoder.schema->index_of(f))
        o.decoder.read_fields[*i] = true;
  }
  double best = 1e300;
  std::uint64_t best_records = 0;
  double best_allocs = 0;
  for (int r = 0; r < rounds; ++r) {
    std::uint64_t bad = 0;
    auto rd = format::make_file_source_reader(o, [&](const bad_record&) { ++bad; });
    if (!rd) {
      std::fprintf(stderr, "%s\n", rd.error().message.c_str());
      return 1;
    }
    std::uint64_t records = 0, checksum = 0;
    const std::uint64_t a0 = allocations.load();
    const double t0 = cpu_now();
    while (auto b = (*rd)->poll_next(batch)) {
      records += b->num_rows;
      for (const auto& c : b->columns) {
        if (!c.has_values() || c.size() == 0)
          continue;
        if (c.type == type_id::string)
          checksum += c.chars.size();
        else if (!c.ints.empty())
          checksum += static_cast<std::uint64_t>(c.ints[c.size() - 1]);
      }
    }
    const double cpu = cpu_now() - t0;
    const double allocs =
      records ? static_cast<double>(allocations.load() - a0) / static_cast<double>(records) : 0;
    std::printf("{\"round\":%d,\"records\":%llu,\"bad\":%llu,\"cpu_seconds\":%.3f,"
                "\"records_per_cpu_second\":%.0f,\"allocations_per_record\":%.4f,"
                "\"checksum\":%llu}\n",
                r, static_cast<unsigned long long>(records), static_cast<unsigned long long>(bad),
                cpu, static_cast<double>(records) / cpu, allocs,
                static_cast<unsigned long long>(checksum));
    if (cpu < best) {
      best = cpu;
      best_records = records;
      best_allocs = allocs;
    }
  }
  std::printf("{\"best\":true,\"format\":\"%s\",\"path\":\"%s\",\"records\":%llu,\"cpu_seconds\":%.3f,"
              "\"records_per_cpu_second\":%.0f,\"allocations_per_record\":%.4f}\n",
              fmt.c_str(), per_line ? "per-line" : "batch",
              static_cast<unsigned long long>(best_records), best,
              static_cast<double>(best_records) / best, best_allocs);
  return 0;
}
