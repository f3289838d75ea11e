# SPDX-License-Identifier: Apache-2.0
"""The Redis and PostgreSQL sinks against real servers (tests/weirtest/servers.py:
redis-server and PostgreSQL 15 started here on free ports), the real `weir`
binary on real TOML files, and real SIGKILLs.

A keyed job over generated records {seq, key, ts, value} (tumbling 10 s
windows per key, and a running count per key in keyed state) checkpoints
every 100 ms and is SIGKILLed at random moments, each time restarted on the
same checkpoint directory; when a run completes, what the server holds is
compared with an uninterrupted run's.

Each is the test function test_<name> with - as _ (test_redis_kill, ...):
  redis-kill          HSET (windows), ZADD (per-window ranking) and SET (running
                      counts): the final Redis state after --kills SIGKILLs (default
                      5) equals an uninterrupted run's (written to another db)
  redis-errors        load-time errors (file:line:col, exit 2); Redis unreachable:
                      retried, then exit 1 naming host:port
  postgres-exactly-once  insert mode, delivery = "exactly_once": rows in the tables
                      after --kills SIGKILLs (default 6, 2 of them between a
                      checkpoint's completion and its COMMIT PREPARED) equal an
                      uninterrupted run's, row for row; no prepared transaction left
  postgres-upsert     upsert mode (running counts by key) at_least_once across 3
                      SIGKILLs: one row per key with its final count; insert mode
                      (windows) equal to the windows computed here
  postgres-errors     load-time errors (file:line:col, exit 2); a server with
                      max_prepared_transactions = 0 fails exactly_once (exit 1) and
                      takes at_least_once
The seed is printed; pass --seed (or WEIR_SEED) to replay a run.
"""
import collections
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

from weirtest import SCALE, free_port, run
from weirtest.servers import PostgresServer

RECORDS = int(100_000 / SCALE)
KEYS = 200
# A kill test's input is paced (the file source's `rate`) so that a run lasts
# about PACED_SECONDS on any machine, however fast: a kill drawn from that
# span lands while the job runs, checkpoints every 100 ms in between.
PACED_SECONDS = 4.0
# The kill of a run comes this far into PACED_SECONDS (a fraction drawn
# uniformly), later with each kill since the last completed run.
KILL_SPAN = (0.1, 0.8)

HEAD = """
[job]
name = "{name}"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "100ms"
dir = "{work}/state"
retain = 3

[[source]]
name = "input"
type = "file"
path = "{work}/input.jsonl"
format = "jsonl"
schema = {{ seq = "int64", key = "string", ts = "timestamp", value = "int64" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "1s" }}
{rate}

[[operator]]
name = "per_key"
type = "window"
input = "input"
key_by = ["key"]
window = {{ type = "tumbling", size = "10s" }}
aggregate = {{ n = "count(*)", total = "sum(value)" }}

[[operator]]
name = "running"
type = "running_count"
input = "input"
key_by = ["key"]
"""

REDIS_SINKS = """
[[sink]]
name = "windows_out"
input = "per_key"
type = "redis"
port = {port}
db = {db}
command = "hset"
key = "concat('win:', key)"
field = "window_start"
value = "concat(n, '/', total)"

[[sink]]
name = "ranking_out"
input = "per_key"
type = "redis"
port = {port}
db = {db}
command = "zadd"
key = "concat('top:', window_start)"
score = "total"
value = "key"

[[sink]]
name = "counts_out"
input = "running"
type = "redis"
port = {port}
db = {db}
command = "set"
key = "concat('count:', key)"
value = "count"
batch_size = 500
"""

PG_SINKS = """
[[sink]]
name = "windows_out"
input = "per_key"
type = "postgres"
connection = "{conninfo}"
table = "{prefix}windows"
columns = {{ key = "key", window_start = "window_start", n = "n", total = "total" }}
delivery = "{delivery}"

[[sink]]
name = "running_out"
input = "running"
type = "postgres"
connection = "{conninfo}"
table = "{prefix}running"
mode = "{mode}"
{keys}
delivery = "{delivery}"
batch_size = 500
"""


def head_of(name, work, paced=True):
    """The job's [job], [checkpoint], source and operators; `paced`: the
    input replays at RECORDS / PACED_SECONDS rows per second."""
    rate = f"rate = {len(work.records) / PACED_SECONDS:.0f}" if paced else ""
    return HEAD.format(name=name, work=work.dir, rate=rate)


