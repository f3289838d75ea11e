# SPDX-License-Identifier: Apache-2.0
"""What the benchmark families share: the cores every engine is pinned to, running and
timing a process (wall time, CPU time of its process tree), /proc, the machine, building,
weir's and the baseline's and Flink's command lines, result checks, and the results file
each family writes (bench/results/FAMILY.json)."""

import datetime
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
DEFAULT_BUILD = ROOT / "build-bench"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# -- cores ------------------------------------------------------------------------
# Every process a benchmark starts runs on the same set of cores, so that engines
# compared in one run had the same hardware: the runner pins itself (children
# inherit it: the Kafka broker, the JVM's threads) and sets it again on each child.

_cores = sorted(os.sched_getaffinity(0))


def parse_cores(spec):
    """Cores of a spec such as "0", "0,1" or "0-3,6" (taskset -c's list form), sorted.
    Raises SystemExit on a malformed spec or a core this process may not use."""
    allowed = os.sched_getaffinity(0)
    cores = set()
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise SystemExit(f"--cores {spec!r}: expected a list such as 0 or 0,1 or 0-3")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        cores.update(range(lo, hi + 1))
    missing = sorted(cores - allowed)
    if not cores or missing:
        raise SystemExit(f"--cores {spec!r}: cores {missing} are not available "
                         f"(available: {format_cores(allowed)})")
    return sorted(cores)


def format_cores(cores):
    return ",".join(str(c) for c in sorted(cores))


def set_cores(spec=None):
    """Pins this process (and so everything it starts) to the cores of spec; None keeps
    the cores it may use now (all of them, unless started under taskset)."""
    global _cores
    _cores = parse_cores(spec) if spec else sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, _cores)
    return _cores


def pin_cores(cs):
    """Pins this process (and so everything it starts) to cores cs, checked already by
    parse_cores: a run over several sets of cores moves from one to the next."""
    global _cores
    _cores = sorted(cs)
    os.sched_setaffinity(0, _cores)
    return _cores


def cores():
    return list(_cores)


def add_cores_option(parser):
    parser.add_argument("--cores", help="the cores every engine runs on, as taskset -c takes "
                        "them (e.g. 0 or 0,1; default: every core this process may use)")


def _pin_child():
    os.sched_setaffinity(0, _cores)


# -- running and timing --------------------------------------------------------------

def child_cpu():
    """User + system CPU seconds of every child process waited for so far (and of their
    waited-for descendants)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def process_cpu(pid):
    """CPU seconds of a running process (e.g. the Kafka broker), from /proc; or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Finished:
    """A finished process: stdout, stderr, returncode, wall_seconds, and cpu_seconds
    (user + system of its process tree)."""

    def __init__(self, stdout, stderr, returncode, wall_seconds, cpu_seconds):
        self.stdout, self.stderr, self.returncode = stdout, stderr, returncode
        self.wall_seconds, self.cpu_seconds = wall_seconds, cpu_seconds

    def last_json(self):
        """The last line of stdout as JSON (the baseline's, Flink's, the raw loops')."""
        return json.loads(self.stdout.strip().splitlines()[-1])


def popen(cmd, **kw):
    """subprocess.Popen pinned to the benchmark's cores."""
    return subprocess.Popen([str(c) for c in cmd], preexec_fn=_pin_child, **kw)


def run(cmd, what="", check=True, **kw):
    """Runs cmd to completion on the benchmark's cores, output captured. Raises
    RuntimeError (with the end of stderr) when check and it fails."""
    cpu0 = child_cpu()
    start = time.perf_counter()
    p = popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    out, err = p.communicate()
    wall = time.perf_counter() - start
    cpu = child_cpu() - cpu0
    if check and p.returncode != 0:
        raise RuntimeError(f"{what or cmd[0]} failed ({p.returncode}): {err[-3000:]}")
    return Finished(out, err, p.returncode, wall, cpu)


