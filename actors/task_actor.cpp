// SPDX-License-Identifier: Apache-2.0
#include "task_actor.hpp"

#include "control_messages.hpp"
#include "state_writer_actor.hpp"

#include "weir/core/log.hpp"
#include "weir/core/messages.hpp"
#include "weir/core/unrecoverable_error.hpp"
#include "weir/runtime/subtask.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/logger.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace weir::runtime {

namespace {

subtask_config config_of(const subtask_spec& spec) {
  auto& ctx = *spec.ctx;
  subtask_config c;
  c.graph = ctx.graph.get();
  c.plan = &ctx.plan;
  c.metrics = &ctx.metrics;
  c.dead_letters = ctx.dead_letters.get();
  c.vertex = spec.vertex;
  c.subtask = spec.subtask;
  c.task_index = spec.task_index;
  c.credits_per_channel = ctx.credits_per_channel;
  c.replay_clock = ctx.replay_clock();
  c.attempt = spec.attempt;
  c.writers = spec.writers;
  c.out_channels = spec.out_channels.size();
  c.restores = spec.restores;
  return c;
}

/// The CAF shell of one subtask: turns messages into calls on a
/// `runtime::subtask` and its requests (`subtask_environment`) into messages.
class task_shell final : public subtask_environment {
public:
  task_shell(caf::event_based_actor* self, subtask_spec spec)
    : self_(self),
      spec_(std::move(spec)),
      senders_(spec_.ctx->plan.input_channels[spec_.vertex]),
      subtask_(config_of(spec_), *this) {
  }

  /// Runs `f` on the subtask; an exception fails the subtask. Then re-arms
  /// the wall-clock timer wake-up.
  template <class F>
  void guarded(F&& f) {
    try {
      f(subtask_);
      subtask_.schedule_wakeup();
    } catch (const unrecoverable_error& e) {
      spec_.ctx->mark_unrecoverable();
      fail(e.what());
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail("unknown exception");
    }
  }

  /// The job manager stops this subtask for a failure, a cancel or a
  /// restart: its two-phase-commit sinks roll back what no completed
  /// checkpoint holds. A failure here is logged, not raised: the job fails
  /// already, and the next run's restore rolls back what is left.
  void abort_transactions(std::uint64_t keep_up_to) {
    try {
      subtask_.on_abort_transactions(keep_up_to);
    } catch (const std::exception& e) {
      log::runtime().warn("{}", subtask_.failure_message(
                                  std::string{"rolling back its transactions: "} + e.what()));
    }
  }

  void fail(const std::string& what) {
    auto msg = subtask_.failure_message(what);
    auto& chain = subtask_.chain();
    spec_.ctx->fail(msg, chain.node(chain.current()).name, spec_.subtask);
    self_->quit(caf::make_error(caf::sec::runtime_error, msg));
  }

  /// A batch: remembers where its credit goes back to.
  void on_batch(batch_message& m) {
    auto& s = senders_[m.channel];
    if (!s.first)
      s = {caf::actor_cast<caf::actor>(self_->current_sender()), m.credit_channel};
    guarded([&](subtask& st) {
      st.on_input(input_element{element_kind::batch, m.channel, std::move(m.batch), 0});
    });
  }

  /// A state query for a key of this subtask, answered between two
  /// messages: consistent for the key (docs/operations/server.md). A query that throws
  /// is answered with the error; it never fails the subtask.
  void answer(subtask_state_query& q) {
    try {
      auto& chain = subtask_.chain();
      auto state = chain.query_state(q.member, q.encoded_key);
      if (!state) {
        q.reply->set(make_error(errc::invalid_argument, "operator '" + q.result.operator_name
                                                          + "' has no queryable keyed state"));
        return;
      }
      q.result.state = std::move(*state);
      q.result.found = q.result.state != "null";
      q.result.watermark = chain.metrics(q.member).watermark.load(std::memory_order_relaxed);
      q.result.checkpoint_id =
        std::max(q.result.checkpoint_id, subtask_.last_completed_checkpoint());
      q.reply->set(std::move(q.result));
    } catch (const std::exception& e) {
      q.reply->set(make_error(errc::runtime_error, e.what()));
    }
  }

  // -- subtask_environment ------------------------------------------------------

  void send(std::uint32_t ch, const output_element& e) override {
    const auto& c = spec_.out_channels[ch];
    switch (e.kind) {
      case element_kind::batch:
        self_->send(c.target, batch_message{c.target_channel, ch, e.data});
        break;
      case element_kind::watermark:
        self_->send(c.target, watermark{c.target_channel, e.ts});
        break;
      case element_kind::end_of_input:
        self_->send(c.target, end_of_input{c.target_channel, e.drain});
        break;
      case element_kind::idle:
      case element_kind::active:
        self_->send(c.target, watermark_status{c.target_channel, e.kind == element_kind::idle});
        break;
      case element_kind::processing_time:
        self_->send(c.target, processing_time{c.target_channel, e.ts});
        break;
      case element_kind::barrier:
        self_->send(c.target, checkpoint_barrier{c.target_channel, e.checkpoint_id, e.ts});
        break;
    }
  }

