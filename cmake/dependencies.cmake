# SPDX-License-Identifier: Apache-2.0
# Every dependency comes from Debian 12's packages and is wrapped in an
# imported target with SYSTEM includes, so its warnings never fail our build.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(simdjson REQUIRED)
find_package(CLI11 REQUIRED)
find_package(doctest REQUIRED)
find_package(libdivide REQUIRED) # header-only: libdivide::libdivide

# CAF 0.17.6 ships no CMake config and no .pc file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
add_library(weir::caf INTERFACE IMPORTED)
set_target_properties(weir::caf PROPERTIES
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "${CAF_CORE_LIBRARY};Threads::Threads")

find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY xxhash REQUIRED)
add_library(weir::xxhash INTERFACE IMPORTED)
set_target_properties(weir::xxhash PROPERTIES
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "${XXHASH_LIBRARY}")

pkg_check_modules(LMDB REQUIRED IMPORTED_TARGET lmdb)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka++ rdkafka)

# The weir executable allocates through jemalloc (Evans 2006): a batch's
# columns are tens of KiB, freed on another thread, which glibc's malloc
# serves from its bins with consolidation (a fifth of YSB's profile); the
# library targets leave the choice to the program that embeds them.
# Sanitizer builds keep the sanitizer's allocator.
# (Only where weir is the top-level project: a program that embeds it with
# add_subdirectory links the libraries, not the executable.)
option(WEIR_JEMALLOC "Link the weir executable against jemalloc" ON)
if(WEIR_JEMALLOC AND NOT WEIR_SANITIZERS AND PROJECT_IS_TOP_LEVEL)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
endif()
