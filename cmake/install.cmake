# SPDX-License-Identifier: Apache-2.0
# `cmake --install <build> [--prefix DIR]`: the public headers (include/weir),
# the static libraries, the weir executable, a CMake package
# (find_package(weir): weir::weir, weir::core, weir::actors and, for the
# connectors built, weir::server, weir::kafka, weir::redis, weir::postgres,
# weir::elasticsearch, also as COMPONENTS) and pkg-config files (weir.pc,
# and weir-<connector>.pc for each connector built).
include(CMakePackageConfigHelpers)

set(WEIR_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/weir
  CACHE STRING "Where weirConfig.cmake is installed, relative to the prefix")
mark_as_advanced(WEIR_INSTALL_CMAKEDIR)

# The libraries in link order (a library before those it uses).
set(WEIR_INSTALLED_LIBRARIES weir_actors weir_config weir_runtime weir_api weir_window
  weir_checkpoint weir_state weir_format weir_expr weir_base)
set(WEIR_INSTALLED_TARGETS ${WEIR_INSTALLED_LIBRARIES} weir_core weir_weir)
if(TARGET weir_server)
  list(PREPEND WEIR_INSTALLED_LIBRARIES weir_server)
  list(APPEND WEIR_INSTALLED_TARGETS weir_server)
endif()
# The optional connectors' targets (weir::kafka, ..., src/kinds/CMakeLists.txt)
# and find_package's components: <name> for weir::<name>, the connectors
# built, each with the option that builds it (weir_connector).
get_property(WEIR_CONNECTOR_TARGETS GLOBAL PROPERTY WEIR_CONNECTOR_TARGETS)
list(APPEND WEIR_INSTALLED_TARGETS ${WEIR_CONNECTOR_TARGETS})
set(WEIR_CONFIG_BUILT_COMPONENTS "")
set(WEIR_CONFIG_COMPONENT_HOW "")
foreach(component IN ITEMS kafka:KAFKA redis:REDIS postgres:POSTGRES elasticsearch:HTTP
                           server:HTTP)
  string(REPLACE ":" ";" parts "${component}")
  list(GET parts 0 name)
  list(GET parts 1 option)
  if(TARGET weir_${name})
    list(APPEND WEIR_CONFIG_BUILT_COMPONENTS ${name})
  endif()
  string(APPEND WEIR_CONFIG_COMPONENT_HOW "set(_weir_how_${name} \"-DWEIR_WITH_${option}=ON "
                                          "and ${WEIR_${option}_PACKAGE} installed\")\n")
endforeach()
install(TARGETS ${WEIR_INSTALLED_TARGETS} EXPORT weirTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/weir DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The public headers of the built kinds (src/kinds/<category>s/<type>/include/,
# e.g. weir/kafka/source.hpp), merged into the same include/weir.
get_property(WEIR_KIND_INCLUDE_DIRS TARGET weir_api PROPERTY WEIR_KIND_INCLUDE_DIRS)
foreach(dir IN LISTS WEIR_KIND_INCLUDE_DIRS)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
if(PROJECT_IS_TOP_LEVEL)
  install(TARGETS weir RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT weirTargets NAMESPACE weir:: DESTINATION ${WEIR_INSTALL_CMAKEDIR})

# What the exported targets name besides themselves, recreated by
# weirConfig.cmake: the packages with a CMake config, the pkg-config modules
# (as PkgConfig::<prefix> targets, like cmake/dependencies.cmake and the kinds
# create them) and CAF (no config, no .pc).
get_property(WEIR_PKG_DEPENDENCIES GLOBAL PROPERTY WEIR_PKG_DEPENDENCIES)
set(WEIR_CONFIG_PKG_MODULES "")
set(WEIR_PC_REQUIRES "")
foreach(dep IN LISTS WEIR_PKG_DEPENDENCIES)
  # "<prefix>:<module>[,<module>...]"
  string(REPLACE ":" ";" parts "${dep}")
  list(GET parts 0 prefix)
  list(GET parts 1 modules)
  string(REPLACE "," " " modules "${modules}")
  string(APPEND WEIR_CONFIG_PKG_MODULES
    "weir_pkg_dependency(${prefix} ${modules})\n")
  string(APPEND WEIR_PC_REQUIRES " ${modules}")
endforeach()
if(TARGET weir_server)
  set(WEIR_CONFIG_FIND_ZLIB "find_dependency(ZLIB)")
  string(APPEND WEIR_PC_REQUIRES " zlib")
endif()
get_filename_component(WEIR_CAF_LIBRARY_DIR ${CAF_CORE_LIBRARY} DIRECTORY)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weirConfig.cmake.in
  ${PROJECT_BINARY_DIR}/weirConfig.cmake INSTALL_DESTINATION ${WEIR_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/weirConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/weirConfig.cmake ${PROJECT_BINARY_DIR}/weirConfigVersion.cmake
  DESTINATION ${WEIR_INSTALL_CMAKEDIR})

# weir.pc: static libraries, so their dependencies are in Requires and Libs
# (plain `pkg-config --libs weir` links a program).
list(JOIN WEIR_INSTALLED_LIBRARIES " -l" WEIR_PC_LIBS)
set(WEIR_PC_LIBS "-l${WEIR_PC_LIBS}")
# format = "protobuf" links libprotoc (its Importer), which has no .pc; its
# libprotobuf comes with Requires.
if(WEIR_HAVE_PROTOBUF)
  string(APPEND WEIR_PC_LIBS " -lprotoc")
endif()
string(APPEND WEIR_PC_REQUIRES " spdlog fmt simdjson tomlplusplus libxxhash")
string(STRIP "${WEIR_PC_REQUIRES}" WEIR_PC_REQUIRES)
if(WEIR_CAF_LIBRARY_DIR IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  set(WEIR_PC_CAF_LIBS "-lcaf_core")
else()
  set(WEIR_PC_CAF_LIBS "-L${WEIR_CAF_LIBRARY_DIR} -lcaf_core")
endif()
set(WEIR_PC_PREFIX "@WEIR_PC_PREFIX@") # filled in at install time, below
configure_file(${PROJECT_SOURCE_DIR}/cmake/weir.pc.in ${PROJECT_BINARY_DIR}/weir.pc.in @ONLY)
# The prefix is the one given at install time (cmake --install --prefix).
install(CODE "
  set(WEIR_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/weir.pc.in\" \"${PROJECT_BINARY_DIR}/weir.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/weir.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# weir-<connector>.pc for each connector built (weir-kafka, ...): weir.pc's
# flags already link every built connector; the module says whether one was
# built (`pkg-config --exists weir-kafka`).
foreach(name IN LISTS WEIR_CONFIG_BUILT_COMPONENTS)
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/weir-${name}.pc CONTENT
"Name: weir-${name}
Description: weir's ${name} connector (weir.pc's flags, which link it)
Version: ${PROJECT_VERSION}
Requires: weir = ${PROJECT_VERSION}
")
  install(FILES ${PROJECT_BINARY_DIR}/weir-${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
