# SPDX-License-Identifier: Apache-2.0
"""weir's benchmark runner (bench/README.md, docs/benchmarks/README.md).

  bench/run [bench] [--events N] [--queries q0,q5] [--repeat R] [--flink] [--json]
                    [--modes whole,pruned] [--parallelism 1,2] [--chart PATH] [--no-build]
      For each query: the hand-written baseline, weir at parallelism 1 and 2
      (and Apache Flink with --flink), each in two modes: whole events generated
      and pruned to the fields the query reads (weir's projection push-down,
      FlinkBench --pruned; the baseline prunes); checks that every engine's
      result equals the baseline's (row count and order-independent digest),
      prints events/s, CPU time and weir's rate over each engine's best (within
      one mode), by wall time and per CPU second.
  bench/run latency [--queries q0,q1,q2] [--json]
      End-to-end latency (generation to sink) at half of weir's peak
      throughput, with buffer_timeout 1 ms and 10 ms: p50, p99, p99.9.
  bench/run kafka [--events N] [--partitions P] [--queries blackhole,q0,q1,q5,q7]
                  [--sinks off,on] [--repeat R] [--flink] [--json] [--no-build]
      Nexmark bids as JSON in a Kafka topic (a local broker, tests/kafka):
      weir's Kafka source against librdkafka's raw consume loop (blackhole),
      and q0, q1, q5, q7 in weir against Flink's KafkaSource at parallelism 1
      and 2, with the exactly-once Kafka sink off and on; every result checked
      against the baseline's.
  bench/run kafka-check --events N --weir PATH --baseline PATH --raw PATH
      The ctest check: on a small topic, weir's Kafka queries give the
      baseline's result at parallelism 1 and 2.
  bench/run ingest [--events N] [--queries q0,tumble] [--formats jsonl,csv]
                   [--engines raw,weir,duckdb,flink] [--repeat R] [--out PATH] [--markdown]
                   [--core-sets '0;0,1']
      Files of Nexmark bids (JSON lines, CSV; written by weir, cached in ~/.cache/weir-bench):
      q0, q1, q2, q5, q7 and a keyed tumbling window in weir (bench/ingest/*.toml), DuckDB
      (SQL over read_json / read_csv) and Flink (FileSource) at 1 and 2 threads, and the raw
      parse loop (weir_ingest_raw); every result checked against the baseline's.
  bench/run ingest-check --weir PATH --baseline PATH [--queries q0,q5] [--events N]
      The ctest check: weir's ingest queries on small files give the baseline's result at
      parallelism 1 and 2.
  bench/run http-ingest [--weir PATH] [--records N] [--batch B] [--clients 1,2,4] [--json]
      HTTP ingest: records/s POSTed to an http source into a blackhole by 1, 2 and 4
      loopback clients, against the file source on the same records; state-query
      latency p50/p99 at half of that peak.
  bench/run checkpoint [all|throughput|snapshot|recovery] [--quick] [--json PATH]
      Checkpoint costs (also bench/checkpoint/run; builds nothing).
  bench/run check QUERY --events N --weir PATH --baseline PATH
      The ctest check: weir at parallelism 1 and 2 gives the baseline's result.
  bench/run cost --weir PATH [--query tumble] [--format jsonl] [--parallelism 1] [--cores 0]
      The cost of a record by stage: weir run under callgrind (instructions per record
      per stage) and timed on the same cores (CPU ns per record);
      docs/internals/cost-of-a-record.md.
  bench/run chart RESULTS.json OUT.png
      Redraws the chart from a results file or a saved --json report.
  bench/run charts [--results-dir DIR] [--out DIR]
      Redraws every family's chart, FAMILY.png, from bench/results/FAMILY.json
      (default: beside it); runs no benchmark; exit 1 if a results file is missing.
  bench/run vectors nexmark|ysb (--verify | --write) [--baseline PATH]
      The shared generator test vectors in bench/vectors (also read by
      bench/flink's tests).

Every verb takes --cores (e.g. 0 or 0,1; default every core the runner may use): the
runner and every process it starts (weir, the baseline, Flink's JVM, DuckDB, the raw
loops, the Kafka broker) run pinned to those cores, and each result records them with
its wall time and its CPU time (user + system of the process tree). Each benchmark
writes its results file, bench/results/FAMILY.json (--results PATH elsewhere,
--no-results none): the latest run, with commit, date, machine, load average at start
and cores, and redraws its chart next to it (FAMILY.png).
"""

import argparse
import sys

from . import charts, checkpoint, cost, http_ingest, ingest, kafka, latency, nexmark
from .common import set_cores


def parser():
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    for family in (nexmark, latency, kafka, ingest, http_ingest, checkpoint, cost, charts):
        family.add_parser(sub)
    return ap


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["bench"] + argv
    args = parser().parse_args(argv)
    set_cores(getattr(args, "cores", None))
    return args.func(args)
