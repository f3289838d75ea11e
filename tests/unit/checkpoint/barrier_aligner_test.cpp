// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/barrier_aligner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

using weir::checkpoint::barrier_aligner;
using weir::checkpoint::barrier_decision;

namespace {

/// One element a channel delivers, in a scripted interleaving.
struct step {
  enum kind_t { record, barrier, end } kind = record;
  std::size_t channel = 0;
  std::uint64_t value = 0; // record number or checkpoint id
};

step rec(std::size_t ch, std::uint64_t n) { return {step::record, ch, n}; }
step bar(std::size_t ch, std::uint64_t id) { return {step::barrier, ch, id}; }
step eoi(std::size_t ch) { return {step::end, ch, 0}; }

/// Plays a script the way a task actor would: elements of a blocked channel
/// are held back in arrival order and replayed (in order) on release. Logs
/// what the operator sees ("r<n>") and what the task does ("snap <id>",
/// "abort <id>", "start <id>").
class harness {
public:
  explicit harness(std::size_t channels) : aligner_(channels), held_(channels) {}

  void play(const std::vector<step>& script) {
    for (const auto& s : script)
      deliver(s);
  }

  std::vector<std::string> log;
  barrier_aligner aligner_;

private:
  void deliver(const step& s) {
    if (aligner_.is_blocked(s.channel)) {
      held_[s.channel].push_back(s);
      return;
    }
    barrier_decision d;
    switch (s.kind) {
      case step::record:
        log.push_back("r" + std::to_string(s.value));
        return;
      case step::barrier:
        d = aligner_.on_barrier(s.channel, s.value);
        break;
      case step::end:
        d = aligner_.on_end_of_input(s.channel);
        break;
    }
    act(d);
  }

  void act(const barrier_decision& d) {
    for (auto id : d.aborted)
      log.push_back("abort " + std::to_string(id));
    if (d.started)
      log.push_back("start " + std::to_string(*d.started));
    if (d.snapshot)
      log.push_back("snap " + std::to_string(*d.snapshot));
    if (d.released) {
      // Replay everything held back, channel by channel, each in order; a
      // replayed barrier may block its channel again, so re-check each time.
      for (std::size_t ch = 0; ch < held_.size(); ++ch) {
        while (!held_[ch].empty() && !aligner_.is_blocked(ch)) {
          auto s = held_[ch].front();
          held_[ch].pop_front();
          deliver(s);
        }
      }
    }
  }

