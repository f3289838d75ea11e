#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fraud-detection example end to end (examples/fraud-detection/): the
real `weir` binary on the example's own pipeline.toml, a real Kafka broker
and a real OpenSearch node (the kafka_broker and opensearch_node fixtures).

The generator (examples/fraud-detection/generate.py, fixed seed) plants 8
velocity frauds and 8 small-then-large frauds among ordinary traffic, with
24 decoys that come close (2 large purchases, 3 spread over 50 minutes, a
large one 6-9 minutes after a small one). The alerts read back from the
Kafka topic (read_committed: the exactly-once sink's committed transactions)
and from the index must be exactly the planted ones: each once, with its
account's owner as of the fraud (the enrichment), and no alert for any
other account.

The generator's seed is 42 (--seed replays another).
"""
import collections
import json
import sys

from weirtest import run


def test_fraud_detection(weir, repo, work, pytestconfig, kafka_broker, opensearch_node):
    seed = pytestconfig.getoption("seed") or 42
    example = repo / "examples/fraud-detection"
    r = run([sys.executable, example / "generate.py", "--out", work / "input", "--seed", seed],
            what="generate.py")
    print(r.stdout.strip())
    planted = {}
    for line in (work / "input/planted.jsonl").read_text().splitlines():
        p = json.loads(line)
        planted[p["alert_id"]] = p
    assert len(planted) == 16, f"{len(planted)} planted frauds"

    toml = (example / "pipeline.toml").read_text()
    for old, new in [("out/fraud-detection/", f"{work}/"),
                     ("state/fraud-detection", f"{work}/state")]:
        assert old in toml, f"pipeline.toml no longer mentions {old}"
        toml = toml.replace(old, new)
    (work / "pipeline.toml").write_text(toml)
    run([weir, "validate", work / "pipeline.toml"], timeout=60)

    broker, node = kafka_broker, opensearch_node
    print(f"broker at {broker.bootstrap}, OpenSearch at {node.url}")
    broker.create_topic("fraud-alerts", partitions=1)
    for old, new in [("127.0.0.1:9092", broker.bootstrap),
                     ("http://127.0.0.1:9200", node.url)]:
        assert old in toml, f"pipeline.toml no longer mentions {old}"
        toml = toml.replace(old, new)
    (work / "pipeline.toml").write_text(toml)
    run([weir, "run", work / "pipeline.toml"], timeout=180)

    def compare(source, alerts):
        ids = collections.Counter(a["alert_id"] for a in alerts)
        twice = [i for i, n in ids.items() if n > 1]
        assert not twice, f"{source}: alerted more than once: {twice}"
        missing = sorted(set(planted) - set(ids))
        assert not missing, f"{source}: planted frauds not alerted: {missing}"
        extra = sorted(set(ids) - set(planted))
        assert not extra, (f"{source}: alerts for no planted fraud: "
            f"{[a for a in alerts if a['alert_id'] in extra][:5]}")
        for a in alerts:
            want = planted[a["alert_id"]]
            got = {k: a.get(k) for k in ("kind", "card", "account_id", "owner")}
            assert got == {k: want[k] for k in got}, f"{source}: {a} is not {want}"

    topic = [json.loads(m) for m in broker.consume("fraud-alerts", read_committed=True)]
    compare("Kafka topic fraud-alerts", topic)
    index = node.documents("fraud-alerts")
    assert all(k == v["alert_id"] for k, v in index.items()), "a document id is not its alert id"
    compare("index fraud-alerts", list(index.values()))
    kinds = collections.Counter(a["kind"] for a in topic)
    print(f"fraud-detection: ok, {len(topic)} alerts ({kinds['velocity']} velocity, "
          f"{kinds['pattern']} pattern), each planted fraud once in the topic and the "
          "index, none for the decoys or ordinary accounts")
