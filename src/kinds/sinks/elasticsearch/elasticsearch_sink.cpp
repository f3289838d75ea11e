// SPDX-License-Identifier: Apache-2.0
// The Elasticsearch sink's runtime: one cpp-httplib client per subtask
// sending `_bulk` requests of `index` actions, with per-item retries and
// exponential backoff (README.md beside this file).
#include "weir/elasticsearch/sink.hpp"

#include "weir/connectors/source_reader.hpp"
#include "weir/core/log.hpp"
#include "weir/expr/expression.hpp"
#include "weir/format/format.hpp"

#include <httplib.h>
#include <simdjson.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weir {

namespace {

using std::chrono::milliseconds;

/// One `index` action of a bulk request and its document.
struct bulk_item {
  std::string index;
  std::string id; ///< empty: the server assigns one
  std::string action; ///< the action line, '\n' included
  std::string source; ///< the document line, '\n' included
};

/// A base URL split for cpp-httplib: `scheme://host[:port]` and a path
/// prefix ("" or "/es").
struct host_url {
  std::string origin;
  std::string prefix;
};

std::optional<host_url> parse_host(const std::string& url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    return std::nullopt;
  auto scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    return std::nullopt;
  auto path = url.find('/', scheme_end + 3);
  host_url h;
  h.origin = url.substr(0, path);
  if (h.origin.size() == scheme_end + 3)
    return std::nullopt; // no host
  if (path != std::string::npos) {
    h.prefix = url.substr(path);
    while (!h.prefix.empty() && h.prefix.back() == '/')
      h.prefix.pop_back();
  }
  return h;
}

/// 429 (the server's queues are full) and 5xx are worth another try, as
/// Flink's BulkProcessor retries rejected executions.
bool is_retryable(int status) {
  return status == 429 || status >= 500;
}

std::string text_of(const column& c, std::size_t row) {
  if (c.type == type_id::string)
    return std::string{c.str(row)};
  return to_display_string(c.get(row));
}

std::string clip(std::string_view s, std::size_t n = 500) {
  if (s.size() <= n)
    return std::string{s};
  return std::string{s.substr(0, n)} + "...";
}

/// The error of one item of a bulk response as "type: reason" (ES puts an
/// object there; older versions and proxies a string).
std::string error_text(simdjson::dom::element e) {
  if (e.is_string())
    return std::string{std::string_view(e.get_string().value_unsafe())};
  std::string out;
  std::string_view type, reason;
  if (e["type"].get(type) == simdjson::SUCCESS)
    out = std::string{type};
  if (e["reason"].get(reason) == simdjson::SUCCESS)
    out += (out.empty() ? "" : ": ") + std::string{reason};
  if (out.empty())
    out = simdjson::minify(e);
  return out;
}

/// One HTTP client per host, made when first used (cpp-httplib keeps the
/// connection alive between requests).
class bulk_client {
public:
  struct response {
    bool answered = false; ///< false: no HTTP response (connection, timeout)
    int status = 0;
    std::string body;
    std::string error; ///< when not answered
  };

  bulk_client(std::vector<host_url> hosts, milliseconds timeout)
    : hosts_(std::move(hosts)), clients_(hosts_.size()), timeout_(timeout) {}

  response post_bulk(const std::string& body) {
    auto& c = client();
    auto r = c.Post((hosts_[current_].prefix + "/_bulk").c_str(), body,
                    "application/x-ndjson");
    response out;
    if (!r) {
      out.error = httplib::to_string(r.error());
      // The next attempt tries the next host; a broken keep-alive
      // connection is made anew.
      clients_[current_].reset();
      current_ = (current_ + 1) % hosts_.size();
      return out;
    }
    out.answered = true;
    out.status = r->status;
    out.body = std::move(r->body);
    return out;
  }

  std::string host() const { return hosts_[current_].origin + hosts_[current_].prefix; }

private:
  httplib::Client& client() {
    auto& c = clients_[current_];
    if (!c) {
      c = std::make_unique<httplib::Client>(hosts_[current_].origin);
      c->set_connection_timeout(timeout_);
      c->set_read_timeout(timeout_);
      c->set_write_timeout(timeout_);
      c->set_keep_alive(true);
    }
    return *c;
  }

