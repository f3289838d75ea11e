// SPDX-License-Identifier: Apache-2.0
#include "kinds/sources/generator/generator_source.hpp"

#include "connectors/internal/pacer.hpp"
#include "weir/expr/expression.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace weir {

namespace {

error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

/// Rows of `total` (none = unbounded) that subtask i of p generates.
std::optional<std::uint64_t> local_share(std::optional<std::uint64_t> total, std::size_t i,
                                         std::size_t p) {
  if (!total)
    return std::nullopt;
  if (*total <= i)
    return 0;
  return (*total - i + p - 1) / p;
}

struct compiled_generator {
  schema_ptr output;
  std::vector<expr::compiled_expression> fields;
  std::optional<std::size_t> event_time_index;
};

expected<compiled_generator> compile_generator(const generator::source& spec) {
  if (spec.fields.empty())
    return invalid("a generator needs at least one field");
  if (spec.rate < 0)
    return invalid("a generator's rate must not be negative");
  compiled_generator out;
  std::vector<field> fields;
  const auto input = generator_input_schema();
  for (const auto& [name, text] : spec.fields) {
    for (const auto& f : fields)
      if (f.name == name)
        return invalid("field '" + name + "' is defined twice");
    auto c = expr::compile(text, *input, expr::compile_options{spec.seed});
    if (!c) {
      auto err = c.error();
      err.message = "field '" + name + "': " + err.message;
      return err;
    }
    auto t = c->result_type();
    fields.push_back(field{name, t == type_id::null_type ? type_id::string : t});
    out.fields.push_back(std::move(*c));
  }
  if (!spec.event_time_field.empty()) {
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (fields[i].name == spec.event_time_field)
        out.event_time_index = i;
    if (!out.event_time_index)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' is not a field of the generator (fields: "
                     + schema{fields}.to_string() + ")");
    auto t = fields[*out.event_time_index].type;
    if (t != type_id::timestamp && t != type_id::int64)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' must be a timestamp or int64, got " + std::string{to_string(t)});
  }
  if (!spec.generation_time_field.empty()) {
    for (const auto& f : fields)
      if (f.name == spec.generation_time_field)
        return invalid("generation_time_field '" + spec.generation_time_field
                       + "' clashes with a field of that name");
    fields.push_back(field{spec.generation_time_field, type_id::int64});
  }
  out.output = make_schema(std::move(fields));
  return out;
}

/// A record_batch of 0 rows of `s`.
record_batch_ptr empty_batch(const schema_ptr& s) {
  auto b = std::make_shared<record_batch>();
  b->schema = s;
  for (const auto& f : s->fields())
    b->columns.emplace_back(f.type);
  return b;
}

/// Appends the generation time of rows [first, first + n) of this subtask:
/// their scheduled times when rate-limited, else now.
column generation_times(const internal::emission_pacer& pacer, std::uint64_t first,
                        std::size_t n) {
  column c{type_id::int64};
  c.validity.assign(n, 1);
  c.ints.resize(n);
  if (pacer.limited()) {
    for (std::size_t j = 0; j < n; ++j)
      c.ints[j] = pacer.scheduled_ns(first + j);
  } else {
    c.ints.assign(n, internal::steady_now_ns());
  }
  return c;
}

/// Event numbering shared by generated sources: subtask s of p generates
/// events s, s + p, s + 2p, ...; `next_` counts this subtask's events.
class interleaved_reader : public source_reader {
public:
  /// One split, unnamed: the next event number this subtask generates.
  std::vector<source_position> positions() const override {
    return {{"", position_unit::event_number, subtask_ + next_ * parallelism_}};
  }

  /// Resumes at the event number `positions()` returned (same parallelism:
  /// each subtask generates every parallelism-th event).
  void seek(const std::vector<source_position>& to) override {
    const auto position = select_position(to, "", position_unit::event_number);
    if (position < subtask_ || (position - subtask_) % parallelism_ != 0)
      throw std::runtime_error("cannot resume a generated source at event "
                               + std::to_string(position) + " with parallelism "
                               + std::to_string(parallelism_)
                               + " (restore it at the parallelism it ran with)");
    next_ = (position - subtask_) / parallelism_;
  }

protected:
  interleaved_reader(std::size_t subtask, std::size_t parallelism)
    : subtask_(subtask), parallelism_(parallelism) {}

