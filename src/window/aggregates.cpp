// SPDX-License-Identifier: Apache-2.0
#include "aggregates.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <unordered_set>

namespace weir::internal {

namespace {

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_ident_start(char c) noexcept {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_ident_char(char c) noexcept {
  return is_ident_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
}

constexpr std::string_view known_functions =
  "count, sum, min, max, avg, first, last, count_distinct, reduce";

std::optional<aggregate_kind> kind_of(std::string_view lower_name) noexcept {
  if (lower_name == "count")
    return aggregate_kind::count;
  if (lower_name == "sum")
    return aggregate_kind::sum;
  if (lower_name == "min")
    return aggregate_kind::min;
  if (lower_name == "max")
    return aggregate_kind::max;
  if (lower_name == "avg")
    return aggregate_kind::avg;
  if (lower_name == "first")
    return aggregate_kind::first;
  if (lower_name == "last")
    return aggregate_kind::last;
  if (lower_name == "count_distinct")
    return aggregate_kind::count_distinct;
  if (lower_name == "reduce")
    return aggregate_kind::reduce;
  return std::nullopt;
}

// Two's complement wrap-around like Java's long, without signed-overflow UB.
std::int64_t wrapping_add(std::int64_t a, std::int64_t b) noexcept {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a)
                                   + static_cast<std::uint64_t>(b));
}

// Byte offsets of the commas of `text` that are outside parentheses and
// quotes ('string', "field").
std::vector<std::size_t> top_level_commas(std::string_view text) {
  std::vector<std::size_t> out;
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote != 0) {
      if (c == quote)
        quote = 0; // '' inside a string reopens at once: harmless here
      continue;
    }
    if (c == '\'' || c == '"')
      quote = c;
    else if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if (c == ',' && depth == 0)
      out.push_back(i);
  }
  return out;
}

// [a, b) of `text` without surrounding whitespace.
std::pair<std::size_t, std::size_t> trimmed(std::string_view text, std::size_t a,
                                            std::size_t b) {
  while (a < b && is_space(text[a]))
    ++a;
  while (b > a && is_space(text[b - 1]))
    --b;
  return {a, b};
}

// Moves `err` (from compiling text that starts at `base` in the call) to an
// offset into the call; errors without an offset point at `fallback`.
error at_call_offset(error err, std::size_t base, std::size_t fallback) {
  err.offset = err.offset == error::npos ? fallback : base + err.offset;
  return err;
}

// Copies the value of row `row` of `c` into `acc` (types as
// accumulator documents); the caller checked it is not null.
void store(accumulator& acc, const column& c, std::size_t row) {
  switch (c.type) {
    case type_id::int64:
    case type_id::timestamp:
      acc.i = c.ints[row];
      break;
    case type_id::boolean:
      acc.i = c.bools[row] != 0 ? 1 : 0;
      break;
    case type_id::float64:
      acc.f = c.floats[row];
      break;
    case type_id::string:
      acc.s.assign(c.str(row));
      break;
    case type_id::null_type:
      break;
  }
}

void store_value(accumulator& acc, const value& v) {
  acc.null = false;
  if (auto* i = std::get_if<std::int64_t>(&v))
    acc.i = *i;
  else if (auto* b = std::get_if<bool>(&v))
    acc.i = *b ? 1 : 0;
  else if (auto* d = std::get_if<double>(&v))
    acc.f = *d;
  else if (auto* s = std::get_if<std::string>(&v))
    acc.s = *s;
  else
    acc.null = true;
}

value load(const accumulator& acc, type_id t) {
  switch (t) {
    case type_id::int64:
    case type_id::timestamp:
      return acc.i;
    case type_id::boolean:
      return acc.i != 0;
    case type_id::float64:
      return acc.f;
    case type_id::string:
      return acc.s;
    case type_id::null_type:
      break;
  }
  return std::monostate{};
}

// A type-tagged encoding of one value for count_distinct (-0.0 == 0.0).
std::string distinct_key(const column& c, std::size_t row) {
  std::string out;
  switch (c.type) {
    case type_id::int64:
    case type_id::timestamp:
      out.resize(sizeof(std::int64_t));
      std::memcpy(out.data(), &c.ints[row], sizeof(std::int64_t));
      break;
    case type_id::boolean:
      out.push_back(c.bools[row] != 0 ? '\1' : '\0');
      break;
    case type_id::float64: {
      double d = c.floats[row] == 0.0 ? 0.0 : c.floats[row];
      auto bits = std::bit_cast<std::uint64_t>(d);
      out.resize(sizeof bits);
      std::memcpy(out.data(), &bits, sizeof bits);
      break;
    }
    case type_id::string:
      out.assign(c.str(row));
      break;
    case type_id::null_type:
      break;
  }
  return out;
}

