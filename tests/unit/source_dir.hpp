// SPDX-License-Identifier: Apache-2.0
#pragma once

// Where the repository is, for the tests that read its files (data/, the
// golden cases, config/reference.toml, bench/vectors).

#include <string>

namespace weir::test {

/// The absolute path of the source tree the test binary was built from, no
/// trailing slash. Only source_dir.cpp holds the path, so every other test
/// object compiles the same in any clone of the repository (and ccache shares
/// it between clones).
const std::string& source_dir();

} // namespace weir::test