  std::size_t subtask_;
  std::size_t parallelism_;
  std::uint64_t next_ = 0;
};

class generator_reader final : public interleaved_reader {
public:
  generator_reader(compiled_generator g, const generator::source& spec, std::size_t subtask,
                   std::size_t parallelism, std::chrono::milliseconds buffer_timeout,
                   std::vector<bool> needed)
    : interleaved_reader(subtask, parallelism),
      gen_(std::move(g)),
      needed_(std::move(needed)),
      local_count_(local_share(spec.count, subtask, parallelism)),
      pacer_(spec.rate / static_cast<double>(parallelism), buffer_timeout),
      with_generation_time_(!spec.generation_time_field.empty()),
      empty_(empty_batch(gen_.output)) {
    input_.schema = generator_input_schema();
    input_.columns.emplace_back(type_id::int64);
  }

  const schema_ptr& output_schema() const override { return gen_.output; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (local_count_ && next_ >= *local_count_)
      return nullptr;
    const auto now = internal::steady_now_ns();
    if (!started_) {
      pacer_.start(now);
      started_ = true;
    }
    std::uint64_t limit = max_rows == 0 ? 1 : max_rows;
    if (local_count_)
      limit = std::min<std::uint64_t>(limit, *local_count_ - next_);
    const auto n = static_cast<std::size_t>(pacer_.allowance(now, limit));
    if (n == 0) {
      delay_ = pacer_.delay(now, limit);
      return empty_;
    }
    delay_ = std::chrono::nanoseconds{0};

    column& seq = input_.columns[0];
    seq.validity.assign(n, 1);
    seq.ints.resize(n);
    const auto p = static_cast<std::int64_t>(parallelism_);
    std::int64_t s = static_cast<std::int64_t>(subtask_) + static_cast<std::int64_t>(next_) * p;
    for (std::size_t j = 0; j < n; ++j, s += p)
      seq.ints[j] = s;
    input_.num_rows = n;

    auto out = std::make_shared<record_batch>();
    out->schema = gen_.output;
    out->num_rows = n;
    out->columns.reserve(gen_.output->size());
    for (std::size_t i = 0; i < gen_.fields.size(); ++i) {
      if (i < needed_.size() && !needed_[i] && gen_.event_time_index != i
          && gen_.output->at(i).type != type_id::null_type) {
        // Read by nothing downstream (prune_generated_fields): all null,
        // and without values (column::has_values): the filters and selects
        // before the select that drops it never read them.
        column c{gen_.output->at(i).type};
        c.validity.assign(n, 0);
        out->columns.push_back(std::move(c));
        continue;
      }
      out->columns.push_back(gen_.fields[i].evaluate(input_));
    }
    if (with_generation_time_)
      out->columns.push_back(generation_times(pacer_, pacer_.emitted(), n));
    if (const auto t = gen_.event_time_index) {
      column& et = out->columns[*t];
      if (const std::size_t j = et.first_null(); j < n)
        throw std::runtime_error("generator: event-time field '" + gen_.output->at(*t).name
                                 + "' is null at seq " + std::to_string(seq.ints[j]));
      if (*t < needed_.size() && !needed_[*t]) {
        // Read by nothing downstream but the event time: its values move
        // there, and it goes on as the other unread fields do.
        out->timestamps = std::move(et.ints);
        out->timestamps.resize(n);
        et.ints.clear();
        et.validity.assign(n, 0);
      } else {
        out->timestamps.assign(et.ints.begin(), et.ints.begin() + static_cast<std::ptrdiff_t>(n));
      }
    }
    next_ += n;
    pacer_.emitted(n);
    return out;
  }


