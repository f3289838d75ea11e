#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Authorization failures on a real broker (tests/kafka/kafka_broker.py with
sasl_users): a SASL_PLAINTEXT listener authenticates the user `alice` (PLAIN),
and Kafka's ACL authorizer (StandardAuthorizer, KRaft) lets her do only what
the test grants. Each case is the real `weir` binary: exit code 1, one message
naming the topic (and the partition where there is one), within a bounded
time; the last case, with every ACL the sink's error hint names, succeeds, so
the failures above come from the ACLs and not from the client's setup.

  source, no ACL                 not authorized to read topic 'guarded'
  source, Describe but not Read  the fetch refused: topic and partition named
  source, a wrong password       brokers unreachable, with the SASL error
  sink at_least_once, no ACL     the topic refused at start
  sink at_least_once, Describe   the delivery refused: topic and partition
  sink, a wrong password         brokers unreachable (10 s), with the SASL error
  sink exactly_once, no ACL on the transactional id: init_transactions refused
  sink exactly_once, every ACL   the rows committed, read back read_committed

usage: auth_tests.py --weir BIN
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kafka_broker import KafkaBroker  # noqa: E402

PASSWORD = "alice-secret"

AUTH = ('properties = {{ "security.protocol" = "SASL_PLAINTEXT", "sasl.mechanism" = "PLAIN", '
        '"sasl.username" = "alice", "sasl.password" = "{password}" }}')

SOURCE_JOB = """
[job]
name = "auth"
status_interval = "0s"

[[source]]
name = "in"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{bootstrap}"
format = "raw"
bounded = "latest"
connect_timeout = "5s"
{auth}

[[sink]]
name = "out"
input = "in"
type = "stdout"
"""

SINK_JOB = """
[job]
name = "auth"
status_interval = "0s"

[checkpoint]
interval = "200ms"
dir = "{work}/state"

[[source]]
name = "in"
type = "file"
path = "{work}/in.jsonl"
format = "jsonl"
schema = {{ k = "string", v = "int64" }}

[[sink]]
name = "out"
input = "in"
type = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
key = "k"
delivery = "{delivery}"
{auth}
"""

ROWS = 100
# Errors must come within this (the source's connect_timeout is 5 s, the
# sink's start-up timeout 10 s).
BOUND_S = 30


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(weir, work, toml_text, expect):
    toml = work / "pipeline.toml"
    toml.write_text(toml_text)
    shutil.rmtree(work / "state", ignore_errors=True)
    t0 = time.monotonic()
    p = subprocess.run([weir, "run", str(toml), "--fresh"], capture_output=True, text=True,
                       timeout=120)
    took = time.monotonic() - t0
    check(p.returncode == expect, f"exit {p.returncode}, expected {expect}:\n{p.stderr[-3000:]}")
    check(took < BOUND_S, f"took {took:.1f} s (bound {BOUND_S} s)")
    return p, took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = Path(tempfile.mkdtemp(prefix="weir-kafka-auth-"))
    failed = False
    try:
        (work / "in.jsonl").write_text(
            "".join(f'{{"k": "k{i % 7}", "v": {i}}}\n' for i in range(ROWS)))
        with KafkaBroker(sasl_users={"alice": PASSWORD}) as b:
            alice = "User:alice"
            for t in ("guarded", "described", "out", "out.weir-progress"):
                b.create_topic(t, partitions=1)
            b.produce("guarded", ["x"])
            b.produce("described", ["x"])
            b.add_acl(alice, "topic", "described", "describe")
            b.add_acl(alice, "topic", "out", "describe")
            b.add_acl(alice, "topic", "out", "write")
            for op in ("describe", "write", "read"):
                b.add_acl(alice, "topic", "out.weir-progress", op)
            time.sleep(1)  # the authorizer applies ACLs from the metadata log
            auth = AUTH.format(password=PASSWORD)

            def source(topic, a=auth):
                return SOURCE_JOB.format(topic=topic, bootstrap=b.sasl_bootstrap, auth=a)

            def sink(topic, delivery, a=auth):
                return SINK_JOB.format(work=work, topic=topic, bootstrap=b.sasl_bootstrap,
                                       delivery=delivery, auth=a)

            cases = [
                ("source, no ACL", source("guarded"),
                 ["not authorized to read topic 'guarded'", "Topic authorization failed"]),
                ("source, Describe but not Read", source("described"),
                 ["topic 'described' partition 0", "Topic authorization failed"]),
                ("source, a wrong password", source("guarded", AUTH.format(password="wrong")),
                 ["cannot reach the Kafka brokers at " + b.sasl_bootstrap,
                  "SASL authentication error"]),
                ("sink at_least_once, no ACL", sink("guarded", "at_least_once"),
                 ["Kafka topic 'guarded'", "Topic authorization failed", "hint: grant"]),
                ("sink at_least_once, Describe but not Write", sink("described", "at_least_once"),
                 ["Kafka topic 'described' partition 0", "Topic authorization failed"]),
                ("sink, a wrong password",
                 sink("out", "at_least_once", AUTH.format(password="wrong")),
                 ["cannot reach Kafka at '" + b.sasl_bootstrap + "' for topic 'out'",
                  "SASL authentication error"]),
                ("sink exactly_once, no ACL on its transactional id", sink("out", "exactly_once"),
                 ["Kafka sink on topic 'out'", "Transactional Id authorization failed"]),
            ]
            for what, toml, wants in cases:
                try:
                    p, took = run(args.weir, work, toml, expect=1)
                    # The one message: weir's last line, not librdkafka's warnings.
                    last = p.stderr.strip().splitlines()[-1]
                    missing = [w for w in wants if w not in last]
                    check(last.startswith("weir: ") and not missing,
                          f"the message lacks {missing}:\n{p.stderr[-2000:]}")
                    print(f"ok: {what}: exit 1 in {took:.1f} s: {last[:300]}")
                except Failure as e:
                    failed = True
                    print(f"FAIL: {what}: {e}")
            # With the ACLs the hint names, the same exactly-once job succeeds.
            b.add_acl(alice, "transactional_id", "weir-auth-out-0", "write")
            b.add_acl(alice, "transactional_id", "weir-auth-out-0", "describe")
            time.sleep(1)
            try:
                run(args.weir, work, sink("out", "exactly_once"), expect=0)
                got = b.consume("out", read_committed=True)
                check(len(got) == ROWS, f"read_committed holds {len(got)} rows, expected {ROWS}")
                print(f"ok: sink exactly_once with Write on the topic and the transactional id: "
                      f"{ROWS} rows committed")
            except Failure as e:
                failed = True
                print(f"FAIL: sink exactly_once with its ACLs: {e}")
    finally:
        if failed and os.environ.get("WEIR_KEEP_FAILED"):
            print(f"kept {work} (WEIR_KEEP_FAILED)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
