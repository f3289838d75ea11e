# SPDX-License-Identifier: Apache-2.0
"""The exactly-once sinks the final-checkpoint and kill tests write through,
each as the first sink of their job (`toml()`), and what a reader then sees
of it:

  file      the transactional file sink: committed parts `part-*` in
            `work/out`; left over: pending parts in `.staging`
  kafka     delivery = "exactly_once" into a topic of a real broker (the
            kafka_broker fixture), read read_committed; a topic per scenario
  postgres  delivery = "exactly_once" into the table `rows` of a real
            PostgreSQL 15 (the postgres_server fixture); left over: prepared
            transactions (pg_prepared_xacts)

`SINKS[name](work, server)`; `reset(scenario)` before each scenario,
`committed()` the ids committed (ints, in no order), `left_over()` what is
left pre-committed.
"""
import glob
import json
import os
import shutil


class FileSink:
    """The exactly-once file sink: committed parts in a directory."""

    def __init__(self, work, server=None):
        self.dir = os.path.join(work, "out")

    def toml(self):
        return f"""
[[sink]]
name = "first"
input = "input"
type = "file"
path = "{self.dir}"
format = "jsonl"
"""

    def reset(self, scenario):
        shutil.rmtree(self.dir, ignore_errors=True)

    def committed(self):
        rows = []
        for part in sorted(glob.glob(os.path.join(self.dir, "part-*"))):
            with open(part) as f:
                rows += [json.loads(l)["id"] for l in f if l.strip()]
        return rows

    def left_over(self):
        """Pending (pre-committed) parts left in staging."""
        return sorted(os.path.basename(p)
                      for p in glob.glob(os.path.join(self.dir, ".staging", "*.pending")))


class KafkaSink:
    """delivery = "exactly_once" into a topic of a real broker."""

    def __init__(self, work, broker):
        self.broker = broker
        self.topic = None

    def reset(self, scenario):
        # A topic of its own for each scenario.
        self.topic = "final-ckpt-" + scenario
        self.broker.create_topic(self.topic, partitions=2)

    def toml(self):
        return f"""
[[sink]]
name = "first"
input = "input"
type = "kafka"
topic = "{self.topic}"
bootstrap_servers = "{self.broker.bootstrap}"
delivery = "exactly_once"
"""

    def committed(self):
        return [json.loads(l)["id"] for l in self.broker.consume(self.topic, read_committed=True)
                if l.strip()]

    def left_over(self):
        return []

    def aborted(self, err):
        # An open transaction and an aborted one look alike to a consumer
        # (read_committed sees neither): the sink's log says which.
        return "the open transaction was aborted" in err


class PostgresSink:
    """delivery = "exactly_once" into a table of a real PostgreSQL 15."""

    def __init__(self, work, pg):
        self.pg = pg
        self.pg.sql("DROP TABLE IF EXISTS rows")
        self.pg.sql("CREATE TABLE rows (id bigint, word text)")

    def reset(self, scenario):
        self.pg.sql("TRUNCATE rows")

    def toml(self):
        return f"""
[[sink]]
name = "first"
input = "input"
type = "postgres"
connection = "{self.pg.conninfo}"
table = "rows"
delivery = "exactly_once"
"""

    def committed(self):
        return [int(r[0]) for r in self.pg.sql("SELECT id FROM rows")]

    def left_over(self):
        return [r[0] for r in self.pg.sql("SELECT gid FROM pg_prepared_xacts")]


SINKS = {"file": FileSink, "kafka": KafkaSink, "postgres": PostgresSink}
