# SPDX-License-Identifier: Apache-2.0
"""Ingest (`bench/run ingest`, and the ctest check `bench/run ingest-check`): files of
Nexmark bids (JSON lines, CSV; written by weir, cached in ~/.cache/weir-bench) read by
weir's file source (bench/ingest/*.toml), DuckDB (SQL over read_json / read_csv,
bench/ingest/duckdb_query.py), Flink's FileSource (FlinkFileBench) and the raw parse
loop (weir_ingest_raw), all on the same cores; every result checked against the
baseline's. Each engine is compared at its best thread count on those cores, by wall
time and per CPU second."""

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import charts
from .common import (BENCH, Checks, add_cores_option, add_family_options, add_rates,
                     binaries, build_flink, check_result, compare, cores, flink_cmd,
                     format_cores, generate_bid_file, interleaved, log, parse_cores,
                     pin_cores, print_comparisons, run, run_baseline, run_header, toml_str,
                     weir_cmd, weir_reports, write_results)

INGEST = BENCH / "ingest"
INGEST_QUERIES = ["q0", "q1", "q2", "q5", "q7", "tumble"]
INGEST_FORMATS = ["jsonl", "csv"]
INGEST_ENGINES = ["raw", "weir", "duckdb", "flink"]
# The fields each query reads: what the raw parse loop decodes.
INGEST_FIELDS = {
    "q0": "auction,bidder,price,date_time,extra",
    "q1": "auction,bidder,price,date_time,extra",
    "q2": "auction,price",
    "q5": "auction,date_time",
    "q7": "auction,price,date_time",
    "tumble": "auction,price,date_time",
}
DEFAULT_INGEST_DATA = Path.home() / ".cache" / "weir-bench"
# The project's goals for weir against each engine (wall time) and for 2 threads vs 1.
TARGETS = {"weir_vs_duckdb": 1.0, "weir_vs_flink": 10.0, "weir_vs_raw_cpu": 0.8,
           "scaling_2_vs_1": 1.8}


def ingest_pipeline_text(query, path, fmt, digest=False):
    """bench/ingest/QUERY.toml with the file's path and format (and the sink's digest)."""
    text = (INGEST / f"{query}.toml").read_text()
    text, n = re.subn(r'(?m)^path = "[^"\n]*"$', f"path = {toml_str(path)}", text, count=1)
    assert n == 1, f"{query}: expected a source path"
    if fmt != "jsonl":
        text, n = re.subn(r'(?m)^format = "jsonl"$',
                          f'format = "{fmt}"' + ("\ncsv = { header = true }" if fmt == "csv"
                                                 else ""), text, count=1)
        assert n == 1, f"{query}: expected format = \"jsonl\""
    text = text.replace("[job]\n", '[job]\nstatus_interval = "0s"\n', 1)
    if digest:
        text = text.replace("report = true\n", "report = true\ndigest = true\n")
    return text


def measured(p, **fields):
    return {"seconds": p.wall_seconds, "wall_seconds": p.wall_seconds,
            "cpu_seconds": p.cpu_seconds, **fields}


def run_ingest_weir(weir, query, path, fmt, p, digest=False):
    with tempfile.TemporaryDirectory(prefix="weir-ingest-") as tmp:
        toml = Path(tmp) / f"{query}.toml"
        toml.write_text(ingest_pipeline_text(query, path, fmt, digest))
        proc = run(weir_cmd(weir, toml, p), what=f"weir {query} {fmt} p={p}")
    merged = weir_reports(proc.stdout)
    merged.pop("reports")
    return measured(proc, engine="weir", query=query, format=fmt, parallelism=p, **merged)


def run_ingest_raw(raw, query, path, fmt):
    proc = run([raw, fmt, path, "--fields", INGEST_FIELDS[query]],
               what=f"weir_ingest_raw {fmt} {query}")
    r = proc.last_json()
    out = measured(proc, engine="raw", query=query, format=fmt, parallelism=1,
                   records=r["records"], rows=r["records"])
    out["seconds"] = r["seconds"]  # the loop's own time
    return out


def duckdb_python(data_dir):
    """A venv (in data_dir) with DuckDB and numpy from PyPI, made on first use."""
    venv = data_dir / "venv-duckdb"
    py = venv / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import duckdb, numpy"],
                                      capture_output=True).returncode == 0:
        return py
    log(f"bench: making {venv} (pip install duckdb numpy)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "duckdb", "numpy"], check=True,
                   stdout=sys.stderr)
    return py


