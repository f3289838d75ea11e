// SPDX-License-Identifier: Apache-2.0
// The Elasticsearch sink against an in-process `_bulk` server (cpp-httplib)
// whose answers each test scripts: the request shape, flushing, per-item and
// whole-request retries, the retry bound, and rejected documents. A real
// OpenSearch node is in tests/opensearch/bulk_sink_tests.py.
#include "weir/elasticsearch/sink.hpp"

#include "weir/connectors/source_reader.hpp"

#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using weir::type_id;

namespace {

struct null_collector final : weir::output_collector {
  void collect(weir::record_batch_ptr) override {}
  void collect_side(std::size_t, weir::record_batch_ptr) override {}
  void emit_watermark(weir::event_time) override {}
};

/// A `_bulk` endpoint on a free port. `answer(body, n)` gives the status and
/// body of the n-th request (0-based); every request body is kept.
class bulk_server {
public:
  using answer_fn = std::function<std::pair<int, std::string>(const std::string&, int)>;

  explicit bulk_server(answer_fn answer) : answer_(std::move(answer)) {
    server_.Post("/_bulk", [this](const httplib::Request& req, httplib::Response& res) {
      int n = 0;
      {
        std::lock_guard lock{mutex_};
        bodies_.push_back(req.body);
        n = static_cast<int>(bodies_.size()) - 1;
      }
      auto [status, body] = answer_(req.body, n);
      res.status = status;
      res.set_content(body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread{[this] { server_.listen_after_bind(); }};
    // A stop() before the thread listens would be lost (and join() hang).
    while (!server_.is_running())
      std::this_thread::sleep_for(1ms);
  }
  ~bulk_server() {
    server_.stop();
    thread_.join();
  }
  bulk_server(const bulk_server&) = delete;
  bulk_server& operator=(const bulk_server&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> bodies() {
    std::lock_guard lock{mutex_};
    return bodies_;
  }

private:
  answer_fn answer_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> bodies_;
};

/// The ids of a bulk body's actions, in order ("_id":"x"), as JSON text
/// (escapes kept, so that they go back into a response as they are).
std::vector<std::string> ids_of(const std::string& body) {
  std::vector<std::string> ids;
  std::size_t at = 0;
  const std::string key = "\"_id\":\"";
  while ((at = body.find(key, at)) != std::string::npos) {
    at += key.size();
    auto end = at;
    while (body[end] != '"')
      end += body[end] == '\\' ? 2 : 1;
    ids.push_back(body.substr(at, end - at));
  }
  return ids;
}

/// A bulk response: one item per id, with the status `status_of(id)`.
std::string response(const std::vector<std::string>& ids,
                     const std::function<int(const std::string&)>& status_of) {
  std::string items;
  bool errors = false;
  for (const auto& id : ids) {
    int s = status_of(id);
    errors = errors || s >= 300;
    if (!items.empty())
      items += ",";
    items += R"({"index":{"_index":"t","_id":")" + id + R"(","status":)" + std::to_string(s);
    if (s >= 300)
      items += R"(,"error":{"type":"test_exception","reason":"injected for )" + id + R"("})";
    items += "}}";
  }
  return R"({"took":1,"errors":)" + std::string(errors ? "true" : "false") + R"(,"items":[)"
         + items + "]}";
}

std::string all_ok(const std::string& body, int) {
  return response(ids_of(body), [](const std::string&) { return 201; });
}

weir::schema_ptr test_schema() {
  return weir::make_schema({{"user", type_id::string}, {"n", type_id::int64}});
}

weir::record_batch_ptr rows(std::initializer_list<std::pair<const char*, std::int64_t>> rs) {
  weir::batch_builder b{test_schema()};
  for (const auto& [u, n] : rs) {
    b.col(0).append_string(u);
    b.col(1).append_int(n);
    b.commit_row();
  }
  return b.finish();
}

weir::elasticsearch::sink spec_for(const bulk_server& s) {
  weir::elasticsearch::sink spec;
  spec.hosts = {s.url()};
  spec.index = "t";
  spec.document_id = "user";
  spec.flush_interval = 0ms;
  spec.retry_delay = 1ms;
  spec.max_retry_delay = 4ms;
  spec.request_timeout = 5000ms;
  return spec;
}

struct opened {
  weir::stream_operator_ptr op;
  std::vector<weir::bad_record> bad;
};

std::unique_ptr<opened> open_sink(const weir::elasticsearch::sink& spec,
                                  bool with_bad_handler = true) {
  auto made = weir::make_elasticsearch_sink(spec, test_schema());
  REQUIRE(made);
  auto o = std::make_unique<opened>();
  o->op = std::move(*made);
  weir::operator_context ctx{"es", 0, 1, 128};
  if (with_bad_handler)
    ctx.on_bad_record = [p = o.get()](const weir::bad_record& r) { p->bad.push_back(r); };
  o->op->open(ctx);
  return o;
}

std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

} // namespace

TEST_SUITE("elasticsearch sink") {
TEST_CASE("each row is an index action with its id and the row as its document") {
  bulk_server server{[](const std::string& body, int n) {
    return std::pair{200, all_ok(body, n)};
  }};
  auto s = open_sink(spec_for(server));
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}, {"b\"o", 2}}), out);
  CHECK(server.bodies().empty()); // buffered until a barrier
  weir::operator_snapshot snap;
  s->op->snapshot_state(1, snap);
  CHECK(snap.operator_state.empty());
  auto bodies = server.bodies();
  REQUIRE(bodies.size() == 1);
  CHECK(bodies[0] == "{\"index\":{\"_index\":\"t\",\"_id\":\"ann\"}}\n"
                     "{\"user\":\"ann\",\"n\":1}\n"
                     "{\"index\":{\"_index\":\"t\",\"_id\":\"b\\\"o\"}}\n"
                     "{\"user\":\"b\\\"o\",\"n\":2}\n");
}

TEST_CASE("a request goes out at max_actions, and the rest at the end") {
  bulk_server server{[](const std::string& body, int n) {
    return std::pair{200, all_ok(body, n)};
  }};
  auto spec = spec_for(server);
  spec.max_actions = 2;
  spec.index.clear();
  spec.index_expression = "concat('idx-', user)";
  spec.document_id = "n * 10";
  auto s = open_sink(spec);
  null_collector out;
  s->op->process_batch(rows({{"a", 1}, {"b", 2}, {"c", 3}}), out);
  REQUIRE(server.bodies().size() == 1);
  CHECK(ids_of(server.bodies()[0]) == std::vector<std::string>{"10", "20"});
  CHECK(server.bodies()[0].find("\"_index\":\"idx-b\"") != std::string::npos);
  s->op->finish(out);
  REQUIRE(server.bodies().size() == 2);
  CHECK(ids_of(server.bodies()[1]) == std::vector<std::string>{"30"});
}

TEST_CASE("items rejected with 429 are retried alone until they are indexed") {
  bulk_server server{[](const std::string& body, int n) {
    // "bob" is rejected on the first two attempts.
    return std::pair{200, response(ids_of(body), [n](const std::string& id) {
                       return id == "bob" && n < 2 ? 429 : 201;
                     })};
  }};
  auto s = open_sink(spec_for(server));
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}, {"bob", 2}, {"cy", 3}}), out);
  s->op->finish(out);
  auto bodies = server.bodies();
  REQUIRE(bodies.size() == 3);
  CHECK(ids_of(bodies[0]) == std::vector<std::string>{"ann", "bob", "cy"});
  CHECK(ids_of(bodies[1]) == std::vector<std::string>{"bob"});
  CHECK(ids_of(bodies[2]) == std::vector<std::string>{"bob"});
  CHECK(s->bad.empty());
}

