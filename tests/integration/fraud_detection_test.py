#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fraud-detection example end to end (examples/fraud-detection/): the
real `weir` binary on the example's own pipeline.toml, a real Kafka broker
and a real OpenSearch node (both started here, in parallel).

The generator (examples/fraud-detection/generate.py, fixed seed) plants 8
velocity frauds and 8 small-then-large frauds among ordinary traffic, with
24 decoys that come close (2 large purchases, 3 spread over 50 minutes, a
large one 6-9 minutes after a small one). The alerts read back from the
Kafka topic (read_committed: the exactly-once sink's committed transactions)
and from the index must be exactly the planted ones: each once, with its
account's owner as of the fraud (the enrichment), and no alert for any
other account.

usage: fraud_detection_test.py --weir BIN --repo DIR [--seed S]
"""
import argparse
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kafka"))
sys.path.insert(0, str(HERE.parent / "opensearch"))
from kafka_broker import KafkaBroker  # noqa: E402
from opensearch_node import OpenSearchNode  # noqa: E402

SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def start_both():
    """A broker and a node, started in parallel (each JVM takes seconds)."""
    broker, node = KafkaBroker(), OpenSearchNode()
    errors = []

    def start(x):
        try:
            x.start()
        except Exception as e:  # reported below, after both tried
            errors.append(e)

    threads = [threading.Thread(target=start, args=(x,)) for x in (broker, node)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        broker.stop()
        node.stop()
        raise errors[0]
    return broker, node


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    example = pathlib.Path(args.repo) / "examples/fraud-detection"
    work = pathlib.Path(tempfile.mkdtemp(prefix="weir-fraud-"))
    broker = node = None
    try:
        r = subprocess.run([sys.executable, str(example / "generate.py"), "--out",
                            str(work / "input"), "--seed", str(args.seed)],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"generate.py failed:\n{r.stderr}")
        print(r.stdout.strip())
        planted = {}
        for line in (work / "input/planted.jsonl").read_text().splitlines():
            p = json.loads(line)
            planted[p["alert_id"]] = p
        check(len(planted) == 16, f"{len(planted)} planted frauds")

        toml = (example / "pipeline.toml").read_text()
        for old, new in [("out/fraud-detection/", f"{work}/"),
                         ("state/fraud-detection", f"{work}/state")]:
            check(old in toml, f"pipeline.toml no longer mentions {old}")
            toml = toml.replace(old, new)
        (work / "pipeline.toml").write_text(toml)
        v = subprocess.run([args.weir, "validate", str(work / "pipeline.toml")],
                           capture_output=True, text=True, timeout=60)
        check(v.returncode == 0, f"weir validate: {v.stderr}")

        broker, node = start_both()
        print(f"broker at {broker.bootstrap}, OpenSearch at {node.url}")
        broker.create_topic("fraud-alerts", partitions=1)
        for old, new in [("127.0.0.1:9092", broker.bootstrap),
                         ("http://127.0.0.1:9200", node.url)]:
            check(old in toml, f"pipeline.toml no longer mentions {old}")
            toml = toml.replace(old, new)
        (work / "pipeline.toml").write_text(toml)
        p = subprocess.run([args.weir, "run", str(work / "pipeline.toml")], capture_output=True,
                           text=True, timeout=180 * SCALE)
        check(p.returncode == 0, f"weir exited {p.returncode}:\n{p.stderr[-4000:]}")

        def compare(source, alerts):
            ids = collections.Counter(a["alert_id"] for a in alerts)
            twice = [i for i, n in ids.items() if n > 1]
            check(not twice, f"{source}: alerted more than once: {twice}")
            missing = sorted(set(planted) - set(ids))
            check(not missing, f"{source}: planted frauds not alerted: {missing}")
            extra = sorted(set(ids) - set(planted))
            check(not extra, f"{source}: alerts for no planted fraud: "
                             f"{[a for a in alerts if a['alert_id'] in extra][:5]}")
            for a in alerts:
                want = planted[a["alert_id"]]
                got = {k: a.get(k) for k in ("kind", "card", "account_id", "owner")}
                check(got == {k: want[k] for k in got}, f"{source}: {a} is not {want}")

        topic = [json.loads(m) for m in broker.consume("fraud-alerts", read_committed=True)]
        compare("Kafka topic fraud-alerts", topic)
        index = node.documents("fraud-alerts")
        check(all(k == v["alert_id"] for k, v in index.items()), "a document id is not its alert id")
        compare("index fraud-alerts", list(index.values()))
        kinds = collections.Counter(a["kind"] for a in topic)
        print(f"fraud-detection: ok, {len(topic)} alerts ({kinds['velocity']} velocity, "
              f"{kinds['pattern']} pattern), each planted fraud once in the topic and the "
              "index, none for the decoys or ordinary accounts")
        return 0
    except Failure as e:
        print(f"fraud-detection: FAILED: {e}")
        return 1
    finally:
        if broker:
            broker.stop()
        if node:
            node.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
