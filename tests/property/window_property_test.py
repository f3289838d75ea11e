# SPDX-License-Identifier: Apache-2.0
"""Property test: window results do not depend on parallelism or batch size.

Generates a random keyed input (seeded: the seed is printed, and WEIR_SEED
replays it) and runs one pipeline holding a window operator of every kind
(tumbling with an offset, sliding, session, global with a count trigger,
tumbling and sliding count windows; processing-time windows with the replay
clock) through the real `weir` binary:

1. records out of order only within the watermark bound: the sorted output
   of every window must be the same for parallelism 1, 2 and 4 and batch
   sizes 1, 7 and 1024;
2. some records beyond the bound (late): the sorted main and late outputs
   must be the same for parallelism 1, 2 and 4 at batch size 1.

Processing-time windows depend on when the replay clock advances relative to
the records, which batching changes, so they join only the second property
(fixed batch size); --no-processing-time leaves them out.
"""
import json
import random
import shutil

from weirtest import run

BOUND_MS = 2000
KEYS = 6
RECORDS = 400

# name -> (window, trigger or None, allowed_lateness or None, has late output)
WINDOWS = {
    "tumbling": ('{ type = "tumbling", size = "5s", offset = "-1s" }', None, "3s", True),
    "sliding": ('{ type = "sliding", size = "6s", slide = "2s" }', None, "3s", True),
    # Lateness 0: with lateness a session that fired may still be merged into
    # by an on-time record, and whether it fired first depends on batching.
    "session": ('{ type = "session", gap = "1500ms" }', None, None, True),
    "global_count": ('{ type = "global" }', '{ type = "count", count = 5 }', None, False),
    "count": ('{ type = "count", size = 4 }', None, None, False),
    "count_sliding": ('{ type = "count", size = 5, slide = 2 }', None, None, False),
}
PROCESSING_WINDOWS = {
    "proc_tumbling": ('{ type = "tumbling", size = "3s", time = "processing" }', None, None, False),
    "proc_sliding": ('{ type = "sliding", size = "4s", slide = "1s", time = "processing" }',
                     None, None, False),
}
AGGREGATES = ('{ n = "count(*)", total = "sum(value)", low = "min(value)", '
              'high = "max(value)", first = "first(value)", last = "last(value)", '
              'distinct = "count_distinct(value)", folded = "reduce(acc * 31 + value, 7)" }')


def generate(rng, late):
    """Records in delivery order; with `late`, about 8% are beyond the bound."""
    out = []
    cur = 0
    max_seen = None
    proc = 1_000
    for i in range(RECORDS):
        cur += rng.randint(0, 250)
        ts = cur - rng.randint(0, BOUND_MS)
        if late and max_seen is not None and rng.random() < 0.08:
            ts = max_seen - BOUND_MS - rng.randint(1, 12_000)
        elif max_seen is not None:
            ts = max(ts, max_seen - BOUND_MS)  # within the bound: never late
        max_seen = ts if max_seen is None else max(max_seen, ts)
        proc += rng.randint(0, 120)
        out.append({"id": f"e{i}", "key": f"k{rng.randrange(KEYS)}", "ts": ts,
                    "value": rng.randint(-50, 100), "proc_time": proc})
    return out


def pipeline(input_path, windows, replay_clock):
    lines = [
        "[job]",
        'name = "property"',
        'status_interval = "0s"',
        "",
        "[[source]]",
        'name = "input"',
        'type = "file"',
        f'path = "{input_path}"',
        'format = "jsonl"',
        'schema = { id = "string", key = "string", ts = "timestamp", value = "int64", '
        'proc_time = "int64" }',
        'event_time = { field = "ts" }',
        f'watermark = {{ max_out_of_orderness = "{BOUND_MS}ms" }}',
    ]
    if replay_clock:
        lines.append('processing_time = { field = "proc_time" }')
    for name, (window, trigger, lateness, late_output) in windows.items():
        lines += ["", "[[operator]]", f'name = "{name}"', 'type = "window"', 'input = "input"',
                  'key_by = ["key"]', f"window = {window}", f"aggregate = {AGGREGATES}"]
        if trigger:
            lines.append(f"trigger = {trigger}")
        if lateness:
            lines.append(f'allowed_lateness = "{lateness}"')
        if late_output:
            lines.append(f'late_output = "{name}_late"')
        sinks = [name] + ([f"{name}_late"] if late_output else [])
        for s in sinks:
            lines += ["", "[[sink]]", f'name = "{s}_sink"', f'input = "{s}"', 'type = "file"',
                      f'path = "out/{s}.jsonl"']
    return "\n".join(lines) + "\n"


