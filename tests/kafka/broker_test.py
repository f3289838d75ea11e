# SPDX-License-Identifier: Apache-2.0
"""The test broker itself (tests/kafka/kafka_broker.py): it starts, creates and
grows topics, takes and serves messages through kcat, survives a SIGKILL and
restart with its data, and stops leaving nothing behind."""
from kafka_broker import KafkaBroker


def test_broker():
    with KafkaBroker() as b:
        workdir = b.dir
        b.create_topic("smoke", partitions=2)
        b.produce("smoke", [f"m{i}" for i in range(10)], partition=0)
        b.produce("smoke", [f"n{i}" for i in range(5)], partition=1)
        got = sorted(b.consume("smoke"))
        want = sorted([f"m{i}" for i in range(10)] + [f"n{i}" for i in range(5)])
        assert got == want, f"consumed {got}"
        b.add_partitions("smoke", 3)
        b.produce("smoke", ["p2"], partition=2)
        b.kill()
        b.restart()
        got = sorted(b.consume("smoke"))
        assert got == sorted(want + ["p2"]), f"after a SIGKILL and restart: {got}"
    assert not workdir.exists(), f"{workdir} left behind"
