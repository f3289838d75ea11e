// SPDX-License-Identifier: Apache-2.0
#include "weir/core/record_batch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace weir {

void column::reserve(std::size_t rows) {
  validity.reserve(rows);
  switch (type) {
    case type_id::int64:
    case type_id::timestamp:
      ints.reserve(rows);
      break;
    case type_id::float64:
      floats.reserve(rows);
      break;
    case type_id::boolean:
      bools.reserve(rows);
      break;
    case type_id::string:
      offsets.reserve(rows + 1);
      break;
    case type_id::null_type:
      break;
  }
}

void column::append_null() {
  validity.push_back(0);
  switch (type) {
    case type_id::int64:
    case type_id::timestamp:
      ints.push_back(0);
      break;
    case type_id::float64:
      floats.push_back(0.0);
      break;
    case type_id::boolean:
      bools.push_back(0);
      break;
    case type_id::string:
      offsets.push_back(static_cast<std::uint32_t>(chars.size()));
      break;
    case type_id::null_type:
      break;
  }
}

void column::append_bool(bool x) {
  validity.push_back(1);
  bools.push_back(x ? 1 : 0);
}

void column::append_int(std::int64_t x) {
  validity.push_back(1);
  ints.push_back(x);
}

void column::append_float(double x) {
  validity.push_back(1);
  floats.push_back(x);
}

void column::append_string(std::string_view x) {
  validity.push_back(1);
  chars.append(x);
  offsets.push_back(static_cast<std::uint32_t>(chars.size()));
}

void column::append_value(const value& v) {
  if (std::holds_alternative<std::monostate>(v)) {
    append_null();
    return;
  }
  switch (type) {
    case type_id::int64:
    case type_id::timestamp:
      if (auto* d = std::get_if<double>(&v))
        append_int(static_cast<std::int64_t>(*d));
      else
        append_int(std::get<std::int64_t>(v));
      break;
    case type_id::float64:
      if (auto* i = std::get_if<std::int64_t>(&v))
        append_float(static_cast<double>(*i));
      else
        append_float(std::get<double>(v));
      break;
    case type_id::boolean:
      append_bool(std::get<bool>(v));
      break;
    case type_id::string:
      append_string(std::get<std::string>(v));
      break;
    case type_id::null_type:
      validity.push_back(0);
      break;
  }
}

void column::append_from(const column& other, std::size_t row) {
  if (other.is_null(row)) {
    append_null();
    return;
  }
  switch (type) {
    case type_id::int64:
    case type_id::timestamp:
      append_int(other.ints[row]);
      break;
    case type_id::float64:
      append_float(other.floats[row]);
      break;
    case type_id::boolean:
      append_bool(other.bools[row] != 0);
      break;
    case type_id::string:
      append_string(other.str(row));
      break;
    case type_id::null_type:
      validity.push_back(0);
      break;
  }
}

namespace {

// Four running maxima: one would make every row wait for the comparison
// before it (two cycles a row).
event_time max_of(const event_time* t, std::size_t n) noexcept {
  event_time m[4] = {min_watermark, min_watermark, min_watermark, min_watermark};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t j = 0; j < 4; ++j)
      m[j] = std::max(m[j], t[i + j]);
  for (; i < n; ++i)
    m[0] = std::max(m[0], t[i]);
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WEIR_CORE_AVX512 1
// (GCC 12 warns about the deliberately undefined vector inside the
// intrinsics when they are inlined: a false positive.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) event_time max_of_avx512(const event_time* t,
                                                            std::size_t n) noexcept {
  __m512i m0 = _mm512_set1_epi64(min_watermark);
  __m512i m1 = m0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm512_max_epi64(m0, _mm512_loadu_si512(t + i));
    m1 = _mm512_max_epi64(m1, _mm512_loadu_si512(t + i + 8));
  }
  event_time m = _mm512_reduce_max_epi64(_mm512_max_epi64(m0, m1));
  for (; i < n; ++i)
    m = std::max(m, t[i]);
  return m;
}
#pragma GCC diagnostic pop
#endif

} // namespace

