# SPDX-License-Identifier: Apache-2.0
"""A file source over many files: a directory or a glob read in name
order, each file as a partition at parallelism 2, a directory watched for new
files (`monitor_interval`), the load-time error for a path matching nothing,
idleness on the replay clock, and one file read as line-boundary splits
(the same output at parallelism 1 and 2 on the repository's data/, exact
dead-letter lines, the csv rules), all through the real `weir` binary.

Each is the test function test_<name> with - as _ (test_directory, ...).
"""
import glob
import json
import os
import re
import signal
import subprocess
import time

from weirtest import log_text, read_lines, wait_until


def records(key, start, n, step=10):
    return "".join(json.dumps({"key": key, "ts": start + i * step, "n": i}) + "\n"
                   for i in range(n))


def source_toml(path, extra="", job="", sink_path="out.jsonl", windows=False):
    text = f"""
[job]
name = "files"
status_interval = "0s"
{job}

[[source]]
name = "in"
type = "file"
path = "{path}"
format = "jsonl"
schema = {{ key = "string", ts = "timestamp", n = "int64" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "100ms" }}
{extra}
"""
    if windows:
        text += """
[[operator]]
name = "counts"
type = "window"
input = "in"
key_by = ["key"]
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)", total = "sum(n)" }
"""
    text += f"""
[[sink]]
name = "out"
input = "{'counts' if windows else 'in'}"
type = "file"
path = "{sink_path}"
"""
    return text


def test_directory(weir, sandbox):
    """A directory's files in name order equal the run over their concatenation."""
    box = sandbox
    parts = {"b.jsonl": records("b", 5000, 300), "a.jsonl": records("a", 0, 400),
             "c.jsonl": records("c", 9000, 200)}
    for name, text in parts.items():
        box.write(os.path.join("logs", name), text)
    box.write("logs/.hidden.jsonl", records("hidden", 0, 5))
    box.write("logs/_writing.jsonl", records("tmp", 0, 5))
    os.makedirs(box.path("logs", "sub"))
    box.write("logs/sub/d.jsonl", records("sub", 0, 5))
    box.write("all.jsonl", "".join(parts[n] for n in sorted(parts)))
    box.run_toml(source_toml(box.path("all.jsonl"), sink_path="ref.jsonl"))
    box.run_toml(source_toml(box.path("logs"), sink_path="dir.jsonl"))
    ref, got = read_lines(box.path("ref.jsonl")), read_lines(box.path("dir.jsonl"))
    assert len(ref) == 900, f"the reference run wrote {len(ref)} rows"
    assert got == ref, (f"the directory run differs from the concatenation: {len(got)} rows "
        f"vs {len(ref)}; first: {got[:2]}")
    # Windows too (the same watermarks as one stream).
    box.run_toml(source_toml(box.path("all.jsonl"), sink_path="refw.jsonl", windows=True))
    box.run_toml(source_toml(box.path("logs"), sink_path="dirw.jsonl", windows=True))
    assert read_lines(box.path("dirw.jsonl")) == read_lines(box.path("refw.jsonl")), (
        "windows over the directory differ from those over the concatenation")
    print("ok: a directory's 3 files read in name order equal their concatenation")


def test_glob(weir, sandbox):
    box = sandbox
    box.write("logs/app-2.log", records("x", 2000, 50))
    box.write("logs/app-1.log", records("y", 0, 60))
    box.write("logs/app-10.log", records("z", 1000, 40))
    box.write("logs/other.log", records("o", 0, 7))
    box.write("logs/app-1.log.gz", "not json\n")
    box.write("want.jsonl", "".join(open(box.path("logs", n)).read()
                                    for n in ("app-1.log", "app-10.log", "app-2.log")))
    box.run_toml(source_toml(box.path("want.jsonl"), sink_path="ref.jsonl"))
    box.run_toml(source_toml(box.path("logs", "app-*.log"), sink_path="glob.jsonl"))
    got, ref = read_lines(box.path("glob.jsonl")), read_lines(box.path("ref.jsonl"))
    assert len(ref) == 150 and got == ref, f"glob run: {len(got)} rows vs {len(ref)}"
    box.run_toml(source_toml(box.path("logs", "app-[12].log"), sink_path="set.jsonl"))
    assert len(read_lines(box.path("set.jsonl"))) == 110, "app-[12].log read the wrong files"
    box.run_toml(source_toml(box.path("logs", "app-?.log"), sink_path="q.jsonl"))
    assert len(read_lines(box.path("q.jsonl"))) == 110, "app-?.log read the wrong files"
    print("ok: globs (*, ?, [..]) read their matches in name order")


