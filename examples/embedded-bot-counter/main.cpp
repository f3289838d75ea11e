// SPDX-License-Identifier: Apache-2.0
// Embedding weir: a C++ program builds a job through include/weir (the same
// API the TOML loader uses), with a lambda filter and a keyed running count
// (Flink's ClickCounter shape), and runs it in-process.
//
//   embedded_bot_counter <apache access log> <output.jsonl>
//
// Output: one row per crawler request, {"agent", "requests"}, where requests
// is that crawler's running count; the last row per agent is its total.
#include "weir/api/job.hpp"
#include "weir/file/sink.hpp"
#include "weir/file/source.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <access log> <output.jsonl>\n", argv[0]);
    return 2;
  }
  weir::job_options options;
  options.name = "embedded-bot-counter";
  options.parallelism = 2;
  options.on_bad_record = weir::bad_record_policy::skip;
  options.status_interval = std::chrono::milliseconds{0};
  weir::job job{options};

  weir::file::source source;
  source.path = argv[1];
  source.decoder.kind = weir::format::format_kind::apache_combined;
  source.event_time_field = "ts";
  source.watermark.max_out_of_orderness = std::chrono::seconds{60};
  auto logs = job.from(source, {"logs"});
  if (!logs) {
    std::fprintf(stderr, "error: %s\n", logs.error().message.c_str());
    return 2;
  }

  // A lambda filter: requests whose user agent says it is a bot.
  auto bots = logs->filter(
    [](const weir::row_view& row) {
      auto agent = row.get_string("agent");
      if (!agent)
        return false;
      std::string lower{*agent};
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return lower.find("bot") != std::string::npos;
    },
    {"bots"});

  auto counts = bots.key_by({"agent"}).value().count("requests", {"requests_per_bot"});
  if (!counts) {
    std::fprintf(stderr, "error: %s\n", counts.error().message.c_str());
    return 2;
  }
  if (auto sunk = counts->sink_to(weir::file::sink{argv[2], weir::format::format_kind::jsonl});
      !sunk) {
    std::fprintf(stderr, "error: %s\n", sunk.error().message.c_str());
    return 2;
  }

  auto result = job.execute();
  if (!result.ok) {
    std::fprintf(stderr, "job failed: %s\n", result.error.c_str());
    return 1;
  }
  std::printf("read %llu records (%llu bad), wrote %llu running counts in %lld ms\n",
              static_cast<unsigned long long>(result.records_read),
              static_cast<unsigned long long>(result.bad_records),
              static_cast<unsigned long long>(result.records_written),
              static_cast<long long>(result.duration.count()));
  return 0;
}