event_time record_batch::max_timestamp() const noexcept {
#if defined(WEIR_CORE_AVX512)
  static const bool use_avx512 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  if (use_avx512)
    return max_of_avx512(timestamps.data(), timestamps.size());
#endif
  return max_of(timestamps.data(), timestamps.size());
}

std::size_t column::first_null() const noexcept {
  if (validity.empty())
    return 0;
  const void* at = std::memchr(validity.data(), 0, validity.size());
  return at == nullptr ? validity.size()
                       : static_cast<std::size_t>(static_cast<const std::uint8_t*>(at)
                                                  - validity.data());
}

bool column::has_values() const noexcept {
  switch (type) {
    case type_id::int64:
    case type_id::timestamp: return ints.size() == size();
    case type_id::float64: return floats.size() == size();
    case type_id::boolean: return bools.size() == size();
    case type_id::string: return offsets.size() == size() + 1;
    case type_id::null_type: break;
  }
  return true;
}

value column::get(std::size_t row) const {
  if (is_null(row))
    return std::monostate{};
  switch (type) {
    case type_id::int64:
    case type_id::timestamp:
      return ints[row];
    case type_id::float64:
      return floats[row];
    case type_id::boolean:
      return bools[row] != 0;
    case type_id::string:
      return std::string{str(row)};
    case type_id::null_type:
      break;
  }
  return std::monostate{};
}

void column::truncate(std::size_t rows) {
  if (rows >= validity.size())
    return;
  validity.resize(rows);
  // (A column without values, has_values() false, keeps none.)
  switch (type) {
    case type_id::int64:
    case type_id::timestamp:
      if (ints.size() > rows)
        ints.resize(rows);
      break;
    case type_id::float64:
      if (floats.size() > rows)
        floats.resize(rows);
      break;
    case type_id::boolean:
      if (bools.size() > rows)
        bools.resize(rows);
      break;
    case type_id::string:
      if (offsets.size() > rows + 1) {
        offsets.resize(rows + 1);
        chars.resize(offsets.back());
      }
      break;
    case type_id::null_type:
      break;
  }
}

namespace {

// to[i] = from[sel[i]] for i < n.
template <class T>
void gather(const buffer<T>& from, const std::uint32_t* sel, std::size_t n, buffer<T>& to) {
  to.resize(n);
  T* d = to.data();
  const T* src = from.data();
  for (std::size_t i = 0; i < n; ++i)
    d[i] = src[sel[i]];
}

} // namespace

record_batch record_batch::take(const std::vector<std::uint32_t>& selection) const {
  return take(selection, {});
}

