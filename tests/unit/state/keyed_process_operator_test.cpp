// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_process_function.hpp"

#include "weir/api/job.hpp"
#include "weir/core/key_group.hpp"

#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

using weir::event_time;
using weir::record_batch_ptr;
using weir::type_id;
using weir::value;
using weir::state::keyed_process_function;
using weir::state::row_collector;
using weir::state::time_domain;

namespace {

/// Records what an operator emits, in order.
struct recorder final : weir::output_collector {
  struct row {
    std::vector<value> values;
    std::optional<event_time> ts;
  };
  std::vector<std::variant<row, event_time>> events; // rows and watermarks
  void collect(record_batch_ptr batch) override {
    for (std::size_t r = 0; r < batch->num_rows; ++r) {
      row out;
      for (const auto& c : batch->columns)
        out.values.push_back(c.get(r));
      if (batch->has_timestamps())
        out.ts = batch->timestamps[r];
      events.emplace_back(std::move(out));
    }
  }
  void collect_side(std::size_t, record_batch_ptr) override {}
  void emit_watermark(event_time wm) override { events.emplace_back(wm); }
  std::vector<row> rows() const {
    std::vector<row> out;
    for (const auto& e : events)
      if (auto* r = std::get_if<row>(&e))
        out.push_back(*r);
    return out;
  }
};

weir::schema_ptr input_schema() {
  return weir::make_schema({{"user", type_id::string}, {"ts", type_id::timestamp}});
}

weir::schema_ptr output_schema() {
  return weir::make_schema({{"user", type_id::string}, {"clicks", type_id::int64}});
}

record_batch_ptr clicks(const std::vector<std::pair<std::string, event_time>>& rows) {
  weir::batch_builder b(input_schema());
  for (const auto& [user, ts] : rows) {
    b.col(0).append_string(user);
    b.col(1).append_int(ts);
    b.timestamps().push_back(ts);
    b.commit_row();
  }
  return b.finish();
}

/// Counts clicks per user (Flink's ClickCounter) and, 100 ms after a user's
/// first click, emits {user, -count} from an event-time timer.
class counting final : public keyed_process_function {
public:
  void open(context& ctx) override {
    count_ = ctx.state().get_value_state<std::int64_t>("count").value();
  }
  void process_element(const weir::row_view& row, context& ctx, row_collector& out) override {
    auto n = count_.value_or(0) + 1;
    count_.update(n);
    if (n == 1)
      ctx.register_event_time_timer(*ctx.timestamp() + 100);
    out.emit({value{std::string{*row.get_string("user")}}, value{n}});
  }
  void on_timer(event_time ts, time_domain domain, context& ctx, row_collector& out) override {
    CHECK(domain == time_domain::event_time);
    CHECK(ctx.timestamp() == ts);
    out.emit({ctx.key().at(0), value{-count_.value_or(0)}});
  }

private:
  weir::state::value_state<std::int64_t> count_;
};

weir::stream_operator_ptr make_op() {
  return weir::state::make_keyed_process_operator({0}, output_schema(),
                                                  std::make_unique<counting>());
}

weir::operator_context subtask(std::size_t index, std::size_t parallelism) {
  return weir::operator_context{"clicks", index, parallelism, 128};
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("a keyed process function keeps a running count per key and fires timers before the watermark") {
  auto op = make_op();
  op->open(subtask(0, 1));
  recorder out;
  op->process_batch(clicks({{"a", 1000}, {"b", 1010}, {"a", 1020}}), out);
  op->process_watermark(1099, out);
  op->process_watermark(1200, out);
  op->finish(out);

  using row = recorder::row;
  REQUIRE(out.events.size() == 7);
  auto r = [&](std::size_t i) { return std::get<row>(out.events[i]); };
  CHECK(r(0).values == std::vector<value>{value{std::string{"a"}}, value{std::int64_t{1}}});
  CHECK(r(0).ts == 1000);
  CHECK(r(1).values == std::vector<value>{value{std::string{"b"}}, value{std::int64_t{1}}});
  CHECK(r(2).values == std::vector<value>{value{std::string{"a"}}, value{std::int64_t{2}}});
  CHECK(std::get<event_time>(out.events[3]) == 1099);
  // Timers at 1100 (a) and 1110 (b) fire, in order, before watermark 1200.
  CHECK(r(4).values == std::vector<value>{value{std::string{"a"}}, value{std::int64_t{-2}}});
  CHECK(r(4).ts == 1100);
  CHECK(r(5).values == std::vector<value>{value{std::string{"b"}}, value{std::int64_t{-1}}});
  CHECK(r(5).ts == 1110);
  CHECK(std::get<event_time>(out.events[6]) == 1200);
}

TEST_CASE("a keyed process operator restores its counts and timers at another parallelism") {
  // Run at parallelism 2: each subtask sees only its keys.
  std::vector<std::pair<std::string, event_time>> input;
  for (int i = 0; i < 60; ++i)
    input.emplace_back("user-" + std::to_string(i % 20), 1000 + i);
  std::vector<std::pair<std::uint16_t, std::string>> blobs;
  for (std::size_t s = 0; s < 2; ++s) {
    auto op = make_op();
    op->open(subtask(s, 2));
    recorder out;
    std::vector<std::pair<std::string, event_time>> mine;
    for (const auto& in : input) {
      std::string key;
      auto b = clicks({in});
      const std::size_t f[] = {0};
      weir::encode_key(*b, f, 0, key);
      if (weir::operator_index_for_key_group(weir::assign_key_group(key, 128), 128, 2) == s)
        mine.push_back(in);
    }
    op->process_batch(clicks(mine), out);
    weir::operator_snapshot snap;
    op->snapshot_state(1, snap);
    REQUIRE(snap.keyed_state != nullptr);
    for (std::uint16_t g = 0; g < 128; ++g) {
      std::string bytes;
      snap.keyed_state->serialize_key_group(g, bytes);
      if (!bytes.empty())
        blobs.emplace_back(g, std::move(bytes));
    }
  }
  // Restore everything into one subtask (parallelism 1) and continue.
  auto op = make_op();
  op->open(subtask(0, 1));
  weir::operator_restore restore;
  restore.checkpoint_id = 1;
  restore.key_groups = blobs;
  op->restore_state(restore);
  recorder out;
  op->process_batch(clicks({{"user-3", 2000}}), out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].values[1] == value{std::int64_t{4}});
  op->process_watermark(weir::max_watermark, out);
  // One timer per user, at its first click + 100.
  CHECK(out.rows().size() == 1 + 20);
}

TEST_CASE("restore_state fails the subtask on corrupt keyed state") {
  auto op = make_op();
  op->open(subtask(0, 1));
  weir::operator_restore restore;
  restore.key_groups.emplace_back(5, "definitely not a snapshot");
  CHECK_THROWS_AS(op->restore_state(restore), std::runtime_error);
}

TEST_CASE("emitting a row that does not match the output schema throws") {
  struct bad final : keyed_process_function {
    void process_element(const weir::row_view&, context&, row_collector& out) override {
      out.emit({value{std::int64_t{1}}}); // one value for two fields
    }
  };
  struct wrong_type final : keyed_process_function {
    void process_element(const weir::row_view&, context&, row_collector& out) override {
      out.emit({value{std::int64_t{1}}, value{std::int64_t{1}}}); // user must be a string
    }
  };
  recorder out;
  auto op1 = weir::state::make_keyed_process_operator({0}, output_schema(), std::make_unique<bad>());
  op1->open(subtask(0, 1));
  CHECK_THROWS_AS(op1->process_batch(clicks({{"a", 1}}), out), std::invalid_argument);
  auto op2 =
    weir::state::make_keyed_process_operator({0}, output_schema(), std::make_unique<wrong_type>());
  op2->open(subtask(0, 1));
  CHECK_THROWS_AS(op2->process_batch(clicks({{"a", 1}}), out), std::invalid_argument);
}

TEST_CASE("processing-time timers fire on on_processing_time and rows carry no timestamp") {
  struct proc final : keyed_process_function {
    void process_element(const weir::row_view&, context& ctx, row_collector&) override {
      ctx.register_processing_time_timer(500);
    }
    void on_timer(event_time ts, time_domain domain, context& ctx, row_collector& out) override {
      CHECK(domain == time_domain::processing_time);
      CHECK(ctx.timer_domain() == time_domain::processing_time);
      out.emit({ctx.key().at(0), value{ts}});
    }
  };
  auto op = weir::state::make_keyed_process_operator({0}, output_schema(), std::make_unique<proc>());
  op->open(subtask(0, 1));
  recorder out;
  op->process_batch(clicks({{"a", 1}, {"b", 2}}), out);
  CHECK(op->next_processing_timer() == 500);
  op->on_processing_time(499, out);
  CHECK(out.rows().empty());
  op->on_processing_time(500, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 2);
  CHECK_FALSE(rows[0].ts.has_value());
  CHECK(rows[0].values[1] == value{std::int64_t{500}});
  CHECK_FALSE(op->next_processing_timer().has_value());
}
}