  std::vector<host_url> hosts_;
  std::vector<std::unique_ptr<httplib::Client>> clients_;
  std::size_t current_ = 0;
  milliseconds timeout_;
};

class elasticsearch_sink final : public stream_operator {
public:
  elasticsearch_sink(elasticsearch::sink spec, schema_ptr schema,
                     std::vector<host_url> hosts,
                     std::optional<expr::compiled_expression> index,
                     std::optional<expr::compiled_expression> id)
    : spec_(std::move(spec)),
      schema_(std::move(schema)),
      encoder_(format::make_encoder(format::format_kind::jsonl)),
      client_(std::move(hosts), spec_.request_timeout),
      index_expr_(std::move(index)),
      id_expr_(std::move(id)) {}

  void open(const operator_context& ctx) override {
    name_ = ctx.operator_name;
    subtask_ = ctx.subtask_index;
    clock_ = ctx.clock;
    on_bad_ = ctx.on_bad_record;
  }

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (!batch || batch->num_rows == 0)
      return;
    std::optional<column> indexes, ids;
    if (index_expr_)
      indexes = index_expr_->evaluate(*batch);
    if (id_expr_)
      ids = id_expr_->evaluate(*batch);
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      bulk_item item;
      if (indexes) {
        if (!indexes->is_valid(row)) {
          reject_row(*batch, row, "index_expression is null");
          continue;
        }
        item.index = text_of(*indexes, row);
      } else {
        item.index = spec_.index;
      }
      if (ids) {
        if (!ids->is_valid(row)) {
          reject_row(*batch, row, "document_id is null");
          continue;
        }
        item.id = text_of(*ids, row);
      }
      item.action = "{\"index\":{\"_index\":";
      format::append_json_string(item.index, item.action);
      if (ids) {
        item.action += ",\"_id\":";
        format::append_json_string(item.id, item.action);
      }
      item.action += "}}\n";
      encoder_->encode(*batch, row, item.source);
      if (buffer_.empty())
        oldest_ = now();
      buffered_bytes_ += item.action.size() + item.source.size();
      buffer_.push_back(std::move(item));
      if (buffer_.size() >= spec_.max_actions || buffered_bytes_ >= spec_.max_bytes)
        flush();
    }
  }

  void process_watermark(event_time, output_collector&) override {
    // The end of the stream: nothing to forward.
  }

  std::optional<event_time> next_processing_timer() const override {
    if (buffer_.empty() || spec_.flush_interval.count() == 0)
      return std::nullopt;
    return oldest_ + spec_.flush_interval.count();
  }

  void on_processing_time(event_time t, output_collector&) override {
    if (auto due = next_processing_timer(); due && t >= *due)
      flush();
  }

  /// At least once: every action before barrier n is acknowledged before
  /// the sink's part of checkpoint n is taken. The sink has no state.
  void snapshot_state(std::uint64_t, operator_snapshot&) override { flush(); }

  void finish(output_collector&) override { close(); }
  void stop(output_collector&) override { close(); }

