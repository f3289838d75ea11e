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
find_package(libdivide REQUIRED) # header-only: libdivide::libdivide

# CAF 0.17.6 ships no CMake config and no .pc file.
# WEIR_CAF_PREFIX: a CAF installed elsewhere, used instead of Debian's. The
# ThreadSanitizer build needs one built with -fsanitize=thread (`./dev tsan`
# builds it from Debian's source package): TSan cannot see the
# synchronisation inside an uninstrumented libcaf_core and reports every
# message hand-off between actors as a race.
set(WEIR_CAF_PREFIX "" CACHE PATH "Prefix of the CAF to use instead of the system's")
if(WEIR_CAF_PREFIX)
  find_path(CAF_INCLUDE_DIR caf/all.hpp PATHS ${WEIR_CAF_PREFIX}/include NO_DEFAULT_PATH
            REQUIRED)
  find_library(CAF_CORE_LIBRARY caf_core PATHS ${WEIR_CAF_PREFIX}/lib NO_DEFAULT_PATH
               REQUIRED)
else()
  find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
  find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
  if(WEIR_SANITIZERS MATCHES "thread")
    message(WARNING "WEIR_SANITIZERS=thread with the system's CAF (${CAF_CORE_LIBRARY}), "
                    "which is not built with -fsanitize=thread: expect a report at every "
                    "message between actors. Build CAF with TSan (./dev tsan does) and set "
                    "WEIR_CAF_PREFIX.")
  endif()
endif()
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

# weir_pkg_dependency(<prefix> <module>...): the pkg-config modules as the
# imported target PkgConfig::<prefix> (REQUIRED), recorded for the installed
# weirConfig.cmake and weir.pc (cmake/install.cmake), which recreate it for
# the programs that link weir's static libraries.
macro(weir_pkg_dependency prefix)
  if(NOT TARGET PkgConfig::${prefix})
    pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${ARGN})
  endif()
  string(REPLACE ";" "," _weir_modules "${ARGN}")
  get_property(_weir_deps GLOBAL PROPERTY WEIR_PKG_DEPENDENCIES)
  if(NOT "${prefix}:${_weir_modules}" IN_LIST _weir_deps)
    set_property(GLOBAL APPEND PROPERTY WEIR_PKG_DEPENDENCIES "${prefix}:${_weir_modules}")
  endif()
endmacro()

weir_pkg_dependency(LMDB lmdb)

# weir_connector(<NAME> <package> <prefix> <module>...): the option
# WEIR_WITH_<NAME> of the connectors that need the pkg-config modules
# <module>... (Debian package <package>): AUTO (the default) builds them when
# the modules are found, ON requires them, OFF leaves them out. Sets
# WEIR_HAVE_<NAME> (ON/OFF, visible to every directory) and, when on, the
# imported target PkgConfig::<prefix>. Called by the kind folders that need
# the library (src/kinds/<category>s/<type>/kind.cmake) and src/server; the
# first call decides.
macro(weir_connector name package prefix)
  set(WEIR_WITH_${name} AUTO CACHE STRING
    "Build the connectors that need ${package}: AUTO (when found), ON or OFF")
  set_property(CACHE WEIR_WITH_${name} PROPERTY STRINGS AUTO ON OFF)
  get_property(_weir_decided GLOBAL PROPERTY WEIR_CONNECTOR_${name} SET)
  if(NOT _weir_decided)
    set_property(GLOBAL PROPERTY WEIR_CONNECTOR_${name} TRUE)
    set(WEIR_HAVE_${name} OFF CACHE INTERNAL "")
    set(WEIR_${name}_PACKAGE ${package} CACHE INTERNAL "")
    if(WEIR_WITH_${name} STREQUAL "AUTO")
      pkg_check_modules(${prefix} QUIET GLOBAL IMPORTED_TARGET ${ARGN})
    elseif(WEIR_WITH_${name})
      pkg_check_modules(${prefix} REQUIRED GLOBAL IMPORTED_TARGET ${ARGN})
    else()
      set(${prefix}_FOUND FALSE)
    endif()
    if(${prefix}_FOUND)
      set(WEIR_HAVE_${name} ON CACHE INTERNAL "")
      weir_pkg_dependency(${prefix} ${ARGN})
    endif()
    message(STATUS "weir: ${name} connectors: ${WEIR_HAVE_${name}} "
                   "(WEIR_WITH_${name}=${WEIR_WITH_${name}}, ${package})")
  endif()
endmacro()

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
