#!/usr/bin/env python3
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

usage: example_scripts_test.py --repo DIR --weir BIN postgres|opensearch
"""
import argparse
import collections
import csv
import datetime
import decimal
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ACCESS_LOG = "data/apache_access_logs/apache_logs_anon.log"
EARTHQUAKES = "data/usgs_earthquakes/all_month_2023-04-04.csv"
# Apache's combined log format; a line that does not match is a bad record.
COMBINED = re.compile(r'^(\S+) (\S+) (\S+) \[([^\]]+)\] "(\S+) (\S+) (\S+)" (\d{3}) (\S+) '
                      r'"([^"]*)" "([^"]*)"$')
# The region the example derives from USGS's `net` (the locating network).
REGIONS = {"ak": "Alaska", "av": "Alaska volcanoes", "nc": "Northern California",
           "ci": "Southern California", "hv": "Hawaii", "uu": "Utah", "nn": "Nevada",
           "pr": "Puerto Rico", "uw": "Pacific Northwest", "tx": "Texas", "ok": "Oklahoma",
           "nm": "New Mexico", "se": "Southeastern US", "us": "World (NEIC)"}
PG_BIN = os.environ.get("WEIR_PG_BIN", "/usr/lib/postgresql/15/bin")
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_script(args, name, *flags, env=None, timeout=60):
    """Runs examples/<name>/run.sh; its output. `timeout` in seconds, stretched
    by WEIR_TEST_TIME_SCALE."""
    script = Path(args.repo) / "examples" / name / "run.sh"
    # From another directory: run.sh finds the repository itself.
    p = subprocess.run([str(script), *flags], cwd=tempfile.gettempdir(),
                       env={**os.environ, "WEIR": args.weir, **(env or {})},
                       capture_output=True, text=True, timeout=timeout * SCALE)
    check(p.returncode == 0, f"{script} exited {p.returncode}:\n{p.stdout[-3000:]}\n"
                             f"{p.stderr[-3000:]}")
    return p


def section(out, heading):
    """The lines after the line starting with `heading`, up to an empty line
    or the next heading ('-- ' or '== ')."""
    lines = out.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    check(len(starts) == 1, f"run.sh printed {len(starts)} lines starting {heading!r}:\n{out}")
    body = []
    for line in lines[starts[0] + 1:]:
        if not line.strip() or line.startswith(("-- ", "== ")):
            break
        body.append(line)
    return body


def psql_rows(out, heading):
    """The rows of the psql table after `heading`: lists of stripped cells."""
    body = section(out, heading)
    check(len(body) >= 2 and set(body[1]) <= set("-+"), f"no psql table after {heading!r}")
    return [[c.strip() for c in line.split("|")] for line in body[2:]
            if not re.fullmatch(r"\(\d+ rows?\)", line.strip())]


def test_postgres(args):
    # Expected, from the raw log.
    per_minute = collections.Counter()          # (minute, status) -> requests
    bytes_sent = collections.defaultdict(int)   # status -> bytes ('-' adds none)
    bad_lines = []
    with open(Path(args.repo) / ACCESS_LOG, encoding="utf-8") as f:
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
    check(total == 9999 and bad_lines == [8899],
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

    work = tempfile.mkdtemp(prefix="weir-example-pg-")
    os.chmod(work, 0o755)
    try:
        # TMPDIR: the server's directory lands in `work`, stopped below even
        # if run.sh was killed.
        p = run_script(args, "status-per-minute-postgres", env={"TMPDIR": work}, timeout=90)
        out = p.stdout
        got = psql_rows(out, "-- requests per status")
        check(got == want_status, f"requests per status: printed {got}, counted {want_status}")
        got = psql_rows(out, "-- the five busiest minutes")
        check(got == want_busiest, f"busiest minutes: printed {got}, counted {want_busiest}")
        got = psql_rows(out, "-- requests and errors")
        check(got == want_days, f"per day: printed {got}, counted {want_days}")
        got = psql_rows(out, "-- rows, requests")
        want = [[str(len(per_minute)), str(total), "0"]]
        check(got == want, f"rows, requests, prepared transactions left: printed {got}, "
                           f"expected {want}")
        dead = Path(args.repo) / "out/status-per-minute-postgres/bad_records.jsonl"
        records = [json.loads(line) for line in dead.read_text().splitlines() if line.strip()]
        check([r.get("line") for r in records] == [8899],
              f"dead letters: {[r.get('origin') for r in records]}, expected line 8899 only")
        left = [d for d in Path(work).glob("weir-pg-*")]
        check(not left, f"run.sh left its server directory behind: {left}")
        print(f"ok: status-per-minute-postgres: {len(want_status)} statuses, {len(want_days)} "
              f"days, {len(per_minute)} rows, {total} requests as counted from the log; no "
              "prepared transaction left; line 8899 dead-lettered")
    finally:
        for data in Path(work).glob("weir-pg-*/data"):
            argv = [f"{PG_BIN}/pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"]
            if os.geteuid() == 0:
                argv = ["runuser", "-u", "postgres", "--"] + argv
            subprocess.run(argv, capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)


def test_opensearch(args):
    with open(Path(args.repo) / EARTHQUAKES, newline="", encoding="utf-8") as f:
        events = list(csv.DictReader(f))
    check(len(events) == 12569, f"the earthquakes file changed: {len(events)} events")
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

    work = tempfile.mkdtemp(prefix="weir-example-os-")
    state = os.path.join(work, "node.json")
    env = {"WEIR_OPENSEARCH_STATE": state}
    try:
        p = run_script(args, "earthquakes-opensearch", "--port", str(free_port()), env=env,
                       timeout=240)
        out = p.stdout
        m = re.search(r"^== index earthquakes: (\d+) documents, index earthquakes-daily: "
                      r"(\d+) documents$", out, re.M)
        check(m is not None, f"no document counts printed:\n{out}")
        check((int(m[1]), int(m[2])) == (len(events), len(daily)),
              f"documents: printed {m[1]} events and {m[2]} region-days, expected "
              f"{len(events)} and {len(daily)}")
        body = section(out, "== events per region")
        got = []
        for line in body[1:]:
            m = re.fullmatch(r"(.+?)\s+(\d+)\s+(\d+)\s+([\d.]+)", line)
            check(m is not None, f"events per region: unexpected line {line!r}")
            got.append((m[1], int(m[2]), int(m[3]), float(m[4])))
        check(got == want_regions, f"events per region: printed {got}, counted {want_regions}")
        got = [(line.split()[0], float(line.split()[1]))
               for line in section(out, "== the five strongest events")[1:]]
        check(got == want_strongest, f"strongest: printed {got}, expected {want_strongest}")
        got = []
        for line in section(out, "== the five busiest region-days")[1:]:
            m = re.fullmatch(r"(\S+)\s+(.+?)\s+(\d+)\s+([\d.]+)", line)
            check(m is not None, f"busiest region-days: unexpected line {line!r}")
            got.append((m[1], m[2], int(m[3]), float(m[4])))
        check(got == want_busiest, f"busiest region-days: printed {got}, counted {want_busiest}")
        check(not os.path.exists(state), "run.sh left the node it started running")
        print(f"ok: earthquakes-opensearch: {len(events)} documents, {len(want_regions)} regions, "
              f"{len(daily)} region-days, the strongest and the busiest as computed from the CSV")
    finally:
        # The node run.sh started, if it could not stop it itself.
        subprocess.run([str(Path(args.repo) / "tests/opensearch/node.sh"), "stop"],
                       env={**os.environ, **env}, capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--weir", required=True)
    ap.add_argument("example", choices=["postgres", "opensearch"])
    args = ap.parse_args()
    args.repo = os.path.abspath(args.repo)
    args.weir = os.path.abspath(args.weir)
    try:
        {"postgres": test_postgres, "opensearch": test_opensearch}[args.example](args)
    except Failure as e:
        print(f"FAIL example {args.example}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