private:
  event_time now() const {
    if (clock_)
      return clock_->now();
    return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
  }

  std::string who() const {
    return "Elasticsearch sink '" + name_ + "' subtask " + std::to_string(subtask_);
  }

  void close() {
    flush();
    log::connectors().info("{}: {} actions indexed, {} retried, {} superseded by a later "
                           "action on the same document, {} documents rejected",
                           who(), indexed_, retried_, superseded_, rejected_);
  }

  void reject_row(const record_batch& batch, std::size_t row, const std::string& reason) {
    std::string doc;
    encoder_->encode(batch, row, doc);
    if (!doc.empty() && doc.back() == '\n')
      doc.pop_back();
    bad(bad_record{spec_.index.empty() ? name_ : spec_.index, 0, 0, reason, std::move(doc)});
  }

  /// A document the server will never take: the job's on_bad_record.
  void bad(bad_record r) {
    ++rejected_;
    r.reason = who() + ": " + r.reason;
    if (!on_bad_)
      throw std::runtime_error("bad record at " + r.origin + ": " + r.reason);
    on_bad_(r);
  }

  /// Sends every buffered action, retrying failed ones with exponential
  /// backoff; returns once each is indexed or rejected, or throws after
  /// `max_retries` retries.
  void flush() {
    if (buffer_.empty())
      return;
    std::vector<bulk_item> pending;
    pending.swap(buffer_);
    buffered_bytes_ = 0;
    std::uint32_t retries = 0;
    auto delay = spec_.retry_delay;
    std::string body;
    while (true) {
      body.clear();
      for (const auto& it : pending) {
        body += it.action;
        body += it.source;
      }
      std::string last_failure;
      auto failed = send(pending, body, last_failure);
      if (failed.empty())
        return;
      if (retries >= spec_.max_retries)
        throw std::runtime_error(
          who() + ": " + std::to_string(failed.size()) + " of the bulk request's actions "
          + "still failed after " + std::to_string(retries) + " retries (backoff.max_retries "
          + std::to_string(spec_.max_retries) + "); the last failure: " + last_failure);
      ++retries;
      retried_ += failed.size();
      log::connectors().warn("{}: {} actions failed ({}); retry {} of {} in {} ms", who(),
                             failed.size(), last_failure, retries, spec_.max_retries,
                             delay.count());
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, spec_.max_retry_delay);
      pending = std::move(failed);
    }
  }

  /// One bulk request: the actions to try again (the whole request when
  /// it failed as a whole); `last_failure` describes one of them.
  std::vector<bulk_item> send(std::vector<bulk_item>& items, const std::string& body,
                              std::string& last_failure) {
    auto r = client_.post_bulk(body);
    if (!r.answered) {
      last_failure = "no response from " + client_.host() + ": " + r.error;
      return std::move(items);
    }
    if (is_retryable(r.status)) {
      last_failure = "HTTP status " + std::to_string(r.status) + " from " + client_.host()
                     + ": " + clip(r.body);
      return std::move(items);
    }
    if (r.status != 200) {
      std::string hint = r.status == 413 ? " (lower bulk_flush.max_bytes)" : "";
      throw std::runtime_error(who() + ": " + client_.host() + " refused a bulk request of "
                               + std::to_string(items.size()) + " actions with HTTP status "
                               + std::to_string(r.status) + hint + ": " + clip(r.body));
    }
    simdjson::dom::element doc;
    if (parser_.parse(r.body).get(doc) != simdjson::SUCCESS)
      throw std::runtime_error(who() + ": the bulk response of " + client_.host()
                               + " is not JSON: " + clip(r.body));
    bool errors = true;
    if (doc["errors"].get(errors) == simdjson::SUCCESS && !errors) {
      indexed_ += items.size();
      return {};
    }
    simdjson::dom::array results;
    if (doc["items"].get(results) != simdjson::SUCCESS || results.size() != items.size())
      throw std::runtime_error(who() + ": the bulk response of " + client_.host()
                               + " does not have one item per action (" +
                               std::to_string(items.size()) + " sent): " + clip(r.body));
    // A failed action with a later action on the same document in this
    // request is not retried: the later one carries the newer document
    // (and is retried itself if it failed), and a retry of the older one
    // after it would put the stale document back.
    std::unordered_map<std::string, std::size_t> last;
    if (id_expr_)
      for (std::size_t k = 0; k < items.size(); ++k)
        last[items[k].index + '\0' + items[k].id] = k;
    std::vector<bulk_item> failed;
    std::size_t i = 0;
    for (auto result : results) {
      auto k = i;
      auto& item = items[i++];
      simdjson::dom::object wrapper;
      if (result.get(wrapper) != simdjson::SUCCESS || wrapper.size() == 0)
        throw std::runtime_error(who() + ": an item of the bulk response of " + client_.host()
                                 + " is not an object: " + clip(simdjson::minify(result)));
      // {"index": {"_index": ..., "status": 201, "error": {...}}}
      auto outcome = (*wrapper.begin()).value;
      std::int64_t status = 0;
      if (outcome["status"].get(status) != simdjson::SUCCESS)
        throw std::runtime_error(who() + ": an item of the bulk response of " + client_.host()
                                 + " has no status: " + clip(simdjson::minify(result)));
      if (status >= 200 && status < 300) {
        ++indexed_;
        continue;
      }
      simdjson::dom::element error;
      std::string reason = outcome["error"].get(error) == simdjson::SUCCESS
                             ? error_text(error)
                             : std::string{"no reason given"};
      auto what = "index '" + item.index + "'" + (item.id.empty() ? "" : " id '" + item.id + "'")
                  + ": status " + std::to_string(status) + " " + reason;
      if (is_retryable(static_cast<int>(status))) {
        if (id_expr_ && last[item.index + '\0' + item.id] != k) {
          ++superseded_;
          continue;
        }
        last_failure = what;
        failed.push_back(std::move(item));
        continue;
      }
      // A mapping error and the like: sending it again changes nothing.
      auto doc_text = item.source;
      if (!doc_text.empty() && doc_text.back() == '\n')
        doc_text.pop_back();
      bad(bad_record{item.index + (item.id.empty() ? "" : "/" + item.id), 0, 0,
                     "rejected by the server: status " + std::to_string(status) + " " + reason,
                     std::move(doc_text)});
    }
    return failed;
  }

  elasticsearch::sink spec_;
  schema_ptr schema_;
  std::unique_ptr<format::record_encoder> encoder_;
  bulk_client client_;
  std::optional<expr::compiled_expression> index_expr_;
  std::optional<expr::compiled_expression> id_expr_;
  simdjson::dom::parser parser_;
  std::string name_;
  std::size_t subtask_ = 0;
  const processing_clock* clock_ = nullptr;
  std::function<void(const bad_record&)> on_bad_;
  std::vector<bulk_item> buffer_;
  std::size_t buffered_bytes_ = 0;
  event_time oldest_ = 0; ///< processing time of buffer_'s first action
  std::uint64_t indexed_ = 0;
  std::uint64_t retried_ = 0;
  std::uint64_t rejected_ = 0;
  std::uint64_t superseded_ = 0; ///< failed actions not retried: a later one replaced them
};

} // namespace

