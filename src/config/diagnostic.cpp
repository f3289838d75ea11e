// SPDX-License-Identifier: Apache-2.0
#include "weir/config/diagnostic.hpp"

#include <algorithm>

namespace weir::config {

std::string diagnostic::to_string() const {
  std::string out = file;
  if (line > 0) {
    out += ':';
    out += std::to_string(line);
    if (column > 0) {
      out += ':';
      out += std::to_string(column);
    }
  }
  out += ": error: ";
  out += message;
  for (const auto& note : notes) {
    out += "\n  ";
    out += note;
  }
  return out;
}

bool diagnostic_less(const diagnostic& a, const diagnostic& b) noexcept {
  if (a.file != b.file)
    return a.file < b.file;
  if (a.line != b.line)
    return a.line < b.line;
  return a.column < b.column;
}

void sort_diagnostics(std::vector<diagnostic>& ds) {
  std::stable_sort(ds.begin(), ds.end(), diagnostic_less);
}

std::string to_string(const std::vector<diagnostic>& ds) {
  std::vector<const diagnostic*> sorted;
  sorted.reserve(ds.size());
  for (const auto& d : ds)
    sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const diagnostic* a, const diagnostic* b) {
                     return diagnostic_less(*a, *b);
                   });
  std::string out;
  for (const auto* d : sorted) {
    out += d->to_string();
    out += '\n';
  }
  return out;
}

} // namespace weir::config
