# SPDX-License-Identifier: Apache-2.0
"""End-to-end test of examples/occupancy-sensors on the real sensor files.

Runs the real `weir` binary on the example's pipeline.toml in a sandbox
holding a link to the repository's data/, and checks every hourly window
against averages recomputed here with Python's csv module from
data/occupancy_sensors/*.txt (columns by position: row number, date,
Temperature, Humidity, Light, CO2, HumidityRatio, Occupancy).
"""
import collections
import csv
import datetime
import math
import os
import pathlib

from weirtest import Sandbox, read_jsonl

PIPELINE = "examples/occupancy-sensors/pipeline.toml"
DATA = "data/occupancy_sensors"
OUT = "out/occupancy-sensors"
FILES = ["datatest.txt", "datatest2.txt", "datatraining.txt"]
HOUR_MS = 3_600_000


def expected_windows(repo):
    """{window_start ms: {readings, temperature, humidity, co2, light,
    occupied_share}} per UTC hour of `date`, and the data row count."""
    sums = collections.defaultdict(lambda: collections.Counter())
    rows = 0
    for name in FILES:
        with open(pathlib.Path(repo) / DATA / name, newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            assert len(header) == 7, f"{name}: header has {len(header)} names, expected 7"
            for cells in reader:
                assert len(cells) == 8, f"{name}: a row with {len(cells)} cells"
                rows += 1
                when = datetime.datetime.strptime(cells[1], "%Y-%m-%d %H:%M:%S")
                ms = int(when.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
                s = sums[ms // HOUR_MS * HOUR_MS]
                s["readings"] += 1
                s["temperature"] += float(cells[2])
                s["humidity"] += float(cells[3])
                s["light"] += float(cells[4])
                s["co2"] += float(cells[5])
                s["occupied"] += int(cells[7])
    want = {}
    for start, s in sums.items():
        n = s["readings"]
        want[start] = {"readings": n, "temperature": s["temperature"] / n,
                       "humidity": s["humidity"] / n, "co2": s["co2"] / n,
                       "light": s["light"] / n, "occupied_share": s["occupied"] / n}
    return want, rows


def test_occupancy_sensors(weir, work, repo):
    box = Sandbox(weir, work)
    os.symlink(pathlib.Path(repo).resolve() / "data", box.work / "data")
    proc = box.run("run", pathlib.Path(repo) / PIPELINE)

    want, rows = expected_windows(repo)
    assert rows == 20560, f"the data files hold {rows} rows, expected 20,560"
    got = read_jsonl(box.work / OUT / "hourly.jsonl")
    starts = [r["window_start"] for r in got]
    assert len(starts) == len(set(starts)), "a window was emitted twice"
    assert set(starts) == set(want), (
        f"windows differ: {len(set(want) - set(starts))} missing, "
        f"{len(set(starts) - set(want))} unexpected")
    for r in got:
        w = want[r["window_start"]]
        at = f"window {r['window_start']}"
        assert r["window_end"] == r["window_start"] + HOUR_MS, f"{at}: end {r['window_end']}"
        assert r["readings"] == w["readings"], f"{at}: {r['readings']} readings, expected {w['readings']}"
        for field in ["temperature", "humidity", "co2", "light", "occupied_share"]:
            assert math.isclose(r[field], w[field], rel_tol=1e-9, abs_tol=1e-9), (
                f"{at}: {field} {r[field]}, expected {w[field]}")
    assert sum(r["readings"] for r in got) == rows, "windows do not add up to every row"

    # Every row is on time although the files are not in time order by name.
    assert read_jsonl(box.work / OUT / "late.jsonl") == [], "readings were late"
    assert "late records     0" in proc.stderr, "summary does not report 0 late records"
    # The header lines (7 names, rows have 8 cells) are the only bad records.
    bad = read_jsonl(box.work / OUT / "bad_records.jsonl")
    assert sorted(b["origin"] for b in bad) == [f"{DATA}/{n}:1" for n in FILES], (
        f"bad records: {[b['origin'] for b in bad]}, expected each file's line 1")
    assert all(b["reason"] == "expected 8 fields, got 7" for b in bad), (
        f"reasons: {[b['reason'] for b in bad]}")
