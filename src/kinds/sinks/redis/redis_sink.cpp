// SPDX-License-Identifier: Apache-2.0
// The Redis sink's runtime: one hiredis connection per subtask, commands
// pipelined (appended, then every reply read) at each checkpoint barrier,
// every `batch_size` commands, every `flush_interval` and at the end of the
// input. Guarantee and errors: README.md beside this file.
#include "weir/redis/sink.hpp"

#include "weir/core/log.hpp"
#include "weir/expr/expression.hpp"

#include <hiredis/hiredis.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weir {

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// A value as Redis receives it: strings as their bytes, numbers as decimal
/// text, timestamps as epoch ms, bools as true/false.
void append_text(const column& c, std::size_t row, std::string& out) {
  if (c.type == type_id::string)
    out.append(c.str(row));
  else
    out.append(to_display_string(c.get(row)));
}

struct context_deleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_deleter>;

struct reply_deleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// Raised for a lost connection: the flush reconnects and sends again.
struct connection_lost {
  std::string why;
};

class redis_sink final : public stream_operator {
public:
  redis_sink(redis::sink spec, expr::compiled_expression key,
             std::optional<expr::compiled_expression> field, expr::compiled_expression value,
             std::optional<expr::compiled_expression> score)
    : spec_(std::move(spec)),
      key_(std::move(key)),
      field_(std::move(field)),
      value_(std::move(value)),
      score_(std::move(score)) {
    switch (spec_.command) {
      case redis_command::set: verb_ = "SET"; break;
      case redis_command::hset: verb_ = "HSET"; break;
      case redis_command::zadd: verb_ = "ZADD"; break;
    }
  }

  void open(const operator_context& ctx) override {
    name_ = ctx.operator_name;
    subtask_ = ctx.subtask_index;
    // Fails fast (after the retries) when Redis is not there at all.
    with_retries([&] { connect(); });
  }

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (!batch || batch->num_rows == 0)
      return;
    auto keys = key_.evaluate(*batch);
    auto values = value_.evaluate(*batch);
    std::optional<column> fields, scores;
    if (field_)
      fields = field_->evaluate(*batch);
    if (score_)
      scores = score_->evaluate(*batch);
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      if (keys.is_null(row) || values.is_null(row) || (fields && fields->is_null(row))
          || (scores && scores->is_null(row))) {
        if (skipped_++ == 0)
          log::connectors().warn("Redis sink '{}' subtask {}: a row with a null key, field, "
                                 "value or score was skipped (counted; the total is "
                                 "reported at the end)",
                                 name_, subtask_);
        continue;
      }
      command cmd;
      cmd.args.reserve(4);
      cmd.args.emplace_back(verb_);
      cmd.args.emplace_back();
      append_text(keys, row, cmd.args.back());
      if (fields) {
        cmd.args.emplace_back();
        append_text(*fields, row, cmd.args.back());
      }
      if (scores) {
        cmd.args.emplace_back();
        append_text(*scores, row, cmd.args.back());
      }
      cmd.args.emplace_back();
      append_text(values, row, cmd.args.back());
      pending_.push_back(std::move(cmd));
    }
    if (pending_.size() >= spec_.batch_size)
      flush();
    else if (!pending_.empty() && flush_due_ == 0)
      flush_due_ = wall_ms() + spec_.flush_interval.count();
    if (flush_due_ != 0 && wall_ms() >= flush_due_)
      flush();
  }

  void process_watermark(event_time, output_collector&) override {
    // A sink is the end of the stream: nothing to forward.
  }

  std::optional<event_time> next_processing_timer() const override {
    if (pending_.empty() || flush_due_ == 0)
      return std::nullopt;
    return flush_due_;
  }

  void on_processing_time(event_time, output_collector&) override {
    if (flush_due_ != 0 && wall_ms() >= flush_due_)
      flush();
  }

  void snapshot_state(std::uint64_t, operator_snapshot&) override {
    // At least once: every command before the barrier is acknowledged by
    // Redis before this subtask acknowledges the checkpoint.
    flush();
  }

  void finish(output_collector&) override {
    flush();
    report();
  }

  void stop(output_collector&) override {
    flush();
    report();
  }

