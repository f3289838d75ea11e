// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL sink's runtime: one libpq connection per subtask, rows sent
// as multi-row INSERT (or INSERT ... ON CONFLICT DO UPDATE) statements.
// exactly_once: a transaction per checkpoint, PREPARE TRANSACTION at the
// barrier, COMMIT PREPARED when the checkpoint completes, recovered through
// pg_prepared_xacts on restore. The protocol: README.md beside this file.
#include "weir/postgres/sink.hpp"

#include "weir/core/log.hpp"
#include "weir/core/test_fault.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/expr/expression.hpp"

#include <libpq-fe.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace weir {

namespace {

constexpr const char* state_magic = "weir-postgres-sink v1";
/// PostgreSQL's limit on bind parameters per statement.
constexpr std::size_t max_params = 65535;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

std::string quote_ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"')
      out += '"';
    out += c;
  }
  out += '"';
  return out;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

struct conn_deleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using conn_ptr = std::unique_ptr<PGconn, conn_deleter>;

struct result_deleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

/// Raised when the connection is gone (not for an error the server sent).
struct connection_lost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Whether a failed connection's message is the server refusing who we are
/// (authentication, pg_hba.conf, an unknown role or database): retrying
/// cannot help, so the job fails at once with the server's reason.
bool refused_for_good(const PGconn* c, std::string_view msg) {
  if (PQconnectionNeedsPassword(c))
    return true;
  for (std::string_view s : {"password authentication failed", "authentication failed",
                             "no pg_hba.conf entry", "does not exist",
                             "SSL is required", "certificate"})
    if (msg.find(s) != std::string_view::npos)
      return true;
  return false;
}

/// libpq's notices (`NOTICE: relation "t" already exists, skipping`) go to
/// the connectors log at debug level instead of stderr.
void on_notice(void*, const char* message) {
  std::string_view m{message};
  while (!m.empty() && m.back() == '\n')
    m.remove_suffix(1);
  log::connectors().debug("PostgreSQL: {}", m);
}

/// Rows as text cells, `width` per row; `null` marks SQL NULLs.
struct row_buffer {
  std::size_t width = 0;
  std::vector<std::string> cells;
  std::vector<std::uint8_t> null;

  std::size_t rows() const { return width ? cells.size() / width : 0; }
  bool empty() const { return cells.empty(); }
  void clear() {
    cells.clear();
    null.clear();
  }
  void append(const row_buffer& o, std::size_t from = 0) {
    cells.insert(cells.end(), o.cells.begin() + static_cast<std::ptrdiff_t>(from * width),
                 o.cells.end());
    null.insert(null.end(), o.null.begin() + static_cast<std::ptrdiff_t>(from * width),
                o.null.end());
  }
};

/// A transaction prepared at a barrier, waiting for its checkpoint.
struct prepared_txn {
  std::uint64_t checkpoint_id = 0;
  std::string gid;
  row_buffer rows; ///< copies: written again if its checkpoint was aborted
};

/// The operator state: the subtask that wrote it and its prepared
/// transactions, which the checkpoint commits.
struct sink_state {
  std::uint32_t subtask = 0;
  std::vector<std::pair<std::uint64_t, std::string>> prepared; ///< checkpoint id, gid
};

std::string encode_state(const sink_state& s) {
  std::string out = state_magic;
  out += "\nsubtask " + std::to_string(s.subtask) + "\n";
  for (const auto& [id, gid] : s.prepared)
    out += "prepared " + std::to_string(id) + " " + gid + "\n";
  return out;
}

