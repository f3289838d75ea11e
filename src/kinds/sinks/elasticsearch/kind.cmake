# SPDX-License-Identifier: Apache-2.0
# The Elasticsearch sink's HTTP client is cpp-httplib (WEIR_WITH_HTTP, which
# also builds weir serve's server, src/server). Debian's shared build; its
# pkg-config flags select the same TLS and compression support.
weir_connector(HTTP libcpp-httplib-dev HTTPLIB cpp-httplib)
set(WEIR_KIND_BUILT ${WEIR_HAVE_HTTP})
set(WEIR_KIND_HOW "-DWEIR_WITH_HTTP=ON and libcpp-httplib-dev installed")
if(WEIR_HAVE_HTTP)
  target_link_libraries(${WEIR_KIND_TARGET} PRIVATE PkgConfig::HTTPLIB)
endif()