template <class Less>
void update_min_max(std::size_t j, const column& c, std::span<const row_target> targets,
                    Less less) {
  switch (c.type) {
    case type_id::int64:
    case type_id::timestamp:
      for (const auto& t : targets) {
        if (c.is_null(t.row))
          continue;
        auto& acc = t.accs[j];
        auto x = c.ints[t.row];
        if (acc.count == 0 || less(x, acc.i))
          acc.i = x;
        ++acc.count;
      }
      break;
    case type_id::float64:
      for (const auto& t : targets) {
        if (c.is_null(t.row))
          continue;
        auto& acc = t.accs[j];
        auto x = c.floats[t.row];
        if (acc.count == 0 || less(x, acc.f))
          acc.f = x;
        ++acc.count;
      }
      break;
    case type_id::string:
      for (const auto& t : targets) {
        if (c.is_null(t.row))
          continue;
        auto& acc = t.accs[j];
        auto x = c.str(t.row);
        if (acc.count == 0 || less(x, std::string_view{acc.s}))
          acc.s.assign(x);
        ++acc.count;
      }
      break;
    case type_id::boolean:
    case type_id::null_type:
      break; // rejected by parse_aggregate
  }
}

// min (want_less) or max of two non-empty accumulators of type `t`, into `a`.
void merge_min_max(accumulator& a, const accumulator& b, type_id t, bool want_less) {
  bool take = false;
  switch (t) {
    case type_id::float64:
      take = want_less ? b.f < a.f : a.f < b.f;
      break;
    case type_id::string:
      take = want_less ? b.s < a.s : a.s < b.s;
      break;
    default:
      take = want_less ? b.i < a.i : a.i < b.i;
      break;
  }
  if (take) {
    a.i = b.i;
    a.f = b.f;
    a.s = b.s;
  }
}

expected<aggregate_function> parse_reduce(std::string_view call, std::size_t arg_begin,
                                          std::size_t arg_end, const schema& input) {
  const auto args = call.substr(arg_begin, arg_end - arg_begin);
  const auto commas = top_level_commas(args);
  if (commas.size() != 1)
    return make_error(errc::parse_error,
                      "reduce takes two arguments, an expression over 'acc' and the "
                      "record and the start value: reduce(acc + value, 0)",
                      commas.size() > 1 ? arg_begin + commas[1] : arg_end);
  const std::size_t comma = arg_begin + commas[0];
  auto [ea, eb] = trimmed(call, arg_begin, comma);
  auto [ia, ib] = trimmed(call, comma + 1, arg_end);
  if (ea == eb)
    return make_error(errc::parse_error, "reduce needs an expression before the ','", ea);
  if (ia == ib)
    return make_error(errc::parse_error,
                      "reduce needs a start value after the ',', e.g. 0, 0.0 or ''", ia);

  const schema no_fields;
  auto init = expr::compile(call.substr(comma + 1, arg_end - comma - 1), no_fields);
  if (!init) {
    auto err = at_call_offset(init.error(), comma + 1, ia);
    if (err.message.rfind("unknown field", 0) == 0)
      err.message = "reduce: the start value must be a constant, got " + err.message;
    return err;
  }
  const type_id t = init->result_type();
  if (t == type_id::null_type)
    return make_error(errc::type_error,
                      "reduce: the start value needs a type (0, 0.0, '', false), got null",
                      ia);
  if (input.index_of("acc"))
    return make_error(errc::parse_error,
                      "reduce: the input has a field named 'acc', which the accumulator "
                      "would hide; rename it with a map operator first",
                      ea);

  aggregate_function fn;
  fn.kind = aggregate_kind::reduce;
  fn.input_type = t;
  fn.result_type = t;
  record_batch one;
  one.schema = std::make_shared<const schema>();
  one.num_rows = 1;
  fn.init = init->evaluate(one).get(0);

  auto fields = input.fields();
  fields.push_back(field{"acc", t});
  fn.reduce_schema = make_schema(std::move(fields));
  auto body = expr::compile(call.substr(arg_begin, comma - arg_begin), *fn.reduce_schema);
  if (!body)
    return at_call_offset(body.error(), arg_begin, ea);
  const type_id bt = body->result_type();
  if (bt != t && bt != type_id::null_type && !(t == type_id::float64 && bt == type_id::int64))
    return make_error(errc::type_error,
                      "reduce: the expression has type " + std::string{to_string(bt)}
                        + " but the start value has type " + std::string{to_string(t)}
                        + (t == type_id::int64 && bt == type_id::float64
                             ? " (write the start value as 0.0)"
                             : ""),
                      ea);
  fn.argument = std::move(*body);
  return fn;
}