def test_partitioned(weir, sandbox):
    """Each file a partition with its own watermark, at parallelism 2: files
    covering the same hours lose nothing (read as one stream, the later files'
    records would be late)."""
    box = sandbox
    merged = []
    for i in range(6):
        text = records(f"k{i}", i * 7, 2000)  # every file covers 0..20 s
        box.write(f"logs/server-{i}.jsonl", text)
        merged += [json.loads(l) for l in text.splitlines()]
    merged.sort(key=lambda r: r["ts"])
    box.write("merged.jsonl", "".join(json.dumps(r) + "\n" for r in merged))
    extra = 'files = "partitioned"\nparallelism = 2'
    box.run_toml(source_toml(box.path("merged.jsonl"), sink_path="ref.jsonl", windows=True,
                        job="batch_size = 64"))
    box.run_toml(source_toml(box.path("logs"), extra, sink_path="part.jsonl", windows=True,
                        job="batch_size = 64"))
    ref = sorted(read_lines(box.path("ref.jsonl")))
    got = sorted(read_lines(box.path("part.jsonl")))
    windows = len({(r["key"], r["ts"] // 1000) for r in merged})
    assert len(ref) == windows, f"the reference wrote {len(ref)} windows, not {windows}"
    assert got == ref, (f"partitioned: {len(got)} windows vs {len(ref)}; missing "
        f"{sorted(set(ref) - set(got))[:3]}")
    total = sum(json.loads(l)["n"] for l in got)
    assert total == 12000, f"partitioned windows count {total} records, not 12000"
    # As one stream the same directory drops late records: the per-file
    # watermarks above are what saved them.
    p = box.run_toml(source_toml(box.path("logs"), sink_path="seq.jsonl", windows=True,
                            job="batch_size = 64"))
    seq = sum(json.loads(l)["n"] for l in read_lines(box.path("seq.jsonl")))
    assert seq < 12000, f"read as one stream nothing was late ({seq})"
    print(f"ok: 6 files as partitions at parallelism 2: every window equals the merged "
          f"run ({len(got)} windows); as one stream {12000 - seq} records were late")


def test_empty_match(weir, sandbox):
    box = sandbox
    os.makedirs(box.path("empty"))
    toml = source_toml(box.path("empty"))
    p = box.run_toml(toml, expect=2)
    assert "matches no file" in p.stderr and "pipeline.toml:" in p.stderr, (
        f"no load-time error for an empty directory:\n{p.stderr}")
    line = next(l for l in p.stderr.splitlines() if "matches no file" in l)
    assert re.match(re.escape(box.path("pipeline.toml")) + r":10:8: error", line), (
        f"position: {line}")
    p = box.run_toml(source_toml(box.path("empty", "*.log")), expect=2)
    assert "matches no file" in p.stderr, f"no load-time error for a glob:\n{p.stderr}"
    p = box.run_toml(source_toml(box.path("missing")), expect=2)
    assert "cannot read source file" in p.stderr, p.stderr
    p = subprocess.run([weir, "validate", box.write("m.toml", source_toml(
        box.path("empty"), 'monitor_interval = "1s"'))], capture_output=True, text=True)
    assert p.returncode == 0, f"monitor_interval on an empty directory refused:\n{p.stderr}"
    box.write("one.jsonl", records("a", 0, 1))
    p = box.run_toml(source_toml(box.path("one.jsonl"), 'monitor_interval = "1s"'), expect=2)
    assert "applies to a directory or glob path" in p.stderr, p.stderr
    print("ok: an empty match is a load-time error (file:line:col, exit 2) unless monitored")


def test_monitor(weir, sandbox, procs):
    """Files added while weir runs are read; the job runs until stopped."""
    box = sandbox
    os.makedirs(box.path("logs"))
    box.write("logs/000.jsonl", records("a", 0, 100))
    toml = box.write("pipeline.toml", source_toml(
        box.path("logs"), 'monitor_interval = "100ms"', sink_path=box.path("out"),
        job='') + f"""
[checkpoint]
interval = "100ms"
dir = "{box.path('state')}"
""")
    proc = procs.start([weir, "run", toml, "-q"], log="weir.log")

    def committed():
        rows = []
        for part in sorted(glob.glob(box.path("out", "part-*"))):
            rows += read_lines(part)
        return rows

    def wait_for(n, what):
        def enough():
            assert proc.poll() is None, (
                f"weir ended by itself (exit {proc.returncode}): {log_text(proc)[-2000:]}")
            rows = committed()
            return rows if len(rows) >= n else None
        return wait_until(enough, f"{what}: {n} rows committed", 60)

    wait_for(100, "the first file")
    # New files arrive as writers should deliver them: written under a
    # hidden name, then renamed into place.
    for i, name in enumerate(["002.jsonl", "001.jsonl"]):
        box.write("logs/.incoming", records("bc"[i], 1000 * (i + 1), 50))
        os.rename(box.path("logs", ".incoming"), box.path("logs", name))
    rows = wait_for(200, "two files added while running")
    time.sleep(0.5)  # the next file comes some monitor intervals later
    box.write("logs/.incoming", records("d", 5000, 25))
    os.rename(box.path("logs", ".incoming"), box.path("logs", "003.jsonl"))
    rows = wait_for(225, "a file added later")
    time.sleep(0.3)  # an observation window: nothing more may come
    rows = committed()
    keys = [json.loads(r)["key"] for r in rows]
    assert len(rows) == 225, f"{len(rows)} rows committed, expected 225"
    # 001 before 002 when both were found by one look, else as found.
    assert (keys[:100] == ["a"] * 100 and keys[200:] == ["d"] * 25
        and keys[100:200] in (["c"] * 50 + ["b"] * 50, ["b"] * 50 + ["c"] * 50)), (
        f"unexpected order of keys: {keys[95:105]} ... {keys[195:205]}")
    assert proc.poll() is None, "weir ended although it monitors the directory"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    print("ok: files added to a monitored directory are read while the job runs")


def test_idle_replay(weir, sandbox):
    """Idleness on the replay clock: partition b is silent longer than
    idle_timeout by the replay clock when its next record arrives; the
    watermark has then passed a's events, so b's old record is late (dropped),
    as in Flink, whose periodic emitter marks b idle first."""
    box = sandbox
    def run(timeout, name):
        lines = [
            {"key": "a", "p": "a", "ts": 1000, "pt": 0},
            {"key": "b", "p": "b", "ts": 1500, "pt": 0},
            {"key": "a", "p": "a", "ts": 5000, "pt": 1000},
            {"key": "a", "p": "a", "ts": 9000, "pt": 2000},
            {"key": "b", "p": "b", "ts": 2500, "pt": 5000},  # b back after 5 s
            {"key": "a", "p": "a", "ts": 12000, "pt": 6000},
        ]
        box.write("replay.jsonl", "".join(json.dumps(l) + "\n" for l in lines))
        toml = f"""
[job]
name = "idle"
status_interval = "0s"
batch_size = 1

[[source]]
name = "in"
type = "file"
path = "{box.path('replay.jsonl')}"
format = "jsonl"
schema = {{ key = "string", p = "string", ts = "timestamp", pt = "int64" }}
event_time = {{ field = "ts" }}
partition_by = "p"
processing_time = {{ field = "pt" }}
watermark = {{ max_out_of_orderness = "0s", idle_timeout = "{timeout}" }}

[[operator]]
name = "counts"
type = "window"
input = "in"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "counts"
type = "file"
path = "{box.path(name)}"
"""
        box.run_toml(toml)
        return sorted((json.loads(l)["key"], json.loads(l)["window_start"])
                      for l in read_lines(box.path(name)))

    idle = run("3s", "idle.jsonl")
    # b was silent 5 s > 3 s by the replay clock: idle before its record
    # at pt 5000 is counted; the watermark (8999 from a) passes 2500.
    assert ("b", 2000) not in idle, f"b's record after its idle time was not late: {idle}"
    assert ("b", 1000) in idle and ("a", 9000) in idle, f"windows missing: {idle}"
    busy = run("10s", "busy.jsonl")
    # Within the timeout b holds the watermark back at 1499: on time.
    assert ("b", 2000) in busy, f"b's record within the timeout was dropped: {busy}"
    print("ok: on the replay clock a partition silent past idle_timeout is idle before "
          "the batch that brings it back")


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data")

APACHE_JSONL_SCHEMA = ('{ line = "int64", ts = "timestamp", client = "string", '
                       'method = "string", path = "string", status = "int64", bytes = "int64" }')
USGS_SCHEMA = ('{ time = "timestamp", mag = "float64", net = "string", id = "string", '
               'place = "string", type = "string" }')

# (name, path below data/, format lines, event-time field, key, value)
SPLIT_DATASETS = [
    ("apache-jsonl", "apache_access_logs/apache_logs_anon.jsonl",
     f'format = "jsonl"\nschema = {APACHE_JSONL_SCHEMA}', "ts", "status", "bytes"),
    ("apache-combined", "apache_access_logs/apache_logs_anon.log",
     'format = "apache_combined"', "ts", "status", "bytes"),
    ("usgs-csv", "usgs_earthquakes/all_month_2023-04-04.csv",
     f'format = "csv"\nschema = {USGS_SCHEMA}\ncsv = {{ header = true }}', "time", "net", "mag"),
]


def split_toml(data, fmt, ts, key, value, source_extra, out, windows):
    # A bound of 60 days: nothing is late in any run (the USGS file is in
    # reverse time order), so windows must match exactly (no float sums:
    # their rounding follows the order the splits interleave in).
    text = f"""
[job]
name = "splits"
status_interval = "0s"
batch_size = 256
on_bad_record = "dead_letter"
dead_letter = {{ path = "{out}.bad" }}

[[source]]
name = "in"
type = "file"
path = "{data}"
{fmt}
event_time = {{ field = "{ts}" }}
watermark = {{ max_out_of_orderness = "1440h" }}
{source_extra}
"""
    if windows:
        text += f"""
[[operator]]
name = "agg"
type = "window"
input = "in"
key_by = ["{key}"]
window = {{ type = "tumbling", size = "1h" }}
aggregate = {{ n = "count(*)", top = "max({value})", low = "min({value})" }}
"""
    text += f"""
[[sink]]
name = "out"
input = "{'agg' if windows else 'in'}"
type = "file"
path = "{out}"
"""
    return text


def test_split_parallel(weir, sandbox):
    """One file of data/ read whole at parallelism 1 and as line
    splits at parallelism 2 (and as 64 KiB splits): the same rows, the same
    windows and the same dead letters, lines included (compared sorted: splits
    interleave)."""
    box = sandbox
    for name, rel, fmt, ts, key, value in SPLIT_DATASETS:
        data = os.path.join(DATA, rel)
        assert os.path.isfile(data), f"missing {data}"
        csv = "csv" in name
        runs = {
            "p1": "",
            "p2": 'split = "lines"\nparallelism = 2' if csv else "parallelism = 2",
            "sized": 'split = "lines"\nsplit_size = "64KiB"\nparallelism = 2' if csv
                     else 'split_size = "64KiB"\nparallelism = 2',
        }
        for windows in (False, True):
            got, bad = {}, {}
            for run, extra in runs.items():
                out = f"{name}-{run}-{int(windows)}.jsonl"
                box.run_toml(split_toml(data, fmt, ts, key, value, extra, out, windows))
                got[run] = sorted(read_lines(box.path(out)))
                bad[run] = sorted(read_lines(box.path(out + ".bad")))
            ref = got["p1"]
            for run in ("p2", "sized"):
                assert bad[run] == bad["p1"], (f"{name}: {run}'s dead letters differ from "
                    f"p1's: {bad[run][:2]} vs {bad['p1'][:2]}")
            assert len(ref) > (10 if windows else 9000), f"{name}: {len(ref)} rows at p1"
            for run in ("p2", "sized"):
                assert got[run] == ref, (
                    f"{name} ({'windows' if windows else 'rows'}): {run} wrote "
                    f"{len(got[run])} rows vs {len(ref)} at p1; differing: "
                    f"{sorted(set(got[run]) ^ set(ref))[:2]}")
        print(f"ok: {name}: rows, 1h windows and dead letters ({len(bad['p1'])}, with "
              f"their lines) equal at parallelism 1, as 2 splits and as 64 KiB splits "
              f"({len(ref)} windows)")


def test_split_rules(weir, sandbox):
    """Dead-letter lines stay exact in every split; csv splits only when asked
    and fails on a quoted newline; split = "none" keeps one reader."""
    box = sandbox
    text = records("a", 0, 3000).splitlines(keepends=True)
    bad_lines = [17, 1500, 2999]
    for ln in bad_lines:
        text[ln - 1] = "not json at all\n"
    box.write("bad.jsonl", "".join(text))
    job = 'on_bad_record = "dead_letter"\ndead_letter = { path = "bad_records.jsonl" }'
    box.run_toml(source_toml(box.path("bad.jsonl"), "parallelism = 2\nsplit_size = \"8KiB\"",
                        job=job, sink_path="rows.jsonl"))
    dead = [json.loads(l) for l in read_lines(box.path("bad_records.jsonl"))]
    assert sorted(d["line"] for d in dead) == bad_lines, (
        f"dead-letter lines {sorted(d['line'] for d in dead)}, not {bad_lines}")
    assert len(read_lines(box.path("rows.jsonl"))) == 3000 - len(bad_lines), "rows lost"
    offsets = {d["line"]: d["offset"] for d in dead}
    want = {ln: len("".join(text[:ln - 1]).encode()) for ln in bad_lines}
    assert offsets == want, f"dead-letter offsets {offsets}, not {want}"

    csv_text = "key,ts,n\n" + "".join(f"k,{i * 10},{i}\n" for i in range(200))
    box.write("in.csv", csv_text)
    csv_src = '\n'.join([
        "[job]", 'name = "csv"', 'status_interval = "0s"', "",
        "[[source]]", 'name = "in"', 'type = "file"', f'path = "{box.path("in.csv")}"',
        'format = "csv"', 'schema = { key = "string", ts = "timestamp", n = "int64" }',
        "csv = { header = true }", "{extra}", "",
        "[[sink]]", 'name = "out"', 'input = "in"', 'type = "file"', 'path = "{out}"', ""])
    p = box.run_toml(csv_src.replace("{extra}", "parallelism = 2").replace("{out}", "c.jsonl"),
                expect=2)
    assert 'split = "lines"' in p.stderr and "pipeline.toml:" in p.stderr, (
        f"no load-time error for a csv file at parallelism 2:\n{p.stderr}")
    box.run_toml(csv_src.replace("{extra}", 'split = "lines"\nparallelism = 2')
            .replace("{out}", "c.jsonl"))
    assert (sorted(read_lines(box.path("c.jsonl"))) ==
        sorted(json.dumps({"key": "k", "ts": i * 10, "n": i}, separators=(",", ":"))
               for i in range(200))), "csv split rows differ"
    box.write("in.csv", "key,ts,n\n" + "".join(f"k,{i},{i}\n" for i in range(20))
              + '"a\nb",5,5\n' + "".join(f"k,{i},{i}\n" for i in range(180)))
    p = box.run_toml(csv_src.replace("{extra}", 'split = "lines"\nparallelism = 2')
                .replace("{out}", "q.jsonl"), expect=1)
    assert "a record spans 2 lines" in p.stderr, (
        f"no clear failure for a quoted newline in a split csv:\n{p.stderr[-2000:]}")
    box.run_toml(csv_src.replace("{extra}", 'split = "none"').replace("{out}", "q.jsonl"))
    assert len(read_lines(box.path("q.jsonl"))) == 201, "split = none misread the csv"

    # Each split has its own watermark: a file whose second half is
    # earlier in event time loses it to lateness read as one stream, and
    # nothing as two splits. (The first half is one byte longer than the
    # second, so the middle byte lies in its last line and the splits'
    # boundary is the halves': a split holding records of both would hold
    # its watermark ahead of its earlier ones.)
    box.write("halves.jsonl", " " + records("a", 500_000, 2000) + records("a", 100_000, 2000))
    counted = {}
    for run, extra in (("one", 'split = "none"'), ("two", "parallelism = 2")):
        box.run_toml(source_toml(box.path("halves.jsonl"), extra, sink_path=f"h-{run}.jsonl",
                            windows=True))
        counted[run] = sum(json.loads(l)["n"] for l in read_lines(box.path(f"h-{run}.jsonl")))
    assert counted["two"] == 4000 and counted["one"] < 4000, (
        f"as splits {counted['two']} of 4000 records counted, as one stream "
        f"{counted['one']}: the file was not read as 2 splits")

    p = box.run_toml(source_toml(box.path("bad.jsonl"), 'split = "none"\nparallelism = 2'),
                expect=2)
    assert "read as one stream" in p.stderr, p.stderr
    p = box.run_toml(source_toml(box.path("bad.jsonl"), 'split = "none"\nsplit_size = "8KiB"'),
                expect=2)
    assert "split_size splits the file" in p.stderr, p.stderr
    os.makedirs(box.path("dir"))
    box.write("dir/a.jsonl", records("a", 0, 3))
    p = box.run_toml(source_toml(box.path("dir"), 'split_size = "8KiB"'), expect=2)
    assert "applies to one file" in p.stderr, p.stderr
    print("ok: dead-letter lines and offsets exact across 8 KiB splits; csv splits only "
          "with split = \"lines\" and fails on a quoted newline; split = \"none\" is one "
          f"reader; a file whose second half is earlier loses {4000 - counted['one']} "
          "records to lateness as one stream and none as 2 splits")


def test_projection(weir, sandbox):
    """Projection push-down into the decoders: a field no operator
    reads is not decoded, so a value of the wrong type there does not make
    its record bad (jsonl and csv, read whole and as splits); read by the
    sink, the same values are bad records, dead-lettered with their lines.
    The rows that are good either way give the same output."""
    box = sandbox
    rows = []
    for i in range(3000):
        note = "oops" if i % 7 == 3 else i * 2  # int64 field 'note', never read
        rows.append({"key": f"k{i % 5}", "ts": 1000 + i * 10, "n": i, "note": note})
    box.write("in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    box.write("in.csv", "key,ts,n,note\n" + "".join(
        f"{r['key']},{r['ts']},{r['n']},{r['note']}\n" for r in rows))
    n_bad = sum(1 for r in rows if r["note"] == "oops")

    def job(fmt, select, extra, out):
        sink_input = "proj" if select else "in"
        text = f"""
[job]
name = "projection"
status_interval = "0s"
on_bad_record = "dead_letter"
dead_letter = {{ path = "{out}.bad" }}

[[source]]
name = "in"
type = "file"
path = "in.{fmt}"
format = "{fmt}"
schema = {{ key = "string", ts = "timestamp", n = "int64", note = "int64" }}
event_time = {{ field = "ts" }}
{'csv = { header = true }' if fmt == "csv" else ''}
{extra}
"""
        if select:
            text += """
[[operator]]
name = "proj"
type = "select"
input = "in"
fields = { key = "key", n = "n * 10" }
"""
        text += f"""
[[sink]]
name = "out"
input = "{sink_input}"
type = "file"
path = "{out}"
"""
        return text

    for fmt in ("jsonl", "csv"):
        splits = 'split = "lines"\nparallelism = 2'
        for extra in ("", splits):
            tag = f"{fmt}-{'split' if extra else 'whole'}"
            box.run_toml(job(fmt, True, extra, f"{tag}-proj.jsonl"), name=f"{tag}-p.toml")
            got = sorted(read_lines(box.path(f"{tag}-proj.jsonl")))
            bad = read_lines(box.path(f"{tag}-proj.jsonl.bad"))
            want = sorted(json.dumps({"key": r["key"], "n": r["n"] * 10},
                                     separators=(",", ":")) for r in rows)
            assert bad == [], (f"{tag}: an unread field made {len(bad)} records bad: "
                f"{bad[:1]}")
            assert got == want, (f"{tag}: {len(got)} rows, expected {len(want)}; "
                f"differing: {sorted(set(got) ^ set(want))[:2]}")
            # Read by the sink, 'note' is decoded: its bad values are bad records.
            box.run_toml(job(fmt, False, extra, f"{tag}-all.jsonl"), name=f"{tag}-a.toml")
            all_rows = read_lines(box.path(f"{tag}-all.jsonl"))
            all_bad = [json.loads(x) for x in read_lines(box.path(f"{tag}-all.jsonl.bad"))]
            assert len(all_bad) == n_bad and len(all_rows) == len(rows) - n_bad, (
                f"{tag}: read by the sink, {len(all_bad)} bad and {len(all_rows)} rows, "
                f"expected {n_bad} and {len(rows) - n_bad}")
            first = 3 + 1 + (1 if fmt == "csv" else 0)  # row 3's 1-based line
            assert min(b["line"] for b in all_bad) == first, (
                f"{tag}: first bad line {min(b['line'] for b in all_bad)}, expected {first}")
            kept = sorted(json.dumps({"key": json.loads(x)["key"], "n": json.loads(x)["n"] * 10},
                                     separators=(",", ":")) for x in all_rows)
            assert set(kept) <= set(got), f"{tag}: rows read whole differ from projected ones"
        print(f"ok: {fmt}: an unread bad field leaves {len(rows)} rows good (whole and split); "
              f"read, it makes {n_bad} bad records")