  std::chrono::nanoseconds next_poll_delay() const override { return delay_; }

private:
  compiled_generator gen_;
  std::vector<bool> needed_; ///< per field; empty = all
  std::optional<std::uint64_t> local_count_;
  internal::emission_pacer pacer_;
  bool with_generation_time_;
  record_batch_ptr empty_;
  record_batch input_;
  bool started_ = false;
  std::chrono::nanoseconds delay_{0};
};

nexmark::event_kind kind_of(nexmark_stream s) {
  switch (s) {
    case nexmark_stream::person: return nexmark::event_kind::person;
    case nexmark_stream::auction: return nexmark::event_kind::auction;
    case nexmark_stream::bid: return nexmark::event_kind::bid;
  }
  return nexmark::event_kind::bid;
}

class nexmark_reader final : public interleaved_reader {
public:
  nexmark_reader(schema_ptr output, const nexmark::source& spec, std::size_t subtask,
                 std::size_t parallelism, std::chrono::milliseconds buffer_timeout,
                 nexmark::field_mask fields)
    : interleaved_reader(subtask, parallelism),
      output_(std::move(output)),
      gen_(spec.generator),
      kind_(kind_of(spec.stream)),
      local_events_(local_share(spec.events, subtask, parallelism)),
      pacer_(spec.rate / static_cast<double>(parallelism), buffer_timeout),
      with_generation_time_(!spec.generation_time_field.empty()),
      empty_(empty_batch(output_)) {
    const auto [first, last] = gen_.block_offsets(kind_);
    events_per_row_ = static_cast<double>(spec.generator.total_proportion())
                      / static_cast<double>(last - first);
    rows_.fields = fields;
  }

  const schema_ptr& output_schema() const override { return output_; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (local_events_ && next_ >= *local_events_)
      return nullptr;
    const auto now = internal::steady_now_ns();
    if (!started_) {
      pacer_.start(now);
      started_ = true;
    }
    const std::size_t rows_wanted = max_rows == 0 ? 1 : max_rows;
    // Events to scan for about `rows_wanted` rows of this stream.
    std::uint64_t limit =
      static_cast<std::uint64_t>(static_cast<double>(rows_wanted) * events_per_row_) + 1;
    if (local_events_)
      limit = std::min<std::uint64_t>(limit, *local_events_ - next_);
    const std::uint64_t allowed = pacer_.allowance(now, limit);
    if (allowed == 0) {
      delay_ = pacer_.delay(now, limit);
      return empty_;
    }
    delay_ = std::chrono::nanoseconds{0};

    auto out = std::make_shared<record_batch>();
    out->schema = output_;
    out->columns.reserve(output_->size());
    for (std::size_t c = 0; c < output_->size(); ++c) {
      column& col = out->columns.emplace_back(output_->at(c).type);
      col.reserve(rows_wanted);
      // Text columns: as many bytes as the last batch had, plus slack, so
      // that they are allocated once instead of grown by copying.
      if (c < chars_hint_.size() && chars_hint_[c] > 0)
        col.chars.reserve(chars_hint_[c] + chars_hint_[c] / 8);
    }
    out->timestamps.reserve(rows_wanted);
    column* gen_col = with_generation_time_ ? &out->columns.back() : nullptr;
    std::uint64_t scanned = 0;
    const auto p = static_cast<std::uint64_t>(parallelism_);
    // The kind of event n is decided by n % total (kind_of); n advances by
    // p, so the remainder is carried along instead of divided out per event.
    const auto total = static_cast<std::uint64_t>(gen_.config().total_proportion());
    const std::uint64_t step = p % total;
    std::uint64_t rem = (subtask_ + next_ * p) % total;
    const auto [kind_lo, kind_hi] = gen_.block_offsets(kind_);
    // Bids, the bulk of the stream, are generated a few dozen at a time
    // (row_appender::append_bids); persons and auctions one by one.
    const bool by_pass = kind_ == nexmark::event_kind::bid;
    std::array<std::uint64_t, nexmark::row_appender::max_bids_at_once> pending;
    std::size_t held = 0;
    for (; scanned < allowed && out->num_rows + held < rows_wanted; ++scanned) {
      const std::uint64_t n = subtask_ + (next_ + scanned) * p;
      const bool wanted = rem >= kind_lo && rem < kind_hi;
      rem += step;
      if (rem >= total)
        rem -= total;
      if (!wanted)
        continue;
      if (gen_col)
        gen_col->append_int(pacer_.limited() ? pacer_.scheduled_ns(pacer_.emitted() + scanned)
                                             : now);
      if (!by_pass) {
        rows_.append(gen_, kind_, n, *out);
        continue;
      }
      pending[held++] = n;
      if (held == pending.size()) {
        rows_.append_bids(gen_, pending.data(), held, *out);
        held = 0;
      }
    }
    if (held > 0)
      rows_.append_bids(gen_, pending.data(), held, *out);
    rows_.complete(kind_, *out);
    next_ += scanned;
    pacer_.emitted(scanned);
    chars_hint_.resize(output_->size());
    if (out->num_rows == rows_wanted)
      for (std::size_t c = 0; c < output_->size(); ++c)
        chars_hint_[c] = out->columns[c].chars.size();
    return out;
  }