TEST_CASE("a failed action is not retried when a later one replaced its document") {
  bulk_server server{[](const std::string& body, int n) {
    // The first action on "ann" (n = 1) is rejected, the second (n = 2)
    // indexed: retrying the first would put n = 1 back.
    int seen = 0;
    return std::pair{200, response(ids_of(body), [&seen, n](const std::string& id) {
                       return n == 0 && id == "ann" && seen++ == 0 ? 429 : 201;
                     })};
  }};
  auto s = open_sink(spec_for(server));
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}, {"ann", 2}, {"bob", 3}}), out);
  s->op->finish(out);
  CHECK(server.bodies().size() == 1);
}

TEST_CASE("a request failing as a whole with 503 is sent again") {
  bulk_server server{[](const std::string& body, int n) {
    if (n == 0)
      return std::pair{503, std::string{R"({"error":"unavailable"})"}};
    return std::pair{200, all_ok(body, n)};
  }};
  auto s = open_sink(spec_for(server));
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}, {"bob", 2}}), out);
  s->op->finish(out);
  auto bodies = server.bodies();
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[0] == bodies[1]);
}

TEST_CASE("an item still failing after max_retries fails the sink naming it") {
  bulk_server server{[](const std::string& body, int) {
    return std::pair{200, response(ids_of(body), [](const std::string& id) {
                       return id == "bob" ? 503 : 201;
                     })};
  }};
  auto spec = spec_for(server);
  spec.max_retries = 2;
  auto s = open_sink(spec);
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}, {"bob", 2}}), out);
  auto what = failure_of([&] { s->op->finish(out); });
  CHECK(what.find("Elasticsearch sink 'es' subtask 0") != std::string::npos);
  CHECK(what.find("1 of the bulk request's actions still failed after 2 retries")
        != std::string::npos);
  CHECK(what.find("index 't' id 'bob': status 503 test_exception: injected for bob")
        != std::string::npos);
  CHECK(server.bodies().size() == 3); // the first attempt and two retries
}

