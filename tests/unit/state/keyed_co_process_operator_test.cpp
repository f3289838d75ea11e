// SPDX-License-Identifier: Apache-2.0
// The keyed co-process operator driven directly (no actor system): state
// shared by both inputs per key, timers of both domains registered from
// either input, snapshot and restore by key group at another parallelism.
#include "weir/state/keyed_co_process_function.hpp"

#include "weir/api/job.hpp"
#include "weir/core/key_group.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

using weir::event_time;
using weir::record_batch_ptr;
using weir::type_id;
using weir::value;
using weir::state::keyed_co_process_function;
using weir::state::row_collector;
using weir::state::time_domain;

namespace {

struct recorder final : weir::output_collector {
  struct row {
    std::vector<value> values;
    std::optional<event_time> ts;
  };
  std::vector<row> rows;
  std::vector<event_time> watermarks;
  void collect(record_batch_ptr batch) override {
    for (std::size_t r = 0; r < batch->num_rows; ++r) {
      row out;
      for (const auto& c : batch->columns)
        out.values.push_back(c.get(r));
      if (batch->has_timestamps())
        out.ts = batch->timestamps[r];
      rows.push_back(std::move(out));
    }
  }
  void collect_side(std::size_t, record_batch_ptr) override {}
  void emit_watermark(event_time wm) override { watermarks.push_back(wm); }
};

// Input 1: transactions {account, amount, ts}; input 2: accounts {ts, id, owner}
// (the key is field 0 of input 1 and field 1 of input 2).
weir::schema_ptr tx_schema() {
  return weir::make_schema({{"account", type_id::int64},
                            {"amount", type_id::float64},
                            {"ts", type_id::timestamp}});
}
weir::schema_ptr account_schema() {
  return weir::make_schema(
    {{"ts", type_id::timestamp}, {"id", type_id::int64}, {"owner", type_id::string}});
}
weir::schema_ptr out_schema() {
  return weir::make_schema({{"account", type_id::int64},
                            {"amount", type_id::float64},
                            {"owner", type_id::string},
                            {"what", type_id::string}});
}

record_batch_ptr txs(const std::vector<std::tuple<std::int64_t, double, event_time>>& rows) {
  weir::batch_builder b(tx_schema());
  for (const auto& [acct, amount, ts] : rows) {
    b.col(0).append_int(acct);
    b.col(1).append_float(amount);
    b.col(2).append_int(ts);
    b.timestamps().push_back(ts);
    b.commit_row();
  }
  return b.finish();
}

record_batch_ptr accounts(const std::vector<std::tuple<event_time, std::int64_t, std::string>>& rows) {
  weir::batch_builder b(account_schema());
  for (const auto& [ts, id, owner] : rows) {
    b.col(0).append_int(ts);
    b.col(1).append_int(id);
    b.col(2).append_string(owner);
    b.timestamps().push_back(ts);
    b.commit_row();
  }
  return b.finish();
}

/// Flink's AccountEnrichmentFunction, with the wait made explicit: a
/// transaction of a known account is emitted with the owner at once; one of
/// an unknown account waits in list state, and an event-time timer 1000 ms
/// after it emits it without an owner unless the account arrives first
/// (then every waiting transaction is emitted with the owner). An account
/// row also registers a processing-time timer 5000 ms ahead that reports
/// {id, null, owner, "audit"}: timers from input 2 and in processing time.
class account_enrichment final : public keyed_co_process_function {
public:
  void open(context& ctx) override {
    owner_ = ctx.state().get_value_state<std::string>("owner").value();
    waiting_ = ctx.state().get_list_state<std::pair<double, std::int64_t>>("waiting").value();
  }

  void process_element1(const weir::row_view& row, context& ctx, row_collector& out) override {
    const double amount = std::get<double>(row.get("amount"));
    if (auto owner = owner_.value()) {
      out.emit({ctx.key().at(0), value{amount}, value{*owner}, value{std::string{"tx"}}});
      return;
    }
    waiting_.add({amount, *ctx.timestamp()});
    ctx.register_event_time_timer(*ctx.timestamp() + 1000);
  }

  void process_element2(const weir::row_view& row, context& ctx, row_collector& out) override {
    const std::string owner{*row.get_string("owner")};
    owner_.update(owner);
    for (const auto& [amount, ts] : waiting_.get()) {
      ctx.delete_event_time_timer(ts + 1000);
      out.emit_at(ts, {ctx.key().at(0), value{amount}, value{owner}, value{std::string{"tx"}}});
    }
    waiting_.clear();
    ctx.register_processing_time_timer(ctx.current_processing_time() + 5000);
  }

