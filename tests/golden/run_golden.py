# SPDX-License-Identifier: Apache-2.0
"""The golden end-to-end cases through the real `weir` binary: test_golden,
one case a test (--case DIR; without it, the folders of cases/ and errors/).

A success case is a folder with pipeline.toml whose sinks write out/<name>.jsonl;
every file expected*.jsonl in the case folder must be produced under the
same name and match under the cases' README conventions (time-window rows
sorted by window_end then key, repeated firings of a window kept in emission
order; count/global rows sorted by key then fire; late side output in emission
order; floats compared with 1e-9 relative tolerance).

An error case is a folder with pipeline.toml and expected_error.txt: weir must
exit with code 2 and print exactly that text (the path as given, relative to
the case folder) on stderr.

Every case keeps its input and expected*.jsonl in its folder. The pipeline
runs with its working directory in a fresh temporary folder next to a link
to the case folder named case, so the TOML reads "../case/input.jsonl" and
writes "out/...".

With --parallelism N the job runs with `--parallelism N` (the join cases
run at 1 and 2). An output the pipeline writes without an expected file
must be empty (a late stream of a case without late records).
With --unordered rows that are not time-window or count rows are compared as
a multiset (sorted), for operators whose emission order across subtasks is free.

With --batch-size N the job runs with `--batch-size N` (a case registered
once per batch size checks that its output, dead letters included, does not
depend on it). A case folder with expected_bad_records.txt also runs without
--quiet and checks that the summary's "bad records" count is that number.
"""
import json
import math
import os
import pathlib
import re

from weirtest import read_jsonl, run

HERE = pathlib.Path(__file__).resolve().parent


def parallel_cases():
    """The cases CMakeLists.txt runs at parallelism 1 and 2 with --unordered
    (WEIR_GOLDEN_PARALLEL_CASES): their rows are a multiset."""
    text = "\n".join(line.split("#")[0] for line in
                     (HERE / "CMakeLists.txt").read_text().splitlines())
    return set(re.search(r"set\(WEIR_GOLDEN_PARALLEL_CASES(.*?)\)", text, re.S).group(1).split())


def pytest_generate_tests(metafunc):
    if "golden_case" in metafunc.fixturenames:
        case = metafunc.config.getoption("case")
        # Without --case every case (the parallel ones compared unordered),
        # but errors/not-built-kind: that one holds only in a tree built
        # without connectors (CTest registers it there).
        cases = [pathlib.Path(case).resolve()] if case else sorted(
            d for kind in ("cases", "errors") for d in (HERE / kind).iterdir()
            if (d / "pipeline.toml").exists() and d.name != "not-built-kind")
        metafunc.parametrize("golden_case", cases, ids=[c.name for c in cases])


def test_golden(weir, work, golden_case, pytestconfig):
    case_dir = golden_case
    os.symlink(case_dir, work / "case")
    run_dir = work / "work"
    run_dir.mkdir()
    error_file = case_dir / "expected_error.txt"
    if error_file.exists():
        proc = run([weir, "validate", "pipeline.toml"], cwd=case_dir, timeout=60, expect=2)
        want = error_file.read_text()
        assert proc.stderr == want, (
            "stderr differs from expected_error.txt\n--- got\n" + proc.stderr
            + "--- expected\n" + want)
        return

    bad_count_file = case_dir / "expected_bad_records.txt"
    cmd = [weir, "run", case_dir / "pipeline.toml"]
    if not bad_count_file.exists():
        cmd.append("--quiet")
    if pytestconfig.getoption("batch_size"):
        cmd += ["--batch-size", pytestconfig.getoption("batch_size")]
    if pytestconfig.getoption("parallelism"):
        cmd += ["--parallelism", pytestconfig.getoption("parallelism")]
    proc = run(cmd, cwd=run_dir, timeout=120)
    problems = []
    if bad_count_file.exists():
        want_bad = int(bad_count_file.read_text().strip())
        m = re.search(r"bad records\s+([\d,]+)", proc.stderr)
        if not m:
            problems.append("the summary has no 'bad records' line:\n" + proc.stderr)
        elif int(m.group(1).replace(",", "")) != want_bad:
            problems.append(f"the summary counts {m.group(1)} bad records, expected {want_bad}")
    expected = sorted(case_dir.glob("expected*.jsonl"))
    assert expected, f"no expected*.jsonl in {case_dir}"
    unordered = pytestconfig.getoption("unordered") or (
        not pytestconfig.getoption("case") and case_dir.name in parallel_cases())
    for exp in expected:
        out = run_dir / "out" / exp.name
        if not out.exists():
            problems.append(f"{exp.name}: the pipeline wrote no out/{exp.name}")
            continue
        problems += compare(exp.name, read_jsonl(out), read_jsonl(exp), unordered)
    produced = {p.name for p in (run_dir / "out").glob("*.jsonl")}
    for extra in sorted(produced - {e.name for e in expected}):
        # An output without an expected file must stay empty (a late
        # stream of a case that has no late records).
        if read_jsonl(run_dir / "out" / extra):
            problems.append(f"out/{extra} has no expected file in {case_dir} "
                            "and is not empty")
    assert not problems, "\n".join(problems)


def same_value(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def same_row(a, b):
    return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)


def is_join_row(row):
    return any(k.startswith("left") for k in row) and any(k.startswith("right") for k in row)


def canonical_order(rows):
    """Stable sort per the cases README; keeps emission order of repeats.

    Join rows (fields named left* and right*) are a multiset: one row per
    joined pair, in no defined order within a window or timestamp (at
    parallelism 2 the rows of one side may reach the join in another order).
    """
    if rows and is_join_row(rows[0]):
        return sorted(rows, key=lambda r: (r.get("window_end", r.get("ts", 0)),
                                           json.dumps(r, sort_keys=True)))
    if rows and "window_end" in rows[0]:
        return sorted(rows, key=lambda r: (r["window_end"], json.dumps(r.get("key"))))
    if rows and "match_end" in rows[0]:
        # Pattern matches and timeouts: by first event, then the whole row.
        return sorted(rows, key=lambda r: (r["match_start"], json.dumps(r, sort_keys=True)))
    if rows and "fire" in rows[0]:
        return sorted(rows, key=lambda r: (json.dumps(r.get("key")), r["fire"]))
    return rows


def compare(name, got, want, unordered=False):
    problems = []
    if unordered and not (want and ("window_end" in want[0] or "fire" in want[0])):
        def key(r):
            return json.dumps(r, sort_keys=True)
        g, w = sorted(got, key=key), sorted(want, key=key)
    elif name.startswith("expected_late"):
        g, w = got, want  # emission order
    else:
        g, w = canonical_order(got), canonical_order(want)
    if len(g) != len(w):
        problems.append(f"{name}: {len(g)} rows, expected {len(w)}")
    for i, (a, b) in enumerate(zip(g, w)):
        if not same_row(a, b):
            problems.append(f"{name} row {i + 1}: got {json.dumps(a)}\n    expected {json.dumps(b)}")
    return problems
