// SPDX-License-Identifier: Apache-2.0
#pragma once
// Load-time checks of the paths a job writes (a file sink's `path`, a
// dead-letter file, `checkpoint.dir`): that the job will be able to create
// and write them, reported at the value with file:line:col before anything
// is started or read, instead of failing after the input was read.

#include "reader.hpp"

#include <optional>
#include <string>

namespace weir::config {

/// What the job writes at a path.
enum class output_path_kind {
  file,      ///< one file; its directory is created if missing
  directory, ///< a directory of files (checkpoints, committed parts), created if missing
};

/// Why the job could not write `path` as `kind`, as a diagnostic's text
/// after the key ("\"out\" is a directory", "cannot create \"a/b\": \"a\" is
/// not a directory", "directory \"/proc\" is not writable (...)"); nullopt
/// when it can. The directory that would receive the file (the nearest one
/// that exists) must be a directory in which a file can be created; it is
/// probed with an unnamed temporary file (O_TMPFILE), else a named one that
/// is removed at once, so that it also holds for root, for whom permission
/// bits do not count (a read-only file system or /proc still refuse). An
/// existing file must be writable: a regular file is opened for writing
/// without truncating it, any other file (/dev/null) is checked with
/// access(2), never opened. Nothing else is created.
std::optional<std::string> output_path_problem(const std::string& path, output_path_kind kind);

/// Reports `output_path_problem` for the string value `value` of key `key`
/// through `r` (at the value, with "key: " before the text); false if it did.
bool check_output_path(reader& r, std::string_view key, const located& value,
                       output_path_kind kind);

} // namespace weir::config