def run_job(weir, work, toml_text, parallelism, batch_size):
    """Runs weir; returns {output file: sorted list of JSON lines}."""
    run_dir = work / f"p{parallelism}-b{batch_size}"
    run_dir.mkdir()
    (run_dir / "pipeline.toml").write_text(toml_text)
    run([weir, "run", "pipeline.toml", "--quiet", "--parallelism", parallelism,
         "--batch-size", batch_size], cwd=run_dir, timeout=120)
    out = {}
    for f in sorted((run_dir / "out").glob("*.jsonl")):
        rows = [json.dumps(json.loads(line), sort_keys=True)
                for line in f.read_text().splitlines() if line.strip()]
        out[f.name] = sorted(rows)
    shutil.rmtree(run_dir)
    return out


def first_difference(a, b):
    for name in sorted(set(a) | set(b)):
        ra, rb = a.get(name), b.get(name)
        if ra is None or rb is None:
            return f"{name}: produced by only one run"
        if ra != rb:
            only_a = sorted(set(ra) - set(rb))[:3]
            only_b = sorted(set(rb) - set(ra))[:3]
            return (f"{name}: {len(ra)} vs {len(rb)} rows; only in first: {only_a}; "
                    f"only in second: {only_b}")
    return None


def disagreements(label, results):
    """All runs in `results` ({(p, b): outputs}) must agree; returns failures."""
    failures = []
    (ref_key, ref), *rest = list(results.items())
    for key, got in rest:
        diff = first_difference(ref, got)
        if diff:
            failures.append(f"{label}: parallelism/batch {ref_key} vs {key}: {diff}")
    return failures


def test_window_parallelism_and_batch_size(weir, work, seed, pytestconfig):
    no_processing_time = pytestconfig.getoption("no_processing_time")
    rng = random.Random(seed)
    failures = []
    # 1. Within the bound: parallelism and batch size do not matter.
    inbound = work / "inbound.jsonl"
    inbound.write_text("".join(json.dumps(r) + "\n" for r in generate(rng, late=False)))
    toml_text = pipeline(inbound, WINDOWS, replay_clock=False)
    results = {(par, bs): run_job(weir, work, toml_text, par, bs)
               for par in (1, 2, 4) for bs in (1, 7, 1024)}
    first = next(iter(results.values()))
    for name in WINDOWS:
        if not first.get(f"{name}.jsonl"):
            failures.append(f"within the bound: window {name} produced nothing")
    for name, rows in first.items():
        if name.endswith("_late.jsonl") and rows:
            failures.append(f"within the bound: {name} has {len(rows)} late rows")
    failures += disagreements("within the bound", results)

    # 2. Late records: parallelism does not matter at a fixed batch size.
    late = work / "late.jsonl"
    late.write_text("".join(json.dumps(r) + "\n" for r in generate(rng, late=True)))
    windows = dict(WINDOWS)
    if not no_processing_time:
        windows.update(PROCESSING_WINDOWS)
    toml_text = pipeline(late, windows, replay_clock=not no_processing_time)
    results = {(par, 1): run_job(weir, work, toml_text, par, 1) for par in (1, 2, 4)}
    first = next(iter(results.values()))
    if not any(first.get(f"{n}_late.jsonl") for n in WINDOWS):
        failures.append("with late records: no late output at all")
    for name in windows:
        if not first.get(f"{name}.jsonl"):
            failures.append(f"with late records: window {name} produced nothing")
    failures += disagreements("with late records", results)
    assert not failures, "\n".join(failures) + f"\n(seed {seed})"