def add_rates(result, count, unit, seconds=None):
    """Adds UNIT_per_s (count over seconds, default the result's "seconds") and
    UNIT_per_cpu_s (count over the process tree's CPU seconds) and the cores used."""
    seconds = result["seconds"] if seconds is None else seconds
    result[f"{unit}_per_s"] = count / seconds
    if result.get("cpu_seconds"):
        result[f"{unit}_per_cpu_s"] = count / result["cpu_seconds"]
    result.setdefault("cores", cores())
    return result


def best(runs, key):
    return max(runs, key=lambda r: r[key])


def interleaved(configs, repeat, run_one, limit=lambda config: None):
    """Timed rounds: round r runs every config once (so that a slow spell of the shared
    machine falls on all of them), a config at most limit(config) times when given.
    Returns ({config: [results]}, [{"round", "loadavg_before", "loadavg_after"}])."""
    runs, loads = {c: [] for c in configs}, []
    for r in range(repeat):
        before = os.getloadavg()
        for c in configs:
            n = limit(c)
            if n is not None and len(runs[c]) >= n:
                continue
            runs[c].append(run_one(c, r))
        loads.append({"round": r + 1, "loadavg_before": before,
                      "loadavg_after": os.getloadavg()})
    return runs, loads


def compare(group, engines, unit, reference="weir"):
    """The comparison of one query on the same cores: each engine's best configuration
    (its parallelism or threads are its own business), and the reference engine's rate
    over each other's, by wall time and per CPU second."""
    rate, per_cpu = f"{unit}_per_s", f"{unit}_per_cpu_s"
    bests = {}
    for engine in engines:
        rows = [r for r in group if r["engine"] == engine]
        if rows:
            b = best(rows, rate)
            bests[engine] = {"parallelism": b.get("parallelism"), rate: b[rate],
                             per_cpu: b.get(per_cpu)}
    ratios = {}
    ref = bests.get(reference)
    for engine, b in bests.items():
        if ref is None or engine == reference:
            continue
        ratios[engine] = {"wall": ref[rate] / b[rate],
                          "cpu": (ref[per_cpu] / b[per_cpu]
                                  if ref[per_cpu] and b[per_cpu] else None)}
    return {"best": bests, f"{reference}_vs": ratios}


def print_comparisons(comps, keys):
    """weir against each engine's best configuration, by wall time and per CPU second."""
    print()
    for c in comps:
        parts = []
        for engine, ratio in c["weir_vs"].items():
            cpu = f", {ratio['cpu']:.2f}x per CPU s" if ratio["cpu"] else ""
            parts.append(f"vs {engine} (p={c['best'][engine]['parallelism']}) "
                         f"{ratio['wall']:.2f}x{cpu}")
        weir = c["best"].get("weir", {})
        print(f"{' '.join(str(c[k]) for k in keys)}: weir (p={weir.get('parallelism')}) "
              + "; ".join(parts))


# -- the machine and the results file -------------------------------------------------