expected<stream_operator_ptr> make_elasticsearch_sink(const elasticsearch::sink& spec,
                                                      schema_ptr input_schema) {
  if (!input_schema)
    return make_error(errc::invalid_argument, "an Elasticsearch sink needs its input's schema");
  if (spec.hosts.empty())
    return make_error(errc::invalid_argument, "an Elasticsearch sink needs at least one host");
  std::vector<host_url> hosts;
  for (const auto& h : spec.hosts) {
    auto u = parse_host(h);
    if (!u)
      return make_error(errc::invalid_argument,
                        "Elasticsearch host '" + h + "' is not an http:// or https:// URL");
    hosts.push_back(std::move(*u));
  }
  if (spec.index.empty() == spec.index_expression.empty())
    return make_error(errc::invalid_argument,
                      "an Elasticsearch sink needs exactly one of index and index_expression");
  if (spec.max_actions == 0 || spec.max_bytes == 0)
    return make_error(errc::invalid_argument,
                      "an Elasticsearch sink's max_actions and max_bytes must be positive");
  if (spec.retry_delay > spec.max_retry_delay)
    return make_error(errc::invalid_argument,
                      "an Elasticsearch sink's retry delay must not exceed its maximum");
  std::optional<expr::compiled_expression> index, id;
  if (!spec.index_expression.empty()) {
    auto e = expr::compile(spec.index_expression, *input_schema);
    if (!e)
      return e.error();
    index = std::move(*e);
  }
  if (!spec.document_id.empty()) {
    auto e = expr::compile(spec.document_id, *input_schema);
    if (!e)
      return e.error();
    id = std::move(*e);
  }
  return stream_operator_ptr{std::make_unique<elasticsearch_sink>(
    spec, std::move(input_schema), std::move(hosts), std::move(index), std::move(id))};
}

} // namespace weir
