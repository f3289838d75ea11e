# SPDX-License-Identifier: Apache-2.0
"""Dead letters exactly once across restores: the real `weir` binary, real
LMDB checkpoints, real SIGKILLs.

An exactly-once job (checkpoints every 100 ms) reads input holding a known
number of bad records, paced by the source's `rate` key so that one run
lasts a few seconds, and dead-letters them (`on_bad_record = "dead_letter"`).
It is SIGKILLed several times at random moments and restarted on the same
checkpoint directory, then runs to its end. The dead-letter file must hold
every bad record exactly once, each with the origin fields of its source
kind, and the last run's summary must give the job's total of bad records.
A run that ends before its kill fails the test (the pacing did not hold).

  test_file_crash   a file source: origin = path:line, file, line, offset (bytes)
  test_kafka_crash  a Kafka source over a 2-partition topic on a real broker
               (tests/kafka/kafka_broker.py): topic, partition, offset, key,
               timestamp (label kafka)

--kills sets the SIGKILLs (default 4). The seed is printed; pass --seed (or WEIR_SEED) to replay a run.
"""
import json
import random
import re
import shutil
import signal
import subprocess
import time

from weirtest import SCALE


RECORDS = 12_000   # lines of input, bad ones included
BAD_EVERY = 12     # line i is bad when i % BAD_EVERY == 5: 1,000 bad records
KILLS = 4
SECONDS = 8.0      # how long one uninterrupted run takes at the source's rate

PIPELINE = """
[job]
name = "dead-letters"
parallelism = 1
status_interval = "0s"
batch_size = 64
on_bad_record = "dead_letter"
dead_letter = {{ path = "{work}/out/bad.jsonl" }}

[checkpoint]
interval = "100ms"
mode = "exactly_once"
dir = "{work}/state"

[[source]]
name = "events"
{source}
rate = {rate}
format = "jsonl"
schema = {{ seq = "int64", key = "string", value = "int64" }}

[[sink]]
name = "rows"
input = "events"
type = "file"
path = "{work}/out/rows"
"""


def make_lines(n):
    """The input lines; the bad ones have a value that is not an int64."""
    lines = []
    for i in range(n):
        value = '"bad-%d"' % i if i % BAD_EVERY == 5 else str(i % 100)
        lines.append('{"seq": %d, "key": "k%d", "value": %s}' % (i, i % 7, value))
    return lines


def read_dead_letters(path):
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f.read().splitlines() if l.strip()]


def bad_summary(stderr):
    """The summary's `bad records` line."""
    m = re.search(r"^\s*bad records\s+(.*)$", stderr, re.M)
    assert m is not None, f"no 'bad records' line in the summary:\n{stderr[-2000:]}"
    return m.group(1)


def crash_loop(weir, kills_wanted, work, toml, rnd):
    """SIGKILLs the job kills_wanted times, then lets it finish; returns the
    last run's stderr."""
    shutil.rmtree(work / "out", ignore_errors=True)
    shutil.rmtree(work / "state", ignore_errors=True)
    kills = 0
    runs = 0
    while True:
        argv = [weir, "run", str(toml)] + (["--fresh"] if runs == 0 else [])
        log_path = work / f"run-{runs}.log"
        runs += 1
        with open(log_path, "w") as log:
            started = time.monotonic()
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
            if kills < kills_wanted:
                # Each run resumes where the last checkpoint left it: kill it
                # within its first second and a half, well before it can end.
                at = rnd.uniform(0.4, 1.4) * SCALE
                while time.monotonic() - started < at and p.poll() is None:
                    time.sleep(0.02)
                assert p.poll() is None, (
                    f"run {runs} ended (exit {p.returncode}) after "
                    f"{time.monotonic() - started:.2f} s, before its kill at {at:.2f} s: "
                    f"the source's rate no longer paces the input\n"
                    f"{log_path.read_text()[-2000:]}")
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                continue
            try:
                p.wait(timeout=120 * SCALE)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise AssertionError(f"the last run did not end within {120 * SCALE:.0f} s")
        err = log_path.read_text()
        assert p.returncode == 0, f"the last run failed (exit {p.returncode}):\n{err[-3000:]}"
        assert "restored from #" in err, (
            f"the last run did not resume from a checkpoint:\n{err[-2000:]}")
        print(f"{kills} SIGKILLs in {runs} runs")
        return err


