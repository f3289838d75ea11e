// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace weir::runtime {

/// A one-shot answer to a request that crosses mailboxes: set once with
/// `set`; if every copy of the owning `shared_ptr` goes without one (the
/// job ended and its mailboxes were dropped with the request in them), the
/// future gets `errc::runtime_error` "the job is not running" instead of
/// waiting forever. Thread-safe.
template <class T>
class reply_slot {
public:
  reply_slot() = default;
  reply_slot(const reply_slot&) = delete;
  reply_slot& operator=(const reply_slot&) = delete;
  ~reply_slot() { set(make_error(errc::runtime_error, "the job is not running")); }

  std::future<expected<T>> future() { return promise_.get_future(); }

  /// Sets the answer; later calls do nothing.
  void set(expected<T> answer) {
    std::lock_guard lock{mutex_};
    if (done_)
      return;
    done_ = true;
    promise_.set_value(std::move(answer));
  }

private:
  std::mutex mutex_;
  bool done_ = false;
  std::promise<expected<T>> promise_;
};

template <class T>
using reply_ptr = std::shared_ptr<reply_slot<T>>;

/// `job::query_state`: the key's state in one operator.
struct state_query {
  std::string operator_name;
  std::vector<std::string> key; ///< one text per key field, in key_by order
  reply_ptr<state_query_result> reply;
};

/// `job::trigger_savepoint` and `job::stop_with_savepoint`.
struct savepoint_request {
  std::string path;
  bool stop = false; ///< stop the job once the savepoint is taken
  reply_ptr<savepoint_result> reply;
};

/// How the public `job` reaches its running `execute()` (as `stop_request`
/// does for `job::stop`): `execute` attaches hooks that post requests to
/// the job manager's mailbox, and detaches them before it returns. A
/// request made before the first `execute()` has attached waits for it (a
/// host may start `execute()` on a thread and query at once); one made
/// after an `execute()` has ended, and before the next attaches, is
/// answered at once with `errc::runtime_error` "the job is not running".
/// Thread-safe.
class job_control {
public:
  struct hooks {
    std::function<void(state_query)> query;
    std::function<void(savepoint_request)> savepoint;
  };

  /// `execute` runs: posts the requests that waited, then every new one.
  void attach(hooks h) {
    std::lock_guard guard{mutex_};
    hooks_ = std::move(h);
    started_ = true;
    for (auto& q : waiting_queries_)
      hooks_.query(std::move(q));
    for (auto& r : waiting_savepoints_)
      hooks_.savepoint(std::move(r));
    waiting_queries_.clear();
    waiting_savepoints_.clear();
  }

  void detach() {
    std::lock_guard guard{mutex_};
    hooks_ = {};
  }

  /// Posts `q` to the running job (the hook only sends a message, so it runs
  /// under the lock: `detach` waits for it).
  void query(state_query q) {
    std::unique_lock guard{mutex_};
    if (hooks_.query) {
      hooks_.query(std::move(q));
      return;
    }
    if (!started_) {
      waiting_queries_.push_back(std::move(q));
      return;
    }
    guard.unlock();
    q.reply->set(not_running());
  }

  void savepoint(savepoint_request r) {
    std::unique_lock guard{mutex_};
    if (hooks_.savepoint) {
      hooks_.savepoint(std::move(r));
      return;
    }
    if (!started_) {
      waiting_savepoints_.push_back(std::move(r));
      return;
    }
    guard.unlock();
    r.reply->set(not_running());
  }

private:
  static error not_running() {
    return make_error(errc::runtime_error, "the job is not running");
  }

  std::mutex mutex_;
  hooks hooks_;
  bool started_ = false; ///< an `execute()` has attached once
  std::vector<state_query> waiting_queries_;
  std::vector<savepoint_request> waiting_savepoints_;
};

} // namespace weir::runtime
