// SPDX-License-Identifier: Apache-2.0
#include "job_manager_actor.hpp"

#include "task_actor.hpp"
#include "weir/core/messages.hpp"
#include "weir/core/timestamp.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/system_messages.hpp>

#include <chrono>
#include <cstdio>
#include <unordered_set>

namespace weir::runtime {

std::string format_event_time(event_time ts) {
  if (ts == min_watermark)
    return "-inf";
  if (ts == max_watermark)
    return "+inf";
  return format_iso8601(ts);
}

std::string format_status(const job_context& ctx, const job_totals& now,
                          const job_totals& before, double seconds) {
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now()
                                               - ctx.started)
                   .count();
  auto rate = [&](std::uint64_t a, std::uint64_t b) {
    return seconds > 0 ? static_cast<double>(a - b) / seconds : 0.0;
  };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "[%s] %.1fs | in %.0f rec/s (%llu) | out %.0f rec/s (%llu) | "
                "watermark %s | bad %llu | late %llu | checkpoint none",
                ctx.graph->options.name.c_str(), elapsed,
                rate(now.records_read, before.records_read),
                static_cast<unsigned long long>(now.records_read),
                rate(now.records_written, before.records_written),
                static_cast<unsigned long long>(now.records_written),
                format_event_time(now.sink_watermark).c_str(),
                static_cast<unsigned long long>(now.bad_records),
                static_cast<unsigned long long>(now.late_records));
  return buf;
}

namespace {

struct job_manager_state {
  std::shared_ptr<job_context> ctx;
  std::vector<caf::actor> subtasks;
  std::unordered_set<caf::actor_addr> running;
  job_totals last;
  std::chrono::steady_clock::time_point last_tick;
  bool failed = false;
};

void deploy(caf::stateful_actor<job_manager_state>* self) {
  auto& st = self->state;
  const auto& g = *st.ctx->graph;
  const auto& plan = st.ctx->plan;
  std::vector<std::vector<caf::actor>> actors(plan.vertices.size());
  // Downstream first: a subtask needs the handles of its targets.
  for (auto it = plan.topo_order.rbegin(); it != plan.topo_order.rend(); ++it) {
    auto v = *it;
    const auto& vertex = plan.vertices[v];
    for (std::size_t s = 0; s < vertex.parallelism; ++s) {
      subtask_spec spec;
      spec.ctx = st.ctx;
      spec.vertex = v;
      spec.subtask = s;
      for (std::size_t k = 0; k < vertex.nodes.size(); ++k) {
        for (std::size_t e = 0; e < g.edges.size(); ++e) {
          const auto& edge = g.edges[e];
          if (edge.source != vertex.nodes[k] || plan.edge_is_chained[e])
            continue;
          auto tv = plan.vertex_of_node[edge.target];
          const auto& targets = actors[tv];
          writer_spec w;
          w.chain_index = k;
          w.port = edge.port;
          w.mode = edge.mode;
          w.key_fields = edge.key_fields;
          w.target_parallelism = targets.size();
          auto add = [&](std::size_t d) {
            w.channels.push_back(static_cast<std::uint32_t>(spec.out_channels.size()));
            spec.out_channels.push_back(out_channel_spec{
              targets[d], static_cast<std::uint32_t>(plan.channel_of(g, e, s))});
          };
          if (edge.mode == partitioning::forward)
            add(s);
          else
            for (std::size_t d = 0; d < targets.size(); ++d)
              add(d);
          spec.writers.push_back(std::move(w));
        }
      }
      auto a = spawn_subtask(self->system(), std::move(spec));
      self->monitor(a);
      st.running.insert(a.address());
      st.subtasks.push_back(a);
      actors[v].push_back(a);
    }
  }
}

caf::behavior job_manager(caf::stateful_actor<job_manager_state>* self,
                          std::shared_ptr<job_context> ctx) {
  self->state.ctx = std::move(ctx);
  self->state.last_tick = std::chrono::steady_clock::now();
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    st.running.erase(dm.source);
    if (dm.reason && !st.failed) {
      st.failed = true;
      if (!st.ctx->failure())
        st.ctx->fail("a subtask stopped: " + self->system().render(dm.reason));
      for (auto& a : st.subtasks)
        self->send_exit(a, caf::exit_reason::user_shutdown);
    }
    if (st.running.empty())
      self->quit();
  });
  deploy(self);
  auto interval = self->state.ctx->graph->options.status_interval;
  if (interval.count() > 0)
    self->delayed_send(self, interval, tick_atom::value);
  return {
    [self, interval](tick_atom) {
      auto& st = self->state;
      auto now = std::chrono::steady_clock::now();
      auto totals = st.ctx->metrics.totals();
      auto secs = std::chrono::duration<double>(now - st.last_tick).count();
      auto line = format_status(*st.ctx, totals, st.last, secs);
      std::fprintf(stderr, "%s\n", line.c_str());
      st.last = totals;
      st.last_tick = now;
      self->delayed_send(self, interval, tick_atom::value);
    },
  };
}

} // namespace

caf::actor spawn_job_manager(caf::actor_system& sys, std::shared_ptr<job_context> ctx) {
  return sys.spawn(job_manager, std::move(ctx));
}

} // namespace weir::runtime