// Adds `targets` to aggregate `j` (function `fn`, arguments `c`).
void update_aggregate(const aggregate_function& fn, std::size_t j, const column& c,
                      std::span<const row_target> targets) {
  if (fn.kind == aggregate_kind::count_rows) {
    for (const auto& t : targets)
      ++t.accs[j].count;
    return;
  }
  if (fn.input_type == type_id::null_type)
    return; // count(null): never a value
  switch (fn.kind) {
    case aggregate_kind::count_rows:
    case aggregate_kind::reduce: // precondition: none
      break;
    case aggregate_kind::count:
      for (const auto& t : targets)
        if (c.is_valid(t.row))
          ++t.accs[j].count;
      break;
    case aggregate_kind::sum:
    case aggregate_kind::avg:
      if (c.type == type_id::float64) {
        for (const auto& t : targets) {
          if (c.is_null(t.row))
            continue;
          t.accs[j].f += c.floats[t.row];
          ++t.accs[j].count;
        }
      } else {
        for (const auto& t : targets) {
          if (c.is_null(t.row))
            continue;
          t.accs[j].i = wrapping_add(t.accs[j].i, c.ints[t.row]);
          ++t.accs[j].count;
        }
      }
      break;
    case aggregate_kind::min:
      update_min_max(j, c, targets, [](const auto& x, const auto& y) { return x < y; });
      break;
    case aggregate_kind::max:
      update_min_max(j, c, targets, [](const auto& x, const auto& y) { return y < x; });
      break;
    case aggregate_kind::first:
      for (const auto& t : targets) {
        if (c.is_null(t.row) || t.accs[j].count > 0)
          continue;
        store(t.accs[j], c, t.row);
        t.accs[j].count = 1;
      }
      break;
    case aggregate_kind::last:
      for (const auto& t : targets) {
        if (c.is_null(t.row))
          continue;
        store(t.accs[j], c, t.row);
        ++t.accs[j].count;
      }
      break;
    case aggregate_kind::count_distinct:
      for (const auto& t : targets)
        if (c.is_valid(t.row))
          t.accs[j].distinct.insert(distinct_key(c, t.row));
      break;
  }
}

} // namespace

std::string_view to_string(aggregate_kind k) noexcept {
  switch (k) {
    case aggregate_kind::count_rows:
    case aggregate_kind::count:
      return "count";
    case aggregate_kind::sum:
      return "sum";
    case aggregate_kind::min:
      return "min";
    case aggregate_kind::max:
      return "max";
    case aggregate_kind::avg:
      return "avg";
    case aggregate_kind::first:
      return "first";
    case aggregate_kind::last:
      return "last";
    case aggregate_kind::count_distinct:
      return "count_distinct";
    case aggregate_kind::reduce:
      return "reduce";
  }
  return "?";
}

