# SPDX-License-Identifier: Apache-2.0
"""PNG bar charts of a results file (python3-matplotlib): one panel per format (or one
panel), a group of bars per query, a bar per engine and parallelism, log scale."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import RESULTS, format_cores, log

# The drawing alone; the panels are computed below. argv: spec.json out.png. A panel is
# groups along x, a bar per series in each group (only the series with a value there,
# centred), its own y label and scale; the caption (commit, date, machine, load) goes
# under the figure.
SCRIPT = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
spec = json.load(open(sys.argv[1]))
panels = spec["panels"]
height = 5.2 if len(panels) == 1 else 3.8 * len(panels)
fig, axes = plt.subplots(len(panels), 1, figsize=(10, height), squeeze=False)
for ax, panel in zip(axes[:, 0], panels):
    series = panel["series"]
    width = min(0.45, 0.8 / max(1, max(sum(1 for _, vs in series if vs[j])
                                        for j in range(len(panel["groups"])))))
    for j in range(len(panel["groups"])):
        present = [i for i, (_, vs) in enumerate(series) if vs[j]]
        for k, i in enumerate(present):
            name, values = series[i]
            x, y = j + (k - (len(present) - 1) / 2) * width, values[j]
            ax.bar(x, y, width, color=spec["colors"].get(name, "C%d" % (i % 10)),
                   label=name if name not in ax.get_legend_handles_labels()[1] else None)
            ax.text(x, y, f"{y:,.0f}" if y >= 1000 else f"{y:.3g}", ha="center",
                    va="bottom", fontsize=6, rotation=90 if width < 0.13 else 0)
    ax.set_xticks(range(len(panel["groups"])))
    ax.set_xticklabels(panel["groups"])
    if panel.get("log", True):
        ax.set_yscale("log")
    ax.margins(y=0.2)
    ax.set_ylabel(panel.get("ylabel", spec.get("ylabel", "")))
    ax.set_title(panel["title"], fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
fig.suptitle(spec["title"], fontsize=13)
fig.text(0.01, 0.005, spec["caption"], fontsize=7, color="#444444", ha="left", va="bottom",
         wrap=True)
fig.tight_layout(rect=(0, 0.045 if len(panels) == 1 else 0.03, 1, 1))
fig.savefig(sys.argv[2], dpi=110)
"""

COLORS = {"baseline": "#777777", "raw parse loop": "#777777", "librdkafka p=1": "#777777",
          "weir p=1": "#1f77b4", "weir p=2": "#0b3d91",
          "weir p=1 whole": "#9ecae1", "weir p=2 whole": "#6baed6",
          "flink p=1": "#ff9f40", "flink p=2": "#d95f02",
          "flink p=1 whole": "#fdd0a2", "flink p=2 whole": "#fdae6b",
          "duckdb threads=1": "#a1d99b", "duckdb threads=2": "#31a354",
          "checkpoints off": "#9ecae1", "checkpoints on": "#1f77b4",
          "http source": "#1f77b4", "file source": "#777777",
          "p50": "#9ecae1", "p99": "#1f77b4", "p99.9": "#0b3d91"}


def series_name(r):
    if r["engine"] in ("baseline", "raw", "librdkafka"):
        return {"baseline": "baseline", "raw": "raw parse loop",
                "librdkafka": "librdkafka p=1"}[r["engine"]]
    knob = "threads" if r["engine"] == "duckdb" else "p"
    whole = " whole" if r.get("mode") == "whole" else ""
    return f"{r['engine']} {knob}={r['parallelism']}{whole}"


def panel(title, rows, group, series, value, ylabel, log=True):
    """One panel: x groups group(row) in order of appearance, a bar per series(row) with
    value(row) (None or 0: no bar), y labelled ylabel (give the unit), log scale unless
    log=False."""
    groups = list(dict.fromkeys(group(r) for r in rows))
    names = list(dict.fromkeys(series(r) for r in rows))
    return {"title": title, "groups": groups, "ylabel": ylabel, "log": log,
            "series": [(n, [next((value(r) for r in rows if group(r) == g and series(r) == n),
                                 None) for g in groups]) for n in names]}


def bars(results, value, panel_key=None, title="", ylabel=""):
    """Panels of bars: one per value of panel_key (all rows in one without), groups by
    query, series by engine and parallelism; values in millions."""
    panel_values = [None] if panel_key is None else list(dict.fromkeys(
        r[panel_key] for r in results))
    return [panel((f"{pv}: " if pv else "") + title,
                  [r for r in results if panel_key is None or r[panel_key] == pv],
                  lambda r: r["query"], series_name,
                  lambda r: r[value] / 1e6 if r.get(value) else None, ylabel)
            for pv in panel_values]


def matplotlib_python():
    """A Python with matplotlib: Debian's python3-matplotlib, installed if missing."""
    for py in ("/usr/bin/python3", sys.executable):
        if subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return py
    log("bench: installing python3-matplotlib (apt-get) for the chart")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                           "python3-matplotlib"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return "/usr/bin/python3"