def run_ingest_duckdb(py, query, path, fmt, threads, digest=False):
    proc = run([py, INGEST / "duckdb_query.py", query, "--file", path, "--format", fmt,
                "--threads", threads] + (["--digest"] if digest else []),
               what=f"duckdb {query} {fmt} threads={threads}")
    r = proc.last_json()  # seconds: the query's execution, in-process
    r.pop("columns", None)
    return {**measured(proc), **r}


def run_ingest_flink(classpath, query, path, fmt, p, digest=True):
    proc = run(flink_cmd(classpath, "FlinkFileBench", query, "--file", path, "--format", fmt,
                         "--parallelism", p, *(["--digest"] if digest else [])),
               what=f"flink {query} {fmt} p={p}")
    return {**measured(proc), **proc.last_json()}  # seconds: the job's net runtime


def core_set(r):
    """The cores a result ran on, as taskset -c writes them ("0,1")."""
    return format_cores(r.get("cores", []))


def comparisons(results):
    """Per set of cores, format and query: each engine's best thread count on those
    cores, and weir's rate over each other engine's, by wall time and per CPU second."""
    out = []
    for cs in dict.fromkeys(core_set(r) for r in results):
        on = [r for r in results if core_set(r) == cs]
        for fmt in dict.fromkeys(r["format"] for r in on):
            for q in dict.fromkeys(r["query"] for r in on if r["format"] == fmt):
                group = [r for r in on if r["format"] == fmt and r["query"] == q]
                c = compare(group, ["weir", "raw", "duckdb", "flink"], "records")
                if c["weir_vs"]:
                    out.append({"cores": cs, "format": fmt, "query": q, **c})
    return out


def add_scaling(results):
    """scaling_2_vs_1 on each engine's p=2 row: its rate over its own p=1 rate."""
    for r in results:
        if r["parallelism"] == 2:
            one = next((x for x in results if x["engine"] == r["engine"]
                        and x["query"] == r["query"] and x["format"] == r["format"]
                        and core_set(x) == core_set(r) and x["parallelism"] == 1), None)
            if one:
                r["scaling_2_vs_1"] = r["records_per_s"] / one["records_per_s"]


def cmd_ingest(args):
    core_sets = [parse_cores(c) for c in args.core_sets.split(";")] if args.core_sets \
        else [cores()]
    header = run_header("ingest", args.build_dir)
    header["cores"] = sorted(set().union(*core_sets))
    header["core_sets"] = [format_cores(c) for c in core_sets]
    queries = args.queries.split(",") if args.queries else INGEST_QUERIES
    formats = args.formats.split(",")
    engines = args.engines.split(",")
    parallelisms = [int(p) for p in args.parallelism.split(",")]
    for q in queries:
        if q not in INGEST_QUERIES:
            raise SystemExit(f"unknown ingest query {q} ({', '.join(INGEST_QUERIES)})")
    weir, baseline = binaries(args, ["weir_ingest_raw"])
    raw = Path(args.build_dir) / "weir_ingest_raw"
    data_dir = Path(args.data_dir)
    classpath = build_flink() if "flink" in engines else None
    py = duckdb_python(data_dir) if "duckdb" in engines else None
    files = {fmt: generate_bid_file(weir, args.events, data_dir, fmt) for fmt in formats}
    results, failures, loads = [], 0, []
    started = time.time()
    for q in queries:
        expected = run_baseline(baseline, q, args.events, digest=True)
        # Every set of cores in turn (each pinning the runner and all it starts),
        # both formats per set, so that a run cut short has both.
        for cs, fmt in [(c, f) for c in core_sets for f in formats]:
            pin_cores(cs)
            path, bids = files[fmt]
            configs = [("raw", 1)] if "raw" in engines else []
            # With several sets, a set runs the thread counts it has cores for.
            ps = [p for p in parallelisms if len(core_sets) == 1 or p <= len(cs)]
            for engine in ("weir", "duckdb", "flink"):
                if engine in engines:
                    configs += [(engine, p) for p in ps]

            def one(engine, p, digest):
                if engine == "raw":
                    return run_ingest_raw(raw, q, path, fmt)
                if engine == "weir":
                    return run_ingest_weir(weir, q, path, fmt, p, digest)
                if engine == "duckdb":
                    return run_ingest_duckdb(py, q, path, fmt, p, digest)
                return run_ingest_flink(classpath, q, path, fmt, p, digest)

            # The checks: every engine once with its digest (the raw loop: its record count).
            checks, checked = {}, {}
            for engine, p in configs:
                got = one(engine, p, True)
                want = {"rows": bids} if engine == "raw" else expected
                checks[(engine, p)] = check_result(got, want)
                failures += 0 if checks[(engine, p)].startswith("ok") else 1
                log(f"bench: ingest {fmt} {q} {engine} p={p}: rows {got['rows']:,} "
                    f"{got.get('digest', '')}: {checks[(engine, p)]}")
                if engine == "flink":
                    checked[(engine, p)] = got  # Flink's timed runs keep the digest on
            # The timed runs, interleaved: round r runs every engine once.
            runs, round_loads = interleaved(
                configs, args.repeat,
                lambda c, r: checked.pop(c) if c in checked else one(*c, c[0] == "flink"),
                lambda c: args.flink_repeat if c[0] == "flink" else None)
            loads += [{"cores": format_cores(cs), "format": fmt, "query": q, **x}
                      for x in round_loads]
            for (engine, p), rs in runs.items():
                b = dict(min(rs, key=lambda x: x["seconds"]))
                b.update(engine=engine, query=q, format=fmt, parallelism=p, bids=bids,
                         runs_seconds=[x["seconds"] for x in rs], check=checks[(engine, p)])
                add_rates(b, bids, "records")
                b.pop("digest", None)
                if engine != "raw":
                    b["rows"] = expected["rows"] if b["check"].startswith("ok") else b["rows"]
                results.append(b)
                log(f"bench: ingest cores {format_cores(cs)} {fmt} {q} {engine} p={p}: "
                    f"{b['records_per_s']:,.0f} records/s, {b['cpu_seconds']:.2f} CPU s "
                    f"(best of {len(rs)})")
            # The report so far, so that a run cut short keeps what it measured.
            ingest_report(args, header, files, formats, loads, started, results, False)
    report = ingest_report(args, header, files, formats, loads, started, results, True)
    write_results(args, report, charts.ingest_chart)
    if args.chart:
        charts.ingest_chart(report, Path(args.chart))
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.markdown:
        print(ingest_markdown(report))
    else:
        print_ingest_table(report)
    return 1 if failures else 0


