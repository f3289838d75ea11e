# SPDX-License-Identifier: Apache-2.0
"""The runnable examples with a server, end to end: each example's own run.sh
(which starts the real server the way the tests do, runs the example's
pipeline with the real `weir` binary and prints what the server then holds)
runs as a user would run it, and what it prints is checked against numbers
computed here from the input in data/, independently of weir.

  postgres    examples/status-per-minute-postgres/run.sh: PostgreSQL 15 on a
              free port. From the raw access log (parsed here with a regex:
              9,999 requests, line 8,899 malformed), per status the minutes
              it occurs in, its requests, its busiest minute and its bytes;
              the five busiest minutes with their requests per status; per UTC day
              the requests, the errors (status >= 400) and their percentage;
              the table's row count (one per minute and status), 9,999
              requests, no prepared transaction left; the malformed line in
              the dead-letter file.
  opensearch  examples/earthquakes-opensearch/run.sh --port <free>: an
              OpenSearch node of its own (node.sh with a private state file).
              From the USGS CSV: 12,569 documents; per region (of the
              locating network) the events, the earthquakes and the largest
              magnitude; the five strongest events; the number of region-days
              and the five busiest.
  kafka       examples/kafka-dashboard/run.sh: a Kafka broker of its own
              (tests/kafka/broker.sh with a private state file). From the
              JSONL log: 9,999 records produced; the top ten pages with their
              views, bytes and shares; the topic status-per-minute read
              read_committed: one message per (minute, status) keyed by the
              status, none twice, per status the minutes, requests and
              busiest minute, the five busiest minutes, the total; the rows
              the file sinks committed (views, no late views, status per
              minute, errors); no retention warning (the topic keeps 2015's
              timestamps); the summary's last checkpoint is the newest complete
              one in state/kafka-dashboard.
  redis       examples/click-dashboard-redis/run.sh: a redis-server of its
              own on a free port. From the JSONL log: event time, the
              clicks:<minute> hashes, their fields and clicks, the five
              busiest minutes, the top:<minute> sets and the five most
              clicked pages of the busiest minute; processing time (the clock
              replayed record by record), the pclicks:<minute> hashes, their
              fields and clicks, the last window fired; the keys in Redis.
  fraud       examples/fraud-detection/run.sh: a Kafka broker and an
              OpenSearch node of its own. From the input it generated and the
              frauds it planted (planted.jsonl): the transactions and account
              updates; the alerts in the topic, read_committed, each once,
              keyed by its id, with its kind, account and owner, and how many
              times it was raised (velocity: the 30-minute windows sliding by
              5 that hold the burst, counted here from the transactions;
              pattern: once); the index holding the same alerts under their
              ids; both servers stopped at the end.

Each is the test function test_<name> (run one with `python3 -m pytest
tests/integration/example_scripts_test.py::test_redis --weir build/weir`).
The examples start their servers themselves; the test only runs run.sh (in
its own directory, the weir under test as $WEIR), stops what a failed or
timed-out run.sh left running, and checks that a passing one left nothing.
"""
import collections
import csv
import datetime
import decimal
import json
import os
import re
import shutil
import signal
import socket
import subprocess

import pytest

from weirtest import SCALE, free_port, log_text, read_jsonl
from weirtest.exactly_once import complete_checkpoints
from weirtest.servers import PG_BIN

ACCESS_LOG = "data/apache_access_logs/apache_logs_anon.log"
ACCESS_JSONL = "data/apache_access_logs/apache_logs_anon.jsonl"
EARTHQUAKES = "data/usgs_earthquakes/all_month_2023-04-04.csv"
# Apache's combined log format; a line that does not match is a bad record.
COMBINED = re.compile(r'^(\S+) (\S+) (\S+) \[([^\]]+)\] "(\S+) (\S+) (\S+)" (\d{3}) (\S+) '
                      r'"([^"]*)" "([^"]*)"$')
# The region the example derives from USGS's `net` (the locating network).
REGIONS = {"ak": "Alaska", "av": "Alaska volcanoes", "nc": "Northern California",
           "ci": "Southern California", "hv": "Hawaii", "uu": "Utah", "nn": "Nevada",
           "pr": "Puerto Rico", "uw": "Pacific Northwest", "tx": "Texas", "ok": "Oklahoma",
           "nm": "New Mexico", "se": "Southeastern US", "us": "World (NEIC)"}
