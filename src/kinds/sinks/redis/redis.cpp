// SPDX-License-Identifier: Apache-2.0
// `type = "redis"` sink: SET, HSET or ZADD per row, key / field / value /
// score as expressions, pipelined and flushed at every checkpoint barrier
// (at-least-once delivery, idempotent effect: README.md here). Its keys,
// `redis::add_sink` (`data_stream::sink_to`), and the runtime (redis_sink.cpp, declared in
// weir/redis/sink.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/redis/sink.hpp"
#include "weir/expr/expression.hpp"

#include <memory>
#include <stdexcept>
#include <string>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list redis_commands = {"set", "hset", "zadd"};

struct redis_sink_def : kind_spec {
  redis::sink redis;
  const toml::node* command_node = nullptr;
  std::vector<std::pair<std::string, located>> exprs; ///< key name, text and node
};
} // namespace

kind_descriptor describe_sinks_redis() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "redis";
  d.keys = {
    {"command", "string", true, "", "set | hset | zadd: the command each row becomes"},
    {"key", "expression", true, "", "the Redis key of each row"},
    {"field", "expression", false, "", "hset only (required): the hash field"},
    {"value", "expression", true, "", "the value (set, hset) or member (zadd)"},
    {"score", "expression", false, "", "zadd only (required): the member's score, a number"},
    {"host", "string", false, "\"127.0.0.1\"", "the Redis server"},
    {"port", "integer", false, "6379", "its port"},
    {"db", "integer", false, "0", "the database number (SELECT)"},
    {"username", "string", false, "", "AUTH username (Redis 6 ACLs), with password"},
    {"password", "string", false, "", "AUTH password; absent: no AUTH"},
    {"timeout", "duration", false, "\"5s\"", "connect and reply timeout"},
    {"batch_size", "integer", false, "1000", "commands per pipelined flush"},
    {"flush_interval", "duration", false, "\"1s\"",
     "buffered commands reach Redis at least this often"},
    {"max_attempts", "integer", false, "6",
     "connection attempts (backoff 100 ms doubling to 5 s) before the job fails"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<redis_sink_def>();
    auto& r = s->redis;
    if (auto v = c.hard.choice("command", redis_commands, true)) {
      s->command_node = v->node;
      r.command = v->value == "hset"   ? redis_command::hset
                  : v->value == "zadd" ? redis_command::zadd
                                       : redis_command::set;
    }
    for (const char* k : {"key", "field", "value", "score"}) {
      bool required = std::string_view{k} == "key" || std::string_view{k} == "value";
      if (auto v = c.hard.string(k, required && c.keys_required, true)) {
        s->exprs.emplace_back(k, *v);
        std::string_view kk{k};
        (kk == "key" ? r.key : kk == "field" ? r.field : kk == "value" ? r.value : r.score) =
          v->value;
      }
    }
    if (auto v = c.hard.string("host", false, true))
      r.host = v->value;
    if (auto v = c.hard.integer("port", 1, 65535))
      r.port = static_cast<std::uint16_t>(*v);
    if (auto v = c.hard.integer("db", 0, 1 << 20))
      r.db = *v;
    if (auto v = c.hard.string("username", false, true))
      r.username = v->value;
    if (auto v = c.hard.string("password", false, false))
      r.password = v->value;
    if (auto v = c.soft.duration("timeout", reader::sign::positive))
      r.timeout = *v;
    if (auto v = c.hard.integer("batch_size", 1, 1 << 24))
      r.batch_size = static_cast<std::size_t>(*v);
    if (auto v = c.soft.duration("flush_interval"))
      r.flush_interval = *v;
    if (auto v = c.hard.integer("max_attempts", 1, 1000))
      r.max_attempts = static_cast<std::size_t>(*v);
    if (!r.username.empty() && r.password.empty())
      c.hard.fail(pos_of(*c.hard.get("username")), "username needs a password");
    bool hset = r.command == redis_command::hset, zadd = r.command == redis_command::zadd;
    auto* cmd = c.hard.get("command");
    if (cmd && cmd->as_string()) {
      if (hset && r.field.empty())
        c.hard.fail(pos_of(*cmd), "command \"hset\" needs 'field' (the hash field expression)");
      if (zadd && r.score.empty())
        c.hard.fail(pos_of(*cmd), "command \"zadd\" needs 'score' (the member's score)");
      if (!hset && !r.field.empty())
        c.hard.fail(pos_of(*c.hard.get("field")), "'field' applies to command \"hset\" only");
      if (!zadd && !r.score.empty())
        c.hard.fail(pos_of(*c.hard.get("score")), "'score' applies to command \"zadd\" only");
    }
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<redis_sink_def>(ks);
    const auto& in = *c.inputs.front().output_schema();
    bool ok = true;
    for (const auto& [k, v] : s.exprs) {
      auto e = expr::compile(v.value, in);
      if (!e) {
        c.report_api(v.node, k, e.error());
        ok = false;
      } else if (k == "score") {
        auto t = e->result_type();
        if (t != type_id::int64 && t != type_id::float64 && t != type_id::timestamp) {
          c.report_api(v.node, k,
                       make_error(errc::type_error,
                                  "must be a number or timestamp, got "
                                    + std::string(to_string(t)),
                                  0));
          ok = false;
        }
      }
    }
    if (!ok)
      return;
    auto r = c.inputs.front().sink_to(s.redis, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`).
expected<std::monostate> redis::add_sink(const data_stream& in, sink spec,
                                         operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  // Checked now for the caller, and again when each subtask's sink is made.
  auto probe = make_redis_sink(spec, in.output_schema());
  if (!probe)
    return probe.error();
  auto factory = [spec, schema = in.output_schema()]() -> stream_operator_ptr {
    auto op = make_redis_sink(spec, schema);
    if (!op)
      throw std::runtime_error(op.error().message);
    return std::move(*op);
  };
  auto id = internal::add_operator_node(graph, opts, {"redis_sink", nullptr, factory, true},
                                        {input});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace weir
