# SPDX-License-Identifier: Apache-2.0
"""Kafka (`bench/run kafka`, and the ctest check `bench/run kafka-check`): the bids of N
Nexmark events as JSON in a topic of a local broker (tests/kafka/kafka_broker.py), read
from the earliest to the end offsets current at start by librdkafka's raw consume loop
(weir_kafka_raw), weir's kafka source (raw messages into a blackhole; q0, q1, q5, q7 over
JSON) and Flink's KafkaSource; with the exactly-once sinks off and on. Every result is
checked against the baseline's; every engine and the broker run on the same cores."""

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import charts
from .common import (ROOT, Checks, add_cores_option, add_family_options, add_rates,
                     binaries, build_flink, check_result, compare, flink_cmd,
                     generate_bid_file, interleaved, log, print_comparisons, process_cpu,
                     run, run_baseline, run_header, toml_pipeline, toml_str, toml_table,
                     weir_cmd, weir_reports, write_results)
from .nexmark import QUERIES

KAFKA_QUERIES = ["blackhole", "q0", "q1", "q5", "q7"]
# The bid stream's fields, as the nexmark source's file sink writes them.
BID_SCHEMA = {"auction": "int64", "bidder": "int64", "price": "int64", "channel": "string",
              "url": "string", "date_time": "timestamp", "extra": "string"}
# The benchmark's broker: the test fixture's broker (tests/kafka/kafka_broker.py) with
# a JVM set up for throughput rather than start-up (the fixture's is C1-only, 512 MiB).
BROKER_JVM_OPTS = ["-Xmx2g", "-Xms1g", "-XX:+UseG1GC", "-XX:-UsePerfData",
                   "-Djava.awt.headless=true"]
# Every consumer (raw loop, weir, Flink) gets these, plus the -X ones.
KAFKA_PROPERTIES = {"isolation.level": "read_committed"}


def kafka_broker_module():
    sys.path.insert(0, str(ROOT / "tests" / "kafka"))
    import kafka_broker  # noqa: E402 (the test fixture)
    return kafka_broker


def kafka_source_toml(bootstrap, topic, properties, fmt):
    lines = ['[[source]]', 'name = "bids"', 'type = "kafka"',
             f"bootstrap_servers = {toml_str(bootstrap)}", f"topics = [{toml_str(topic)}]",
             'start = "earliest"', 'bounded = "latest"', f"format = {toml_str(fmt)}",
             f"properties = {toml_table(properties)}"]
    if fmt == "jsonl":
        lines += [f"schema = {toml_table(BID_SCHEMA)}", 'event_time = { field = "date_time" }',
                  'watermark = { max_out_of_orderness = "4s" }']
    return "\n".join(lines) + "\n"


def kafka_pipeline_text(query, bootstrap, topic, properties, digest=False, out_topic=None,
                        checkpoint_dir=None, checkpoint_interval="1s"):
    """weir's pipeline of a Kafka query: the query's TOML with the nexmark source replaced by
    a Kafka source (JSON bids; raw messages for "blackhole"), and with out_topic the blackhole
    sink replaced by an exactly-once Kafka sink (and checkpoints on)."""
    if query == "blackhole":
        text = ('[job]\nname = "kafka-blackhole"\n\n'
                + kafka_source_toml(bootstrap, topic, properties, "raw")
                + '\n[[sink]]\nname = "out"\ninput = "bids"\ntype = "blackhole"\nreport = true\n')
    else:
        text = QUERIES[query].read_text()
        text, n = re.subn(r"(?m)^\[\[source\]\]\n(?:[^\n\[]+\n)+",
                          lambda m: kafka_source_toml(bootstrap, topic, properties, "jsonl"),
                          text)
        assert n == 1, f"{query}: expected one source"
    text = text.replace("[job]\n", '[job]\nstatus_interval = "0s"\n', 1)
    if out_topic is None:
        if digest:
            text = text.replace("report = true\n", "report = true\ndigest = true\n")
        return text
    sink = (f'type = "kafka"\ntopic = {toml_str(out_topic)}\n'
            f"bootstrap_servers = {toml_str(bootstrap)}\n"
            f'format = "json"\ndelivery = "exactly_once"\n'
            f'transactional_id_prefix = {toml_str("weir-bench-" + out_topic)}\n')
    text, n = re.subn(r'(?m)^type = "blackhole"\nreport = true\n', sink, text)
    assert n == 1, f"{query}: expected one blackhole sink"
    checkpoint = toml_pipeline(("checkpoint", {"interval": checkpoint_interval,
                                               "dir": str(checkpoint_dir)}))
    text = text.replace("\n[[source]]", f"\n{checkpoint}\n[[source]]", 1)
    return text


