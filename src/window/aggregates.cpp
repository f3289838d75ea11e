// SPDX-License-Identifier: Apache-2.0
#include "aggregates.hpp"

#include <algorithm>
#include <cctype>
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
  return std::nullopt;
}

// Two's complement wrap-around like Java's long, without signed-overflow UB.
std::int64_t wrapping_add(std::int64_t a, std::int64_t b) noexcept {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a)
                                   + static_cast<std::uint64_t>(b));
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
                        + "' (known: count, sum, min, max, avg)",
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
  std::size_t a = arg_begin;
  std::size_t b = arg_end;
  while (a < b && is_space(call[a]))
    ++a;
  while (b > a && is_space(call[b - 1]))
    --b;
  if (a == b)
    return make_error(errc::parse_error,
                      *kind == aggregate_kind::count
                        ? std::string{"count needs an argument: count(*) or count(expr)"}
                        : name + " needs an argument, e.g. " + name + "(bytes)",
                      a);

  aggregate_function fn;
  fn.kind = *kind;
  if (call.substr(a, b - a) == "*") {
    if (*kind != aggregate_kind::count)
      return make_error(errc::parse_error,
                        "'*' is only allowed in count(*), not in " + name + "(*)", a);
    fn.kind = aggregate_kind::count_rows;
    fn.result_type = type_id::int64;
    return fn;
  }

  auto compiled = expr::compile(call.substr(arg_begin, arg_end - arg_begin), input);
  if (!compiled) {
    auto err = compiled.error();
    err.offset = err.offset == error::npos ? a : arg_begin + err.offset;
    return err;
  }
  fn.input_type = compiled->result_type();
  fn.argument = std::move(*compiled);
  const type_id t = fn.input_type;
  switch (fn.kind) {
    case aggregate_kind::count_rows:
    case aggregate_kind::count:
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
  }
  return fn;
}

expected<aggregate_set> aggregate_set::make(const std::vector<window::aggregate_spec>& specs,
                                            const schema& input) {
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
    out.functions_.push_back(std::move(*fn));
    out.names_.push_back(spec.name);
  }
  return out;
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
    if (fn.argument)
      out.push_back(fn.argument->evaluate(batch));
    else
      out.emplace_back();
  }
  return out;
}

void aggregate_set::update(const std::vector<column>& args,
                           std::span<const row_target> targets) const {
  for (std::size_t j = 0; j < functions_.size(); ++j) {
    const auto& fn = functions_[j];
    const column& c = args[j];
    if (fn.kind == aggregate_kind::count_rows) {
      for (const auto& t : targets)
        ++t.accs[j].count;
      continue;
    }
    if (fn.input_type == type_id::null_type)
      continue; // count(null): never a value
    switch (fn.kind) {
      case aggregate_kind::count_rows:
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
    }
  }
}

value aggregate_set::result(std::size_t i, const accumulator& acc) const {
  const auto& fn = functions_[i];
  switch (fn.kind) {
    case aggregate_kind::count_rows:
    case aggregate_kind::count:
      return acc.count;
    case aggregate_kind::avg:
      if (acc.count == 0)
        return std::monostate{};
      if (fn.input_type == type_id::float64)
        return acc.f / static_cast<double>(acc.count);
      return static_cast<double>(acc.i) / static_cast<double>(acc.count);
    case aggregate_kind::sum:
    case aggregate_kind::min:
    case aggregate_kind::max:
      if (acc.count == 0)
        return std::monostate{};
      switch (fn.input_type) {
        case type_id::float64:
          return acc.f;
        case type_id::string:
          return acc.s;
        default:
          return acc.i;
      }
  }
  return std::monostate{};
}

void aggregate_set::append_results(const accumulator* accs, column* out) const {
  for (std::size_t j = 0; j < functions_.size(); ++j) {
    const auto& fn = functions_[j];
    const accumulator& acc = accs[j];
    column& c = out[j];
    switch (fn.kind) {
      case aggregate_kind::count_rows:
      case aggregate_kind::count:
        c.append_int(acc.count);
        break;
      case aggregate_kind::avg:
      case aggregate_kind::sum:
      case aggregate_kind::min:
      case aggregate_kind::max:
        if (acc.count == 0) {
          c.append_null();
        } else if (fn.kind == aggregate_kind::avg) {
          c.append_float(std::get<double>(result(j, acc)));
        } else if (fn.input_type == type_id::float64) {
          c.append_float(acc.f);
        } else if (fn.input_type == type_id::string) {
          c.append_string(acc.s);
        } else {
          c.append_int(acc.i);
        }
        break;
    }
  }
}

} // namespace weir::internal