private:
  struct command {
    std::vector<std::string> args;
  };

  void report() const {
    log::connectors().info("Redis sink '{}' subtask {}: {} commands written to {}:{}{}",
                           name_, subtask_, written_, spec_.host, spec_.port,
                           skipped_ ? ", " + std::to_string(skipped_) + " rows skipped (null)"
                                    : std::string{});
    if (skipped_)
      log::connectors().warn("Redis sink '{}' subtask {}: {} rows skipped: their key, field, "
                             "value or score was null",
                             name_, subtask_, skipped_);
  }

  std::string where() const {
    return "Redis at " + spec_.host + ":" + std::to_string(spec_.port);
  }

  /// Runs `f`, reconnecting with a doubling backoff while it loses the
  /// connection; after `max_attempts` attempts the subtask fails.
  template <class F>
  void with_retries(F&& f) {
    std::chrono::milliseconds wait{100};
    std::string last;
    for (std::size_t attempt = 1;; ++attempt) {
      try {
        if (!ctx_)
          connect();
        f();
        return;
      } catch (const connection_lost& e) {
        ctx_.reset();
        last = e.why;
      }
      if (attempt >= spec_.max_attempts)
        throw std::runtime_error("Redis sink '" + name_ + "': cannot reach " + where()
                                 + " after " + std::to_string(attempt)
                                 + " attempts (last error: " + last + ")");
      log::connectors().warn("Redis sink '{}' subtask {}: {} (attempt {} of {}); retrying in "
                             "{} ms",
                             name_, subtask_, last, attempt, spec_.max_attempts,
                             wait.count());
      std::this_thread::sleep_for(wait);
      wait = std::min(wait * 2, std::chrono::milliseconds{5000});
    }
  }

  void connect() {
    if (ctx_)
      return;
    timeval tv{static_cast<time_t>(spec_.timeout.count() / 1000),
               static_cast<suseconds_t>((spec_.timeout.count() % 1000) * 1000)};
    context_ptr c{redisConnectWithTimeout(spec_.host.c_str(), spec_.port, tv)};
    if (!c)
      throw std::runtime_error("Redis sink '" + name_ + "': out of memory allocating a "
                               "hiredis context");
    if (c->err)
      throw connection_lost{std::string{"connect: "} + c->errstr};
    redisSetTimeout(c.get(), tv);
    auto setup = [&](std::vector<std::string> args, const std::string& what) {
      auto r = run(c.get(), args);
      if (r->type == REDIS_REPLY_ERROR)
        throw std::runtime_error("Redis sink '" + name_ + "': " + where() + " refused " + what
                                 + ": " + std::string(r->str, r->len));
    };
    if (!spec_.password.empty()) {
      if (spec_.username.empty())
        setup({"AUTH", spec_.password}, "AUTH");
      else
        setup({"AUTH", spec_.username, spec_.password}, "AUTH");
    }
    if (spec_.db != 0)
      setup({"SELECT", std::to_string(spec_.db)}, "SELECT " + std::to_string(spec_.db));
    setup({"PING"}, "PING");
    ctx_ = std::move(c);
  }

  /// One command, its reply read at once.
  reply_ptr run(redisContext* c, const std::vector<std::string>& args) {
    append(c, args);
    return read_reply(c);
  }

  void append(redisContext* c, const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    argv.reserve(args.size());
    lens.reserve(args.size());
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data())
        != REDIS_OK)
      throw connection_lost{c->errstr};
  }

  reply_ptr read_reply(redisContext* c) {
    void* r = nullptr;
    if (redisGetReply(c, &r) != REDIS_OK || !r)
      throw connection_lost{c->err ? c->errstr : "no reply"};
    return reply_ptr{static_cast<redisReply*>(r)};
  }

  /// Sends every pending command in one pipeline and reads every reply; on
  /// a lost connection reconnects and sends them all again (the writes are
  /// absolute, so a command applied twice has the effect of once).
  void flush() {
    flush_due_ = 0;
    if (pending_.empty())
      return;
    with_retries([&] {
      for (const auto& cmd : pending_)
        append(ctx_.get(), cmd.args);
      for (const auto& cmd : pending_) {
        auto r = read_reply(ctx_.get());
        if (r->type == REDIS_REPLY_ERROR)
          throw std::runtime_error("Redis sink '" + name_ + "': " + where() + " refused "
                                   + cmd.args[0] + " '" + cmd.args[1]
                                   + "': " + std::string(r->str, r->len));
      }
    });
    written_ += pending_.size();
    pending_.clear();
  }

  redis::sink spec_;
  expr::compiled_expression key_;
  std::optional<expr::compiled_expression> field_;
  expr::compiled_expression value_;
  std::optional<expr::compiled_expression> score_;
  std::string verb_;
  std::string name_;
  std::size_t subtask_ = 0;
  context_ptr ctx_;
  std::vector<command> pending_;
  event_time flush_due_ = 0; ///< wall ms; 0: nothing pending
  std::uint64_t written_ = 0;
  std::uint64_t skipped_ = 0;
};