expected<aggregate_function> parse_aggregate(std::string_view call,
                                             const schema& input) {
  std::size_t pos = 0;
  while (pos < call.size() && is_space(call[pos]))
    ++pos;
  if (pos == call.size() || !is_ident_start(call[pos]))
    return make_error(errc::parse_error,
                      "expected an aggregate call like count(*) or sum(bytes)", pos);
  const std::size_t name_begin = pos;
  while (pos < call.size() && is_ident_char(call[pos]))
    ++pos;
  std::string name{call.substr(name_begin, pos - name_begin)};
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  auto kind = kind_of(name);
  if (!kind)
    return make_error(errc::parse_error,
                      "unknown aggregate function '"
                        + std::string{call.substr(name_begin, pos - name_begin)}
                        + "' (known: " + std::string{known_functions} + ")",
                      name_begin);
  while (pos < call.size() && is_space(call[pos]))
    ++pos;
  if (pos == call.size() || call[pos] != '(')
    return make_error(errc::parse_error, "expected '(' after '" + name + "'", pos);
  const std::size_t arg_begin = pos + 1;
  std::size_t end = call.size();
  while (end > arg_begin && is_space(call[end - 1]))
    --end;
  if (end == arg_begin || call[end - 1] != ')')
    return make_error(errc::parse_error,
                      "expected ')' at the end of the " + name + "(...) call", end);
  const std::size_t arg_end = end - 1;
  auto [a, b] = trimmed(call, arg_begin, arg_end);
  if (a == b)
    return make_error(errc::parse_error,
                      *kind == aggregate_kind::count
                        ? std::string{"count needs an argument: count(*) or count(expr)"}
                      : *kind == aggregate_kind::reduce
                        ? std::string{"reduce needs two arguments: reduce(acc + value, 0)"}
                        : name + " needs an argument, e.g. " + name + "(bytes)",
                      a);

  if (call.substr(a, b - a) == "*") {
    if (*kind != aggregate_kind::count)
      return make_error(errc::parse_error,
                        "'*' is only allowed in count(*), not in " + name + "(*)", a);
    aggregate_function fn;
    fn.kind = aggregate_kind::count_rows;
    fn.result_type = type_id::int64;
    return fn;
  }
  if (*kind == aggregate_kind::reduce)
    return parse_reduce(call, arg_begin, arg_end, input);

  aggregate_function fn;
  fn.kind = *kind;
  auto compiled = expr::compile(call.substr(arg_begin, arg_end - arg_begin), input);
  if (!compiled)
    return at_call_offset(compiled.error(), arg_begin, a);
  fn.input_type = compiled->result_type();
  fn.argument = std::move(*compiled);
  const type_id t = fn.input_type;
  switch (fn.kind) {
    case aggregate_kind::count_rows:
    case aggregate_kind::count:
    case aggregate_kind::count_distinct:
      fn.result_type = type_id::int64;
      break;
    case aggregate_kind::sum:
    case aggregate_kind::avg:
      if (t != type_id::int64 && t != type_id::float64)
        return make_error(errc::type_error,
                          name + " needs a number, got " + std::string{to_string(t)}, a);
      fn.result_type = fn.kind == aggregate_kind::avg ? type_id::float64 : t;
      break;
    case aggregate_kind::min:
    case aggregate_kind::max:
      if (t != type_id::int64 && t != type_id::float64 && t != type_id::timestamp
          && t != type_id::string)
        return make_error(errc::type_error,
                          name + " needs a number, timestamp or string, got "
                            + std::string{to_string(t)},
                          a);
      fn.result_type = t;
      break;
    case aggregate_kind::first:
    case aggregate_kind::last:
      if (t == type_id::null_type)
        return make_error(errc::type_error,
                          name + " needs an argument with a type, got null", a);
      fn.result_type = t;
      break;
    case aggregate_kind::reduce:
      break; // handled above
  }
  return fn;
}

expected<aggregate_set> aggregate_set::make(const std::vector<window::aggregate_spec>& specs,
                                            const schema& input, bool allow_reduce) {
  aggregate_set out;
  std::unordered_set<std::string> seen;
  for (const auto& spec : specs) {
    if (spec.name.empty())
      return make_error(errc::invalid_argument,
                        "aggregate \"" + spec.call + "\" needs a name");
    if (!seen.insert(spec.name).second)
      return make_error(errc::invalid_argument,
                        "aggregate name '" + spec.name + "' is used twice");
    auto fn = parse_aggregate(spec.call, input);
    if (!fn) {
      auto err = fn.error();
      err.message = "aggregate '" + spec.name + "': " + err.message;
      return err;
    }
    if (fn->kind == aggregate_kind::reduce && !allow_reduce) {
      auto at = spec.call.find_first_not_of(" \t\r\n");
      return make_error(errc::parse_error,
                        "aggregate '" + spec.name
                          + "': reduce is only available in window operators",
                        at == std::string::npos ? 0 : at);
    }
    out.functions_.push_back(std::move(*fn));
    out.names_.push_back(spec.name);
  }
  return out;
}

bool aggregate_set::has_reduce() const noexcept {
  return std::any_of(functions_.begin(), functions_.end(), [](const auto& fn) {
    return fn.kind == aggregate_kind::reduce;
  });
}

std::vector<field> aggregate_set::output_fields() const {
  std::vector<field> out;
  out.reserve(functions_.size());
  for (std::size_t i = 0; i < functions_.size(); ++i)
    out.push_back(field{names_[i], functions_[i].result_type});
  return out;
}

std::vector<column> aggregate_set::evaluate(const record_batch& batch) const {
  std::vector<column> out;
  out.reserve(functions_.size());
  for (const auto& fn : functions_) {
    if (fn.argument && fn.kind != aggregate_kind::reduce)
      out.push_back(fn.argument->evaluate(batch));
    else
      out.emplace_back();
  }
  return out;
}

void aggregate_set::update(const std::vector<column>& args,
                           std::span<const row_target> targets) const {
  for (std::size_t j = 0; j < functions_.size(); ++j)
    update_aggregate(functions_[j], j, args[j], targets);
}