TEST_CASE("a document rejected with 400 is a bad record and is not retried") {
  bulk_server server{[](const std::string& body, int) {
    return std::pair{200, response(ids_of(body), [](const std::string& id) {
                       return id == "bob" ? 400 : 201;
                     })};
  }};
  auto s = open_sink(spec_for(server));
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}, {"bob", 2}}), out);
  s->op->finish(out);
  CHECK(server.bodies().size() == 1);
  REQUIRE(s->bad.size() == 1);
  CHECK(s->bad[0].origin == "t/bob");
  CHECK(s->bad[0].raw == "{\"user\":\"bob\",\"n\":2}");
  CHECK(s->bad[0].reason.find("status 400 test_exception: injected for bob")
        != std::string::npos);
}

TEST_CASE("without a bad-record handler a rejected document fails the sink") {
  bulk_server server{[](const std::string& body, int) {
    return std::pair{200, response(ids_of(body), [](const std::string&) { return 400; })};
  }};
  auto s = open_sink(spec_for(server), false);
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}}), out);
  CHECK(failure_of([&] { s->op->finish(out); }).find("bad record at t/ann")
        != std::string::npos);
}

TEST_CASE("a request refused with 401 fails the sink at once with the server's answer") {
  bulk_server server{[](const std::string&, int) {
    return std::pair{401, std::string{R"({"error":"missing authentication credentials"})"}};
  }};
  auto s = open_sink(spec_for(server));
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}}), out);
  auto what = failure_of([&] { s->op->finish(out); });
  CHECK(what.find("HTTP status 401") != std::string::npos);
  CHECK(what.find("missing authentication credentials") != std::string::npos);
  CHECK(server.bodies().size() == 1);
}

TEST_CASE("no server: retried, then the sink fails naming the host") {
  weir::elasticsearch::sink spec;
  {
    bulk_server gone{[](const std::string& body, int n) {
      return std::pair{200, all_ok(body, n)};
    }};
    spec = spec_for(gone);
  } // stopped: its port refuses connections
  spec.max_retries = 1;
  spec.request_timeout = 1000ms;
  auto s = open_sink(spec);
  null_collector out;
  s->op->process_batch(rows({{"ann", 1}}), out);
  auto what = failure_of([&] { s->op->finish(out); });
  CHECK(what.find("after 1 retries") != std::string::npos);
  CHECK(what.find("no response from " + spec.hosts[0]) != std::string::npos);
}

TEST_CASE("a null document id is a bad record; nothing is sent for it") {
  bulk_server server{[](const std::string& body, int n) {
    return std::pair{200, all_ok(body, n)};
  }};
  auto spec = spec_for(server); // document_id = "user"
  weir::batch_builder b{test_schema()};
  b.col(0).append_null();
  b.col(1).append_int(1);
  b.commit_row();
  b.col(0).append_string("ann");
  b.col(1).append_int(2);
  b.commit_row();
  auto s = open_sink(spec);
  null_collector out;
  s->op->process_batch(b.finish(), out);
  s->op->finish(out);
  REQUIRE(s->bad.size() == 1);
  CHECK(s->bad[0].reason.find("document_id is null") != std::string::npos);
  REQUIRE(server.bodies().size() == 1);
  CHECK(ids_of(server.bodies()[0]) == std::vector<std::string>{"ann"});
}

TEST_CASE("make rejects a bad host, both or neither index keys, and a bad expression") {
  weir::elasticsearch::sink spec;
  spec.hosts = {"127.0.0.1:9200"};
  spec.index = "t";
  CHECK_FALSE(weir::make_elasticsearch_sink(spec, test_schema()));
  spec.hosts = {"http://127.0.0.1:9200"};
  CHECK(weir::make_elasticsearch_sink(spec, test_schema()));
  spec.index_expression = "user";
  CHECK_FALSE(weir::make_elasticsearch_sink(spec, test_schema()));
  spec.index.clear();
  CHECK(weir::make_elasticsearch_sink(spec, test_schema()));
  spec.document_id = "nope + 1";
  CHECK_FALSE(weir::make_elasticsearch_sink(spec, test_schema()));
}
}