  void return_credit(std::uint32_t channel) override {
    const auto& s = senders_[channel];
    self_->send(s.first, credit{s.second, 1});
  }

  void write_snapshot(write_snapshot_request req) override {
    auto jm = spec_.job_manager;
    auto n = req.checkpoint_id;
    auto task = spec_.task_index;
    self_->request(spec_.state_writer, caf::infinite, write_state_atom::value, std::move(req))
      .then(
        [this, jm](write_snapshot_result& r) {
          // Failed or not, the job manager gets the result: a failed write
          // declines the checkpoint and counts as a failed checkpoint
          // ([checkpoint] tolerable_failures).
          self_->send(jm, std::move(r));
          guarded([](subtask& st) { st.on_snapshot_written(); });
        },
        [this, jm, n, task](caf::error& err) {
          write_snapshot_result r;
          r.checkpoint_id = n;
          r.task = task;
          r.error = "state writer: " + to_string(err);
          self_->send(jm, std::move(r));
          guarded([](subtask& st) { st.on_snapshot_written(); });
        });
  }

  void decline_checkpoint(std::uint64_t id, std::string reason) override {
    self_->send(spec_.job_manager,
                weir::decline_checkpoint{id, spec_.task_index, std::move(reason)});
  }

  void request_poll(std::chrono::nanoseconds delay) override {
    if (delay.count() > 0)
      self_->delayed_send(self_, std::chrono::duration_cast<std::chrono::microseconds>(delay),
                          poll_atom::value);
    else
      self_->send(self_, poll_atom::value);
  }

  void request_wakeup(std::chrono::milliseconds delay) override {
    self_->delayed_send(self_, delay, wake_atom::value);
  }

  void final_state(write_snapshot_request req) override {
    self_->send(spec_.job_manager, task_final_state{std::move(req)});
  }

  void finished() override { self_->quit(); }

private:
  caf::event_based_actor* self_;
  subtask_spec spec_;
  /// Per input channel: the sender and its output channel (credits).
  std::vector<std::pair<caf::actor, std::uint32_t>> senders_;
  subtask subtask_;
};

caf::behavior subtask_actor(caf::event_based_actor* self, subtask_spec spec) {
  auto sh = std::make_shared<task_shell>(self, std::move(spec));
  self->set_default_handler([sh](caf::scheduled_actor*, caf::message_view& x)
                              -> caf::result<caf::message> {
    sh->fail("unexpected message: " + to_string(x.copy_content_to_message()));
    return caf::message{};
  });
  sh->guarded([](subtask& st) { st.open(); });
  auto input = [sh](element_kind kind, std::uint32_t channel, event_time ts,
                    std::uint64_t id = 0) {
    sh->guarded([&](subtask& st) { st.on_input(input_element{kind, channel, nullptr, ts, id}); });
  };
  using ek = element_kind;
  return {
    [sh](poll_atom) { sh->guarded([](subtask& st) { st.on_poll(); }); },
    [sh](wake_atom) { sh->guarded([](subtask& st) { st.on_wake(); }); },
    [sh](batch_message& m) { sh->on_batch(m); },
    [input](const watermark& m) { input(ek::watermark, m.channel, m.ts); },
    [input](const watermark_status& m) {
      input(m.idle ? ek::idle : ek::active, m.channel, 0);
    },
    [input](const processing_time& m) { input(ek::processing_time, m.channel, m.ts); },
    [sh](const end_of_input& m) {
      sh->guarded([&](subtask& st) {
        st.on_input(input_element{ek::end_of_input, m.channel, nullptr, 0, 0, m.drain});
      });
    },
    [sh](const stop_source& m) {
      sh->guarded([&](subtask& st) { st.on_stop(m.checkpoint_id, m.timestamp); });
    },
    [input](const checkpoint_barrier& m) {
      input(ek::barrier, m.channel, m.timestamp, m.checkpoint_id);
    },
    [sh](const trigger_checkpoint& m) {
      sh->guarded([&](subtask& st) { st.on_trigger(m.checkpoint_id, m.timestamp); });
    },
    [sh](const notify_checkpoint_complete& m) {
      sh->guarded([&](subtask& st) { st.on_notify_complete(m.checkpoint_id); });
    },
    [sh](const abort_transactions& m) { sh->abort_transactions(m.keep_up_to); },
    [sh](const cancel_checkpoint& m) {
      sh->guarded([&](subtask& st) { st.on_cancel(m.checkpoint_id); });
    },
    [sh](subtask_state_query& q) { sh->answer(q); },
    [sh](const credit& m) {
      sh->guarded([&](subtask& st) { st.on_credit(m.channel, m.batches); });
    },
  };
}

} // namespace

caf::actor spawn_subtask(caf::actor_system& sys, subtask_spec spec) {
  return sys.spawn(subtask_actor, std::move(spec));
}

} // namespace weir::runtime