expected<expr::compiled_expression> compile_key(const std::string& text, const schema& in,
                                                std::string_view key) {
  auto e = expr::compile(text, in);
  if (!e) {
    auto err = e.error();
    err.message = std::string{key} + ": " + err.message;
    return err;
  }
  return e;
}

} // namespace

expected<stream_operator_ptr> make_redis_sink(const redis::sink& spec,
                                              schema_ptr input_schema) {
  if (!input_schema)
    return make_error(errc::invalid_argument, "a Redis sink needs its input's schema");
  if (spec.host.empty())
    return make_error(errc::invalid_argument, "host: a Redis sink needs a host");
  if (spec.key.empty())
    return make_error(errc::invalid_argument, "key: a Redis sink needs a key expression");
  if (spec.value.empty())
    return make_error(errc::invalid_argument, "value: a Redis sink needs a value expression");
  if (spec.batch_size == 0)
    return make_error(errc::invalid_argument, "batch_size: must be at least 1");
  bool hset = spec.command == redis_command::hset;
  bool zadd = spec.command == redis_command::zadd;
  if (hset && spec.field.empty())
    return make_error(errc::invalid_argument, "field: command \"hset\" needs a field expression");
  if (!hset && !spec.field.empty())
    return make_error(errc::invalid_argument,
                      "field: only command \"hset\" takes a field");
  if (zadd && spec.score.empty())
    return make_error(errc::invalid_argument, "score: command \"zadd\" needs a score expression");
  if (!zadd && !spec.score.empty())
    return make_error(errc::invalid_argument, "score: only command \"zadd\" takes a score");
  auto key = compile_key(spec.key, *input_schema, "key");
  if (!key)
    return key.error();
  auto val = compile_key(spec.value, *input_schema, "value");
  if (!val)
    return val.error();
  std::optional<expr::compiled_expression> field, score;
  if (hset) {
    auto f = compile_key(spec.field, *input_schema, "field");
    if (!f)
      return f.error();
    field = std::move(*f);
  }
  if (zadd) {
    auto s = compile_key(spec.score, *input_schema, "score");
    if (!s)
      return s.error();
    auto t = s->result_type();
    if (t != type_id::int64 && t != type_id::float64 && t != type_id::timestamp)
      return make_error(errc::type_error,
                        "score: must be a number or timestamp, got " + std::string(to_string(t)),
                        0);
    score = std::move(*s);
  }
  return stream_operator_ptr{std::make_unique<redis_sink>(
    spec, std::move(*key), std::move(field), std::move(*val), std::move(score))};
}

} // namespace weir
