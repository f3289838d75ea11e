// SPDX-License-Identifier: Apache-2.0
#include "source_dir.hpp"

namespace weir::test {

const std::string& source_dir() {
  static const std::string dir{WEIR_SOURCE_DIR}; // tests/CMakeLists.txt
  return dir;
}

} // namespace weir::test