sink_state decode_state(const std::string& bytes) {
  std::istringstream in{bytes};
  std::string line;
  auto bad = [&] {
    return std::runtime_error("PostgreSQL sink: unreadable operator state '"
                              + bytes.substr(0, 80) + "'");
  };
  if (!std::getline(in, line) || line != state_magic)
    throw bad();
  sink_state s;
  if (!std::getline(in, line) || line.rfind("subtask ", 0) != 0
      || !parse_number(std::string_view{line}.substr(8), s.subtask))
    throw bad();
  while (std::getline(in, line)) {
    if (line.rfind("prepared ", 0) != 0)
      throw bad();
    auto rest = std::string_view{line}.substr(9);
    auto sp = rest.find(' ');
    std::uint64_t id = 0;
    if (sp == std::string_view::npos || !parse_number(rest.substr(0, sp), id))
      throw bad();
    s.prepared.emplace_back(id, std::string{rest.substr(sp + 1)});
  }
  return s;
}

/// `WEIR_FAULT=pg_kill_after_checkpoint_complete[:N]` (test-only): SIGKILL
/// at the Nth checkpoint completion that has a prepared transaction, after
/// the checkpoint completed and before COMMIT PREPARED.
std::uint64_t fault_kill_after_complete() {
  return weir::internal::test_fault("pg_kill_after_checkpoint_complete");
}

class postgres_sink final : public stream_operator {
public:
  postgres_sink(postgres::sink spec, postgres_sink_job job,
                std::vector<std::pair<std::string, expr::compiled_expression>> columns)
    : spec_(std::move(spec)), job_(std::move(job)), columns_(std::move(columns)) {
    buffer_.width = columns_.size();
    for (const auto& k : spec_.key_columns)
      for (std::size_t i = 0; i < columns_.size(); ++i)
        if (columns_[i].first == k)
          key_index_.push_back(i);
  }