  std::vector<std::deque<step>> held_;
};

using log_t = std::vector<std::string>;

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("a single input channel snapshots at its barrier without blocking") {
  barrier_aligner a{1};
  auto d = a.on_barrier(0, 1);
  CHECK(d.started == 1u);
  CHECK(d.snapshot == 1u);
  CHECK_FALSE(d.released);
  CHECK_FALSE(a.is_blocked(0));
  CHECK_FALSE(a.pending());
}

TEST_CASE("two channels hold back the channel that delivered the barrier first") {
  harness h{2};
  h.play({rec(0, 1), rec(1, 2), bar(0, 1), rec(0, 3), rec(1, 4), rec(0, 5), bar(1, 1),
          rec(1, 6)});
  // r3 and r5 came after barrier 1 on channel 0: they must not enter
  // snapshot 1, so they are processed only after it.
  CHECK(h.log == log_t{"r1", "r2", "start 1", "r4", "snap 1", "r3", "r5", "r6"});
  CHECK_FALSE(h.aligner_.pending());
}

TEST_CASE("is_blocked reports exactly the channels that delivered the pending barrier") {
  barrier_aligner a{3};
  auto d = a.on_barrier(1, 4);
  CHECK(d.started == 4u);
  CHECK_FALSE(d.snapshot);
  CHECK(a.is_blocked(1));
  CHECK_FALSE(a.is_blocked(0));
  CHECK_FALSE(a.is_blocked(2));
  CHECK(a.pending() == 4u);
  d = a.on_barrier(2, 4);
  CHECK_FALSE(d.started);
  CHECK(a.is_blocked(2));
  d = a.on_barrier(0, 4);
  CHECK(d.snapshot == 4u);
  CHECK(d.released);
  for (std::size_t ch = 0; ch < 3; ++ch)
    CHECK_FALSE(a.is_blocked(ch));
}

TEST_CASE("three channels align with barriers arriving in every order") {
  const std::vector<std::vector<std::size_t>> orders{{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& o : orders) {
    CAPTURE(o[0]);
    CAPTURE(o[1]);
    CAPTURE(o[2]);
    harness h{3};
    // Each channel: a record before the barrier (value 10+ch), the barrier,
    // a record after it (value 20+ch). Interleave: first barrier channel
    // delivers all, then the second, then the third.
    std::vector<step> script;
    for (auto ch : o) {
      script.push_back(rec(ch, 10 + ch));
      script.push_back(bar(ch, 1));
      script.push_back(rec(ch, 20 + ch));
    }
    h.play(script);
    // Every "before" record precedes the snapshot, every "after" follows it.
    auto snap = std::find(h.log.begin(), h.log.end(), "snap 1");
    REQUIRE(snap != h.log.end());
    for (std::size_t ch = 0; ch < 3; ++ch) {
      auto before = std::find(h.log.begin(), h.log.end(), "r" + std::to_string(10 + ch));
      auto after = std::find(h.log.begin(), h.log.end(), "r" + std::to_string(20 + ch));
      CHECK(before < snap);
      CHECK(after > snap);
      CHECK(after != h.log.end());
    }
  }
}

TEST_CASE("a channel that ended counts as aligned") {
  SUBCASE("ended before the barrier arrived elsewhere") {
    harness h{3};
    h.play({rec(2, 1), eoi(2), bar(0, 1), rec(0, 2), bar(1, 1), rec(1, 3)});
    CHECK(h.log == log_t{"r1", "start 1", "snap 1", "r2", "r3"});
  }
  SUBCASE("ended while the others were blocked completes the alignment") {
    harness h{3};
    h.play({bar(0, 1), rec(0, 2), bar(1, 1), rec(1, 3), rec(2, 4)});
    CHECK(h.log == log_t{"start 1", "r4"});
    h.play({eoi(2)});
    CHECK(h.log == log_t{"start 1", "r4", "snap 1", "r2", "r3"});
  }
  SUBCASE("all channels ended: a later barrier is ignored") {
    barrier_aligner a{2};
    a.on_end_of_input(0);
    a.on_end_of_input(1);
    CHECK(a.on_barrier(0, 3).is_noop());
  }
}

TEST_CASE("end of input held back behind a barrier is replayed after the snapshot") {
  harness h{2};
  h.play({bar(0, 1), eoi(0), rec(1, 1), bar(1, 1), rec(1, 2), eoi(1)});
  CHECK(h.log == log_t{"start 1", "r1", "snap 1", "r2"});
  CHECK(h.aligner_.has_ended(0));
  CHECK(h.aligner_.has_ended(1));
}

TEST_CASE("a barrier of a newer checkpoint aborts the pending one and starts the new one") {
  harness h{2};
  // Channel 1 never delivers barrier 1 (its upstream declined it), then
  // delivers barrier 2.
  h.play({bar(0, 1), rec(0, 1), rec(1, 2), bar(1, 2), rec(1, 3)});
  // Barrier 2 on channel 1 aborts 1 and releases channel 0 (r1), whose
  // replay proceeds until... channel 0 has no barrier 2 yet: 2 is pending
  // with channel 1 blocked (r3 held).
  CHECK(h.log == log_t{"start 1", "r2", "abort 1", "start 2", "r1"});
  CHECK(h.aligner_.pending() == 2u);
  CHECK(h.aligner_.is_blocked(1));
  CHECK_FALSE(h.aligner_.is_blocked(0));
  h.play({bar(0, 2)});
  CHECK(h.log == log_t{"start 1", "r2", "abort 1", "start 2", "r1", "snap 2", "r3"});
  // A late barrier 1 is stale now.
  CHECK(h.aligner_.on_barrier(0, 1).is_noop());
}

TEST_CASE("a newer barrier replayed from held input aborts the pending checkpoint") {
  harness h{3};
  h.play({bar(0, 1), bar(0, 2), rec(0, 9), bar(1, 1), bar(2, 3)});
  // Barrier 3 on channel 2 aborts 1; the replay of channel 0 then sees
  // barrier 2, which is older than 3 and ignored; r9 flows.
  CHECK(h.log == log_t{"start 1", "abort 1", "start 3", "r9"});
  CHECK(h.aligner_.pending() == 3u);
  CHECK(h.aligner_.is_blocked(2));
  CHECK_FALSE(h.aligner_.is_blocked(0));
}

TEST_CASE("cancelling the pending checkpoint releases blocked channels") {
  barrier_aligner a{2};
  a.on_barrier(0, 5);
  REQUIRE(a.is_blocked(0));
  auto d = a.on_cancel(5);
  CHECK(d.aborted == std::vector<std::uint64_t>{5});
  CHECK(d.released);
  CHECK_FALSE(a.is_blocked(0));
  CHECK_FALSE(a.pending());
  // Its remaining barriers are stale and block nothing.
  CHECK(a.on_barrier(1, 5).is_noop());
  CHECK_FALSE(a.is_blocked(1));
  // The next checkpoint aligns normally.
  a.on_barrier(1, 6);
  CHECK(a.on_barrier(0, 6).snapshot == 6u);
}

TEST_CASE("cancelling a checkpoint that is not pending changes nothing but makes it stale") {
  barrier_aligner a{2};
  auto d = a.on_cancel(3);
  CHECK(d.is_noop());
  CHECK(a.on_barrier(0, 3).is_noop());
  CHECK(a.on_barrier(0, 2).is_noop());
  CHECK(a.on_barrier(0, 4).started == 4u);
  // A cancellation of an older one leaves the pending one alone.
  CHECK(a.on_cancel(3).is_noop());
  CHECK(a.pending() == 4u);
}

TEST_CASE("a duplicate barrier on one channel does not complete the alignment") {
  barrier_aligner a{2};
  a.on_barrier(0, 1);
  auto d = a.on_barrier(0, 1);
  CHECK_FALSE(d.snapshot);
  CHECK(a.pending() == 1u);
  CHECK(a.on_barrier(1, 1).snapshot == 1u);
}

TEST_CASE("consecutive checkpoints on three channels each snapshot once in order") {
  harness h{3};
  h.play({bar(0, 1), bar(0, 2), bar(1, 1), rec(1, 1), bar(1, 2), bar(2, 1), rec(2, 2),
          bar(2, 2), rec(0, 3)});
  CHECK(h.log == log_t{"start 1", "snap 1", "start 2", "r1", "r2", "snap 2", "r3"});
}
}
