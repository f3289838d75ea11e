#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark runner's own guarantees (ctest bench_runner, label bench-check):

- pinning: a child started through weirbench.common.run, and a process that child
  starts, run on exactly the cores asked for (os.sched_getaffinity in a tiny Python
  child), and `bench/run --cores C` applies C to the engines it starts (here a stand-in
  baseline that records its affinity);
- CPU time: run() reports the child's user + system seconds (a child that burns at
  least 0.3 s of CPU is reported at >= 0.3 s), and its wall time;
- results files: what write_results writes carries the commit, date, machine (CPU
  model, cores, memory), load average at start and cores, and every results file in
  bench/results carries the same fields (per part for the checkpoint family);
- charts: `bench/run charts --out DIR` draws a PNG for every results file in
  bench/results, whose caption names its commit, date and machine;
- sets of cores (`bench/run ingest --core-sets '0;0,1'`): engines are compared, and
  2 threads set against 1, within one set of cores only;
- the cost of a record (`bench/run cost`): callgrind_annotate's inclusive counts are
  split into stages that add up to the total, each function counted once, the
  exchange's count taken out of the local phase's that calls it.
"""

import datetime
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))
from weirbench import charts, common, cost, ingest  # noqa: E402

AFFINITY = "import os; print(sorted(os.sched_getaffinity(0)))"


class PinnedTest(unittest.TestCase):
    """Each test may pin the runner to other cores; they are all given back after it."""

    def setUp(self):
        self.allowed = sorted(os.sched_getaffinity(0))

    def tearDown(self):
        os.sched_setaffinity(0, self.allowed)
        common.set_cores(None)

    def pin_other(self):
        """Pins the runner to a core set other than all it may use (the last core alone);
        returns that set."""
        asked = self.allowed[-1:]
        common.set_cores(",".join(map(str, asked)))
        return asked


class Pinning(PinnedTest):

    def test_child_and_grandchild_run_on_the_cores_asked_for(self):
        asked = self.pin_other()
        child = common.run([sys.executable, "-c", AFFINITY], what="affinity child")
        self.assertEqual(json.loads(child.stdout), asked)
        grandchild = common.run([sys.executable, "-c",
                                 f"import subprocess, sys; subprocess.run([sys.executable, "
                                 f"'-c', {AFFINITY!r}])"], what="affinity grandchild")
        self.assertEqual(json.loads(grandchild.stdout), asked)
        if len(self.allowed) > 1:
            self.assertNotEqual(asked, self.allowed)  # the pinning narrowed something

    def test_a_child_is_pinned_even_if_the_runner_is_not(self):
        asked = self.pin_other()
        os.sched_setaffinity(0, self.allowed)  # the runner widened again: children still pinned
        child = common.run([sys.executable, "-c", AFFINITY], what="affinity child")
        self.assertEqual(json.loads(child.stdout), asked)

    def test_bad_core_lists_are_refused(self):
        for spec in ("x", "0,,1", str(max(os.sched_getaffinity(0)) + 1000)):
            with self.assertRaises(SystemExit, msg=spec):
                common.parse_cores(spec)
        self.assertEqual(common.parse_cores("0"), [0])

    def test_bench_run_cores_applies_to_the_engines(self):
        asked = self.allowed[-1:]
        with tempfile.TemporaryDirectory() as tmp:
            seen = Path(tmp) / "affinity.json"
            fake = Path(tmp) / "baseline"
            # A stand-in baseline: records its affinity, prints the stored vectors.
            vectors = BENCH / "vectors" / "nexmark-first-1000.txt"
            fake.write_text(f"#!{sys.executable}\nimport os, sys\n"
                            f"open({str(seen)!r}, 'w').write(str(sorted("
                            f"os.sched_getaffinity(0))))\n"
                            f"sys.stdout.write(open({str(vectors)!r}).read())\n")
            fake.chmod(0o755)
            p = subprocess.run([sys.executable, str(BENCH / "run"), "vectors", "nexmark",
                                "--verify", "--baseline", str(fake),
                                "--cores", ",".join(map(str, asked))],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(seen.read_text()), asked)


class CpuTime(unittest.TestCase):
    def test_run_reports_the_childs_cpu_seconds(self):
        burn = ("import time\nt = time.process_time()\n"
                "while time.process_time() - t < 0.3:\n    pass\n")
        p = common.run([sys.executable, "-c", burn], what="burner")
        self.assertGreaterEqual(p.cpu_seconds, 0.3)
        self.assertGreaterEqual(p.wall_seconds, 0.3 / len(common.cores()))
        r = common.add_rates({"seconds": p.wall_seconds, "cpu_seconds": p.cpu_seconds},
                             1000, "records")
        self.assertAlmostEqual(r["records_per_cpu_s"], 1000 / p.cpu_seconds)
        self.assertEqual(r["cores"], common.cores())


def check_header(test, h, where):
    for key in common.HEADER_KEYS:
        test.assertIn(key, h, f"{where}: no {key}")
    test.assertRegex(h["commit"], r"^[0-9a-f]{7,}(-dirty)?$", where)
    test.assertRegex(h["date"], r"^\d{4}-\d{2}-\d{2}", where)
    for key in ("cpu", "cores", "memory"):
        test.assertTrue(h["machine"].get(key), f"{where}: machine has no {key}")
    load = h["load_average_start"]
    if load is None:
        test.assertTrue(h.get("load_note"), f"{where}: no load average and no note why")
    else:
        test.assertTrue(load and all(isinstance(x, (int, float)) for x in load), where)
    test.assertTrue(h["cores"] and all(isinstance(c, int) for c in h["cores"]), where)


class ResultsFiles(PinnedTest):
    def test_write_results_carries_the_run_header(self):
        asked = self.pin_other()
        with tempfile.TemporaryDirectory() as tmp:
            args = SimpleNamespace(results=str(Path(tmp) / "x.json"), no_results=False)
            common.write_results(args, {**common.run_header("x"), "results": []})
            got = json.loads(Path(args.results).read_text())
        check_header(self, got, "written")
        self.assertEqual(got["family"], "x")
        self.assertEqual(got["cores"], asked)
        self.assertEqual(len(got["load_average_start"]), 3)
        head = subprocess.run(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        self.assertTrue(got["commit"].startswith(head), (got["commit"], head))
        date = datetime.datetime.strptime(got["date"], "%Y-%m-%dT%H:%MZ")
        now = datetime.datetime.utcnow()
        self.assertLess(abs((now - date).total_seconds()), 600)

    def test_every_results_file_carries_the_run_header(self):
        files = sorted((BENCH / "results").glob("*.json"))
        self.assertTrue(files)
        for f in files:
            report = json.loads(f.read_text())
            self.assertEqual(report["family"], f.stem, f)
            for where, h in ([(f"{f.name} {k}", p) for k, p in report["parts"].items()]
                             if "parts" in report else [(f.name, report)]):
                check_header(self, h, where)


class Charts(unittest.TestCase):

    def test_bench_run_charts_draws_every_results_file(self):
        families = sorted(f.stem for f in (BENCH / "results").glob("*.json"))
        self.assertEqual(sorted(charts.CHARTS), families)
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run([sys.executable, str(BENCH / "run"), "charts", "--out", out],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            for family in families:
                png = (Path(out) / f"{family}.png").read_bytes()
                self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n", family)
                width, height = struct.unpack(">II", png[16:24])
                self.assertGreaterEqual((width, height), (1000, 500), family)

    def test_a_missing_results_file_fails_the_others_are_drawn(self):
        with tempfile.TemporaryDirectory() as results, tempfile.TemporaryDirectory() as out:
            shutil.copy(BENCH / "results" / "latency.json", results)
            done = subprocess.run([sys.executable, str(BENCH / "run"), "charts",
                                   "--results-dir", results, "--out", out],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 1)
            self.assertIn("nexmark.json missing", done.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["latency.png"])

    def test_every_caption_names_commit_date_and_machine(self):
        for f in sorted((BENCH / "results").glob("*.json")):
            report = json.loads(f.read_text())
            for h in report["parts"].values() if "parts" in report else [report]:
                text = charts.caption(h)
                for needed in (f"commit {h['commit']}", h["date"], h["machine"]["cpu"]):
                    self.assertIn(needed, text, f.name)


def ingest_row(engine, p, cs, rate, cpu):
    return {"engine": engine, "parallelism": p, "cores": cs, "format": "jsonl",
            "query": "tumble", "records_per_s": rate, "records_per_cpu_s": rate / cpu}


class IngestCoreSets(unittest.TestCase):
    def test_comparisons_and_scaling_stay_within_a_set_of_cores(self):
        rows = [ingest_row("weir", 1, [0], 1.0e6, 1.0), ingest_row("duckdb", 1, [0], 0.5e6, 1.0),
                ingest_row("weir", 1, [0, 1], 1.2e6, 1.0),
                ingest_row("weir", 2, [0, 1], 1.8e6, 1.0),
                ingest_row("duckdb", 2, [0, 1], 2.0e6, 1.0)]
        comps = {c["cores"]: c for c in ingest.comparisons(rows)}
        self.assertEqual(sorted(comps), ["0", "0,1"])
        self.assertAlmostEqual(comps["0"]["weir_vs"]["duckdb"]["wall"], 2.0)
        self.assertAlmostEqual(comps["0,1"]["weir_vs"]["duckdb"]["wall"], 0.9)
        self.assertEqual(comps["0,1"]["best"]["weir"]["parallelism"], 2)
        ingest.add_scaling(rows)
        self.assertAlmostEqual(rows[3]["scaling_2_vs_1"], 1.5)  # over p=1 on cores 0,1
        self.assertAlmostEqual(rows[4].get("scaling_2_vs_1", 0), 0)  # no DuckDB 1 there


ANNOTATE = """\
1,000 (100.0%)  PROGRAM TOTALS
  950 (95.00%)  ???:caf::scheduler::worker<caf::policy::work_stealing>::run() [libcaf_core.so]
  600 (60.00%)  /s/file_source_reader.cpp:weir::format::x::file_source_reader::poll_next(unsigned long) [weir]
  450 (45.00%)  /s/jsonl_decoder.cpp:weir::format::x::jsonl_decoder::decode_many(std::string_view) [weir]
   70 ( 7.00%)  /usr/include/simdjson.h:weir::format::x::file_source_reader::poll_next(unsigned long)
  100 (10.00%)  /s/local_window_aggregate.cpp:weir::window::local_window_aggregate::process_batch(x) [weir]
   50 ( 5.00%)  /s/local_window_aggregate.cpp:weir::window::local_window_aggregate::process_watermark(long) [weir]
   20 ( 2.00%)  /s/record_writer.cpp:weir::runtime::record_writer::write(x) [weir]
   80 ( 8.00%)  /s/global_window_aggregate.cpp:weir::window::global_window_aggregate::process_batch(x) [weir]
   60 ( 6.00%)  /s/sliced_window_operator.cpp:weir::window::sliced_window_operator::process_watermark(long) [weir]
   15 ( 1.50%)  /s/key_group.cpp:weir::assign_key_group(std::string_view, unsigned long) [weir]
"""


class CostOfARecord(unittest.TestCase):
    def test_stages_add_up_and_count_each_function_once(self):
        counts = cost.inclusive_counts(ANNOTATE)
        self.assertEqual(counts["???:caf::scheduler::worker<caf::policy::work_stealing>::run() "
                                "[libcaf_core.so]"], 950)
        rows = dict(cost.stages(counts, 1000))
        names = [name for name, _ in cost.STAGES]
        self.assertEqual(rows[names[0]], 600)  # the reader with its decoder, once
        self.assertEqual(rows[names[1]], 130)  # local phase less the exchange it calls
        self.assertEqual(rows[names[2]], 20)
        self.assertEqual(rows[names[3]], 80)
        self.assertEqual(rows[names[4]], 60)
        self.assertEqual(sum(rows.values()), 1000)
        self.assertEqual(rows["start-up and shutdown (outside the subtask threads)"], 50)


if __name__ == "__main__":
    unittest.main(verbosity=2)
