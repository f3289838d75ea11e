# SPDX-License-Identifier: Apache-2.0
# The PostgreSQL sink needs libpq (WEIR_WITH_POSTGRES).
weir_connector(POSTGRES libpq-dev LIBPQ libpq)
set(WEIR_KIND_BUILT ${WEIR_HAVE_POSTGRES})
set(WEIR_KIND_HOW "-DWEIR_WITH_POSTGRES=ON and libpq-dev installed")
if(WEIR_HAVE_POSTGRES)
  target_link_libraries(${WEIR_KIND_TARGET} PRIVATE PkgConfig::LIBPQ)
endif()
