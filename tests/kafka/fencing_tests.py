# SPDX-License-Identifier: Apache-2.0
"""The exactly-once Kafka sink's fatal producer errors on a real broker
(tests/kafka/kafka_broker.py), with the real `weir` binary.

  fenced     job 1 (a generator, 6000 rows at 300 rows/s, exactly_once into
             topic 'out', checkpoints every 200 ms, a restart strategy) runs;
             a second weir process with the same job and sink names, hence the
             same transactional.id, starts (its input is empty, so it fences
             and ends). Job 1 exits 1 within a bound, not restarted, with one
             message naming the topic and the transactional id and saying it
             was fenced; read_committed, 'out' then holds no row twice. Job 1
             rerun on its checkpoint directory (at full speed) resumes: 'out'
             holds every row exactly once (the checkpoints the fenced run
             completed, including one whose commit the fencing stopped, are
             neither lost nor published twice).
  too-large  exactly_once into a topic whose max.message.bytes is smaller than
             the rows: exit 1 naming the topic, its partition and the size.

test_fenced and test_too_large share one broker (the kafka_broker fixture).
"""
import json
import subprocess
import time

from weirtest import SCALE, run, wait_until


ROWS = 6000

JOB = """
[job]
name = "fence"
status_interval = "0s"
restart = {{ attempts = 3, delay = "100ms" }}

[checkpoint]
interval = "200ms"
dir = "{state}"

[[source]]
name = "gen"
type = "generator"
count = {count}
rate = {rate}
parallelism = 1
fields = {{ seq = "seq", pad = "rand_string(seq, 1, {pad})" }}

[[sink]]
name = "out"
input = "gen"
type = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
key = "seq"
delivery = "exactly_once"
"""

# The fenced job must fail within this many seconds of the other one fencing it.
BOUND_S = 20


def write(work, name, **kw):
    path = work / name
    path.write_text(JOB.format(**kw))
    return str(path)


def seqs_of(lines):
    return [json.loads(l)["seq"] for l in lines]


def test_fenced(weir, work, kafka_broker, procs):
    b = kafka_broker
    b.create_topic("out", partitions=2)
    common = dict(topic="out", bootstrap=b.bootstrap, pad=8)
    job1 = write(work, "job1.toml", state=work / "state1", count=ROWS, rate=300, **common)
    rerun = write(work, "rerun.toml", state=work / "state1", count=ROWS, rate=100000, **common)
    job2 = write(work, "job2.toml", state=work / "state2", count=0, rate=400, **common)
    p1 = procs.start([weir, "run", job1, "--fresh"], stderr=subprocess.PIPE, text=True)
    # Job 1 commits a few checkpoints' transactions first.
    def newest_checkpoint():
        listed = run([weir, "checkpoints", "list", work / "state1"], expect=None).stdout
        return max([int(line.split()[0]) for line in listed.splitlines()
                    if line.split() and line.split()[0].isdigit()], default=0)
    wait_until(lambda: p1.poll() is not None or newest_checkpoint() >= 3,
               "job 1 to complete checkpoint 3", 60, interval=0.1)
    assert p1.poll() is None, (
        f"job 1 ended before the second job started ({p1.returncode}):\n"
        f"{p1.stderr.read()[-3000:]}")
    fenced_at = time.monotonic()
    run([weir, "run", job2, "--fresh"], timeout=60, what="the second job")
    try:
        _, err = p1.communicate(timeout=(BOUND_S + 10) * SCALE)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"job 1 still runs {BOUND_S + 10} s after it was fenced") from None
    took = time.monotonic() - fenced_at
    assert p1.returncode == 1, f"job 1 exit {p1.returncode}, expected 1:\n{err[-3000:]}"
    assert took < BOUND_S, f"job 1 failed {took:.1f} s after it was fenced (bound {BOUND_S} s)"
    last = err.strip().splitlines()[-1]
    wants = ["topic 'out'", "'weir-fence-out-0'", "fenced", "another producer"]
    missing = [w for w in wants if w not in last]
    assert last.startswith("weir: ") and not missing, (
        f"the message lacks {missing}:\n{err[-3000:]}")
    assert "restarting from the latest checkpoint" not in err, (
        f"a fenced job was restarted (it would fence the other in turn):\n{err[-3000:]}")
    print(f"ok: fenced: exit 1 {took:.1f} s after the second job started: {last[:400]}")
    partial = seqs_of(b.consume("out"))
    assert len(partial) == len(set(partial)), "read_committed, 'out' holds a row twice"
    assert 0 < len(partial) < ROWS, (f"job 1 had committed {len(partial)} of {ROWS} rows when "
        "it was fenced (expected some, not all)")
    # The fenced job resumes from its last completed checkpoint.
    run([weir, "run", rerun], timeout=120, what="job 1's rerun")
    got = seqs_of(b.consume("out"))
    dup = len(got) - len(set(got))
    missing = set(range(ROWS)) - set(got)
    assert dup == 0 and not missing and len(got) == ROWS, (
        f"after the rerun 'out' holds {len(got)} rows, {dup} twice, {len(missing)} missing")
    print(f"ok: fenced: {len(partial)} rows committed before the fencing; the rerun on the "
          f"checkpoint directory completes all {ROWS} exactly once")


def test_too_large(weir, work, kafka_broker):
    b = kafka_broker
    b.create_topic("small", partitions=1, config={"max.message.bytes": "2000"})
    toml = write(work, "large.toml", state=work / "state3", count=50, rate=1000,
                 topic="small", bootstrap=b.bootstrap, pad=5000)
    t0 = time.monotonic()
    r = run([weir, "run", toml, "--fresh"], timeout=120, expect=None)
    took = time.monotonic() - t0
    assert r.returncode == 1, f"exit {r.returncode}, expected 1:\n{r.stderr[-3000:]}"
    assert took < BOUND_S + 10, f"took {took:.1f} s"
    last = r.stderr.strip().splitlines()[-1]
    wants = ["topic 'small' partition 0", "too large"]
    missing = [w for w in wants if w.lower() not in last.lower()]
    assert last.startswith("weir: ") and not missing, (
        f"the message lacks {missing}:\n{r.stderr[-3000:]}")
    assert not b.consume("small"), "read_committed, 'small' holds rows"
    print(f"ok: too-large: exit 1 in {took:.1f} s: {last[:400]}")
