# SPDX-License-Identifier: Apache-2.0
"""weir's benchmark runner (bench/run): a module per benchmark family (nexmark, latency,
ingest, kafka, http_ingest, checkpoint), what they share in common, charts in charts, the
command line in cli."""