def machine():
    """CPU model, cores, memory, kernel and compiler of this machine."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        compiler = subprocess.run(["c++", "--version"], capture_output=True,
                                  text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        compiler = "unknown"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "kernel": platform.release(),
            "compiler": compiler}


def git_commit():
    """HEAD's short hash, with "-dirty" when the tree has uncommitted changes."""
    def git(*a):
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True)
    head = git("rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head + ("-dirty" if dirty else "")


def build_type(build_dir):
    try:
        text = (Path(build_dir) / "CMakeCache.txt").read_text()
    except OSError:
        return None
    m = re.search(r"(?m)^CMAKE_BUILD_TYPE:\w+=(\w*)$", text)
    return m.group(1) if m else None


def run_header(family, build_dir=None):
    """The provenance a results file starts with: the family, commit, date (UTC), the
    command, the machine, the 1/5/15-minute load average at start and the cores used."""
    header = {"family": family, "commit": git_commit(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
              "command": " ".join(["bench/run", *sys.argv[1:]]), "machine": machine(),
              "load_average_start": [round(x, 2) for x in os.getloadavg()], "cores": cores()}
    if build_dir is not None:
        header["build_type"] = build_type(build_dir)
    return header


HEADER_KEYS = ("family", "commit", "date", "machine", "load_average_start", "cores")


def add_results_options(parser, family):
    parser.add_argument("--results", default=str(RESULTS / f"{family}.json"),
                        help=f"the results file this run replaces (default "
                             f"bench/results/{family}.json; its chart, if any, is redrawn "
                             f"next to it)")
    parser.add_argument("--no-results", action="store_true",
                        help="write no results file")


def write_results(args, report, chart=None):
    """Writes report (a run_header plus the family's figures) to args.results unless
    --no-results, adding the load average at the end; redraws the chart next to it
    (same name, .png) with chart(report, path) when matplotlib is at hand."""
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.no_results or not args.results:
        return None
    path = Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    log(f"bench: wrote {path}")
    if chart is not None:
        png = path.with_suffix(".png")
        if have_matplotlib():
            chart(report, png)
        else:
            log(f"bench: no matplotlib here, {png} not redrawn (bench/run chart {path} {png})")
    return path


def have_matplotlib():
    return any(subprocess.run([py, "-c", "import matplotlib"], capture_output=True)
               .returncode == 0 for py in ("/usr/bin/python3", sys.executable))


# -- building and the engines' command lines ---------------------------------------------

def build(build_dir, extra_targets=()):
    """Configures and builds weir-bench (weir's command line with the benchmark kinds:
    generator, nexmark) and the baselines (Release) in build_dir."""
    targets = ["weir-bench", "weir_baseline", *extra_targets]
    log(f"bench: building {', '.join(targets)} in {build_dir} (Release)")
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", "-DWEIR_BUILD_TESTS=OFF"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build_dir), "--target", *targets,
                    "-j", str(os.cpu_count() or 2)], check=True, stdout=subprocess.DEVNULL)
    return build_dir / "weir-bench", build_dir / "weir_baseline"


def binaries(args, extra_targets=()):
    """(weir, baseline) of --build-dir, built first unless --no-build."""
    build_dir = Path(args.build_dir)
    if args.no_build:
        return build_dir / "weir-bench", build_dir / "weir_baseline"
    return build(build_dir, extra_targets)


def add_build_options(parser):
    parser.add_argument("--build-dir", default=str(DEFAULT_BUILD))
    parser.add_argument("--no-build", action="store_true", help="use the binaries in --build-dir")


def add_family_options(parser, family, func, build=True):
    """The options every benchmark family takes (--json, --cores, --results, --no-results,
    and --build-dir, --no-build when it builds), and its command."""
    if not any(a.dest == "json" for a in parser._actions):
        parser.add_argument("--json", action="store_true", help="the report on stdout too")
    add_cores_option(parser)
    add_results_options(parser, family)
    if build:
        add_build_options(parser)
    parser.set_defaults(func=func)


def build_flink():
    log("bench: building bench/flink (mvn -q package)")
    subprocess.run(["mvn", "-q", "-B", "package"], cwd=BENCH / "flink", check=True,
                   stdout=sys.stderr)
    lib = BENCH / "flink" / "target" / "lib"
    return f"{BENCH / 'flink' / 'target' / 'classes'}:{lib}/*"


def flink_cmd(classpath, main_class, *args):
    """The java command line of one bench/flink job (a local mini-cluster)."""
    return ["java", "-Xmx4g", "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.lang=ALL-UNNAMED", "-cp", classpath,
            f"weir.bench.{main_class}", *[str(a) for a in args]]


def weir_cmd(weir, pipeline, parallelism):
    return [weir, "run", pipeline, "-q", "--parallelism", str(parallelism)]


def weir_reports(stdout):
    """The blackhole sinks' reports on weir's stdout merged: {"rows"[, "digest"]}; the
    digest is the sum of the subtasks' digests mod 2^64 (order-independent)."""
    reports = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    out = {"rows": sum(r["rows"] for r in reports), "reports": reports}
    if any("digest" in r for r in reports):
        out["digest"] = "%016x" % (sum(int(r["digest"], 16) for r in reports) % 2**64)
    return out