def ingest_report(args, header, files, formats, loads, started, results, complete):
    """The report (written to --out when given), scaling and comparisons added."""
    add_scaling(results)
    report = {**header, "events": args.events, "complete": complete,
              "files": {fmt: {"path": str(files[fmt][0]), "bids": files[fmt][1],
                              "bytes": files[fmt][0].stat().st_size} for fmt in formats},
              "repeat": args.repeat, "flink_repeat": args.flink_repeat,
              "loadavg": loads, "seconds": time.time() - started, "targets": TARGETS,
              "results": results, "comparisons": comparisons(results)}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
        if complete:
            log(f"bench: wrote {args.out}")
    return report


def print_ingest_table(report):
    print(f"{'cores':5} {'fmt':5} {'query':6} {'engine':7} {'p':>2} {'time s':>7} "
          f"{'CPU s':>6} {'records/s':>12} {'records/cpu s':>13} {'2 vs 1':>6}  check")
    for r in report["results"]:
        s = f"{r['scaling_2_vs_1']:.2f}" if "scaling_2_vs_1" in r else ""
        print(f"{core_set(r):5} {r['format']:5} {r['query']:6} {r['engine']:7} "
              f"{r['parallelism']:>2} {r['seconds']:>7.2f} {r.get('cpu_seconds', 0):>6.2f} "
              f"{r['records_per_s']:>12,.0f} {r.get('records_per_cpu_s', 0):>13,.0f} "
              f"{s:>6}  {r['check']}")
    print_comparisons([{**c, "cores": f"cores {c.get('cores', '')}"}
                       for c in report["comparisons"]], ("cores", "format", "query"))


NAMES = {"raw": "raw loop", "weir": "weir p=", "duckdb": "DuckDB ", "flink": "Flink p="}