def check_exactly_once(dead, want, key_of):
    """`dead`: the dead letters read; `want`: key -> the expected letter's
    fields; `key_of(letter)` identifies a letter's record."""
    seen = {}
    for d in dead:
        k = key_of(d)
        seen[k] = seen.get(k, 0) + 1
    twice = sorted(k for k, n in seen.items() if n > 1)
    missing = sorted(set(want) - set(seen))
    extra = sorted(set(seen) - set(want))
    assert not twice and not missing and not extra, (
        f"{len(dead)} dead letters for {len(want)} bad records: {len(twice)} written "
        f"more than once (e.g. {twice[:3]}), {len(missing)} missing (e.g. {missing[:3]}), "
        f"{len(extra)} unexpected (e.g. {extra[:3]})")
    for d in dead:
        w = want[key_of(d)]
        for field, value in w.items():
            assert d.get(field) == value, (
                f"dead letter {d}: {field} is {d.get(field)!r}, expected {value!r}")


def check_summary_total(err, total):
    line = bad_summary(err)
    m = re.match(r"([\d,]+)", line)
    assert m is not None and int(m.group(1).replace(",", "")) == total, (
        f"the last run's summary says bad records '{line}'; the job had {total} "
        f"bad records over all its runs")


# --- file source --------------------------------------------------------------

def test_file_crash(weir, work, seed, kills):
    rnd = random.Random(seed)
    lines = make_lines(RECORDS)
    path = work / "input.jsonl"
    want = {}
    offset = 0
    with open(path, "w") as f:
        for i, l in enumerate(lines):
            if i % BAD_EVERY == 5:
                want[i + 1] = {"origin": f"{path}:{i + 1}", "file": str(path),
                               "line": i + 1, "offset": offset, "raw": l}
            f.write(l + "\n")
            offset += len(l) + 1
    source = f'type = "file"\npath = "{path}"'
    toml = work / "pipeline.toml"
    toml.write_text(PIPELINE.format(work=work, source=source,
                                    rate=int(RECORDS / SECONDS / SCALE)))
    err = crash_loop(weir, kills, work, toml, rnd)
    dead = read_dead_letters(work / "out" / "bad.jsonl")
    check_exactly_once(dead, want, lambda d: d.get("line"))
    check_summary_total(err, len(want))
    print(f"file-crash: ok, {len(want)} bad records dead-lettered exactly once "
          f"with their file, line and offset")


# --- Kafka source -------------------------------------------------------------

def test_kafka_crash(weir, work, seed, kills, kafka_broker):
    rnd = random.Random(seed)
    lines = make_lines(RECORDS)
    broker = kafka_broker
    topic = "dead-letter-input"
    broker.create_topic(topic, partitions=2)
    broker.wait_for_topic(topic, 2)
    before = int(time.time() * 1000)
    want = {}
    for p in range(2):
        mine = lines[p::2]
        broker.produce(topic, ["k%d|%s" % (j % 5, l) for j, l in enumerate(mine)],
                       partition=p, key_delimiter="|")
        for j, l in enumerate(mine):
            i = 2 * j + p
            if i % BAD_EVERY == 5:
                want[(p, j)] = {"origin": f"{topic}/{p}@{j}", "topic": topic,
                                "partition": p, "offset": j, "key": "k%d" % (j % 5),
                                "raw": l}
    after = int(time.time() * 1000) + 1000
    source = (f'type = "kafka"\ntopics = ["{topic}"]\nbootstrap_servers = '
              f'"{broker.bootstrap}"\nbounded = "latest"\ngroup_id = "dead-letters"')
    toml = work / "pipeline.toml"
    toml.write_text(PIPELINE.format(work=work, source=source,
                                    rate=int(RECORDS / SECONDS / SCALE)))
    err = crash_loop(weir, kills, work, toml, rnd)
    dead = read_dead_letters(work / "out" / "bad.jsonl")
    check_exactly_once(dead, want, lambda d: (d.get("partition"), d.get("offset")))
    for d in dead:
        ts = d.get("timestamp")
        assert isinstance(ts, int) and before - 1000 <= ts <= after, (
            f"dead letter {d}: timestamp {ts!r} is not the record's Kafka timestamp "
            f"(produced between {before} and {after})")
        assert "file" not in d and "line" not in d, (
            f"dead letter {d}: a Kafka record has no file or line")
    check_summary_total(err, len(want))
    print(f"kafka-crash: ok, {len(want)} bad records dead-lettered exactly once "
          f"with their topic, partition, offset, key and timestamp")