record_batch record_batch::take(const std::vector<std::uint32_t>& selection,
                                const std::vector<bool>& wanted) const {
  record_batch out;
  out.schema = schema;
  out.num_rows = selection.size();
  out.columns.reserve(columns.size());
  const std::size_t n = selection.size();
  const std::uint32_t* sel = selection.data();
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const column& c = columns[k];
    column& dst = out.columns.emplace_back(c.type);
    const std::uint8_t* valid = c.validity.data();
    // A column that is null throughout (a generated field nothing reads)
    // takes no gather: a scan the compiler vectorizes, then fills.
    if (!c.has_values() || (k < wanted.size() && !wanted[k])) { // null without values
      dst.validity.assign(n, 0);
      continue;
    }
    if (c.first_null() == c.size()) {
      // Valid throughout, the usual case: the values alone are gathered.
      dst.validity.assign(n, 1);
      switch (c.type) {
        case type_id::int64:
        case type_id::timestamp: gather(c.ints, sel, n, dst.ints); continue;
        case type_id::float64: gather(c.floats, sel, n, dst.floats); continue;
        default: break; // (the general gather below)
      }
    }
    std::uint8_t any_valid = 0;
    for (std::size_t i = 0; i < c.validity.size(); ++i)
      any_valid |= valid[i];
    if (any_valid == 0) {
      dst.validity.assign(n, 0);
      switch (c.type) {
        case type_id::int64:
        case type_id::timestamp: dst.ints.assign(n, 0); break;
        case type_id::float64: dst.floats.assign(n, 0.0); break;
        case type_id::boolean: dst.bools.assign(n, 0); break;
        case type_id::string: dst.offsets.assign(n + 1, 0); break;
        case type_id::null_type: break;
      }
      continue;
    }
    // One typed gather per column; a null row gets 0, 0.0, false or an
    // empty string, as append_from gives it.
    dst.validity.resize(n);
    std::uint8_t* dv = dst.validity.data();
    for (std::size_t i = 0; i < n; ++i)
      dv[i] = valid[sel[i]];
    switch (c.type) {
      case type_id::int64:
      case type_id::timestamp: {
        dst.ints.resize(n);
        std::int64_t* d = dst.ints.data();
        const std::int64_t* src = c.ints.data();
        for (std::size_t i = 0; i < n; ++i)
          d[i] = src[sel[i]] & -static_cast<std::int64_t>(dv[i] != 0);
        break;
      }
      case type_id::float64: {
        dst.floats.resize(n);
        double* d = dst.floats.data();
        const double* src = c.floats.data();
        for (std::size_t i = 0; i < n; ++i)
          d[i] = dv[i] ? src[sel[i]] : 0.0;
        break;
      }
      case type_id::boolean: {
        dst.bools.resize(n);
        std::uint8_t* d = dst.bools.data();
        const std::uint8_t* src = c.bools.data();
        for (std::size_t i = 0; i < n; ++i)
          d[i] = dv[i] ? src[sel[i]] : 0;
        break;
      }
      case type_id::string:
        dst.offsets.reserve(n + 1);
        for (std::size_t i = 0; i < n; ++i) {
          if (dv[i])
            dst.chars.append(c.str(sel[i]));
          dst.offsets.push_back(static_cast<std::uint32_t>(dst.chars.size()));
        }
        break;
      case type_id::null_type:
        break;
    }
  }
  if (has_timestamps())
    gather(timestamps, sel, n, out.timestamps);
  return out;
}

batch_builder::batch_builder(schema_ptr s) {
  batch_.schema = std::move(s);
  for (const auto& f : batch_.schema->fields())
    batch_.columns.emplace_back(f.type);
}

void batch_builder::commit_row() {
  ++batch_.num_rows;
  for (auto& c : batch_.columns)
    while (c.size() < batch_.num_rows)
      c.append_null();
}

void batch_builder::rollback_row() {
  for (auto& c : batch_.columns)
    c.truncate(batch_.num_rows);
  if (batch_.timestamps.size() > batch_.num_rows)
    batch_.timestamps.resize(batch_.num_rows);
}

record_batch_ptr batch_builder::finish() {
  auto out = std::make_shared<record_batch>(std::move(batch_));
  batch_ = record_batch{};
  batch_.schema = out->schema;
  // The next batch is sized like this one: each value vector (and a string
  // column's characters) allocated once, not grown by doubling, row by row.
  const std::size_t rows = out->num_rows;
  batch_.columns.reserve(out->columns.size());
  for (const auto& c : out->columns) {
    auto& n = batch_.columns.emplace_back(c.type);
    if (rows == 0)
      continue;
    if (c.has_values()) {
      n.reserve(rows);
      if (c.type == type_id::string)
        n.chars.reserve(c.chars.size() + c.chars.size() / 8);
    } else {
      n.validity.reserve(rows); // (unread: no values)
    }
  }
  if (out->has_timestamps())
    batch_.timestamps.reserve(rows);
  return out;
}

std::string to_display_string(const value& v) {
  struct visitor {
    std::string operator()(std::monostate) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      return buf;
    }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(visitor{}, v);
}

} // namespace weir
