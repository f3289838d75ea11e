// SPDX-License-Identifier: Apache-2.0
// job::start and the running_job handle: a job on a thread of its own,
// watched through its job_context while it runs.
#include "weir/api/running_job.hpp"

#include "job_context.hpp"
#include "background_run.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/stop_request.hpp"

#include <exception>

namespace weir {

const char* to_string(job_state s) noexcept {
  switch (s) {
    case job_state::created:
      return "CREATED";
    case job_state::running:
      return "RUNNING";
    case job_state::restarting:
      return "RESTARTING";
    case job_state::finished:
      return "FINISHED";
    case job_state::stopped:
      return "STOPPED";
    case job_state::failed:
      return "FAILED";
    case job_state::canceled:
      return "CANCELED";
  }
  return "UNKNOWN";
}

bool is_terminal(job_state s) noexcept {
  return s == job_state::finished || s == job_state::stopped || s == job_state::failed
         || s == job_state::canceled;
}

const char* to_string(checkpoint_record::status_kind s) noexcept {
  switch (s) {
    case checkpoint_record::status_kind::in_progress:
      return "IN_PROGRESS";
    case checkpoint_record::status_kind::completed:
      return "COMPLETED";
    case checkpoint_record::status_kind::failed:
      return "FAILED";
  }
  return "UNKNOWN";
}

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

job_state terminal_state(const job_result& r, bool canceled) {
  if (canceled && !r.ok)
    return job_state::canceled;
  if (!r.ok)
    return job_state::failed;
  return r.stopped ? job_state::stopped : job_state::finished;
}

} // namespace

running_job job::start() {
  auto control = std::make_shared<runtime::background_run>(*this);
  control->start_ms = wall_ms();
  auto* c = control.get();
  // The thread holds the control alive until the job has ended; the handle
  // joins it (or detaches it once moved-from handles are gone).
  control->thread = std::thread{[c] {
    job_result r;
    try {
      r = c->owner.execute_with(c);
    } catch (const std::exception& e) {
      r.ok = false;
      r.error = e.what();
    }
    c->finish(std::move(r));
  }};
  return running_job{std::move(control)};
}

running_job::running_job(std::shared_ptr<runtime::background_run> c) : control_(std::move(c)) {}
running_job::running_job(running_job&&) noexcept = default;

running_job& running_job::operator=(running_job&& other) noexcept {
  if (this != &other) {
    if (control_) {
      control_->request_cancel();
      if (control_->thread.joinable())
        control_->thread.join();
    }
    control_ = std::move(other.control_);
  }
  return *this;
}

running_job::~running_job() {
  if (!control_)
    return;
  if (control_->thread.joinable()) {
    bool over = false;
    {
      std::lock_guard lock{control_->mutex};
      over = control_->result.has_value();
    }
    if (!over)
      control_->request_cancel();
    control_->thread.join();
  }
}

job_state running_job::state() const {
  std::lock_guard lock{control_->mutex};
  if (control_->result)
    return terminal_state(*control_->result, control_->cancel_requested);
  if (!control_->ctx)
    return job_state::created;
  return control_->ctx->journal.state();
}

job_status running_job::status() const {
  job_status out;
  std::shared_ptr<runtime::job_context> ctx;
  const auto& graph = *control_->owner.graph();
  {
    std::lock_guard lock{control_->mutex};
    ctx = control_->ctx;
    if (control_->result) {
      out.result = control_->result;
      out.state = terminal_state(*control_->result, control_->cancel_requested);
      out.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          control_->ended - control_->started)
                          .count();
    } else {
      out.state = ctx ? ctx->journal.state() : job_state::created;
      out.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - control_->started)
                          .count();
    }
  }
  out.name = graph.options.name;
  out.start_ms = control_->start_ms;
  out.checkpointing = graph.options.checkpoint.enabled;
  const auto r = std::memory_order_relaxed;
  for (const auto& node : graph.nodes) {
    operator_status op;
    op.name = node.name;
    op.kind = node.kind;
    op.parallelism = node.parallelism;
    op.is_source = node.is_source;
    op.is_sink = node.is_sink;
    for (std::size_t s = 0; s < node.parallelism; ++s) {
      subtask_status st;
      st.subtask = s;
      if (ctx) {
        const auto& m = ctx->metrics.at(node.id, s);
        st.records_in = m.records_in.load(r);
        st.records_out = m.records_out.load(r);
        st.bytes_in = m.bytes_in.load(r);
        st.bytes_out = m.bytes_out.load(r);
        st.late_records = m.late_records.load(r);
        st.bad_records = m.bad_records.load(r);
        st.backpressured_ms = m.backpressured_ns.load(r) / 1'000'000;
        auto wm = m.watermark.load(r);
        if (wm != min_watermark)
          st.watermark = wm;
        st.state_bytes = m.state_bytes.load(r);
        if (auto lag = m.source_lag.load(r); lag >= 0)
          st.source_lag = lag;
      }
      op.subtasks.push_back(std::move(st));
    }
    out.operators.push_back(std::move(op));
  }
  for (const auto& e : graph.edges)
    if (e.target < out.operators.size())
      out.operators[e.target].inputs.push_back(graph.nodes[e.source].name);
  if (ctx) {
    ctx->journal.copy_to(out);
    out.restarts = out.result ? out.result->restarts : ctx->result.restarts;
  }
  return out;
}

void running_job::stop() { control_->owner.stop(); }

void running_job::cancel() { control_->request_cancel(); }

job_result running_job::wait() {
  std::unique_lock lock{control_->mutex};
  control_->ended_cv.wait(lock, [&] { return control_->result.has_value(); });
  return *control_->result;
}

std::optional<job_result> running_job::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock{control_->mutex};
  if (!control_->ended_cv.wait_for(lock, timeout, [&] { return control_->result.has_value(); }))
    return std::nullopt;
  return *control_->result;
}

namespace {

const runtime::stream_node* find_sink(const runtime::job_graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n.is_sink && n.name == name)
      return &n;
  return nullptr;
}

} // namespace

std::optional<std::uint64_t>
running_job::subscribe_sink(const std::string& sink,
                            std::function<void(const record_batch_ptr&, std::size_t,
                                               std::uint64_t)> on_batch) {
  const auto* node = find_sink(*control_->owner.graph(), sink);
  if (!node)
    return std::nullopt;
  std::shared_ptr<runtime::job_context> ctx;
  {
    // The context exists from shortly after `start` on; a subscription
    // before that waits for it (it is made before anything runs).
    std::unique_lock lock{control_->mutex};
    control_->ended_cv.wait_for(lock, std::chrono::seconds{10}, [&] {
      return control_->ctx != nullptr || control_->result.has_value();
    });
    ctx = control_->ctx;
  }
  if (!ctx)
    return std::nullopt;
  return ctx->metrics.tap(node->id).subscribe(std::move(on_batch));
}

void running_job::unsubscribe_sink(const std::string& sink, std::uint64_t id) {
  const auto* node = find_sink(*control_->owner.graph(), sink);
  std::shared_ptr<runtime::job_context> ctx;
  {
    std::lock_guard lock{control_->mutex};
    ctx = control_->ctx;
  }
  if (node && ctx)
    ctx->metrics.tap(node->id).unsubscribe(id);
}

schema_ptr running_job::sink_schema(const std::string& sink) const {
  const auto& g = *control_->owner.graph();
  const auto* node = find_sink(g, sink);
  if (!node)
    return nullptr;
  for (const auto& e : g.edges)
    if (e.target == node->id)
      return g.nodes[e.source].outputs[e.port].schema;
  return nullptr;
}

} // namespace weir