  void open(const operator_context& ctx) override {
    name_ = ctx.operator_name;
    subtask_ = static_cast<std::uint32_t>(ctx.subtask_index);
    parallelism_ = static_cast<std::uint32_t>(std::max<std::size_t>(ctx.parallelism, 1));
    prefix_ = job_.job_name + "-" + name_ + "-";
    sink_id_ = prefix_ + std::to_string(subtask_);
    kill_at_ = fault_kill_after_complete();
    connect_with_retries();
    if (!exactly_once())
      return;
    auto r = query("SHOW max_prepared_transactions");
    if (PQntuples(r.get()) == 1 && std::string_view{PQgetvalue(r.get(), 0, 0)} == "0")
      throw std::runtime_error(
        "PostgreSQL sink '" + name_ + "': the server has max_prepared_transactions = 0, so "
        "delivery = \"exactly_once\" cannot prepare its transactions (one per sink subtask "
        "and checkpoint, two at a time): set max_prepared_transactions to at least "
        + std::to_string(2 * parallelism_) + " in postgresql.conf and restart the server, or "
        "use delivery = \"at_least_once\"");
    if (sink_id_.size() + 21 > 199)
      throw std::runtime_error("PostgreSQL sink '" + name_ + "': job name and sink name are "
                               "too long for a transaction identifier (200 bytes)");
    ensure_progress_table();
  }

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (!batch || batch->num_rows == 0)
      return;
    start();
    rows_in_ += batch->num_rows;
    if (drop_replay_) {
      dropped_ += batch->num_rows;
      return;
    }
    std::vector<column> cols;
    cols.reserve(columns_.size());
    for (const auto& [name, e] : columns_)
      cols.push_back(e.evaluate(*batch));
    for (std::size_t row = 0; row < batch->num_rows; ++row)
      for (const auto& c : cols) {
        if (c.is_null(row)) {
          buffer_.cells.emplace_back();
          buffer_.null.push_back(1);
          continue;
        }
        buffer_.null.push_back(0);
        switch (c.type) {
          case type_id::string: buffer_.cells.emplace_back(c.str(row)); break;
          case type_id::timestamp: buffer_.cells.push_back(format_iso8601(c.ints[row])); break;
          case type_id::boolean: buffer_.cells.emplace_back(c.bools[row] ? "true" : "false"); break;
          default: buffer_.cells.push_back(to_display_string(c.get(row)));
        }
      }
    if (exactly_once()) {
      // Rows go into the open transaction only while no prepared one waits
      // for its checkpoint (it may hold locks on the same rows).
      if (!pending_ && buffer_.rows() - sent_ >= spec_.batch_size)
        send_unsent();
      return;
    }
    if (buffer_.rows() >= spec_.batch_size)
      flush_at_least_once();
    else if (flush_due_ == 0)
      flush_due_ = wall_ms() + spec_.flush_interval.count();
    if (flush_due_ != 0 && wall_ms() >= flush_due_)
      flush_at_least_once();
  }

  void process_watermark(event_time, output_collector&) override {}

  std::optional<event_time> next_processing_timer() const override {
    if (exactly_once() || buffer_.empty() || flush_due_ == 0)
      return std::nullopt;
    return flush_due_;
  }

  void on_processing_time(event_time, output_collector&) override {
    if (!exactly_once() && flush_due_ != 0 && wall_ms() >= flush_due_)
      flush_at_least_once();
  }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    start();
    if (!exactly_once()) {
      flush_at_least_once();
      return;
    }
    if (pending_) {
      // Checkpoint n+1's barrier came before n's completion: n was aborted
      // (one checkpoint at a time, and a completion's notification reaches
      // the sink before the next barrier). Its rows go into this one.
      log::connectors().info("PostgreSQL sink '{}' subtask {}: checkpoint {} did not "
                             "complete; its {} rows are written again with checkpoint {}",
                             name_, subtask_, pending_->checkpoint_id,
                             pending_->rows.rows(), checkpoint_id);
      exec("ROLLBACK PREPARED " + literal(pending_->gid));
      row_buffer merged = std::move(pending_->rows);
      merged.append(buffer_);
      buffer_ = std::move(merged);
      sent_ = 0;
      pending_.reset();
    }
    sink_state s;
    s.subtask = subtask_;
    // The final snapshot (after finish) prepares the rest with the progress
    // row, which tells a restore that this subtask wrote its whole input.
    if ((!buffer_.empty() || finished_) && !drop_replay_) {
      send_unsent();
      if (finished_) {
        if (!in_txn_) {
          exec("BEGIN");
          in_txn_ = true;
        }
        exec("INSERT INTO " + spec_.progress_table + " (sink_id, checkpoint_id) VALUES ("
             + literal(sink_id_) + ", " + std::to_string(checkpoint_id) + ") ON CONFLICT "
             "(sink_id) DO UPDATE SET checkpoint_id = EXCLUDED.checkpoint_id, "
             "finished_at = now()");
      }
      prepared_txn p;
      p.checkpoint_id = checkpoint_id;
      p.gid = sink_id_ + "-" + std::to_string(checkpoint_id);
      exec("PREPARE TRANSACTION " + literal(p.gid));
      log::connectors().debug("PostgreSQL sink '{}' subtask {}: prepared {} rows as '{}'",
                              name_, subtask_, buffer_.rows(), p.gid);
      in_txn_ = false;
      p.rows = std::move(buffer_);
      buffer_ = row_buffer{};
      buffer_.width = columns_.size();
      sent_ = 0;
      s.prepared.emplace_back(p.checkpoint_id, p.gid);
      pending_ = std::move(p);
    }
    out.operator_state = encode_state(s);
  }

  void notify_checkpoint_complete(std::uint64_t checkpoint_id) override {
    if (!exactly_once() || !pending_ || pending_->checkpoint_id > checkpoint_id)
      return;
    if (kill_at_ != 0 && ++completions_ == kill_at_) {
      log::connectors().warn("PostgreSQL sink '{}' subtask {}: WEIR_FAULT: killing the "
                             "process after checkpoint {} completed, before COMMIT PREPARED",
                             name_, subtask_, checkpoint_id);
      std::raise(SIGKILL);
    }
    commit_pending();
    if (finished_) {
      report(); // the final checkpoint committed the last transaction
      return;
    }
    // Rows that arrived while it waited go into the next transaction.
    if (buffer_.rows() >= spec_.batch_size)
      send_unsent();
  }

  bool is_two_phase_commit() const override { return exactly_once(); }

  void abort_transactions(std::uint64_t keep_up_to) override {
    if (!exactly_once() || !conn_)
      return;
    if (in_txn_) {
      in_txn_ = false;
      exec("ROLLBACK");
    }
    if (pending_ && pending_->checkpoint_id > keep_up_to) {
      auto gid = pending_->gid;
      auto id = pending_->checkpoint_id;
      pending_.reset();
      finish_prepared("ROLLBACK PREPARED", gid);
      log::connectors().info("PostgreSQL sink '{}' subtask {}: the job stopped before "
                             "checkpoint {} completed: '{}' rolled back",
                             name_, subtask_, id, gid);
    }
  }

  void restore_state(const operator_restore& in) override {
    started_ = true;
    if (!exactly_once())
      return;
    const auto n = in.checkpoint_id;
    std::set<std::uint32_t> owned{subtask_};
    std::set<std::string> commit;
    for (const auto& bytes : in.operator_states) {
      if (bytes.empty())
        continue;
      auto s = decode_state(bytes);
      owned.insert(s.subtask);
      for (const auto& [id, gid] : s.prepared)
        if (id <= n)
          commit.insert(gid);
    }
    std::size_t committed = 0, rolled_back = 0;
    auto found = our_prepared();
    for (const auto& [gid, sub, id, end] : found) {
      // The subtasks taken over are ours to settle; subtask 0 also rolls
      // back what subtasks beyond the parallelism prepared after n (their
      // state, if any, went to another subtask, which commits up to n).
      bool mine = owned.count(sub) != 0;
      bool orphan = subtask_ == 0 && sub >= parallelism_ && (end || id > n);
      if (commit.count(gid)) {
        // Its checkpoint completed; the commit did not happen before the
        // crash.
        if (finish_prepared("COMMIT PREPARED", gid))
          ++committed;
      } else if (mine || orphan) {
        // Newer than the restored checkpoint (or of an aborted one): its rows
        // are replayed.
        if (finish_prepared("ROLLBACK PREPARED", gid))
          ++rolled_back;
      }
    }
    log::connectors().info("PostgreSQL sink '{}' subtask {}: restored checkpoint {}: {} "
                           "prepared transactions committed, {} rolled back",
                           name_, subtask_, n, committed, rolled_back);
    auto r = query("SELECT checkpoint_id FROM " + spec_.progress_table
                     + " WHERE sink_id = " + literal(sink_id_));
    if (PQntuples(r.get()) > 0 || drop_replay_) {
      // The previous run committed everything up to the end of its input
      // (its final checkpoint completed, yet an older one is restored).
      log::connectors().warn("PostgreSQL sink '{}' subtask {}: the previous run committed "
                             "its input to the end; the rows replayed from checkpoint {} are "
                             "not written again",
                             name_, subtask_, n);
      drop_replay_ = true;
    }
  }

  void finish(output_collector&) override {
    start();
    if (!exactly_once()) {
      flush_at_least_once();
      report();
      return;
    }
    finished_ = true;
    if (drop_replay_)
      log::connectors().info("PostgreSQL sink '{}' subtask {}: {} replayed rows not written "
                             "again",
                             name_, subtask_, dropped_);
    // Nothing is committed here: the final snapshot (snapshot_state after
    // finish) prepares the rest with the progress row, and the job's final
    // checkpoint commits it. A job that fails before rolls it back.
  }

  void stop(output_collector&) override {
    if (!exactly_once()) {
      flush_at_least_once();
      report();
      return;
    }
    // The final checkpoint committed what came before it; rows after it are
    // replayed by a rerun.
    if (in_txn_)
      exec("ROLLBACK");
    in_txn_ = false;
  }