def run_baseline(baseline, query, events, digest=False):
    """The hand-written loop. It generates only the fields its query reads: the "pruned"
    mode only (docs/benchmarks/README.md, "Like for like")."""
    p = run([baseline, query, "--events", events] + (["--digest"] if digest else []),
            what=f"baseline {query}")
    out = p.last_json()
    out.update(parallelism=1, cpu_seconds=p.cpu_seconds, wall_seconds=p.wall_seconds,
               mode="pruned")
    return out


def toml_str(s):
    return json.dumps(str(s))  # a TOML basic string: JSON's escapes are TOML's


def toml_value(v):
    """v as a TOML value: strings quoted, bools, numbers, lists, dicts as inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, dict):
        return toml_table(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return toml_str(v)


def toml_table(d):
    """d as a TOML inline table (keys quoted where TOML wants it)."""
    def key(k):
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else toml_str(k)
    return "{ " + ", ".join(f"{key(k)} = {toml_value(v)}" for k, v in d.items()) + " }"


def toml_pipeline(*tables):
    """A pipeline's TOML from (header, {key: value}) pairs in order: header "job" or
    "checkpoint" makes [job], a plural one ("source", "operator", "sink") [[source]]."""
    out = []
    for header, keys in tables:
        out.append(f"[{header}]" if header in ("job", "checkpoint") else f"[[{header}]]")
        out += [f"{k} = {toml_value(v)}" for k, v in keys.items()]
        out.append("")
    return "\n".join(out)


def generate_bid_file(weir, events, data_dir, fmt="jsonl"):
    """The bids of N Nexmark events as JSONL or CSV (with a header line), written by weir's
    nexmark source and file sink; cached in data_dir. Returns (path, bids)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"bids-{events}.{fmt}"
    meta = data_dir / f"bids-{events}.{fmt}.json"
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())["bids"]
    tmp = data_dir / f"bids-{events}.{fmt}.tmp{os.getpid()}"
    text = (f'[job]\nname = "nexmark-bids-{fmt}"\nstatus_interval = "0s"\n\n'
            f'[[source]]\nname = "bids"\ntype = "nexmark"\nevents = {events}\nstream = "bid"\n\n'
            f'[[sink]]\nname = "out"\ninput = "bids"\ntype = "file"\npath = {toml_str(tmp)}\n'
            f'format = "{fmt}"\n')
    toml = data_dir / f"generate-bids-{fmt}.{os.getpid()}.toml"
    toml.write_text(text)
    log(f"bench: writing the bids of {events:,} Nexmark events to {path}")
    try:
        run(weir_cmd(weir, toml, 1), what=f"weir (bids to {fmt})")
    finally:
        toml.unlink(missing_ok=True)
    with open(tmp, "rb") as f:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
    bids = lines - (1 if fmt == "csv" else 0)
    os.replace(tmp, path)
    meta.write_text(json.dumps({"events": events, "bids": bids, "format": fmt,
                                "bytes": path.stat().st_size}))
    return path, bids


# -- result checks -------------------------------------------------------------------

def check_result(got, expected):
    """"ok", or what differs: rows always, the digest where both have one."""
    if got["rows"] == expected["rows"] and (
            "digest" not in got or got["digest"] == expected.get("digest")):
        return "ok" if "digest" in got else "ok (rows)"
    return (f"MISMATCH rows {got['rows']} vs {expected['rows']}, digest "
            f"{got.get('digest')} vs {expected.get('digest')}")


class Checks:
    """The tally of a ctest check command: each case logged with its verdict."""

    def __init__(self):
        self.passed = self.failed = 0

    def expect_rows(self, what, expected):
        """False (and says so) when the baseline gave no rows: a check would prove nothing."""
        if expected["rows"] == 0:
            log(f"{what}: the baseline produced no rows; the check would prove nothing")
            return False
        return True

    def case(self, what, got, expected):
        verdict = check_result(got, expected)
        ok = verdict.startswith("ok")
        self.passed, self.failed = self.passed + ok, self.failed + (not ok)
        log(f"{what}: rows={got['rows']} digest={got.get('digest')}, expected "
            f"rows={expected['rows']} digest={expected.get('digest')}: {verdict}")
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
