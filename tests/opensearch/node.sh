#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A local OpenSearch node (single-node, security off, 127.0.0.1) for tests and demos:
#   tests/opensearch/node.sh start [--port P]      # prints URL=http://127.0.0.1:<port>
#   tests/opensearch/node.sh status | stop
# The first start fetches OpenSearch 2.19.1 with Maven into ~/.m2. See opensearch_node.py.
exec python3 "$(dirname "$0")/opensearch_node.py" "$@"