def duration_seconds(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", text)
    if not m:
        raise SystemExit(f"bad duration {text!r} (e.g. 500ms, 1s, 1m)")
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]


class KafkaBench:
    """The broker, the tools and the engines of one `bench/run kafka` (or kafka-check)."""

    def __init__(self, weir, raw, bootstrap, broker_pid, properties, classpath=None,
                 checkpoint_interval="1s"):
        self.weir, self.raw, self.bootstrap, self.broker_pid = weir, raw, bootstrap, broker_pid
        self.properties, self.classpath = properties, classpath
        self.checkpoint_interval = checkpoint_interval
        self.tmp = Path(tempfile.mkdtemp(prefix="weir-kafka-bench-"))
        self.serial = 0
        self.expected_rows = None  # the output's expected row count (the recount)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, cmd, what):
        """common.run, plus the broker's CPU seconds meanwhile (None without its pid)."""
        before = process_cpu(self.broker_pid)
        p = run(cmd, what=what)
        after = process_cpu(self.broker_pid)
        p.broker_cpu_seconds = None if before is None or after is None else after - before
        return p

    def measured(self, p, **fields):
        """A result of p: wall and CPU seconds, the broker's CPU seconds, and fields."""
        return {"seconds": p.wall_seconds, "wall_seconds": p.wall_seconds,
                "cpu_seconds": p.cpu_seconds, "broker_cpu_seconds": p.broker_cpu_seconds,
                **fields}

    def raw_cmd(self, verb, topic, *extra):
        return [self.raw, verb, "--brokers", self.bootstrap, "--topic", topic, *extra]

    def x_args(self, properties=None):
        return [a for k, v in (properties or self.properties).items() for a in ("-X", f"{k}={v}")]

    def create_topic(self, topic, partitions, config=None):
        extra = self.x_args(config) if config else []
        self.run(self.raw_cmd("create", topic, "--partitions", partitions, *extra),
                 what=f"create topic {topic}")

    def delete_topic(self, topic):
        try:
            self.run(self.raw_cmd("delete", topic), what=f"delete topic {topic}")
        except RuntimeError as e:
            log(f"bench: {e}")

    def produce(self, topic, partitions, path):
        p = self.run(self.raw_cmd("produce", topic, "--partitions", partitions, "--file", path),
                     what="weir_kafka_raw produce")
        return self.measured(p, **p.last_json())

    def count(self, topic):
        """Messages a read_committed consumer sees in topic."""
        p = self.run(self.raw_cmd("consume", topic, "-X", "isolation.level=read_committed"),
                     what=f"count {topic}")
        return p.last_json()["messages"]

    def count_output(self, topic):
        """The committed messages of an output topic. A short count is retried once after
        5 s: transaction markers reach the partitions after the producer's commit returns,
        so this rules out a count racing them."""
        rows = self.count(topic)
        if self.expected_rows is not None and rows != self.expected_rows:
            time.sleep(5)
            again = self.count(topic)
            log(f"bench:   output {topic}: {rows:,} committed messages, {again:,} 5 s later")
            rows = again
        return rows

    def out_topic(self, engine, query, p):
        """A fresh output topic for one exactly-once run (weir's sink makes its progress
        topic itself)."""
        self.serial += 1
        topic = f"out-{engine}-{query}-p{p}-{self.serial}"
        # Both sinks stamp each message with its row's event time, and the bids' event
        # times are of 2015: under the default retention (7 days, by message timestamp)
        # the broker's retention check (every 5 minutes) would delete the output's
        # segments as soon as it runs.
        self.create_topic(topic, p, {"retention.ms": "-1"})
        return topic

    def drop_out_topic(self, engine, topic):
        self.delete_topic(topic)
        if engine == "weir":
            self.delete_topic(topic + ".weir-progress")

    def run_raw(self, topic):
        p = self.run(self.raw_cmd("consume", topic, *self.x_args()),
                     what="weir_kafka_raw consume")
        r = p.last_json()
        return self.measured(p, engine="librdkafka", query="blackhole", sink="off",
                             parallelism=1, loop_seconds=r["seconds"], rows=r["messages"],
                             bytes=r["bytes"])

    def run_weir(self, query, topic, p, sink="off", digest=False):
        out_topic = self.out_topic("weir", query, p) if sink == "on" else None
        self.serial += 1
        cp_dir = self.tmp / f"checkpoints-{self.serial}"
        text = kafka_pipeline_text(query, self.bootstrap, topic, self.properties, digest,
                                   out_topic, cp_dir, self.checkpoint_interval)
        path = self.tmp / f"{query}-{self.serial}.toml"
        path.write_text(text)
        try:
            proc = self.run(weir_cmd(self.weir, path, p), what=f"weir {query} p={p} sink={sink}")
            r = self.measured(proc, engine="weir", query=query, sink=sink, parallelism=p)
            if out_topic:
                r["rows"] = self.count_output(out_topic)
            else:
                merged = weir_reports(proc.stdout)
                merged.pop("reports")
                r.update(merged)
            return r
        finally:
            shutil.rmtree(cp_dir, ignore_errors=True)
            if out_topic:
                self.drop_out_topic("weir", out_topic)

    def run_flink(self, query, topic, p, sink="off", digest=False):
        out_topic = self.out_topic("flink", query, p) if sink == "on" else None
        cmd = flink_cmd(self.classpath, "FlinkKafkaBench", query, "--bootstrap", self.bootstrap,
                        "--topic", topic, "--parallelism", p, *self.x_args())
        if out_topic:
            ms = int(duration_seconds(self.checkpoint_interval) * 1000)
            cmd += ["--sink", "exactly_once", "--out-topic", out_topic,
                    "--checkpoint-interval-ms", str(ms)]
        elif digest:
            cmd.append("--digest")
        try:
            proc = self.run(cmd, what=f"flink {query} p={p} sink={sink}")
            f = proc.last_json()
            # seconds: the job's net runtime (Flink's start-up left out, in its favour).
            r = self.measured(proc, engine="flink", query=query, sink=sink, parallelism=p,
                              rows=f["rows"])
            r["seconds"] = f["seconds"]
            if out_topic:
                r["rows"] = self.count_output(out_topic)
            elif "digest" in f:
                r["digest"] = f["digest"]
            return r
        finally:
            if out_topic:
                self.drop_out_topic("flink", out_topic)


