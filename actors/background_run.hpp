// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "job_context.hpp"
#include "weir/api/job.hpp"
#include "weir/api/running_job.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace weir::runtime {

/// What a `running_job` handle shares with the thread running its job:
/// the execution's context once it exists, the cancel hook into the actor
/// system, and the result once the job has ended. Thread-safe.
struct background_run {
  explicit background_run(job j) : owner(std::move(j)) {}

  job owner; ///< shares the graph and the stop request with the caller's job
  std::int64_t start_ms = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::thread thread;

  mutable std::mutex mutex;
  std::condition_variable ended_cv; ///< the context is attached, or the job ended
  std::shared_ptr<job_context> ctx; ///< set once the execution has one
  std::optional<job_result> result;
  std::chrono::steady_clock::time_point ended;
  bool cancel_requested = false;
  std::function<void()> cancel_hook;

  /// `execute` made its context.
  void attach_context(std::shared_ptr<job_context> c) {
    {
      std::lock_guard lock{mutex};
      ctx = std::move(c);
    }
    ended_cv.notify_all();
  }

  /// `execute` runs: `hook` delivers a cancel (at once if one was asked).
  void attach_cancel(std::function<void()> hook) {
    std::lock_guard lock{mutex};
    cancel_hook = std::move(hook);
    if (cancel_requested)
      cancel_hook();
  }

  void detach_cancel() {
    std::lock_guard lock{mutex};
    cancel_hook = nullptr;
  }

  void request_cancel() {
    std::lock_guard lock{mutex};
    cancel_requested = true;
    if (cancel_hook)
      cancel_hook();
  }

  void finish(job_result r) {
    {
      std::lock_guard lock{mutex};
      result = std::move(r);
      ended = std::chrono::steady_clock::now();
    }
    ended_cv.notify_all();
  }
};

} // namespace weir::runtime
