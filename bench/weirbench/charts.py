# SPDX-License-Identifier: Apache-2.0
"""PNG bar charts of a results file (python3-matplotlib): one panel per format (or one
panel), a group of bars per query, a bar per engine and parallelism, log scale."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import format_cores, log

# The drawing alone; the panels are computed by bars() below. argv: spec.json out.png
SCRIPT = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
spec = json.load(open(sys.argv[1]))
panels = spec["panels"]
height = 4.8 if len(panels) == 1 else 3.6 * len(panels)
fig, axes = plt.subplots(len(panels), 1, figsize=(10, height), squeeze=False)
for ax, panel in zip(axes[:, 0], panels):
    series = panel["series"]
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, v in enumerate(values) if v]
        ys = [v for v in values if v]
        ax.bar(xs, ys, width, label=name, color=spec["colors"].get(name))
        for x, y in zip(xs, ys):
            ax.text(x, y, f"{y:.3g}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(panel["groups"])))
    ax.set_xticklabels(panel["groups"])
    ax.set_yscale("log")
    ax.set_ylabel(spec["ylabel"])
    ax.set_title(panel["title"])
    ax.grid(axis="y", alpha=0.3)
axes[-1, 0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=5, frameon=False)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
"""

COLORS = {"baseline": "#777777", "raw parse loop": "#777777",
          "weir p=1": "#1f77b4", "weir p=2": "#0b3d91",
          "weir p=1 whole": "#9ecae1", "weir p=2 whole": "#6baed6",
          "flink p=1": "#ff9f40", "flink p=2": "#d95f02",
          "flink p=1 whole": "#fdd0a2", "flink p=2 whole": "#fdae6b",
          "duckdb threads=1": "#a1d99b", "duckdb threads=2": "#31a354"}


def series_name(r):
    if r["engine"] in ("baseline", "raw"):
        return "baseline" if r["engine"] == "baseline" else "raw parse loop"
    knob = "threads" if r["engine"] == "duckdb" else "p"
    whole = " whole" if r.get("mode") == "whole" else ""
    return f"{r['engine']} {knob}={r['parallelism']}{whole}"


def bars(results, value, panel_key=None, title=""):
    """Panels of bars: one per value of panel_key (all rows in one without), groups by
    query, series by engine and parallelism; values in millions."""
    panel_values = [None] if panel_key is None else list(dict.fromkeys(
        r[panel_key] for r in results))
    panels = []
    for pv in panel_values:
        rows = [r for r in results if panel_key is None or r[panel_key] == pv]
        groups = list(dict.fromkeys(r["query"] for r in rows))
        names = list(dict.fromkeys(series_name(r) for r in rows))
        series = [(n, [next((r[value] / 1e6 for r in rows
                             if r["query"] == q and series_name(r) == n), None)
                       for q in groups]) for n in names]
        panels.append({"title": (f"{pv}: " if pv else "") + title, "groups": groups,
                       "series": series})
    return panels


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


def draw(panels, ylabel, path):
    py = matplotlib_python()
    spec = {"panels": panels, "ylabel": ylabel, "colors": COLORS}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        subprocess.run([py, "-c", SCRIPT, f.name, str(path)], check=True)
    finally:
        os.unlink(f.name)
    log(f"bench: wrote {path}")


def on_cores(report):
    """" (commit C, date D, cores 0,1)" from the results file's header."""
    parts = [f"commit {report['commit']}" if report.get("commit") else None,
             report.get("date"),
             f"cores {format_cores(report['cores'])}" if report.get("cores") else None]
    parts = [p for p in parts if p]
    return f" ({', '.join(parts)})" if parts else ""


def nexmark_chart(report, path):
    results = report["results"]
    title = ("weir vs a hand-written loop"
             + (" and Apache Flink" if any(r["engine"] == "flink" for r in results) else "")
             + on_cores(report))
    draw(bars(results, "events_per_s", title=title), "million events / s (log scale)", path)


def ingest_chart(report, path):
    draw(bars(report["results"], "records_per_s", "format",
              "the same file read by every engine" + on_cores(report)),
         "million bids / s (log)", path)


CHARTS = {"nexmark": nexmark_chart, "ingest": ingest_chart}


def cmd_chart(args):
    """Redraws the chart of a results file (or of a --json report)."""
    report = json.loads(Path(args.report).read_text())
    family = report.get("family") or ("ingest" if report.get("mode") == "ingest" else "nexmark")
    if family not in CHARTS:
        raise SystemExit(f"{args.report}: the {family} results have no chart")
    CHARTS[family](report, Path(args.png))
    return 0


def add_parser(sub):
    ch = sub.add_parser("chart", help="redraw the chart from a results file or --json report")
    ch.add_argument("report")
    ch.add_argument("png")
    ch.set_defaults(func=cmd_chart)