def start_broker(kb, quiet_jvm=False):
    if not quiet_jvm:
        kb.JVM_OPTS = BROKER_JVM_OPTS
    broker = kb.KafkaBroker(start_timeout=180.0)
    log("bench: starting a Kafka broker (tests/kafka/kafka_broker.py)")
    broker.start()
    log(f"bench: broker at {broker.bootstrap}, pid {broker.pid}")
    return broker


def cmd_kafka(args):
    header = run_header("kafka", args.build_dir)
    queries = args.queries.split(",") if args.queries else list(KAFKA_QUERIES)
    sinks = args.sinks.split(",")
    parallelisms = [int(p) for p in args.parallelism.split(",")]
    build_dir = Path(args.build_dir)
    weir, baseline = binaries(args, ["weir_kafka_raw"])
    raw = build_dir / "weir_kafka_raw"
    classpath = build_flink() if args.flink else None
    properties = dict(KAFKA_PROPERTIES)
    for kv in args.properties:
        k, _, v = kv.partition("=")
        properties[k] = v
    data, _ = generate_bid_file(weir, args.events, build_dir / "kafka-data")
    kb = kafka_broker_module()
    broker = None
    if args.bootstrap:
        bootstrap, broker_pid = args.bootstrap, None
    else:
        broker = start_broker(kb)
        bootstrap, broker_pid = broker.bootstrap, broker.pid
    bench = KafkaBench(weir, raw, bootstrap, broker_pid, properties, classpath,
                       args.checkpoint_interval)
    flink_repeat = args.repeat if args.flink_repeat is None else args.flink_repeat
    results, comps, loads, failures = [], [], [], 0
    try:
        topic = f"bids-{args.events}-{args.partitions}-{os.getpid()}"
        bench.create_topic(topic, args.partitions)
        produced = bench.produce(topic, args.partitions, data)
        messages = produced["messages"]
        log(f"bench: produced {messages:,} bids ({produced['bytes'] / 2**20:.0f} MiB) into "
            f"{topic} ({args.partitions} partitions) in {produced['seconds']:.1f} s")
        # Untimed warm-up: the broker's consumer-offsets topic (made on the first
        # coordinator look-up) and its page cache are ready before any engine runs.
        bench.count(topic)
        for q in queries:
            expected = ({"rows": messages} if q == "blackhole"
                        else run_baseline(baseline, q, args.events, digest=True))
            bench.expected_rows = expected["rows"]
            for sink in (["off"] if q == "blackhole" else sinks):
                engines = [("librdkafka", 1)] if q == "blackhole" else []
                if not args.weir_pending:
                    engines += [("weir", p) for p in parallelisms]
                if classpath and q != "blackhole":
                    engines += [("flink", p) for p in parallelisms]

                def one(config, r):
                    engine, p = config
                    log(f"bench: kafka {q} sink={sink} {engine} p={p} (run {r + 1})")
                    load_before = round(os.getloadavg()[0], 2)
                    if engine == "librdkafka":
                        got = bench.run_raw(topic)
                    elif engine == "weir":
                        got = bench.run_weir(q, topic, p, sink,
                                             digest=(sink == "off" and q != "blackhole"))
                    else:
                        got = bench.run_flink(q, topic, p, sink, digest=(sink == "off"))
                    got["loadavg_1m_before_after"] = [load_before, round(os.getloadavg()[0], 2)]
                    got["check"] = check_result(got, expected)
                    got["messages"] = messages
                    add_rates(got, messages, "messages")
                    log(f"bench:   {got['messages_per_s']:,.0f} messages/s, "
                        f"{got['seconds']:.2f} s, cpu {got['cpu_seconds']:.2f} s, "
                        f"rows {got['rows']:,}: {got['check']}")
                    return got

                runs, round_loads = interleaved(
                    engines, args.repeat, one,
                    lambda c: flink_repeat if c[0] == "flink" else None)
                loads += [{"query": q, "sink": sink, **x} for x in round_loads]
                group = []
                for (engine, p), rs in runs.items():
                    b = dict(max(rs, key=lambda x: x["messages_per_s"]))
                    b["runs_seconds"] = [x["seconds"] for x in rs]
                    b["check"] = next((x["check"] for x in rs if not x["check"].startswith("ok")),
                                      b["check"])
                    failures += 0 if b["check"].startswith("ok") else 1
                    group.append(b)
                results += group
                c = compare(group, ["weir", "librdkafka", "flink"], "messages")
                if c["weir_vs"]:
                    comps.append({"query": q, "sink": sink, **c})
    finally:
        bench.close()
        if broker is not None:
            broker.stop()
    report = {**header, "events": args.events, "messages": messages,
              "partitions": args.partitions, "repeat": args.repeat,
              "flink_repeat": flink_repeat, "checkpoint_interval": args.checkpoint_interval,
              "properties": properties, "produce": produced, "loadavg": loads,
              "results": results, "comparisons": comps}
    write_results(args, report, charts.kafka_chart)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_kafka_table(report)
    return 1 if failures else 0


