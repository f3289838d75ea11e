// SPDX-License-Identifier: Apache-2.0
// The job manager's actor: a shell around `job_master` (job_master.hpp)
// that turns each message into one entry-point call and implements the
// master's environment with messages, requests and delayed sends.
#include "job_manager_actor.hpp"

#include "control_messages.hpp"
#include "job_master.hpp"
#include "state_writer_actor.hpp"
#include "task_actor.hpp"
#include "weir/core/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

namespace weir::runtime {

namespace {

class actor_environment;

struct job_manager_state {
  std::shared_ptr<job_context> ctx;
  /// This attempt's subtasks, by the job master's task number.
  std::vector<caf::actor> subtasks;
  /// Task number of each subtask of this attempt that has not ended.
  std::unordered_map<caf::actor_addr, std::uint32_t> task_of;
  caf::actor writer; ///< null when checkpoints are off
  std::unique_ptr<actor_environment> env;
  std::unique_ptr<job_master> master;
  bool done = false; ///< `job_master_environment::finished` was called
};

using jm_actor = caf::stateful_actor<job_manager_state>;

/// The job master's environment in the actor world: subtasks and the state
/// writer are actors, timers are delayed messages to itself.
class actor_environment final : public job_master_environment {
public:
  explicit actor_environment(jm_actor* self) : self_(self) {}

  std::chrono::milliseconds now() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  }

  void deploy(std::vector<subtask_deployment> tasks) override {
    auto& st = self_->state;
    st.subtasks.clear();
    st.task_of.clear();
    for (auto& d : tasks) {
      subtask_spec spec;
      spec.ctx = st.ctx;
      spec.vertex = d.vertex;
      spec.subtask = d.subtask;
      spec.task_index = d.task;
      spec.job_manager = caf::actor_cast<caf::actor>(self_);
      spec.state_writer = st.writer;
      spec.attempt = d.attempt;
      spec.restores = std::move(d.restores);
      spec.writers = std::move(d.writers);
      for (const auto& c : d.out_channels)
        spec.out_channels.push_back(out_channel_spec{st.subtasks.at(c.target_task),
                                                     c.target_channel});
      auto a = spawn_subtask(self_->system(), std::move(spec));
      self_->monitor(a);
      st.task_of[a.address()] = d.task;
      st.subtasks.push_back(a);
    }
  }

  void trigger_checkpoint(std::uint32_t task, std::uint64_t id, std::int64_t ts) override {
    self_->send(self_->state.subtasks[task], weir::trigger_checkpoint{id, ts});
  }

  void stop_source(std::uint32_t task, std::uint64_t id, std::int64_t ts) override {
    self_->send(self_->state.subtasks[task], weir::stop_source{id, ts});
  }

  void notify_checkpoint_complete(std::uint32_t task, std::uint64_t id) override {
    self_->send(self_->state.subtasks[task], weir::notify_checkpoint_complete{id});
  }

  void cancel_checkpoint(std::uint32_t task, std::uint64_t id) override {
    self_->send(self_->state.subtasks[task], weir::cancel_checkpoint{id});
  }

  void stop_subtask(std::uint32_t task, std::uint64_t keep_up_to) override {
    const auto& a = self_->state.subtasks[task];
    self_->send(a, abort_transactions{keep_up_to});
    self_->send_exit(a, caf::exit_reason::user_shutdown);
  }

  void query_state(std::uint32_t task, subtask_state_query q) override {
    self_->send(self_->state.subtasks[task], std::move(q));
  }

  void discard_checkpoint(std::uint64_t id) override {
    self_->send(self_->state.writer, discard_ckpt_atom::value, id);
  }

  void write_final_state(std::size_t attempt, write_snapshot_request req) override {
    auto self = self_;
    auto id = req.checkpoint_id;
    auto task = req.task;
    self->request(self->state.writer, caf::infinite, write_state_atom::value, std::move(req))
      .then(
        [self, attempt](write_snapshot_result& r) {
          self->state.master->on_final_state_written(attempt, std::move(r));
        },
        [self, id, task, attempt](caf::error& err) {
          write_snapshot_result r;
          r.checkpoint_id = id;
          r.task = task;
          r.error = "state writer: " + to_string(err);
          self->state.master->on_final_state_written(attempt, std::move(r));
        });
  }

  void commit_checkpoint(std::size_t attempt, checkpoint::snapshot_manifest m) override {
    auto self = self_;
    auto id = m.checkpoint_id;
    self->request(self->state.writer, caf::infinite, commit_ckpt_atom::value, std::move(m))
      .then(
        [self, id, attempt](commit_manifest_result& c) {
          self->state.master->on_checkpoint_committed(attempt, id, c);
        },
        [self, id, attempt](caf::error& err) {
          self->state.master->on_commit_unanswered(attempt, id, "state writer: " + to_string(err));
        });
  }