# What run.sh prints (stdout) and its diagnostics (stderr), in the test's
# directory: a failed test's report ends with their tails.
STDOUT, STDERR = "run.sh.out.log", "run.sh.log"


@pytest.fixture
def run_sh(weir, repo, work, procs):
    """`run_sh(name, *flags, env=None, timeout=60)`: examples/<name>/run.sh
    run to its end as a user would, from another directory (`work`: run.sh
    finds the repository itself) with $WEIR the binary under test; returns
    (stdout, stderr). The test fails when it exits non-zero or runs longer
    than `timeout` seconds (times SCALE; then it is SIGKILLed with what it
    started in its process group). What it printed stays readable in
    `work`/STDOUT for the test's clean-up, also after a failure."""
    def run_script(name, *flags, env=None, timeout=60):
        with open(work / STDOUT, "w") as out:
            p = procs.start([repo / "examples" / name / "run.sh", *flags], log=STDERR,
                            stdout=out, cwd=work, start_new_session=True,
                            env={**os.environ, "WEIR": weir, **(env or {})})
        try:
            rc = p.wait(timeout=timeout * SCALE)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = f"nothing: killed after {timeout * SCALE:g} s"
        assert rc == 0, f"examples/{name}/run.sh exited {rc} (its output: {STDOUT}, {STDERR})"
        return script_output(work), log_text(p)
    return run_script


def script_output(work):
    """What run.sh has printed so far (its stdout)."""
    path = work / STDOUT
    return path.read_text(errors="replace") if path.exists() else ""


def section(out, heading):
    """The lines after the line starting with `heading`, up to an empty line
    or the next heading ('-- ' or '== ')."""
    lines = out.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert len(starts) == 1, f"run.sh printed {len(starts)} lines starting {heading!r}:\n{out}"
    body = []
    for line in lines[starts[0] + 1:]:
        if not line.strip() or line.startswith(("-- ", "== ")):
            break
        body.append(line)
    return body


def psql_rows(out, heading):
    """The rows of the psql table after `heading`: lists of stripped cells."""
    body = section(out, heading)
    assert len(body) >= 2 and set(body[1]) <= set("-+"), f"no psql table after {heading!r}"
    return [[c.strip() for c in line.split("|")] for line in body[2:]
            if not re.fullmatch(r"\(\d+ rows?\)", line.strip())]