private:
  bool exactly_once() const { return spec_.delivery == postgres_delivery::exactly_once; }

  void report() const {
    log::connectors().info("PostgreSQL sink '{}' subtask {}: {} rows received, {} rows "
                           "committed to {}",
                           name_, subtask_, rows_in_, rows_committed_, spec_.table);
  }

  /// The first row, snapshot or end without a restore: a fresh start. The
  /// prepared transactions and the end marker of an earlier run of this
  /// subtask (subtask 0: also of subtasks beyond the parallelism) are
  /// dropped.
  void start() {
    if (started_)
      return;
    started_ = true;
    if (!exactly_once())
      return;
    std::size_t n = 0;
    for (const auto& [gid, sub, id, end] : our_prepared())
      if (sub == subtask_ || (subtask_ == 0 && sub >= parallelism_)) {
        if (finish_prepared("ROLLBACK PREPARED", gid))
          ++n;
      }
    if (n)
      log::connectors().info("PostgreSQL sink '{}' subtask {}: fresh start: {} prepared "
                             "transactions of an earlier run rolled back",
                             name_, subtask_, n);
    exec("DELETE FROM " + spec_.progress_table + " WHERE sink_id = " + literal(sink_id_));
    if (subtask_ == 0) {
      auto r = query("SELECT sink_id FROM " + spec_.progress_table
                     + " WHERE starts_with(sink_id, " + literal(prefix_) + ")");
      for (int i = 0; i < PQntuples(r.get()); ++i) {
        std::uint32_t sub = 0;
        std::string_view id{PQgetvalue(r.get(), i, 0)};
        if (parse_number(id.substr(prefix_.size()), sub) && sub >= parallelism_)
          exec("DELETE FROM " + spec_.progress_table + " WHERE sink_id = "
               + literal(std::string{id}));
      }
    }
  }

  struct found_txn {
    std::string gid;
    std::uint32_t subtask;
    std::uint64_t checkpoint_id; ///< 0 for the end-of-input transaction
    bool end = false;            ///< '<job>-<sink>-<subtask>-end'
  };

  /// This job's and sink's prepared transactions in the current database
  /// (gid `<job>-<sink>-<subtask>-<checkpoint>`), found in pg_prepared_xacts.
  std::vector<found_txn> our_prepared() {
    auto r = query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                   "AND starts_with(gid, "
                   + literal(prefix_) + ")");
    std::vector<found_txn> out;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      std::string gid = PQgetvalue(r.get(), i, 0);
      auto rest = std::string_view{gid}.substr(prefix_.size());
      auto dash = rest.find('-');
      found_txn t{gid, 0, 0};
      if (dash == std::string_view::npos || !parse_number(rest.substr(0, dash), t.subtask))
        continue; // another sink whose name extends ours
      t.end = rest.substr(dash + 1) == "end";
      if (!t.end && !parse_number(rest.substr(dash + 1), t.checkpoint_id))
        continue;
      out.push_back(std::move(t));
    }
    return out;
  }

  /// COMMIT PREPARED or ROLLBACK PREPARED `gid`; false when it is no
  /// longer prepared (another subtask settled it meanwhile).
  bool finish_prepared(const char* verb, const std::string& gid) {
    auto sql = std::string{verb} + " " + literal(gid);
    result_ptr r{PQexec(conn_.get(), sql.c_str())};
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
      const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
      if (state && std::string_view{state} == "42704") // undefined_object
        return false;
    }
    check(r.get(), verb);
    return true;
  }

  void commit_pending() {
    exec("COMMIT PREPARED " + literal(pending_->gid));
    // Test-only: a kill with the transaction committed and the sink not yet
    // aware of it (a restore finds it no longer prepared).
    weir::internal::test_fault_kill("kill_in_sink_commit");
    rows_committed_ += pending_->rows.rows();
    log::connectors().debug("PostgreSQL sink '{}' subtask {}: committed {} rows of checkpoint {}",
                            name_, subtask_, pending_->rows.rows(), pending_->checkpoint_id);
    pending_.reset();
  }

  /// exactly_once: sends the buffered rows not yet sent into the open
  /// transaction (begun if none is).
  void send_unsent() {
    if (buffer_.rows() == sent_)
      return;
    if (!in_txn_) {
      exec("BEGIN");
      in_txn_ = true;
    }
    write_rows(buffer_, sent_, buffer_.rows());
    sent_ = buffer_.rows();
  }

  /// at_least_once: the buffered rows in one transaction, committed;
  /// reconnecting and sending again when the connection is lost.
  void flush_at_least_once() {
    flush_due_ = 0;
    if (buffer_.empty())
      return;
    std::chrono::milliseconds wait{100};
    for (std::size_t attempt = 1;; ++attempt) {
      try {
        if (!conn_)
          connect();
        exec("BEGIN");
        write_rows(buffer_, 0, buffer_.rows());
        exec("COMMIT");
        break;
      } catch (const connection_lost& e) {
        conn_.reset();
        if (attempt >= spec_.max_attempts)
          throw std::runtime_error("PostgreSQL sink '" + name_ + "': lost the connection "
                                   "and could not write after "
                                   + std::to_string(attempt) + " attempts: " + e.what());
        log::connectors().warn("PostgreSQL sink '{}' subtask {}: {} (attempt {} of {}); "
                               "retrying in {} ms",
                               name_, subtask_, e.what(), attempt, spec_.max_attempts,
                               wait.count());
        std::this_thread::sleep_for(wait);
        wait = std::min(wait * 2, std::chrono::milliseconds{5000});
      }
    }
    rows_committed_ += buffer_.rows();
    buffer_.clear();
  }

  /// Rows [from, to) of `b` as multi-row INSERT statements.
  void write_rows(const row_buffer& b, std::size_t from, std::size_t to) {
    const std::size_t width = columns_.size();
    const std::size_t per = std::max<std::size_t>(
      1, std::min(spec_.batch_size, max_params / std::max<std::size_t>(width, 1)));
    std::vector<std::size_t> rows;
    for (std::size_t start = from; start < to; start = std::min(to, start + per)) {
      auto end = std::min(to, start + per);
      rows.clear();
      if (key_index_.empty()) {
        for (std::size_t r = start; r < end; ++r)
          rows.push_back(r);
      } else {
        // ON CONFLICT DO UPDATE may not touch a row twice in one statement:
        // the last row per key only, in order.
        std::map<std::vector<std::string>, std::size_t> last;
        for (std::size_t r = start; r < end; ++r) {
          std::vector<std::string> key;
          for (auto k : key_index_)
            key.push_back(b.null[r * width + k] ? std::string{"\x01null"}
                                                : b.cells[r * width + k]);
          last[std::move(key)] = r;
        }
        for (const auto& [k, r] : last)
          rows.push_back(r);
        std::sort(rows.begin(), rows.end());
      }
      std::vector<const char*> params;
      params.reserve(rows.size() * width);
      for (auto r : rows)
        for (std::size_t c = 0; c < width; ++c)
          params.push_back(b.null[r * width + c] ? nullptr : b.cells[r * width + c].c_str());
      auto sql = insert_sql(rows.size());
      result_ptr res{PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(params.size()),
                                  nullptr, params.data(), nullptr, nullptr, 0)};
      check(res.get(), "INSERT INTO " + spec_.table);
    }
  }

  const std::string& insert_sql(std::size_t rows) {
    auto it = sql_cache_.find(rows);
    if (it != sql_cache_.end())
      return it->second;
    std::string sql = "INSERT INTO " + spec_.table + " (";
    for (std::size_t c = 0; c < columns_.size(); ++c)
      sql += (c ? ", " : "") + quote_ident(columns_[c].first);
    sql += ") VALUES ";
    std::size_t p = 1;
    for (std::size_t r = 0; r < rows; ++r) {
      sql += r ? ",(" : "(";
      for (std::size_t c = 0; c < columns_.size(); ++c)
        sql += (c ? ",$" : "$") + std::to_string(p++);
      sql += ")";
    }
    if (spec_.mode == postgres_write_mode::upsert) {
      sql += " ON CONFLICT (";
      for (std::size_t k = 0; k < spec_.key_columns.size(); ++k)
        sql += (k ? ", " : "") + quote_ident(spec_.key_columns[k]);
      sql += ") DO ";
      std::string set;
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        if (std::find(key_index_.begin(), key_index_.end(), c) != key_index_.end())
          continue;
        auto q = quote_ident(columns_[c].first);
        set += (set.empty() ? "" : ", ") + q + " = EXCLUDED." + q;
      }
      sql += set.empty() ? "NOTHING" : "UPDATE SET " + set;
    }
    if (sql_cache_.size() > 4)
      sql_cache_.clear();
    return sql_cache_[rows] = std::move(sql);
  }

  std::string literal(const std::string& s) const {
    char* q = PQescapeLiteral(conn_.get(), s.data(), s.size());
    if (!q)
      throw std::runtime_error("PostgreSQL sink '" + name_ + "': cannot quote a literal: "
                               + PQerrorMessage(conn_.get()));
    std::string out{q};
    PQfreemem(q);
    return out;
  }

  void check(PGresult* r, const std::string& what) {
    auto st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
      return;
    if (PQstatus(conn_.get()) != CONNECTION_OK)
      throw connection_lost("PostgreSQL sink '" + name_ + "': connection lost at " + what
                            + ": " + PQerrorMessage(conn_.get()));
    std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_.get());
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' '))
      msg.pop_back();
    throw std::runtime_error("PostgreSQL sink '" + name_ + "' (table " + spec_.table
                             + "): " + what + " failed: " + msg);
  }

  void exec(const std::string& sql) {
    result_ptr r{PQexec(conn_.get(), sql.c_str())};
    check(r.get(), sql.substr(0, sql.find(' ', sql.find(' ') + 1)));
  }

  result_ptr query(const std::string& sql) {
    result_ptr r{PQexec(conn_.get(), sql.c_str())};
    check(r.get(), sql.substr(0, 40));
    return r;
  }

  void ensure_progress_table() {
    // Two subtasks creating it at once can collide in the catalog: the
    // loser sees it exist on its second try.
    for (int attempt = 0;; ++attempt) {
      try {
        exec("CREATE TABLE IF NOT EXISTS " + spec_.progress_table
             + " (sink_id text PRIMARY KEY, checkpoint_id bigint NOT NULL, "
               "finished_at timestamptz NOT NULL DEFAULT now())");
        return;
      } catch (const connection_lost&) {
        throw;
      } catch (const std::runtime_error&) {
        if (attempt >= 2)
          throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

  void connect() {
    conn_ptr c{PQconnectdb(spec_.connection.c_str())};
    if (!c)
      throw connection_lost("out of memory");
    if (PQstatus(c.get()) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(c.get());
      while (!msg.empty() && msg.back() == '\n')
        msg.pop_back();
      if (refused_for_good(c.get(), msg))
        throw std::runtime_error("PostgreSQL sink '" + name_ + "': the server refused the "
                                 "connection (not retried): " + msg);
      throw connection_lost(msg);
    }
    PQsetNoticeProcessor(c.get(), on_notice, nullptr);
    conn_ = std::move(c);
    result_ptr r{PQexec(conn_.get(), "SET application_name = 'weir'")};
  }

  void connect_with_retries() {
    std::chrono::milliseconds wait{100};
    for (std::size_t attempt = 1;; ++attempt) {
      try {
        connect();
        return;
      } catch (const connection_lost& e) {
        if (attempt >= spec_.max_attempts)
          throw std::runtime_error("PostgreSQL sink '" + name_ + "': cannot connect after "
                                   + std::to_string(attempt) + " attempts: " + e.what());
        log::connectors().warn("PostgreSQL sink '{}' subtask {}: cannot connect (attempt {} "
                               "of {}): {}; retrying in {} ms",
                               name_, subtask_, attempt, spec_.max_attempts, e.what(),
                               wait.count());
        std::this_thread::sleep_for(wait);
        wait = std::min(wait * 2, std::chrono::milliseconds{5000});
      }
    }
  }

  postgres::sink spec_;
  postgres_sink_job job_;
  std::vector<std::pair<std::string, expr::compiled_expression>> columns_;
  std::vector<std::size_t> key_index_;
  std::map<std::size_t, std::string> sql_cache_;
  std::string name_;
  std::string prefix_;  ///< `<job>-<sink>-`
  std::string sink_id_; ///< `<job>-<sink>-<subtask>`
  std::uint32_t subtask_ = 0;
  std::uint32_t parallelism_ = 1;
  conn_ptr conn_;
  row_buffer buffer_; ///< rows not yet committed nor prepared
  std::size_t sent_ = 0; ///< exactly_once: rows of buffer_ in the open transaction
  bool in_txn_ = false;
  std::optional<prepared_txn> pending_;
  bool started_ = false;
  bool drop_replay_ = false;
  bool finished_ = false; ///< the input ended (finish)
  event_time flush_due_ = 0;
  std::uint64_t rows_in_ = 0, rows_committed_ = 0, dropped_ = 0;
  std::uint64_t kill_at_ = 0, completions_ = 0;
};

} // namespace

expected<stream_operator_ptr> make_postgres_sink(const postgres::sink& spec,
                                                 const postgres_sink_job& job,
                                                 schema_ptr input_schema) {
  if (!input_schema)
    return make_error(errc::invalid_argument, "a PostgreSQL sink needs its input's schema");
  if (spec.connection.empty())
    return make_error(errc::invalid_argument, "connection: a PostgreSQL sink needs a "
                                              "connection string");
  if (spec.table.empty())
    return make_error(errc::invalid_argument, "table: a PostgreSQL sink needs a table");
  if (spec.batch_size == 0)
    return make_error(errc::invalid_argument, "batch_size: must be at least 1");
  if (spec.progress_table.empty())
    return make_error(errc::invalid_argument, "progress_table: must not be empty");
  std::vector<std::pair<std::string, std::string>> cols = spec.columns;
  if (cols.empty())
    for (const auto& f : input_schema->fields())
      cols.emplace_back(f.name, quote_ident(f.name));
  std::set<std::string> names;
  std::vector<std::pair<std::string, expr::compiled_expression>> compiled;
  for (const auto& [name, text] : cols) {
    if (!names.insert(name).second)
      return make_error(errc::invalid_argument, "columns: column '" + name + "' named twice");
    auto e = expr::compile(text, *input_schema);
    if (!e) {
      auto err = e.error();
      err.message = "columns." + name + ": " + err.message;
      return err;
    }
    compiled.emplace_back(name, std::move(*e));
  }
  if (spec.mode == postgres_write_mode::upsert && spec.key_columns.empty())
    return make_error(errc::invalid_argument,
                      "key_columns: mode \"upsert\" needs the key columns (the conflict "
                      "target: a primary key or unique constraint)");
  if (spec.mode == postgres_write_mode::insert && !spec.key_columns.empty())
    return make_error(errc::invalid_argument,
                      "key_columns: applies to mode \"upsert\" only");
  for (const auto& k : spec.key_columns)
    if (!names.count(k))
      return make_error(errc::invalid_argument,
                        "key_columns: '" + k + "' is not one of the columns written");
  if (spec.delivery == postgres_delivery::exactly_once && !job.checkpoints)
    return make_error(errc::invalid_argument,
                      "delivery: \"exactly_once\" needs a [checkpoint] section: a transaction "
                      "commits when the checkpoint that covers it completes");
  return stream_operator_ptr{
    std::make_unique<postgres_sink>(spec, job, std::move(compiled))};
}

} // namespace weir
