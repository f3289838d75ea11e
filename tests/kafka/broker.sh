#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A local Apache Kafka broker (KRaft, one node, 127.0.0.1) for tests and demos:
#   tests/kafka/broker.sh start [--port P]         # prints BOOTSTRAP=127.0.0.1:<port>
#   tests/kafka/broker.sh create-topic NAME [PARTITIONS] [--config KEY=VALUE]...
#   tests/kafka/broker.sh add-partitions NAME TOTAL
#   tests/kafka/broker.sh status | stop | classpath
# The first start fetches Kafka 3.9.1 with Maven into ~/.m2. See kafka_broker.py.
exec python3 "$(dirname "$0")/kafka_broker.py" "$@"