def test_postgres(repo, work, run_sh):
    # Expected, from the raw log.
    per_minute = collections.Counter()          # (minute, status) -> requests
    bytes_sent = collections.defaultdict(int)   # status -> bytes ('-' adds none)
    bad_lines = []
    with open(repo / ACCESS_LOG, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = COMBINED.match(line.rstrip("\n"))
            if not m:
                bad_lines.append(n)
                continue
            ts = datetime.datetime.strptime(m.group(4), "%d/%b/%Y:%H:%M:%S %z")
            minute = ts.astimezone(datetime.timezone.utc).replace(second=0)
            per_minute[(minute, int(m.group(8)))] += 1
            if m.group(9) != "-":
                bytes_sent[int(m.group(8))] += int(m.group(9))
    total = sum(per_minute.values())
    assert total == 9999 and bad_lines == [8899], (
        f"the access log changed: {total} requests, bad lines {bad_lines[:5]}")
    statuses = collections.defaultdict(lambda: [0, 0, 0])  # minutes, requests, peak
    days = collections.defaultdict(lambda: [0, 0])          # requests, errors
    minutes = collections.defaultdict(dict)                  # minute -> {status: requests}
    for (minute, status), n in per_minute.items():
        s = statuses[status]
        s[0], s[1], s[2] = s[0] + 1, s[1] + n, max(s[2], n)
        d = days[minute.strftime("%Y-%m-%d")]
        d[0] += n
        d[1] += n if status >= 400 else 0
        minutes[minute][status] = n
    # A status whose responses never gave a size has a null (empty) sum.
    want_status = [[str(st), str(v[0]), str(v[1]), str(v[2]),
                    str(bytes_sent[st]) if st in bytes_sent else ""]
                   for st, v in sorted(statuses.items(), key=lambda kv: (-kv[1][1], kv[0]))]
    busiest = sorted(minutes.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:5]
    want_busiest = [[minute.strftime("%Y-%m-%d %H:%M"), str(sum(by.values())),
                     " ".join(f"{st}:{n}" for st, n in sorted(by.items()))]
                    for minute, by in busiest]
    want_days = [[day, str(v[0]), str(v[1]),
                  str((decimal.Decimal(100 * v[1]) / v[0]).quantize(decimal.Decimal("0.01"),
                                                                    decimal.ROUND_HALF_UP))]
                 for day, v in sorted(days.items())]

    # The server's directory is the one run.sh prints (under /tmp: the server
    # runs as the postgres user, who cannot enter the test's directory).
    where = re.compile(r"^== PostgreSQL 15 on 127\.0\.0\.1:\d+ \((\S+)\)$", re.M)
    try:
        out, _ = run_sh("status-per-minute-postgres", timeout=90)
        got = psql_rows(out, "-- requests per status")
        assert got == want_status, f"requests per status: printed {got}, counted {want_status}"
        got = psql_rows(out, "-- the five busiest minutes")
        assert got == want_busiest, f"busiest minutes: printed {got}, counted {want_busiest}"
        got = psql_rows(out, "-- requests and errors")
        assert got == want_days, f"per day: printed {got}, counted {want_days}"
        got = psql_rows(out, "-- rows, requests")
        want = [[str(len(per_minute)), str(total), "0"]]
        assert got == want, (f"rows, requests, prepared transactions left: printed {got}, "
                             f"expected {want}")
        dead = repo / "out/status-per-minute-postgres/bad_records.jsonl"
        records = [json.loads(line) for line in dead.read_text().splitlines() if line.strip()]
        assert [r.get("line") for r in records] == [8899], (
            f"dead letters: {[r.get('origin') for r in records]}, expected line 8899 only")
        m = where.search(out)
        assert m is not None, f"run.sh printed no server directory:\n{out}"
        assert not os.path.exists(m[1]), f"run.sh left its server directory behind: {m[1]}"
        print(f"ok: status-per-minute-postgres: {len(want_status)} statuses, {len(want_days)} "
              f"days, {len(per_minute)} rows, {total} requests as counted from the log; no "
              "prepared transaction left; line 8899 dead-lettered")
    finally:
        # The server run.sh started, if it could not stop it itself.
        m = where.search(script_output(work))
        if m and os.path.isdir(m[1]):
            argv = [f"{PG_BIN}/pg_ctl", "-D", f"{m[1]}/data", "-m", "immediate", "-w", "stop"]
            if os.geteuid() == 0:
                argv = ["runuser", "-u", "postgres", "--"] + argv
            subprocess.run(argv, capture_output=True, timeout=60)
            shutil.rmtree(m[1], ignore_errors=True)


def test_opensearch(repo, work, run_sh):
    with open(repo / EARTHQUAKES, newline="", encoding="utf-8") as f:
        events = list(csv.DictReader(f))
    assert len(events) == 12569, f"the earthquakes file changed: {len(events)} events"
    regions = collections.defaultdict(lambda: [0, 0, None])  # events, earthquakes, max mag
    daily = collections.defaultdict(lambda: [0, None])       # (day, region) -> events, max mag
    for e in events:
        region = REGIONS.get(e["net"], "network " + e["net"])
        mag = float(e["mag"])
        r = regions[region]
        r[0] += 1
        r[1] += e["type"] == "earthquake"
        r[2] = mag if r[2] is None else max(r[2], mag)
        d = daily[(e["time"][:10], region)]
        d[0] += 1
        d[1] = mag if d[1] is None else max(d[1], mag)
    want_regions = [(k, v[0], v[1], v[2])
                    for k, v in sorted(regions.items(), key=lambda kv: (-kv[1][0], kv[0]))]
    strongest = sorted(events, key=lambda e: (float(e["mag"]), e["time"]), reverse=True)[:5]
    want_strongest = [(e["id"], float(e["mag"])) for e in strongest]
    busiest = sorted(daily.items(), key=lambda kv: (-kv[1][0], kv[0][0], kv[0][1]))[:5]
    want_busiest = [(day, region, v[0], v[1]) for (day, region), v in busiest]

    # A node of its own: node.sh keeps its pid and URL in this state file.
    state = work / "node.json"
    env = {"WEIR_OPENSEARCH_STATE": str(state)}
    try:
        out, _ = run_sh("earthquakes-opensearch", "--port", str(free_port()), env=env,
                        timeout=240)
        m = re.search(r"^== index earthquakes: (\d+) documents, index earthquakes-daily: "
                      r"(\d+) documents$", out, re.M)
        assert m is not None, f"no document counts printed:\n{out}"
        assert (int(m[1]), int(m[2])) == (len(events), len(daily)), (
            f"documents: printed {m[1]} events and {m[2]} region-days, expected "
            f"{len(events)} and {len(daily)}")
        body = section(out, "== events per region")
        got = []
        for line in body[1:]:
            m = re.fullmatch(r"(.+?)\s+(\d+)\s+(\d+)\s+([\d.]+)", line)
            assert m is not None, f"events per region: unexpected line {line!r}"
            got.append((m[1], int(m[2]), int(m[3]), float(m[4])))
        assert got == want_regions, f"events per region: printed {got}, counted {want_regions}"
        got = [(line.split()[0], float(line.split()[1]))
               for line in section(out, "== the five strongest events")[1:]]
        assert got == want_strongest, f"strongest: printed {got}, expected {want_strongest}"
        got = []
        for line in section(out, "== the five busiest region-days")[1:]:
            m = re.fullmatch(r"(\S+)\s+(.+?)\s+(\d+)\s+([\d.]+)", line)
            assert m is not None, f"busiest region-days: unexpected line {line!r}"
            got.append((m[1], m[2], int(m[3]), float(m[4])))
        assert got == want_busiest, f"busiest region-days: printed {got}, counted {want_busiest}"
        assert not state.exists(), "run.sh left the node it started running"
        print(f"ok: earthquakes-opensearch: {len(events)} documents, {len(want_regions)} regions, "
              f"{len(daily)} region-days, the strongest and the busiest as computed from the CSV")
    finally:
        # The node run.sh started, if it could not stop it itself.
        subprocess.run([repo / "tests/opensearch/node.sh", "stop"],
                       env={**os.environ, **env}, capture_output=True, timeout=60)


def utc_minute(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M")


def read_jsonl_log(repo):
    """The JSON Lines access log's records."""
    clicks = read_jsonl(repo / ACCESS_JSONL)
    assert len(clicks) == 9999, f"the JSONL access log changed: {len(clicks)} records"
    return clicks


def columns(line, pattern, what):
    m = re.fullmatch(pattern, line.strip())
    assert m is not None, f"{what}: unexpected line {line!r}"
    return m.groups()


def test_kafka(weir, repo, work, run_sh):
    records = read_jsonl_log(repo)
    per_window = collections.Counter((r["ts"] // 60_000 * 60_000, r["status"]) for r in records)
    statuses = collections.defaultdict(lambda: [0, 0, 0])  # minutes, requests, peak
    minutes = collections.defaultdict(dict)
    for (start, status), n in per_window.items():
        st = statuses[status]
        st[0], st[1], st[2] = st[0] + 1, st[1] + n, max(st[2], n)
        minutes[start][status] = n
    want_status = [(st, *v) for st, v in sorted(statuses.items(),
                                               key=lambda kv: (-kv[1][1], kv[0]))]
    want_busiest = [(utc_minute(start), sum(by.values()),
                     " ".join(f"{st}:{n}" for st, n in sorted(by.items())))
                    for start, by in sorted(minutes.items(),
                                            key=lambda kv: (-sum(kv[1].values()), kv[0]))[:5]]
    views = collections.Counter(r["path"] for r in records)
    path_bytes = {}  # a path whose responses never gave a size sums to null
    for r in records:
        if r["bytes"] is not None:
            path_bytes[r["path"]] = path_bytes.get(r["path"], 0) + r["bytes"]
    view_windows = {(r["ts"] // 60_000, r["path"]) for r in records}
    errors = sum(r["status"] >= 400 for r in records)

    try:
        # TMPDIR: the broker's directory and state file land in `work`, where
        # the finally below finds them if run.sh could not stop the broker.
        out, err = run_sh("kafka-dashboard", env={"TMPDIR": str(work)}, timeout=180)
        parts = [columns(l, r"partition (\d+)\s+(\d+)", "records per partition")
                 for l in section(out, "== topic access-log")[:-1]]
        total = columns(section(out, "== topic access-log")[-1], r"total\s+(\d+)", "produced")
        assert (int(total[0]) == len(records) and sum(int(n) for _, n in parts) == len(records)
                and all(0 <= int(pt) < 4 for pt, _ in parts)), (
            f"produced: printed {parts} and total {total[0]}, expected {len(records)} "
            "records over partitions 0-3")

        # The job's summary sink: the ten pages with the most views.
        body = section(out, "Top pages")
        assert len(body) == 13 and body[12] == f"({len(views) - 10} more rows)", (
            f"top pages: expected a header, 10 rows and '({len(views) - 10} more rows)', "
            f"printed {body}")
        ranked = sorted(views.values(), reverse=True)
        printed = []
        for line in body[2:12]:
            path, n, b, share = columns(line, r"(\S+)\s+(\d+)\s+(\d+|null)\s+([\d.]+)%",
                                        "top pages")
            want_bytes = str(path_bytes[path]) if path in path_bytes else "null"
            assert (int(n) == views[path] and b == want_bytes
                    and abs(float(share) - 100 * views[path] / len(records)) <= 0.05 + 1e-9), (
                f"top pages: {path}: printed {n} views, {b} bytes, {share}%; counted "
                f"{views[path]} views, {want_bytes} bytes")
            printed.append(int(n))
        assert printed == ranked[:10] and len({l.split()[0] for l in body[2:12]}) == 10, (
            f"top pages: printed views {printed}, the ten largest counted {ranked[:10]}")

        # The output topic, read committed.
        m = re.search(r"^messages (\d+), keyed by their status (\d+), \(minute, status\) more "
                      r"than once (\d+)$", out, re.M)
        assert m is not None, f"no message count printed for status-per-minute:\n{out}"
        assert (int(m[1]), int(m[2]), int(m[3])) == (len(per_window), len(per_window), 0), (
            f"status-per-minute: printed {m[1]} messages, {m[2]} keyed by status, {m[3]} "
            f"windows twice; expected {len(per_window)}, {len(per_window)}, 0")
        got = [tuple(int(c) for c in columns(l, r"(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", "per status"))
               for l in section(out, "-- requests per status")[1:]]
        assert got == want_status, f"per status: printed {got}, counted {want_status}"
        got = [columns(l, r"(\S+ \S+)\s+(\d+)\s+(.+)", "busiest minutes")
               for l in section(out, "-- the five busiest minutes")[1:]]
        got = [(a, int(b), c) for a, b, c in got]
        assert got == want_busiest, f"busiest minutes: printed {got}, counted {want_busiest}"
        want = f"-- total: {len(records)} requests in {len(minutes)} minutes"
        assert want in out.splitlines(), f"no line {want!r}"

        # The file sinks' committed parts.
        got = dict(columns(l, r"(\w+)\s+(\d+) rows", "files") for l in
                   section(out, "== files committed")[:4])
        want = {"views": len(view_windows), "views_late": 0, "status_per_minute": len(per_window),
                "errors": errors}
        assert {k: int(v) for k, v in got.items()} == want, f"files: printed {got}, counted {want}"
        assert f"views in out/kafka-dashboard/views: {len(records)}" in out.splitlines(), (
            f"the views in out/kafka-dashboard/views do not sum to {len(records)}")
        assert "retention" not in err, (f"weir warned about the output topic's retention:\n"
                                        f"{err[-2000:]}")
        # The summary's checkpoints: at least the final one completed, and
        # its last is the newest complete checkpoint of the directory (none
        # completed after the summary counted).
        m = re.search(r"^  checkpoints +(\d+) completed(?:, \d+ aborted)?(?: \(\d+ failed\))?"
                      r", last #(\d+)", err, re.M)
        assert m is not None and int(m[1]) >= 1, (
            f"no completed checkpoint in the summary:\n{err[-2000:]}")
        complete = complete_checkpoints(weir, repo / "state/kafka-dashboard")
        assert complete and max(complete) == int(m[2]), (
            f"summary: '{m[0].strip()}', but state/kafka-dashboard holds complete "
            f"checkpoints {complete}")
        left = list(work.glob("weir-kafka-*"))
        assert not left, f"run.sh left its broker behind: {left}"
        print(f"ok: kafka-dashboard: {len(records)} records produced; {len(per_window)} messages "
              f"read committed, each once, {len(want_status)} statuses, the busiest minutes, "
              f"the top pages and {len(view_windows)} view windows as counted from the log")
    finally:
        for state in work.glob("weir-kafka-dashboard-*.json"):
            subprocess.run([repo / "tests/kafka/broker.sh", "stop"],
                           env={**os.environ, "WEIR_KAFKA_STATE": str(state)},
                           capture_output=True, timeout=60)


def test_redis(repo, work, run_sh):
    clicks = read_jsonl_log(repo)
    minutes = collections.defaultdict(collections.Counter)  # minute start -> page -> clicks
    for c in clicks:
        minutes[c["ts"] // 60_000 * 60_000][c["path"]] += 1
    busiest = sorted(minutes.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:5]
    want_busiest = [(utc_minute(start), f"clicks:{start}", sum(pages.values()), len(pages))
                    for start, pages in busiest]
    # Processing time, the clock replayed record by record: a click's window
    # is the minute of the largest ts read so far; the last one never fires.
    clock, ptime = 0, collections.defaultdict(collections.Counter)
    for c in clicks:
        clock = max(clock, c["ts"])
        ptime[clock // 60_000 * 60_000][c["path"]] += 1
    del ptime[clock // 60_000 * 60_000]

    try:
        # TMPDIR: the server's directory lands in `work`, where the finally
        # below finds it if run.sh could not stop the server.
        out, _ = run_sh("click-dashboard-redis", env={"TMPDIR": str(work)}, timeout=60)
        want = (f"hashes {len(minutes)}, fields {sum(len(v) for v in minutes.values())}, "
                f"clicks {len(clicks)}")
        got = section(out, "== event time")[0]
        assert got == want, f"event time: printed {got!r}, counted {want!r}"
        got = [columns(l, r"(\S+ \S+)\s+(\S+)\s+(\d+)\s+(\d+)", "busiest minutes")
               for l in section(out, "-- the five busiest minutes")]
        got = [(a, b, int(c), int(d)) for a, b, c, d in got]
        assert got == want_busiest, f"busiest minutes: printed {got}, counted {want_busiest}"
        assert f"-- sorted sets top:<minute start>: {len(minutes)}" in out.splitlines(), (
            f"not {len(minutes)} top:<minute> sorted sets")
        start, pages = busiest[0]
        heading = f"-- ZREVRANGE top:{start} 0 4 WITHSCORES ({utc_minute(start)}, the busiest"
        got = [columns(l, r"(\d+)\s+(\S+)", "ZREVRANGE") for l in section(out, heading)]
        ranked = sorted(pages.values(), reverse=True)
        assert (len(got) == 5 and len({page for _, page in got}) == 5
                and all(int(n) == pages[page] for n, page in got)
                and [int(n) for n, _ in got] == ranked[:5]), (
            f"top pages of {utc_minute(start)}: printed {got}, counted the five largest "
            f"{ranked[:5]} ({ {page: pages[page] for _, page in got} })")
        want = (f"hashes {len(ptime)}, fields {sum(len(v) for v in ptime.values())}, "
                f"clicks {sum(sum(v.values()) for v in ptime.values())}")
        got = section(out, "== processing time")[0]
        assert got == want, f"processing time: printed {got!r}, counted {want!r}"
        last = max(ptime)
        want = f"-- the last window fired: pclicks:{last} ({utc_minute(last)})"
        assert want in out.splitlines(), f"no line {want!r}:\n{out}"
        want = f"== keys in Redis: {2 * len(minutes) + len(ptime)}"
        assert want in out.splitlines(), f"no line {want!r}:\n{out}"
        left = list(work.glob("weir-redis-*"))
        assert not left, f"run.sh left its server directory behind: {left}"
        print(f"ok: click-dashboard-redis: {len(minutes)} minutes, {len(clicks)} clicks in event "
              f"time; {len(ptime)} processing-time windows; the busiest minutes and pages as "
              "counted from the log")
    finally:
        # The server run.sh started, if it could not stop it itself.
        for pidfile in work.glob("weir-redis-*/redis.pid"):
            try:
                os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def test_fraud(repo, work, run_sh):
    # run.sh's servers keep their state under the directory it prints first
    # (not under `work`: as root the OpenSearch node runs as nobody, who
    # cannot enter it): read even from a run.sh that failed or timed out, to
    # stop them below.
    where = re.compile(r"^== the servers' state files: (\S+)$", re.M)
    try:
        out, err = run_sh("fraud-detection", timeout=300)
        assert "retention" not in err, f"weir warned about the topic's retention:\n{err[-2000:]}"
        inp = repo / "out/fraud-detection/input"
        txns = [json.loads(l) for l in (inp / "transactions.jsonl").read_text().splitlines()]
        accounts = (inp / "accounts.jsonl").read_text().splitlines()
        planted = {a["alert_id"]: a for a in
                   map(json.loads, (inp / "planted.jsonl").read_text().splitlines())}
        kinds = collections.Counter(a["kind"] for a in planted.values())
        assert len(planted) == 16 and kinds == {"velocity": 8, "pattern": 8}, (
            f"the generator planted {dict(kinds)}, expected 8 of each kind")
        want = (f"{len(txns)} transactions, {len(accounts)} account updates, {len(planted)} "
                f"planted frauds ({kinds['velocity']} velocity, {kinds['pattern']} pattern)")
        assert any(l.startswith(want) for l in out.splitlines()), (
            f"no line {want!r} from generate.py:\n{out[:2000]}")
        # Velocity: per card, the 30-minute windows sliding by 5 (aligned to
        # the epoch) that hold 3 or more transactions over $1,000; each raises
        # the alert named by the card and its first large transaction.
        large = collections.defaultdict(list)
        for t in txns:
            if t["amount"] > 1000:
                large[t["card"]].append(t["ts"])
        raised = collections.Counter()
        size, slide = 30 * 60_000, 5 * 60_000
        for card, times in large.items():
            starts = {ts // slide * slide - k * slide for ts in times for k in range(6)}
            for w in starts:
                inside = [ts for ts in times if w <= ts < w + size]
                if len(inside) >= 3:
                    raised[f"{card}:velocity:{min(inside)}"] += 1
        want_rows = sorted(((a["kind"], i, a["account_id"], a["owner"],
                             raised[i] if a["kind"] == "velocity" else 1)
                            for i, a in planted.items()))
        want = (f"messages {len(planted)}, keyed by their alert id {len(planted)}, alert ids "
                f"more than once 0; velocity {kinds['velocity']}, pattern {kinds['pattern']}")
        assert want in out.splitlines(), (
            f"topic fraud-alerts: not {len(planted)} alerts each once, keyed by its id:\n{out}")
        body = section(out, "messages ")
        got = sorted((k, i, acc, owner, int(n)) for i, k, acc, owner, n in
                     (columns(l, r"(\S+)\s+(velocity|pattern)\s+(A\d+)\s+(.+?)\s+(\d+)",
                              "alerts") for l in body[1:]))
        assert got == want_rows, f"alerts: printed {got}, planted and counted {want_rows}"
        want = (f"== index fraud-alerts: {len(planted)} documents, under their alert id "
                f"{len(planted)}, the topic's alerts: yes")
        assert want in out.splitlines(), f"no line {want!r}:\n{out}"
        want = (f"== planted frauds (out/fraud-detection/input/planted.jsonl): {len(planted)}; "
                f"alerted with their account and owner {len(planted)}, not alerted 0; alerts "
                "for nothing planted 0")
        assert want in out.splitlines(), f"no line {want!r}:\n{out}"
        m = re.search(r"^== Kafka at 127\.0\.0\.1:(\d+), OpenSearch at http://127\.0\.0\.1:(\d+)$",
                      out, re.M)
        assert m is not None, f"no server addresses printed:\n{out}"
        for port in (int(m[1]), int(m[2])):
            with socket.socket() as s:
                assert s.connect_ex(("127.0.0.1", port)) != 0, (
                    f"run.sh left a server listening on port {port}")
        m = where.search(out)
        assert m is not None, f"run.sh printed no state directory:\n{out}"
        assert not os.path.exists(m[1]), f"run.sh left its servers' state files behind: {m[1]}"
        print(f"ok: fraud-detection: {len(planted)} planted frauds alerted once each in the topic "
              f"and the index, raised {sorted(n for *_, n in want_rows)} times as counted from "
              f"the {len(txns)} transactions; both servers stopped")
    finally:
        # The servers run.sh started, if it could not stop them itself.
        m = where.search(script_output(work))
        if m and os.path.isdir(m[1]):
            state = m[1]
            subprocess.run([repo / "tests/kafka/broker.sh", "stop"], capture_output=True,
                           env={**os.environ, "WEIR_KAFKA_STATE": f"{state}/kafka.json"},
                           timeout=60)
            subprocess.run([repo / "tests/opensearch/node.sh", "stop"], capture_output=True,
                           env={**os.environ, "WEIR_OPENSEARCH_STATE": f"{state}/opensearch.json"},
                           timeout=60)
            shutil.rmtree(state, ignore_errors=True)