  std::chrono::nanoseconds next_poll_delay() const override { return delay_; }

private:
  schema_ptr output_;
  nexmark::generator gen_;
  nexmark::event_kind kind_;
  std::optional<std::uint64_t> local_events_;
  internal::emission_pacer pacer_;
  bool with_generation_time_;
  record_batch_ptr empty_;
  nexmark::row_appender rows_;
  std::vector<std::size_t> chars_hint_; ///< text bytes per column of the last full batch
  double events_per_row_ = 1;
  bool started_ = false;
  std::chrono::nanoseconds delay_{0};
};

} // namespace

schema_ptr generator_input_schema() {
  static const schema_ptr s = make_schema({{"seq", type_id::int64}});
  return s;
}

expected<schema_ptr> generator_output_schema(const generator::source& spec) {
  auto g = compile_generator(spec);
  if (!g)
    return g.error();
  return g->output;
}

expected<schema_ptr> nexmark_output_schema(const nexmark::source& spec) {
  auto base = nexmark::schema_of(kind_of(spec.stream));
  if (spec.generation_time_field.empty())
    return base;
  if (base->index_of(spec.generation_time_field))
    return invalid("generation_time_field '" + spec.generation_time_field
                   + "' clashes with a Nexmark field of that name");
  auto fields = base->fields();
  fields.push_back(field{spec.generation_time_field, type_id::int64});
  return make_schema(std::move(fields));
}

expected<source_reader_ptr> make_generator_reader(const generator::source& spec,
                                                  std::size_t subtask, std::size_t parallelism,
                                                  std::chrono::milliseconds buffer_timeout,
                                                  std::vector<bool> needed) {
  auto g = compile_generator(spec);
  if (!g)
    return g.error();
  if (parallelism == 0 || subtask >= parallelism)
    return invalid("generator: subtask " + std::to_string(subtask) + " of "
                   + std::to_string(parallelism));
  return source_reader_ptr{
    std::make_unique<generator_reader>(std::move(*g), spec, subtask, parallelism, buffer_timeout,
                                       std::move(needed))};
}

expected<source_reader_ptr> make_nexmark_reader(const nexmark::source& spec,
                                                std::size_t subtask, std::size_t parallelism,
                                                std::chrono::milliseconds buffer_timeout,
                                                const std::vector<bool>& needed) {
  auto out = nexmark_output_schema(spec);
  if (!out)
    return out.error();
  if (parallelism == 0 || subtask >= parallelism)
    return invalid("nexmark: subtask " + std::to_string(subtask) + " of "
                   + std::to_string(parallelism));
  nexmark::field_mask fields = nexmark::all_fields;
  for (std::size_t i = 0; i < needed.size() && i < 32; ++i)
    if (!needed[i])
      fields &= ~(nexmark::field_mask{1} << i);
  return source_reader_ptr{
    std::make_unique<nexmark_reader>(*out, spec, subtask, parallelism, buffer_timeout, fields)};
}

} // namespace weir