def print_kafka_table(report):
    print(f"on cores {','.join(map(str, report['cores']))}")
    print(f"{'query':9} {'sink':4} {'engine':10} {'p':>2} {'msgs/s':>12} {'msgs/cpu s':>11} "
          f"{'wall s':>7} {'cpu s':>7} {'broker s':>8} {'rows':>10}  check")
    for r in report["results"]:
        bc = r.get("broker_cpu_seconds")
        print(f"{r['query']:9} {r['sink']:4} {r['engine']:10} {r['parallelism']:>2} "
              f"{r['messages_per_s']:>12,.0f} {r.get('messages_per_cpu_s', 0):>11,.0f} "
              f"{r['seconds']:>7.2f} {r['cpu_seconds']:>7.2f} "
              f"{'' if bc is None else f'{bc:.2f}':>8} {r['rows']:>10,}  {r['check']}")
    print_comparisons(report["comparisons"], ("query", "sink"))


def cmd_kafka_check(args):
    """weir's Kafka queries on a small topic give the baseline's result (ctest)."""
    weir, baseline, raw = Path(args.weir), Path(args.baseline), Path(args.raw)
    kb = kafka_broker_module()
    tmp = Path(tempfile.mkdtemp(prefix="weir-kafka-check-"))
    checks = Checks()
    try:
        data, _ = generate_bid_file(weir, args.events, tmp)
        with kb.KafkaBroker() as broker:
            bench = KafkaBench(weir, raw, broker.bootstrap, broker.pid, dict(KAFKA_PROPERTIES))
            try:
                bench.create_topic("bids", 4)
                messages = bench.produce("bids", 4, data)["messages"]
                bench.count("bids")  # warm-up, as in cmd_kafka
                cases = [("blackhole", 1, {"rows": messages})]
                for q in ("q0", "q1", "q5", "q7"):
                    expected = run_baseline(baseline, q, args.events, digest=True)
                    if not checks.expect_rows(q, expected):
                        return 1
                    cases += [(q, 1, expected), (q, 2, expected)]
                checks.case("raw consume", bench.run_raw("bids"), {"rows": messages})
                for q, p, expected in cases:
                    got = bench.run_weir(q, "bids", p, digest=(q != "blackhole"))
                    checks.case(f"kafka {q} p={p}: weir", got, expected)
            finally:
                bench.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.finish()


