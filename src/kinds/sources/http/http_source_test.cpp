// SPDX-License-Identifier: Apache-2.0
// The http source's handle without a server: whole requests, the queue
// bound, idempotency keys across a restore, acknowledgement at checkpoints.
// Through the binary and a real server: tests/integration/http_ingest_tests.py.
#include "kinds/sources/http/http_source.hpp"

#include <doctest/doctest.h>

#include <future>
#include <string>
#include <thread>

namespace weir {

namespace {

http::source spec_of(http_ack ack, std::size_t max_queued = 100) {
  http::source s;
  s.decoder.kind = format::format_kind::jsonl;
  s.decoder.schema = make_schema({{"n", type_id::int64}, {"k", type_id::string}});
  s.ack = ack;
  s.max_queued_records = max_queued;
  s.ack_timeout = std::chrono::milliseconds{5000};
  return s;
}

std::string body(int from, int count) {
  std::string out;
  for (int i = from; i < from + count; ++i)
    out += "{\"n\":" + std::to_string(i) + ",\"k\":\"a\"}\n";
  return out;
}

using oc = ingest_result::outcome;

} // namespace

TEST_CASE("http source: whole requests, the queue bound, bad records, keys") {
  auto h = std::make_shared<http_source_handle>("events", spec_of(http_ack::accepted, 5));
  CHECK(h->ingest(body(0, 2)).what == oc::not_running); // no reader yet
  h->reader_opened(bad_record_policy::dead_letter, false);
  std::uint64_t cursor = 0;
  CHECK(h->take(10, cursor).empty()); // the first take makes it ready

  auto r = h->ingest(body(0, 3) + "{\"n\":\"x\"}\n", "k1");
  CHECK(r.what == oc::accepted);
  CHECK(r.accepted == 3);
  CHECK(r.bad == 1);
  REQUIRE(r.bad_examples.size() == 1);
  CHECK(r.bad_examples[0].line == 4);
  CHECK(r.request_id == "k1");
  // 3 queued + 3 > 5: refused whole.
  CHECK(h->ingest(body(3, 3)).what == oc::queue_full);
  // The same key again: a duplicate, nothing queued.
  auto d = h->ingest(body(0, 3), "k1");
  CHECK(d.what == oc::duplicate);
  CHECK(d.accepted == 3);
  CHECK(h->queued() == 3);
  CHECK(h->ingest("not json\n").what == oc::bad_body);
  CHECK(h->ingest("").what == oc::bad_body);
  CHECK(h->ingest(body(0, 1), "has space").what == oc::bad_body);
  CHECK(h->ingest(body(6, 2), "k2").what == oc::accepted);

  // Requests are taken whole: 3 + 2 rows over a max of 4 gives 3, then 2.
  auto first = h->take(4, cursor);
  REQUIRE(first.size() == 1);
  CHECK(first[0].batch->num_rows == 3);
  REQUIRE(first[0].bad.size() == 1);
  CHECK(first[0].bad[0].origin == "http source 'events' request k1");
  CHECK(first[0].bad[0].line == 4);
  CHECK(cursor == 1);
  auto second = h->take(4, cursor);
  REQUIRE(second.size() == 1);
  CHECK(second[0].batch->num_rows == 2);
  CHECK(cursor == 2);
  CHECK(h->snapshot_keys() == "1 3 1 k1\n2 2 0 k2\n");

  // Under on_bad_record = "fail" a body with a bad record is refused whole.
  h->reader_opened(bad_record_policy::fail, false);
  h->take(10, cursor);
  auto f = h->ingest(body(10, 1) + "nope\n");
  CHECK(f.what == oc::bad_body);
  CHECK(f.accepted == 0);
  CHECK(h->queued() == 0);
}

TEST_CASE("http source: ack = checkpoint answers when a completed checkpoint covers the "
          "request; keys survive a restore in a new process") {
  auto h = std::make_shared<http_source_handle>("events", spec_of(http_ack::checkpoint));
  h->reader_opened(bad_record_policy::skip, true);
  std::uint64_t cursor = 0;
  h->take(10, cursor);
  auto pending = std::async(std::launch::async, [&] { return h->ingest(body(0, 2), "a"); });
  // A retry of the same key while the first waits: it waits with it.
  while (h->queued() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  auto retry = std::async(std::launch::async, [&] { return h->ingest(body(0, 2), "a"); });
  auto taken = h->take(10, cursor);
  REQUIRE(taken.size() == 1);
  CHECK(pending.wait_for(std::chrono::milliseconds{50}) == std::future_status::timeout);
  auto state = h->snapshot_keys(); // checkpoint 7's barrier: after request 0
  h->complete(7, 1);
  auto r = pending.get();
  CHECK(r.what == oc::accepted);
  CHECK(r.checkpoint_id == 7);
  auto r2 = retry.get();
  CHECK(r2.what == oc::duplicate);
  CHECK(r2.accepted == 2);
  CHECK(h->queued() == 0); // queued once

  // A new process restores checkpoint 7: the key is known, the retry is a
  // duplicate; a request taken after the barrier is not in the state, so
  // its retry is ingested again.
  auto h2 = std::make_shared<http_source_handle>("events", spec_of(http_ack::checkpoint));
  h2->reader_opened(bad_record_policy::skip, true);
  h2->restore(1, state);
  CHECK(h2->cursor() == 1);
  h2->take(10, cursor);
  CHECK(cursor == 1);
  CHECK(h2->ingest(body(0, 2), "a").what == oc::duplicate);
  auto again = std::async(std::launch::async, [&] { return h2->ingest(body(2, 2), "b"); });
  while (h2->queued() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  CHECK(h2->take(10, cursor).size() == 1);
  CHECK(cursor == 2);
  h2->complete(8, 2);
  CHECK(again.get().what == oc::accepted);

  // Closing answers a waiting request 503 (not_running).
  auto late = std::async(std::launch::async, [&] { return h2->ingest(body(4, 1), "c"); });
  while (h2->queued() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  h2->close();
  CHECK(late.get().what == oc::not_running);
  CHECK_THROWS(h2->restore(0, "garbage\n"));
}

TEST_CASE("http source: an in-process restart replays the requests no checkpoint covers") {
  auto h = std::make_shared<http_source_handle>("events", spec_of(http_ack::accepted));
  h->reader_opened(bad_record_policy::skip, true);
  std::uint64_t cursor = 0;
  h->take(10, cursor);
  REQUIRE(h->ingest(body(0, 2), "a").what == oc::accepted);
  REQUIRE(h->ingest(body(2, 2), "b").what == oc::accepted);
  CHECK(h->take(100, cursor).size() == 2);
  auto state = h->snapshot_keys();
  h->complete(1, 1); // covers request 0 only
  // Restart: restore checkpoint 1 at position 1; request 1 is replayed.
  h->reader_opened(bad_record_policy::skip, true);
  h->restore(1, "1 2 0 a\n");
  auto replay = h->take(100, cursor);
  REQUIRE(replay.size() == 1);
  CHECK(replay[0].key == "b");
  CHECK(replay[0].batch->num_rows == 2);
  CHECK(h->ingest(body(2, 2), "b").what == oc::duplicate);
  (void) state;
}

} // namespace weir
