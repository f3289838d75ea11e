// SPDX-License-Identifier: Apache-2.0
#include "sink_stream_routes.hpp"

#include "http_util.hpp"
#include "json_writer.hpp"
#include "weir/format/format.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace weir::server::internal {

namespace {

/// One live-results (SSE) client: a bounded queue of batches the sink's
/// thread fills and the client's HTTP thread drains.
struct stream_client {
  struct item {
    record_batch_ptr batch;
    std::size_t subtask = 0;
    std::uint64_t first_row = 0;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<item> queue;
  std::size_t queued_rows = 0;
  std::size_t max_rows = 0;
  std::uint64_t skipped = 0; ///< rows skipped since the last notice

  /// On the sink's thread: never blocks beyond the lock.
  void offer(const record_batch_ptr& b, std::size_t subtask, std::uint64_t first_row) {
    {
      std::lock_guard lock{mutex};
      if (queued_rows + b->num_rows > max_rows) {
        skipped += b->num_rows;
      } else {
        queued_rows += b->num_rows;
        queue.push_back(item{b, subtask, first_row});
      }
    }
    cv.notify_one();
  }
};

} // namespace

sink_stream_routes::sink_stream_routes(server_context& ctx) : ctx_(ctx) {
  ctx_.routes.get(R"(/jobs/([0-9a-f]+)/sinks/([^/]+)/stream)",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    stream(req, res);
                  });
}

void sink_stream_routes::stream(const httplib::Request& req, httplib::Response& res) {
  auto j = ctx_.jobs.find(req.matches[1]);
  if (!j) {
    json_error(res, 404, "no job " + std::string{req.matches[1]});
    return;
  }
  const std::string sink = req.matches[2];
  auto schema = j->run->sink_schema(sink);
  if (!schema) {
    json_error(res, 404, "job " + j->id + " has no sink '" + sink + "'");
    return;
  }
  auto client = std::make_shared<stream_client>();
  client->max_rows = ctx_.opts.stream_queue_rows;
  auto sub = j->run->subscribe_sink(
    sink, [client](const record_batch_ptr& b, std::size_t subtask, std::uint64_t first) {
      client->offer(b, subtask, first);
    });
  if (!sub) {
    json_error(res, 404, "job " + j->id + " has no sink '" + sink + "'");
    return;
  }
  auto encoder = std::shared_ptr<format::record_encoder>(
    format::make_encoder(format::format_kind::jsonl));
  auto opened = std::make_shared<bool>(false);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
    "text/event-stream",
    [this, j, client, encoder, opened, sink](std::size_t, httplib::DataSink& out) {
      std::string text;
      if (!*opened) {
        *opened = true;
        json_writer w;
        w.begin_object().field("job", j->id).field("sink", sink).end_object();
        text = "event: subscribed\ndata: " + w.take() + "\n\n";
        return out.write(text.data(), text.size());
      }
      // Terminal before draining: every row the sink got is queued by now.
      const bool over = is_terminal(j->run->state()) || ctx_.stopping.load();
      std::deque<stream_client::item> items;
      std::uint64_t skipped = 0;
      {
        std::unique_lock lock{client->mutex};
        if (!over)
          client->cv.wait_for(lock, std::chrono::milliseconds{500}, [&] {
            return !client->queue.empty() || client->skipped > 0 || ctx_.stopping.load();
          });
        items.swap(client->queue);
        client->queued_rows = 0;
        skipped = client->skipped;
        client->skipped = 0;
      }
      if (skipped > 0)
        text += "event: skipped\ndata: {\"skipped_rows\":" + std::to_string(skipped)
                + "}\n\n";
      std::string line;
      for (const auto& it : items) {
        for (std::size_t r = 0; r < it.batch->num_rows; ++r) {
          line.clear();
          encoder->encode(*it.batch, r, line);
          if (!line.empty() && line.back() == '\n')
            line.pop_back();
          text += "id: ";
          text += std::to_string(it.subtask);
          text += ':';
          text += std::to_string(it.first_row + r);
          text += "\ndata: ";
          text += line;
          text += "\n\n";
        }
      }
      if (text.empty()) {
        if (over) {
          json_writer w;
          w.begin_object().field("state", to_string(j->run->state())).end_object();
          text = "event: end\ndata: " + w.take() + "\n\n";
          out.write(text.data(), text.size());
          out.done();
          return true;
        }
        text = ": keep-alive\n\n"; // also finds clients that have gone
      }
      return out.write(text.data(), text.size());
    },
    [j, sink, id = *sub](bool) { j->run->unsubscribe_sink(sink, id); });
}

} // namespace weir::server::internal