def draw(title, panels, caption, path):
    """Writes the PNG at path: title over the panels (panel() above), caption under them."""
    py = matplotlib_python()
    spec = {"title": title, "panels": panels, "caption": caption, "colors": COLORS}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        subprocess.run([py, "-c", SCRIPT, f.name, str(path)], check=True)
    finally:
        os.unlink(f.name)
    log(f"bench: wrote {path}")


def caption(report, prefix=""):
    """The provenance under a chart: commit, date, machine, cores, load and build type of
    a results file's header (a run_header), as far as it has them."""
    m = report.get("machine") or {}
    machine = ", ".join(str(x) for x in (m.get("cpu"), m.get("cores") and f"{m['cores']} cores",
                                         m.get("memory"), m.get("kernel")) if x)
    load = report.get("load_average_start")
    start, end = report.get("load_average_start"), report.get("load_average_end")
    figures = [f"{'/'.join(map(str, xs))} at {when}" for xs, when in ((start, "start"),
                                                                      (end, "end")) if xs]
    load = "load " + ", ".join(figures) if figures else "load not recorded"
    if report.get("load_note"):
        load += f" ({report['load_note']})" if figures else f": {report['load_note']}"
    parts = [f"commit {report['commit']}" if report.get("commit") else None,
             report.get("date"), f"machine {machine}" if machine else None,
             f"cores {format_cores(report['cores'])}" if report.get("cores") else None,
             load, report.get("build_type") and f"{report['build_type']} build"]
    return prefix + "; ".join(p for p in parts if p)


def on_cores(report):
    """" (commit C, date D, cores 0,1)" from the results file's header."""
    parts = [f"commit {report['commit']}" if report.get("commit") else None,
             report.get("date"),
             f"cores {format_cores(report['cores'])}" if report.get("cores") else None]
    parts = [p for p in parts if p]
    return f" ({', '.join(parts)})" if parts else ""


def nexmark_chart(report, path):
    results = report["results"]
    title = ("Nexmark and YSB throughput: weir vs a hand-written loop"
             + (" and Apache Flink" if any(r["engine"] == "flink" for r in results) else ""))
    draw(title, bars(results, "events_per_s", title="events generated per second",
                     ylabel="million events / s (log scale)"), caption(report), path)


def ingest_chart(report, path):
    """Bids/s per query, a panel per format (and per set of cores when a run had several:
    engines are compared within a panel only)."""
    rows = report["results"]
    sets = list(dict.fromkeys(format_cores(r.get("cores", [])) for r in rows))
    if len(sets) > 1:
        rows = [{**r, "panel": f"{r['format']}, cores {format_cores(r.get('cores', []))}"}
                for r in rows]
    draw("Ingest: the same file of bids read by every engine",
         bars(rows, "records_per_s", "panel" if len(sets) > 1 else "format",
              "bids per second", "million bids / s (log scale)"), caption(report), path)


def kafka_chart(report, path):
    """Messages/s per query, a panel for the exactly-once sink off and on: weir, Flink's
    KafkaSource and librdkafka's raw consume loop."""
    rows = report["results"]
    every = report.get("checkpoint_interval", "1s")
    titles = {"off": "exactly-once Kafka sink off",
              "on": f"exactly-once Kafka sink on (results written back, checkpoint every {every})"}
    panels = [panel(titles.get(sink, f"sink {sink}"),
                    [r for r in rows if r["sink"] == sink], lambda r: r["query"], series_name,
                    lambda r: r["messages_per_s"] / 1e6 if r.get("messages_per_s") else None,
                    "million messages / s (log scale)")
              for sink in dict.fromkeys(r["sink"] for r in rows)]
    peers = " and ".join(n for e, n in (("flink", "Apache Flink"),
                                        ("librdkafka", "librdkafka's consume loop"))
                         if any(r["engine"] == e for r in rows))
    draw(f"Kafka: JSON bids from a {report.get('partitions', '?')}-partition topic, "
         f"weir vs {peers}", panels, caption(report), path)


def latency_chart(report, path):
    """End-to-end latency percentiles per query, a panel per buffer_timeout."""
    rows = report["latency"]
    panels = []
    for bt in dict.fromkeys(r["buffer_timeout"] for r in rows):
        at = [{**r, "pct": pct} for r in rows if r["buffer_timeout"] == bt
              for pct in ("p50", "p99", "p99.9")]
        panels.append(panel(f"buffer_timeout {bt}, at half of peak rate",
                            at, lambda r: f"{r['query']} (p={r['parallelism']})",
                            lambda r: r["pct"],
                            lambda r: r[{"p50": "p50_ms", "p99": "p99_ms",
                                         "p99.9": "p999_ms"}[r["pct"]]],
                            "latency, ms (log scale)"))
    draw("weir end-to-end latency, generation to sink", panels, caption(report), path)