void aggregate_set::update_row(const record_batch& batch, const std::vector<column>& args,
                               std::uint32_t row, std::uint64_t seq,
                               accumulator* accs) const {
  const row_target target{row, accs};
  for (std::size_t j = 0; j < functions_.size(); ++j) {
    const auto& fn = functions_[j];
    accumulator& acc = accs[j];
    switch (fn.kind) {
      case aggregate_kind::first: {
        const column& c = args[j];
        if (fn.input_type == type_id::null_type || c.is_null(row))
          break;
        if (acc.count == 0 || seq < acc.seq) {
          store(acc, c, row);
          acc.seq = seq;
        }
        ++acc.count;
        break;
      }
      case aggregate_kind::last: {
        const column& c = args[j];
        if (fn.input_type == type_id::null_type || c.is_null(row))
          break;
        if (acc.count == 0 || seq >= acc.seq) {
          store(acc, c, row);
          acc.seq = seq;
        }
        ++acc.count;
        break;
      }
      case aggregate_kind::reduce: {
        // A one-row batch of the record's fields and the accumulator.
        record_batch one;
        one.schema = fn.reduce_schema;
        one.num_rows = 1;
        one.columns.reserve(batch.columns.size() + 1);
        for (const auto& c : batch.columns) {
          auto& dst = one.columns.emplace_back(c.type);
          dst.append_from(c, row);
        }
        auto& acc_col = one.columns.emplace_back(fn.result_type);
        if (acc.count == 0)
          store_value(acc, fn.init);
        if (acc.null)
          acc_col.append_null();
        else
          acc_col.append_value(load(acc, fn.result_type));
        value next = fn.argument->evaluate(one).get(0);
        if (fn.result_type == type_id::float64)
          if (auto* i = std::get_if<std::int64_t>(&next))
            next = static_cast<double>(*i);
        store_value(acc, next);
        ++acc.count;
        break;
      }
      default:
        update_aggregate(fn, j, args[j], std::span<const row_target>{&target, 1});
        break;
    }
  }
}

void aggregate_set::merge(accumulator* into, const accumulator* from) const {
  for (std::size_t j = 0; j < functions_.size(); ++j) {
    const auto& fn = functions_[j];
    accumulator& a = into[j];
    const accumulator& b = from[j];
    switch (fn.kind) {
      case aggregate_kind::count_rows:
      case aggregate_kind::count:
        a.count += b.count;
        break;
      case aggregate_kind::sum:
      case aggregate_kind::avg:
        a.i = wrapping_add(a.i, b.i);
        a.f += b.f;
        a.count += b.count;
        break;
      case aggregate_kind::min:
      case aggregate_kind::max:
        if (b.count == 0)
          break;
        if (a.count == 0) {
          a = b;
          break;
        }
        merge_min_max(a, b, fn.input_type, fn.kind == aggregate_kind::min);
        a.count += b.count;
        break;
      case aggregate_kind::first:
      case aggregate_kind::last:
        if (b.count == 0)
          break;
        if (a.count == 0
            || (fn.kind == aggregate_kind::first ? b.seq < a.seq : b.seq > a.seq)) {
          const auto n = a.count;
          a = b;
          a.count += n;
        } else {
          a.count += b.count;
        }
        break;
      case aggregate_kind::count_distinct:
        a.distinct.insert(b.distinct.begin(), b.distinct.end());
        break;
      case aggregate_kind::reduce:
        break; // precondition: none
    }
  }
}

value aggregate_set::result(std::size_t i, const accumulator& acc) const {
  const auto& fn = functions_[i];
  switch (fn.kind) {
    case aggregate_kind::count_rows:
    case aggregate_kind::count:
      return acc.count;
    case aggregate_kind::count_distinct:
      return static_cast<std::int64_t>(acc.distinct.size());
    case aggregate_kind::avg:
      if (acc.count == 0)
        return std::monostate{};
      if (fn.input_type == type_id::float64)
        return acc.f / static_cast<double>(acc.count);
      return static_cast<double>(acc.i) / static_cast<double>(acc.count);
    case aggregate_kind::reduce:
      if (acc.count == 0)
        return fn.init;
      if (acc.null)
        return std::monostate{};
      return load(acc, fn.result_type);
    case aggregate_kind::sum:
    case aggregate_kind::min:
    case aggregate_kind::max:
    case aggregate_kind::first:
    case aggregate_kind::last:
      if (acc.count == 0)
        return std::monostate{};
      return load(acc, fn.input_type);
  }
  return std::monostate{};
}

void aggregate_set::append_results(const accumulator* accs, column* out) const {
  for (std::size_t j = 0; j < functions_.size(); ++j)
    out[j].append_value(result(j, accs[j]));
}

} // namespace weir::internal