  void write_savepoint(savepoint_request req, checkpoint::snapshot_manifest m) override {
    auto self = self_;
    auto id = m.checkpoint_id;
    auto path = req.path;
    self->request(self->state.writer, caf::infinite, savepoint_atom::value, std::move(m), path)
      .then(
        [self, req, id](savepoint_write_result& r) {
          self->state.master->on_savepoint_written(req, id, r);
        },
        [reply = req.reply](caf::error& err) {
          reply->set(make_error(errc::io_error, "state writer: " + to_string(err)));
        });
  }

  void drain_state_writer(drain_purpose p) override {
    auto self = self_;
    auto then = [self, p] { self->state.master->on_state_writer_drained(p); };
    self->request(self->state.writer, caf::infinite, drain_atom::value)
      .then([then](drain_atom) { then(); }, [then](caf::error&) { then(); });
  }

  void schedule(job_master_timer t, std::chrono::milliseconds delay) override {
    switch (t) {
      case job_master_timer::status_tick:
        self_->delayed_send(self_, delay, tick_atom::value);
        break;
      case job_master_timer::checkpoint:
        self_->delayed_send(self_, delay, checkpoint_atom::value);
        break;
      case job_master_timer::stop_retry:
        self_->delayed_send(self_, delay, stop_atom::value);
        break;
      case job_master_timer::redeploy:
        self_->delayed_send(self_, delay, redeploy_atom::value);
        break;
    }
  }

  void retry_savepoint(savepoint_request r, std::chrono::milliseconds delay) override {
    self_->delayed_send(self_, delay, std::move(r));
  }

  void finished() override {
    auto& st = self_->state;
    st.done = true;
    if (st.writer)
      self_->send_exit(st.writer, caf::exit_reason::user_shutdown);
    self_->quit();
  }

private:
  jm_actor* self_;
};

caf::behavior job_manager(jm_actor* self, std::shared_ptr<job_context> ctx) {
  auto& st0 = self->state;
  st0.ctx = std::move(ctx);
  if (st0.ctx->store) {
    st0.writer = spawn_state_writer(self->system(), st0.ctx->store,
                                    st0.ctx->graph->options.name, st0.ctx->remote);
    self->monitor(st0.writer);
  }
  st0.env = std::make_unique<actor_environment>(self);
  st0.master = std::make_unique<job_master>(st0.ctx, *st0.env);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.writer.address()) {
      st.master->on_state_writer_down(!dm.reason, self->system().render(dm.reason));
      return;
    }
    auto it = st.task_of.find(dm.source);
    if (it == st.task_of.end())
      return; // a subtask of an earlier attempt
    auto task = it->second;
    st.task_of.erase(it);
    std::optional<std::string> error;
    if (dm.reason)
      error = self->system().render(dm.reason);
    st.master->on_subtask_ended(task, std::move(error));
  });
  st0.master->start();
  if (st0.done)
    return {};
  return {
    [self](tick_atom) { self->state.master->on_status_tick(); },
    [self](checkpoint_atom) { self->state.master->on_checkpoint_timer(); },
    [self](write_snapshot_result& r) { self->state.master->on_acknowledge(std::move(r)); },
    [self](task_final_state& f) {
      auto& st = self->state;
      auto task = f.request.task;
      if (task >= st.subtasks.size() || self->current_sender() != st.subtasks[task].address())
        return; // a subtask of an earlier attempt
      st.master->on_final_state(std::move(f));
    },
    [self](const discard_result& r) { self->state.master->on_discard_result(r); },
    [self](const decline_checkpoint& d) {
      self->state.master->on_decline(d.checkpoint_id, d.task, d.reason);
    },
    [self](stop_atom) { self->state.master->on_stop(); },
    [self](cancel_job_atom) { self->state.master->on_cancel(); },
    [self](state_query& q) { self->state.master->on_state_query(std::move(q)); },
    [self](savepoint_request& r) { self->state.master->on_savepoint_request(std::move(r)); },
    [self](redeploy_atom) { self->state.master->on_redeploy_timer(); },
  };
}

} // namespace

caf::actor spawn_job_manager(caf::actor_system& sys, std::shared_ptr<job_context> ctx) {
  // Detached (its own thread): status lines and checkpoint triggers stay on
  // time even when every scheduler worker is busy in an operator (a
  // throttled sink sleeps).
  return sys.spawn<caf::detached>(job_manager, std::move(ctx));
}

} // namespace weir::runtime