  void on_timer(event_time ts, time_domain domain, context& ctx, row_collector& out) override {
    if (domain == time_domain::processing_time) {
      out.emit({ctx.key().at(0), value{}, value{owner_.value().value_or("?")},
                value{std::string{"audit"}}});
      return;
    }
    std::vector<std::pair<double, std::int64_t>> keep;
    for (const auto& [amount, at] : waiting_.get()) {
      if (at + 1000 == ts)
        out.emit({ctx.key().at(0), value{amount}, value{}, value{std::string{"timeout"}}});
      else
        keep.emplace_back(amount, at);
    }
    waiting_.update(keep);
  }

private:
  weir::state::value_state<std::string> owner_;
  weir::state::list_state<std::pair<double, std::int64_t>> waiting_;
};

std::unique_ptr<weir::two_input_stream_operator> make_op() {
  return weir::state::make_keyed_co_process_operator({0}, {1}, out_schema(),
                                                     std::make_unique<account_enrichment>());
}

std::string owner_of(const recorder::row& r) {
  return std::holds_alternative<std::string>(r.values[2]) ? std::get<std::string>(r.values[2])
                                                          : "null";
}

std::string what(const recorder::row& r) { return std::get<std::string>(r.values[3]); }

std::uint16_t group_of_account(std::int64_t id) {
  auto b = txs({{id, 0.0, 0}});
  std::string key;
  const std::size_t f[] = {0};
  weir::encode_key(*b, f, 0, key);
  return weir::assign_key_group(key, 128);
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("a keyed co-process function shares keyed state and timers across its two inputs") {
  auto op = make_op();
  op->open({"enrich", 0, 1, 128});
  recorder out;
  // Account 1 is known before its transaction; 2 after; 3 never.
  op->process_batch2(accounts({{100, 1, "ann"}}), out);
  op->process_batch1(txs({{1, 10.0, 200}, {2, 20.0, 210}, {3, 30.0, 220}}), out);
  REQUIRE(out.rows.size() == 1);
  CHECK(out.rows[0].values == std::vector<value>{value{std::int64_t{1}}, value{10.0},
                                                 value{std::string{"ann"}},
                                                 value{std::string{"tx"}}});
  CHECK(out.rows[0].ts == 200);
  op->process_batch2(accounts({{500, 2, "bob"}}), out);
  REQUIRE(out.rows.size() == 2);
  CHECK(owner_of(out.rows[1]) == "bob");
  CHECK(out.rows[1].ts == 210); // emit_at the transaction's time
  // Input 1's watermark alone does not fire anything: the operator's is the
  // minimum of both inputs.
  op->process_watermark1(5000, out);
  CHECK(out.watermarks.empty());
  CHECK(out.rows.size() == 2);
  op->process_watermark2(1219, out);
  CHECK(out.watermarks == std::vector<event_time>{1219});
  CHECK(out.rows.size() == 2); // account 3's timer is at 1220
  op->process_watermark2(1220, out);
  REQUIRE(out.rows.size() == 3);
  CHECK(what(out.rows[2]) == "timeout");
  CHECK(out.rows[2].values[0] == value{std::int64_t{3}});
  CHECK(out.rows[2].ts == 1220);
  // Account 2's transaction was emitted when bob arrived: its timer was deleted.
  // Processing-time timers, registered from input 2 at processing time
  // min_watermark + 5000: both fire when the clock passes them.
  CHECK(op->next_processing_timer().has_value());
  op->on_processing_time(weir::max_watermark - 1, out);
  REQUIRE(out.rows.size() == 5);
  CHECK(what(out.rows[3]) == "audit");
  CHECK(what(out.rows[4]) == "audit");
  CHECK(!out.rows[3].ts.has_value());
  CHECK(!op->next_processing_timer().has_value());
  op->process_watermark1(weir::max_watermark, out);
  op->process_watermark2(weir::max_watermark, out);
  op->finish(out);
  CHECK(out.rows.size() == 5);
}

TEST_CASE("a keyed co-process operator restores both inputs' state and timers at another parallelism") {
  // Parallelism 2: accounts 0..9 known, transactions of 10..19 waiting.
  std::vector<std::pair<std::uint16_t, std::string>> blobs;
  std::size_t waiting_total = 0;
  for (std::size_t s = 0; s < 2; ++s) {
    auto op = make_op();
    op->open({"enrich", s, 2, 128});
    recorder out;
    std::vector<std::tuple<event_time, std::int64_t, std::string>> accts;
    std::vector<std::tuple<std::int64_t, double, event_time>> waiting;
    for (std::int64_t id = 0; id < 20; ++id) {
      if (weir::operator_index_for_key_group(group_of_account(id), 128, 2) != s)
        continue;
      if (id < 10)
        accts.emplace_back(100, id, "owner-" + std::to_string(id));
      else
        waiting.emplace_back(id, static_cast<double>(id), 1000 + id);
    }
    waiting_total += waiting.size();
    op->process_batch2(accounts(accts), out);
    op->process_batch1(txs(waiting), out);
    CHECK(out.rows.empty());
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
  CHECK(waiting_total == 10);
  auto op = make_op();
  op->open({"enrich", 0, 1, 128});
  weir::operator_restore restore;
  restore.checkpoint_id = 1;
  restore.key_groups = blobs;
  op->restore_state(restore);
  recorder out;
  // Known owners survive the restore (input 2's state read from input 1) ...
  op->process_batch1(txs({{7, 1.5, 3000}}), out);
  REQUIRE(out.rows.size() == 1);
  CHECK(owner_of(out.rows[0]) == "owner-7");
  // ... the waiting transactions too: account 12 arrives and releases its own.
  op->process_batch2(accounts({{3000, 12, "late-owner"}}), out);
  REQUIRE(out.rows.size() == 2);
  CHECK(owner_of(out.rows[1]) == "late-owner");
  CHECK(out.rows[1].values[1] == value{12.0});
  // ... and their event-time timers: the other nine time out.
  op->process_watermark1(weir::max_watermark, out);
  op->process_watermark2(weir::max_watermark, out);
  std::size_t timeouts = 0;
  for (const auto& r : out.rows)
    timeouts += what(r) == "timeout" ? 1 : 0;
  CHECK(timeouts == 9);
}
} // TEST_SUITE
