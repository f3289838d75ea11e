# SPDX-License-Identifier: Apache-2.0
# The Kafka sink needs librdkafka's C++ API (WEIR_WITH_KAFKA).
weir_connector(KAFKA librdkafka-dev RDKAFKA rdkafka++ rdkafka)
set(WEIR_KIND_BUILT ${WEIR_HAVE_KAFKA})
set(WEIR_KIND_HOW "-DWEIR_WITH_KAFKA=ON and librdkafka-dev installed")
if(WEIR_HAVE_KAFKA)
  target_link_libraries(${WEIR_KIND_TARGET} PRIVATE PkgConfig::RDKAFKA)
endif()