def ingest_markdown(report):
    """The README's tables, per format and set of cores: million records/s per engine and
    thread count (CPU seconds in brackets), then weir's rate over each engine's best on
    those cores, by wall time and per CPU second."""
    results, out = report["results"], []
    for fmt, cs in [(f, c) for f in report["files"]
                    for c in dict.fromkeys(core_set(r) for r in results)]:
        rows = [r for r in results if r["format"] == fmt and core_set(r) == cs]
        if not rows:
            continue
        configs = list(dict.fromkeys((r["engine"], r["parallelism"]) for r in rows))
        others = [e for e in ("raw", "duckdb", "flink") if any(c[0] == e for c in configs)]
        out.append(f"**{fmt}** ({report['files'][fmt]['bids']:,} bids, "
                   f"{report['files'][fmt]['bytes'] / 2**20:,.0f} MiB, cores {cs}), "
                   f"million records/s (CPU s):\n")
        out.append("| query | " + " | ".join(NAMES[e] + ("" if e == "raw" else str(p))
                                             for e, p in configs)
                   + "".join(f" | weir/{NAMES[e].split()[0]} (wall, CPU)" for e in others)
                   + " | weir 2 vs 1 |")
        out.append("|---|" + "---:|" * (len(configs) + len(others) + 1))
        for q in dict.fromkeys(r["query"] for r in rows):
            cells = []
            for e, p in configs:
                r = next((x for x in rows if x["query"] == q and x["engine"] == e
                          and x["parallelism"] == p), None)
                mark = "" if r is None or r["check"].startswith("ok") else " (MISMATCH)"
                cpu = f" ({r['cpu_seconds']:.2f})" if r and r.get("cpu_seconds") else ""
                cells.append("-" if r is None else f"{r['records_per_s'] / 1e6:.2f}{cpu}{mark}")
            comp = next((c for c in report["comparisons"] if c["format"] == fmt
                         and c["query"] == q and c.get("cores", cs) == cs), {"weir_vs": {}})
            for e in others:
                ratio = comp["weir_vs"].get(e)
                cells.append("-" if ratio is None else f"{ratio['wall']:.2f}, " + (
                    f"{ratio['cpu']:.2f}" if ratio["cpu"] else "-"))
            w2 = next((x for x in rows if x["query"] == q and x["engine"] == "weir"
                       and "scaling_2_vs_1" in x), None)
            cells.append(f"{w2['scaling_2_vs_1']:.2f}" if w2 else "-")
            out.append(f"| {q} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def cmd_ingest_check(args):
    """weir's ingest queries over small JSONL and CSV files give the baseline's result at
    parallelism 1 and 2 (ctest bench_ingest_check_*; no Flink, no DuckDB, no network)."""
    weir, baseline = Path(args.weir), Path(args.baseline)
    tmp = Path(tempfile.mkdtemp(prefix="weir-ingest-check-"))
    checks = Checks()
    try:
        files = {fmt: generate_bid_file(weir, args.events, tmp, fmt) for fmt in INGEST_FORMATS}
        for q in args.queries.split(","):
            expected = run_baseline(baseline, q, args.events, digest=True)
            if not checks.expect_rows(q, expected):
                return 1
            for fmt, (path, _) in files.items():
                for p in (1, 2):
                    got = run_ingest_weir(weir, q, path, fmt, p, digest=True)
                    checks.case(f"ingest {q} {fmt} p={p}: weir", got, expected)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.finish()


def add_parser(sub):
    ing = sub.add_parser("ingest", help="files of bids: weir against DuckDB, Flink and the "
                                         "raw parse loop")
    ing.add_argument("--events", type=int, default=6_000_000,
                     help="Nexmark events whose bids go into the files (default 6M: 5.52M bids)")
    ing.add_argument("--queries", help="comma-separated subset of " + ",".join(INGEST_QUERIES))
    ing.add_argument("--formats", default="jsonl,csv")
    ing.add_argument("--engines", default=",".join(INGEST_ENGINES),
                     help="comma-separated subset of " + ",".join(INGEST_ENGINES))
    ing.add_argument("--parallelism", default="1,2",
                     help="weir's parallelism, DuckDB's threads, Flink's parallelism")
    ing.add_argument("--repeat", type=int, default=3,
                     help="timed runs per engine, interleaved; best is kept")
    ing.add_argument("--flink-repeat", type=int, default=1,
                     help="Flink's runs per configuration (digest on; best is kept)")
    ing.add_argument("--data-dir", default=str(DEFAULT_INGEST_DATA),
                     help="where the bid files and DuckDB's venv are cached")
    ing.add_argument("--out", help="write the JSON report here too (also while running)")
    ing.add_argument("--chart", help="also write a PNG bar chart per format here")
    ing.add_argument("--json", action="store_true")
    ing.add_argument("--markdown", action="store_true", help="print the README's table")
    ing.add_argument("--core-sets", help="sets of cores run one after another in this run, "
                     "';'-separated, e.g. '0;0,1': every engine pinned to each set in turn, "
                     "at the thread counts the set has cores for (default: --cores)")
    add_family_options(ing, "ingest", cmd_ingest)

    ic = sub.add_parser("ingest-check", help="weir's ingest queries give the baseline's result")
    ic.add_argument("--queries", default=",".join(INGEST_QUERIES))
    ic.add_argument("--events", type=int, default=300_000)
    ic.add_argument("--weir", required=True)
    ic.add_argument("--baseline", required=True)
    add_cores_option(ic)
    ic.set_defaults(func=cmd_ingest_check)
