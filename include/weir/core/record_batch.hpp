// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/schema.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace weir {

/// A scalar value: null, bool, int64 (also timestamps), float64 or string.
using value = std::variant<std::monostate, bool, std::int64_t, double,
                           std::string>;

/// Event time in milliseconds since the Unix epoch (UTC, negative allowed).
using event_time = std::int64_t;

/// The watermark before any record (Flink's Long.MIN_VALUE).
inline constexpr event_time min_watermark =
  std::numeric_limits<event_time>::min();

/// The final watermark at the end of a bounded input (Long.MAX_VALUE).
inline constexpr event_time max_watermark =
  std::numeric_limits<event_time>::max();

/// `std::allocator` except that value-less construction default-initializes:
/// `resize(n)` of a `buffer` of numbers leaves the new elements
/// indeterminate instead of zeroing them. The columnar kernels size their
/// output once and then write every row; the zeroing pass they would
/// otherwise pay was 6 % of a filter-heavy job. `resize(n, v)`, `assign`
/// and `insert` set what they add, as with any vector.
template <class T>
struct default_init_allocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  default_init_allocator() noexcept = default;
  template <class U>
  default_init_allocator(const default_init_allocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) noexcept(std::is_nothrow_constructible_v<U, Args...>) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// The value vectors of a column: see `default_init_allocator`.
template <class T>
using buffer = std::vector<T, default_init_allocator<T>>;

/// One typed column with a validity flag per row (1 = value, 0 = null).
///
/// Only the vector matching `type` is used: `ints` for int64 and timestamp,
/// `floats` for float64, `bools` for boolean, `offsets` + `chars` for string
/// (`offsets` has rows + 1 entries, row i is `chars[offsets[i], offsets[i+1])`).
/// A null row still occupies a slot (0, 0.0, false or an empty string),
/// except in a column without values (`has_values()` false): every row null
/// and only `validity` filled: a column that nothing downstream reads
/// (`runtime::prune_generated_fields`). Generated sources give those for the
/// fields they skip, expression filters for the columns they do not copy;
/// `record_batch::take` keeps them without values, and evaluating an
/// expression that reads one is a broken precondition (it aborts).
class column {
public:
  column() = default;
  explicit column(type_id t) : type(t) {}

  type_id type = type_id::null_type;
  buffer<std::uint8_t> validity;
  buffer<std::int64_t> ints;
  buffer<double> floats;
  buffer<std::uint8_t> bools;
  std::vector<std::uint32_t> offsets{0};
  std::string chars;

  std::size_t size() const noexcept { return validity.size(); }
  /// Whether the value vector of `type` has a slot per row (see above).
  bool has_values() const noexcept;
  bool is_null(std::size_t row) const noexcept { return validity[row] == 0; }
  bool is_valid(std::size_t row) const noexcept { return validity[row] != 0; }
  /// The first null row, or `size()` when every row is valid (memchr).
  std::size_t first_null() const noexcept;

  std::string_view str(std::size_t row) const noexcept {
    return std::string_view{chars}.substr(offsets[row],
                                          offsets[row + 1] - offsets[row]);
  }

  void reserve(std::size_t rows);
  void append_null();
  void append_bool(bool x);
  void append_int(std::int64_t x);
  void append_float(double x);
  void append_string(std::string_view x);

  /// Appends `v` converted to this column's type; a monostate appends null.
  /// Precondition: `v` holds the C++ type of `type` (int64 for timestamp).
  void append_value(const value& v);

  /// Appends row `row` of `other`, which has the same type.
  void append_from(const column& other, std::size_t row);

  /// Returns row `row` as a `value` (monostate for null).
  value get(std::size_t row) const;

  /// Drops rows from `rows` on (used to roll back a half-decoded record).
  void truncate(std::size_t rows);
};

/// An immutable batch of rows in columnar form (docs/concepts/records.md).
///
/// `timestamps` holds each row's event time in ms, or is empty when no event
/// time was assigned (processing-time only streams). A batch is shared between
/// subtasks by `record_batch_ptr`; once shared it is never modified.
struct record_batch {
  schema_ptr schema;
  std::vector<column> columns;
  buffer<event_time> timestamps;
  std::size_t num_rows = 0;

  bool has_timestamps() const noexcept { return !timestamps.empty(); }
  /// The largest event time, ms; `min_watermark` when there are none.
  /// Eight at a time with AVX-512 where the processor has it.
  event_time max_timestamp() const noexcept;

  /// Copies the rows in `selection` (ascending or not) into a new batch.
  record_batch take(const std::vector<std::uint32_t>& selection) const;
  /// The same for the columns flagged in `columns` (one flag per column);
  /// the others come out all null without values (`column::has_values`),
  /// for columns that nothing downstream reads.
  record_batch take(const std::vector<std::uint32_t>& selection,
                    const std::vector<bool>& columns) const;
};

using record_batch_ptr = std::shared_ptr<const record_batch>;

/// Builds a record_batch row by row: append one value to every column, then
/// `commit_row()`; on a decoding error `rollback_row()` undoes the partial row.
class batch_builder {
public:
  explicit batch_builder(schema_ptr s);

  const schema& output_schema() const noexcept { return *batch_.schema; }
  const schema_ptr& output_schema_ptr() const noexcept { return batch_.schema; }

  column& col(std::size_t i) noexcept { return batch_.columns[i]; }
  buffer<event_time>& timestamps() noexcept { return batch_.timestamps; }
  std::size_t rows() const noexcept { return batch_.num_rows; }

  /// Completes the current row. Columns that received no value get a null.
  void commit_row();

  /// Removes values appended since the last `commit_row()`.
  void rollback_row();

  /// Returns the rows built so far and starts a new, empty batch.
  record_batch_ptr finish();

private:
  record_batch batch_;
};

/// Renders a value for logs and text sinks: null, true, 42, 1.5, text.
std::string to_display_string(const value& v);

} // namespace weir
