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

CTest's kafka/auth runs the file: the cases (test_refused, one per case) on
one broker, then test_granted.
"""
import shutil
import time

import pytest
from kafka_broker import KafkaBroker

from weirtest import run

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


def run_job(weir, work, b, toml_text, expect):
    toml = work / "pipeline.toml"
    toml.write_text(toml_text)
    shutil.rmtree(b.work / "state", ignore_errors=True)
    t0 = time.monotonic()
    p = run([weir, "run", toml, "--fresh"], timeout=120, expect=expect)
    took = time.monotonic() - t0
    assert took < BOUND_S, f"took {took:.1f} s (bound {BOUND_S} s)"
    return p, took


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    """A broker with `alice` on a SASL listener and the test's ACLs; the
    input file in its own directory."""
    work = tmp_path_factory.mktemp("auth")
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
        b.work = work
        yield b


def source(b, topic, auth=AUTH.format(password=PASSWORD)):
    return SOURCE_JOB.format(topic=topic, bootstrap=b.sasl_bootstrap, auth=auth)


def sink(b, topic, delivery, auth=AUTH.format(password=PASSWORD)):
    return SINK_JOB.format(work=b.work, topic=topic, bootstrap=b.sasl_bootstrap,
                           delivery=delivery, auth=auth)


WRONG = AUTH.format(password="wrong")
CASES = {
    "source, no ACL": (lambda b: source(b, "guarded"), lambda b: [
        "not authorized to read topic 'guarded'", "Topic authorization failed"]),
    "source, Describe but not Read": (lambda b: source(b, "described"), lambda b: [
        "topic 'described' partition 0", "Topic authorization failed"]),
    "source, a wrong password": (lambda b: source(b, "guarded", WRONG), lambda b: [
        "cannot reach the Kafka brokers at " + b.sasl_bootstrap, "SASL authentication error"]),
    "sink at_least_once, no ACL": (lambda b: sink(b, "guarded", "at_least_once"), lambda b: [
        "Kafka topic 'guarded'", "Topic authorization failed", "hint: grant"]),
    "sink at_least_once, Describe but not Write": (
        lambda b: sink(b, "described", "at_least_once"), lambda b: [
            "Kafka topic 'described' partition 0", "Topic authorization failed"]),
    "sink, a wrong password": (lambda b: sink(b, "out", "at_least_once", WRONG), lambda b: [
        "cannot reach Kafka at '" + b.sasl_bootstrap + "' for topic 'out'",
        "SASL authentication error"]),
    "sink exactly_once, no ACL on its transactional id": (
        lambda b: sink(b, "out", "exactly_once"), lambda b: [
            "Kafka sink on topic 'out'", "Transactional Id authorization failed"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused(weir, work, sasl_broker, case):
    toml, wants = CASES[case]
    p, took = run_job(weir, work, sasl_broker, toml(sasl_broker), expect=1)
    # The one message: weir's last line, not librdkafka's warnings.
    last = p.stderr.strip().splitlines()[-1]
    missing = [w for w in wants(sasl_broker) if w not in last]
    assert last.startswith("weir: ") and not missing, (
        f"the message lacks {missing}:\n{p.stderr[-2000:]}")
    print(f"ok: {case}: exit 1 in {took:.1f} s: {last[:300]}")


def test_granted(weir, work, sasl_broker):
    """With the ACLs the hint names, the exactly-once job refused above
    succeeds."""
    b = sasl_broker
    b.add_acl("User:alice", "transactional_id", "weir-auth-out-0", "write")
    b.add_acl("User:alice", "transactional_id", "weir-auth-out-0", "describe")
    time.sleep(1)  # the authorizer applies ACLs from the metadata log
    run_job(weir, work, b, sink(b, "out", "exactly_once"), expect=0)
    got = b.consume("out", read_committed=True)
    assert len(got) == ROWS, f"read_committed holds {len(got)} rows, expected {ROWS}"