def generate(path, n, seed):
    rnd = random.Random(seed)
    recs = []
    with open(path, "w") as f:
        for i in range(n):
            r = {"seq": i, "key": "k%d" % rnd.randint(0, KEYS - 1), "ts": i * 10 + rnd.randint(0, 500),
                 "value": rnd.randint(1, 100)}
            recs.append(r)
            f.write(json.dumps(r) + "\n")
    return recs


class Work:
    def __init__(self, weir, directory, seed, records=RECORDS):
        self.weir = weir
        self.dir = str(directory)
        self.records = generate(os.path.join(self.dir, "input.jsonl"), records, seed)

    def write(self, text, name="pipeline.toml"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, toml, *flags, expect=0, env=None, cmd="run"):
        return run([self.weir, cmd, toml, *flags], timeout=300, expect=expect, env=env)

    def reset_state(self):
        shutil.rmtree(os.path.join(self.dir, "state"), ignore_errors=True)


def kill_loop(weir, seed, work, toml, reset, compare, kills_wanted, fault=None, faults_wanted=0):
    """Runs `toml` and SIGKILLs it at random moments, restarting it on its
    checkpoint directory, until `kills_wanted` kills (`faults_wanted` of
    them by the sink itself through WEIR_FAULT=`fault`:N) were survived;
    each completed run's output is checked by `compare`, then a new cycle
    starts (`reset`, --fresh) while kills are missing. The input is paced
    (PACED_SECONDS), so a fresh run that ends before its kill means the pacing
    failed: that fails the test, as do more runs than the kills can need.
    Returns the stderr of every run."""
    rnd = random.Random(seed)
    kills = faults = runs = restores = streak = 0
    max_runs = 4 * (kills_wanted + faults_wanted) + 12
    fresh = True
    logs = []
    reset()
    while True:
        assert runs < max_runs, (
            f"{runs} runs and only {kills} of {kills_wanted} kills ({faults} of "
            f"{faults_wanted} at commit time): the runs end before their kills")
        argv = [weir, "run", toml] + (["--fresh"] if fresh else [])
        was_fresh = fresh
        fresh = False
        env = dict(os.environ)
        use_fault = fault and faults < faults_wanted and rnd.random() < 0.5
        if use_fault:
            env["WEIR_FAULT"] = f"{fault}:{rnd.randint(1, 4)}"
        log_path = os.path.join(work.dir, f"run-{runs}.log")
        runs += 1
        kill_at = rnd.uniform(*KILL_SPAN) * PACED_SECONDS * (1 + streak / 5)
        t0 = time.monotonic()
        with open(log_path, "w") as log:
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env)
            try:
                p.wait(timeout=kill_at)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
        took = time.monotonic() - t0
        with open(log_path) as log:
            err = log.read()
        logs.append(err)
        if "restored from #" in err:
            restores += 1
        if p.returncode == -signal.SIGKILL:
            kills += 1
            streak += 1
            if "WEIR_FAULT: killing" in err:
                faults += 1
            continue
        assert p.returncode == 0, f"a run between kills failed (exit {p.returncode}):\n{err[-3000:]}"
        assert not was_fresh or took >= PACED_SECONDS / 2, (
            f"a fresh run ended after {took:.2f} s, before its kill at {kill_at:.2f} s, "
            f"although its input is paced to last {PACED_SECONDS} s: the source's rate did "
            f"not pace it ({log_path})")
        compare(f"after {kills} kills ({faults} at commit time) in {runs} runs")
        if kills >= kills_wanted and faults >= faults_wanted:
            break
        reset()
        fresh = True
        streak = 0
    assert restores > 0, "no run ever resumed from a checkpoint"
    print(f"ok: {kills} SIGKILLs ({faults} between a checkpoint's completion and its commit) "
          f"in {runs} runs, {restores} resumed")
    return logs


# -- Redis -------------------------------------------------------------------

