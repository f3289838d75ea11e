// SPDX-License-Identifier: Apache-2.0
// Flink's ClickCounter on weir: a keyed process function keeps a running
// count of requests per client in value state and emits {client, clicks}
// for every request. The count lives in the subtask's keyed state backend,
// so it is scoped to the current key, partitioned by key group and part of
// every checkpoint.
//
//   click_counter <apache access log> <output.jsonl> [parallelism]
//
// The last row of each client carries its total number of requests.
#include "weir/api/job.hpp"
#include "weir/file/sink.hpp"
#include "weir/file/source.hpp"
#include "weir/state/keyed_process_function.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

/// Counts the clicks of the current client (the key) in value state.
class click_counter final : public weir::state::keyed_process_function {
public:
  void open(context& ctx) override {
    // Handles are registered once; every call then reads and writes the
    // entry of the current key.
    auto clicks = ctx.state().get_value_state<std::int64_t>("clicks");
    if (!clicks)
      throw std::runtime_error(clicks.error().message);
    clicks_ = *clicks;
  }

  void process_element(const weir::row_view& row, context& ctx,
                       weir::state::row_collector& out) override {
    (void) ctx;
    auto n = clicks_.value_or(0) + 1;
    clicks_.update(n);
    out.emit({row.get("client"), weir::value{n}});
  }

private:
  weir::state::value_state<std::int64_t> clicks_;
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s <access log> <output.jsonl> [parallelism]\n", argv[0]);
    return 2;
  }
  weir::job_options options;
  options.name = "click-counter";
  options.parallelism = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 2;
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

  auto by_client = logs->key_by({"client"});
  if (!by_client) {
    std::fprintf(stderr, "error: %s\n", by_client.error().message.c_str());
    return 2;
  }
  auto output = weir::make_schema({{"client", weir::type_id::string},
                                   {"clicks", weir::type_id::int64}});
  auto clicks = by_client->process("clicks", output,
                                   [] { return std::make_unique<click_counter>(); });
  if (!clicks) {
    std::fprintf(stderr, "error: %s\n", clicks.error().message.c_str());
    return 2;
  }
  if (auto sunk = clicks->sink_to(weir::file::sink{argv[2], weir::format::format_kind::jsonl});
      !sunk) {
    std::fprintf(stderr, "error: %s\n", sunk.error().message.c_str());
    return 2;
  }

  auto result = job.execute();
  if (!result.ok) {
    std::fprintf(stderr, "job failed: %s\n", result.error.c_str());
    return 1;
  }
  std::printf("read %llu records (%llu bad), wrote %llu click counts in %lld ms\n",
              static_cast<unsigned long long>(result.records_read),
              static_cast<unsigned long long>(result.bad_records),
              static_cast<unsigned long long>(result.records_written),
              static_cast<long long>(result.duration.count()));
  return 0;
}
