// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <mutex>

namespace weir::runtime {

/// A graceful stop asked of a job from any thread (`job::stop`), and how
/// `job::execute` hears of it. Thread-safe; not async-signal-safe (a signal
/// handler wakes a thread that calls `request`, see actors/main.cpp).
class stop_request {
public:
  /// Asks for the stop: calls the attached hook, or remembers it for the
  /// next `attach`.
  void request() {
    std::lock_guard<std::mutex> guard{mutex_};
    requested_ = true;
    if (hook_)
      hook_();
  }

  bool requested() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return requested_;
  }

  /// `execute` runs: `hook` delivers a stop to it (at once if one was asked
  /// for already). The hook runs under the lock, so `detach` waits for it.
  void attach(std::function<void()> hook) {
    std::lock_guard<std::mutex> guard{mutex_};
    hook_ = std::move(hook);
    if (requested_)
      hook_();
  }

  /// `execute` has ended: forgets the hook and the request.
  void detach() {
    std::lock_guard<std::mutex> guard{mutex_};
    hook_ = nullptr;
    requested_ = false;
  }

private:
  mutable std::mutex mutex_;
  bool requested_ = false;
  std::function<void()> hook_;
};

} // namespace weir::runtime
