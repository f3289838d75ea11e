# SPDX-License-Identifier: Apache-2.0
# The Redis sink needs hiredis (WEIR_WITH_REDIS).
weir_connector(REDIS libhiredis-dev HIREDIS hiredis)
set(WEIR_KIND_BUILT ${WEIR_HAVE_REDIS})
set(WEIR_KIND_HOW "-DWEIR_WITH_REDIS=ON and libhiredis-dev installed")
if(WEIR_HAVE_REDIS)
  target_link_libraries(${WEIR_KIND_TARGET} PRIVATE PkgConfig::HIREDIS)
endif()