def add_parser(sub):
    k = sub.add_parser("kafka", help="the Kafka source and sink against librdkafka and Flink")
    k.add_argument("--events", type=int, default=10_000_000,
                   help="Nexmark events whose bids go into the topic (default 10M: ~9.2M bids)")
    k.add_argument("--partitions", type=int, default=4, help="partitions of the topic")
    k.add_argument("--queries", help="comma-separated subset of " + ",".join(KAFKA_QUERIES))
    k.add_argument("--sinks", default="off,on",
                   help="off (blackhole / discarding sink), on (exactly-once Kafka sink)")
    k.add_argument("--parallelism", default="1,2", help="comma-separated parallelisms")
    k.add_argument("--repeat", type=int, default=1,
                   help="timed runs per engine, interleaved; best is kept")
    k.add_argument("--flink-repeat", type=int,
                   help="timed Flink runs per query (default --repeat): Flink's runs are "
                        "long, the first rounds run every engine, the rest weir and the raw loop")
    k.add_argument("--checkpoint-interval", default="1s",
                   help="checkpoint interval with the exactly-once sink (both engines)")
    k.add_argument("-X", dest="properties", action="append", default=[],
                   help="a Kafka client property for every consumer (k=v); "
                        "isolation.level=read_committed is always set")
    k.add_argument("--flink", action="store_true", help="also run Flink's KafkaSource jobs")
    k.add_argument("--bootstrap", help="use this broker instead of starting one")
    k.add_argument("--weir-pending", action="store_true",
                   help="leave weir out (while its Kafka source is not built)")
    add_family_options(k, "kafka", cmd_kafka)

    kc = sub.add_parser("kafka-check", help="weir's Kafka queries give the baseline's result")
    kc.add_argument("--events", type=int, default=100_000)
    kc.add_argument("--weir", required=True)
    kc.add_argument("--baseline", required=True)
    kc.add_argument("--raw", required=True)
    add_cores_option(kc)
    kc.set_defaults(func=cmd_kafka_check)