def http_ingest_chart(report, path):
    """Records/s into an http source by 1, 2, 4 clients beside the file source, and the
    state-query latency while ingesting at half of that peak."""
    rows = [{"group": f"{h['clients']} client{'s' if h['clients'] > 1 else ''}",
             "series": "http source", "v": h["rps"]} for h in report["http"]]
    if report.get("file_source_rps"):
        rows.append({"group": "file source", "series": "file source",
                     "v": report["file_source_rps"]})
    panels = [panel(f"ingest into a blackhole, bodies of {report.get('batch', '?')} records",
                    rows, lambda r: r["group"], lambda r: r["series"], lambda r: r["v"] / 1e6,
                    "million records / s", log=False)]
    sq = report.get("state_query")
    if sq:
        panels.append(panel(f"state-query latency ({sq['queries']} queries) while ingesting "
                            f"{sq['achieved_ingest_rps'] / 1e6:.2f}M records/s",
                            [{"g": "p50", "v": sq["p50_ms"]}, {"g": "p99", "v": sq["p99_ms"]}],
                            lambda r: r["g"], lambda r: r["g"], lambda r: r["v"],
                            "latency, ms", log=False))
    draw("HTTP ingest: records POSTed to weir serve, beside the file source", panels,
         caption(report), path)


def median(xs):
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2 if xs else None


def checkpoint_chart(report, path):
    """The checkpoint family's parts, a panel each: throughput with checkpoints off and
    on, snapshot and restore times, recovery time after a kill by state size."""
    parts = report["parts"]
    panels = []
    if "throughput" in parts:
        rows = [{"g": f"{r['keys']:,} keys", "s": f"checkpoints {mode}",
                 "v": median([x["records_per_s"] for x in r["runs"][mode]]) / 1e6}
                for r in parts["throughput"]["results"] for mode in ("off", "on")
                if r["runs"].get(mode)]
        panels.append(panel("throughput: window + running count, p=2, checkpoint every "
                            "second (median of runs)", rows, lambda r: r["g"],
                            lambda r: r["s"], lambda r: r["v"], "million records / s",
                            log=False))
    if "snapshot" in parts:
        rows = [{"g": f"{r['keys']:,} {kind} keys", "s": s, "v": v}
                for kind, rs in parts["snapshot"]["results"].items() for r in rs
                for s, v in (("snapshot() pause (median)", r["snapshot_pause_us"]["median"] / 1e3),
                             ("serialize", r.get("serialize_ms")),
                             ("restore", r.get("restore_ms")))]
        panels.append(panel("snapshot and restore of one subtask's keyed state", rows,
                            lambda r: r["g"], lambda r: r["s"], lambda r: r["v"],
                            "ms (log scale)"))
    if "recovery" in parts:
        rows = [{"g": f"{r['mib']} MiB", "s": s, "v": r.get(k)}
                for r in parts["recovery"]["results"]["runs"]
                for s, k in (("restoring (log line)", "restoring_line_s"),
                             ("first output row", "first_output_s"))]
        panels.append(panel("recovery after SIGKILL: from restart to the restore log line "
                            "and to the first output row, by state size",
                            rows, lambda r: r["g"], lambda r: r["s"], lambda r: r["v"],
                            "seconds (log scale)"))
    draw("Checkpoint costs", panels,
         "\n".join(caption(h, f"{name}: ") for name, h in parts.items()), path)


CHARTS = {"nexmark": nexmark_chart, "ingest": ingest_chart, "kafka": kafka_chart,
          "latency": latency_chart, "http-ingest": http_ingest_chart,
          "checkpoint": checkpoint_chart}


def cmd_chart(args):
    """Redraws the chart of a results file (or of a --json report)."""
    report = json.loads(Path(args.report).read_text())
    family = report.get("family") or ("ingest" if report.get("mode") == "ingest" else "nexmark")
    if family not in CHARTS:
        raise SystemExit(f"{args.report}: the {family} results have no chart")
    CHARTS[family](report, Path(args.png))
    return 0


def cmd_charts(args):
    """Redraws every family's chart, OUT/FAMILY.png, from RESULTS/FAMILY.json; runs no
    benchmark. Exit 1 when a results file is missing."""
    results, out = Path(args.results_dir), Path(args.out or args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    missing = [f for f in CHARTS if not (results / f"{f}.json").exists()]
    for family, chart in CHARTS.items():
        if family not in missing:
            chart(json.loads((results / f"{family}.json").read_text()), out / f"{family}.png")
    for f in missing:
        log(f"bench: {results / f'{f}.json'} missing, {f}.png not drawn")
    return 1 if missing else 0


def add_parser(sub):
    ch = sub.add_parser("chart", help="redraw the chart from a results file or --json report")
    ch.add_argument("report")
    ch.add_argument("png")
    ch.set_defaults(func=cmd_chart)
    cs = sub.add_parser("charts", help="redraw every family's chart from its results file "
                                       "(runs no benchmark)")
    cs.add_argument("--results-dir", default=str(RESULTS),
                    help="where the FAMILY.json files are (default bench/results)")
    cs.add_argument("--out", help="where to write FAMILY.png (default: beside the JSON)")
    cs.set_defaults(func=cmd_charts)