def test_redis_kill(weir, tmp_path, seed, kills, redis_server):
    work = Work(weir, tmp_path, seed)
    redis = redis_server
    head = head_of("redis-sink-test", work)
    ref = work.write(head + REDIS_SINKS.format(port=redis.port, db=1), "reference.toml")
    work.run(ref, "--fresh", "-q")
    want = redis.dump(db=1)
    # Independent checks of the reference: every key's final count,
    # and as many window fields as (key, 10 s window) pairs.
    counts = collections.Counter(r["key"] for r in work.records)
    assert all(want.get("count:" + k) == str(c) for k, c in counts.items()), (
        "the reference's running counts differ from the counts computed here")
    windows = {(r["key"], r["ts"] // 10_000) for r in work.records}
    got_windows = sum(len(v) for k, v in want.items() if k.startswith("win:"))
    assert got_windows == len(windows), (
        f"reference: {got_windows} window fields, expected {len(windows)}")
    assert any(k.startswith("top:") for k in want), "reference wrote no ranking"
    work.reset_state()
    toml = work.write(head + REDIS_SINKS.format(port=redis.port, db=0))

    def compare(what):
        got = redis.dump(db=0)
        if got != want:
            missing = sorted(set(want) - set(got))
            diff = sorted(k for k in want if k in got and got[k] != want[k])
            raise AssertionError(f"{what}: Redis differs from the uninterrupted run: "
                                 f"{len(got)} keys vs {len(want)}, missing {missing[:3]}, "
                                 f"different {diff[:3]}")

    def reset():
        redis.cli("FLUSHDB", db=0)
        work.reset_state()

    kill_loop(weir, seed, work, toml, reset, compare, kills or 5)
    print(f"ok: Redis state equals the uninterrupted run ({len(want)} keys)")


def expect_config_errors(work, toml_text, expected):
    """`weir validate` exits 2 and reports each (line, col, text) expected."""
    path = work.write(toml_text, "bad.toml")
    p = work.run(path, expect=2, cmd="validate")
    for line, col, text in expected:
        want = f"{path}:{line}:{col}: error:"
        hits = [l for l in p.stderr.splitlines() if l.startswith(want) and text in l]
        assert hits, f"expected '{want} ...{text}...' in:\n{p.stderr}"


def line_of(text, needle):
    for i, l in enumerate(text.splitlines(), 1):
        if needle in l:
            return i, l
    raise AssertionError(needle)


def test_redis_errors(weir, tmp_path, seed):
    work = Work(weir, tmp_path, seed, records=1000)
    head = head_of("redis-errors", work, paced=False)
    bad = head + """
[[sink]]
name = "a"
input = "per_key"
type = "redis"
command = "hset"
key = "concat('win:', kee)"
field = "key"
value = "n"

[[sink]]
name = "d"
input = "per_key"
type = "redis"
command = "hset"
key = "key"
value = "n"

[[sink]]
name = "b"
input = "per_key"
type = "redis"
command = "zadd"
key = "'top'"
score = "key"
value = "key"

[[sink]]
name = "c"
input = "running"
type = "redis"
command = "set"
key = "key"
field = "count"
value = "count"
"""
    ln_cmd = line_of(bad, 'name = "d"')[0] + 3
    ln_key, l_key = line_of(bad, "kee)")
    ln_score, l_score = line_of(bad, 'score = "key"')
    ln_field, _ = line_of(bad, 'field = "count"')
    expect_config_errors(work, bad, [
        (ln_cmd, 11, "command \"hset\" needs 'field'"),
        (ln_key, l_key.index("kee") + 1, "unknown field 'kee'"),
        (ln_score, 10, "score: must be a number or timestamp, got string"),
        (ln_field, 9, "'field' applies to command \"hset\" only"),
    ])
    # Nothing listens on the port: two attempts, then a clear failure.
    port = free_port()
    toml = work.write(head + f"""
[[sink]]
name = "counts_out"
input = "running"
type = "redis"
port = {port}
command = "set"
key = "key"
value = "count"
max_attempts = 2
""")
    p = work.run(toml, "--fresh", expect=1)
    assert f"cannot reach Redis at 127.0.0.1:{port} after 2 attempts" in p.stderr, (
        f"no clear connection failure:\n{p.stderr[-2000:]}")
    print("ok: load-time errors at file:line:col (exit 2); unreachable Redis: exit 1 "
          "after the retries")


# -- PostgreSQL ----------------------------------------------------------------

def create_tables(pg, prefix, running_pk=False):
    pg.sql(f"DROP TABLE IF EXISTS {prefix}windows, {prefix}running; "
           f"CREATE TABLE {prefix}windows (key text, window_start timestamptz, n bigint, "
           f"total bigint); CREATE TABLE {prefix}running (key text"
           f"{' PRIMARY KEY' if running_pk else ''}, count bigint)")


def table_rows(pg, prefix):
    return {
        "windows": pg.sql(f"SELECT key, window_start, n, total FROM {prefix}windows "
                          "ORDER BY 1, 2, 3, 4"),
        "running": pg.sql(f"SELECT key, count FROM {prefix}running ORDER BY 1, 2"),
    }


def pg_pipeline(work, pg, name, prefix, delivery, mode="insert", paced=True):
    head = head_of(name, work, paced)
    keys = 'key_columns = ["key"]' if mode == "upsert" else ""
    return head + PG_SINKS.format(conninfo=pg.conninfo, prefix=prefix, delivery=delivery,
                                  mode=mode, keys=keys)


def expected_windows(records):
    w = collections.defaultdict(lambda: [0, 0])
    for r in records:
        a = w[(r["key"], r["ts"] // 10_000)]
        a[0] += 1
        a[1] += r["value"]
    return w


def test_postgres_exactly_once(weir, tmp_path, seed, kills, postgres_server):
    work = Work(weir, tmp_path, seed)
    pg = postgres_server
    create_tables(pg, "ref_")
    ref = work.write(pg_pipeline(work, pg, "pg-eo", "ref_", "exactly_once"), "ref.toml")
    work.run(ref, "--fresh", "-q")
    want = table_rows(pg, "ref_")
    assert len(want["running"]) == len(work.records), (
        f"reference run wrote {len(want['running'])} running counts, "
        f"expected {len(work.records)}")
    assert len(want["windows"]) == len(expected_windows(work.records)), (
        "reference run wrote the wrong number of windows")
    work.reset_state()
    create_tables(pg, "")
    toml = work.write(pg_pipeline(work, pg, "pg-eo", "", "exactly_once"))

    def compare(what):
        got = table_rows(pg, "")
        for t in ("windows", "running"):
            g = [tuple(r) for r in got[t]]
            w = [tuple(r) for r in want[t]]
            if g != w:
                gc, wc = collections.Counter(g), collections.Counter(w)
                missing = list((wc - gc).elements())
                extra = list((gc - wc).elements())
                raise AssertionError(f"{what}: table {t}: {len(g)} rows vs {len(w)} of the "
                                     f"uninterrupted run, {len(missing)} missing, {len(extra)} "
                                     f"extra (duplicates); first missing {missing[:3]}, first "
                                     f"extra {extra[:3]}")
        left = pg.sql("SELECT gid FROM pg_prepared_xacts")
        assert not left, f"{what}: prepared transactions left: {left}"

    def reset():
        pg.sql("TRUNCATE windows, running")
        work.reset_state()

    logs = kill_loop(weir, seed, work, toml, reset, compare, kills or 6,
                     fault="pg_kill_after_checkpoint_complete", faults_wanted=2)
    # Every run after the first finds the progress table: the
    # server's NOTICE for CREATE TABLE IF NOT EXISTS stays in the log
    # (debug level), off stderr.
    noticed = [log for log in logs if "NOTICE" in log]
    assert not noticed, f"libpq's notices reached stderr:\n{noticed[:1]}"
    recovered = sum(int(m) for log in logs
                    for m in re.findall(r"(\d+) prepared transactions committed", log))
    assert recovered > 0, ("no restore ever committed a prepared transaction of its "
        "checkpoint (the kills between completion and commit did "
        "not exercise the recovery)")
    print(f"ok: tables equal the uninterrupted run ({len(want['running'])} + "
          f"{len(want['windows'])} rows); restores committed {recovered} prepared "
          "transactions found in pg_prepared_xacts")


def test_postgres_upsert(weir, tmp_path, seed, kills):
    work = Work(weir, tmp_path, seed)
    with PostgresServer(max_prepared_transactions=0) as pg:
        create_tables(pg, "", running_pk=True)
        toml = work.write(pg_pipeline(work, pg, "pg-upsert", "", "at_least_once", "upsert"))
        counts = collections.Counter(r["key"] for r in work.records)
        windows = expected_windows(work.records)

        def compare(what):
            got = dict((k, int(c)) for k, c in pg.sql("SELECT key, count FROM running"))
            assert got == dict(counts), (f"{what}: upserted counts differ: {len(got)} keys "
                f"vs {len(counts)}")
            # Insert mode at least once: every window there (replays may
            # add duplicates).
            rows = pg.sql("SELECT key, (extract(epoch FROM window_start) * 1000)::bigint, "
                          "n, total FROM windows")
            seen = {(k, int(ws) // 10_000): [int(n), int(t)] for k, ws, n, t in rows}
            assert seen == dict(windows), f"{what}: windows differ from those computed here"

        def reset():
            pg.sql("TRUNCATE windows, running")
            work.reset_state()

        kill_loop(weir, seed, work, toml, reset, compare, kills or 3)
        # Uninterrupted, insert mode writes each window exactly once.
        reset()
        work.run(toml, "--fresh", "-q")
        compare("uninterrupted")
        n = int(pg.sql("SELECT count(*) FROM windows")[0][0])
        assert n == len(windows), f"insert mode wrote {n} windows, expected {len(windows)}"
        print(f"ok: upsert keeps one row per key ({len(counts)}) with its final count "
              f"across kills; insert mode wrote {n} windows")


def test_postgres_errors(weir, tmp_path, seed):
    work = Work(weir, tmp_path, seed, records=2000)
    head = head_of("pg-errors", work, paced=False)
    bad = head + """
[[sink]]
name = "a"
input = "running"
type = "postgres"
connection = "host=127.0.0.1"
table = "t"
mode = "upsert"

[[sink]]
name = "b"
input = "running"
type = "postgres"
connection = "host=127.0.0.1"
table = "t"
columns = { k = "key", c = "count + 'x'" }
mode = "upsert"
key_columns = ["key"]
"""
    ln_mode, _ = line_of(bad, 'mode = "upsert"')
    ln_cols, l_cols = line_of(bad, "count + 'x'")
    ln_kc, l_kc = line_of(bad, 'key_columns = ["key"]')
    expect_config_errors(work, bad, [
        (ln_mode, 8, "mode \"upsert\" needs 'key_columns'"),
        (ln_cols, l_cols.index("+") + 1, "columns.c: operator '+' needs numbers"),
    ])
    # The column check runs once the expressions compile.
    bad2 = bad.replace("count + 'x'", "count")
    expect_config_errors(work, bad2, [
        (ln_kc, l_kc.index('"key"') + 1, "key_columns: 'key' is not one of the columns written"),
    ])
    # exactly_once without [checkpoint].
    no_ckpt = re.sub(r"\[checkpoint\][^\[]*", "", head) + """
[[sink]]
name = "c"
input = "running"
type = "postgres"
connection = "host=127.0.0.1"
table = "t"
delivery = "exactly_once"
"""
    ln_d, _ = line_of(no_ckpt, 'delivery = "exactly_once"')
    expect_config_errors(work, no_ckpt, [(ln_d, 13, "needs a [checkpoint] section")])

    with PostgresServer(max_prepared_transactions=0) as pg:
        create_tables(pg, "")
        toml = work.write(pg_pipeline(work, pg, "pg-errors", "", "exactly_once", paced=False))
        p = work.run(toml, "--fresh", expect=1)
        assert ("max_prepared_transactions = 0" in p.stderr
            and "max_prepared_transactions to at least" in p.stderr), (
            f"no clear max_prepared_transactions error:\n{p.stderr[-2000:]}")
        toml = work.write(pg_pipeline(work, pg, "pg-errors", "", "at_least_once", paced=False))
        work.run(toml, "--fresh", "-q")
        n = int(pg.sql("SELECT count(*) FROM running")[0][0])
        assert n == len(work.records), (f"at_least_once wrote {n} rows, expected "
            f"{len(work.records)}")
        # A role the server does not know: refused for good, so no retries.
        unknown = work.write(pg_pipeline(work, pg, "pg-errors", "", "at_least_once",
                                         paced=False).replace("user=postgres",
                                                              "user=nosuchrole"),
                             "unknown-role.toml")
        p = work.run(unknown, "--fresh", expect=1)
        assert ('role "nosuchrole" does not exist' in p.stderr
            and "not retried" in p.stderr and "attempt 2" not in p.stderr), (
            f"an unknown role was not refused at once:\n{p.stderr[-2000:]}")
        # A missing table: the server's message, exit 1.
        pg.sql("DROP TABLE windows")
        p = work.run(toml, "--fresh", expect=1)
        assert 'relation "windows" does not exist' in p.stderr, (
            f"no clear missing-table error:\n{p.stderr[-2000:]}")
    print("ok: load-time errors at file:line:col (exit 2); max_prepared_transactions = 0 "
          "and a missing table: exit 1 with the reason")
