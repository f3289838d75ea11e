# SPDX-License-Identifier: Apache-2.0
"""The cost of a record (`bench/run cost`): one ingest query of weir run under callgrind,
its instructions split by stage of the record's path (decode, hand-over, key hashing
and partitioning, local pre-aggregation, window state access, window firing, output),
and a timed run pinned to the same cores to turn instructions into nanoseconds.

Stages are callgrind's inclusive counts of the functions that do them
(docs/internals/cost-of-a-record.md lists them); "runtime" is what the subtask
threads spend outside every stage (mailboxes, scheduling, watermark and batch
bookkeeping), "start-up" what the process spends outside the subtask threads
(loading, planning, shutdown). Nanoseconds assume one cost per instruction across
stages, which holds only roughly: read the instruction counts as exact and the
nanoseconds as a guide; `perf record` (the doc's commands) gives the time shares."""

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .common import (add_cores_option, cores, generate_bid_file, log, run, weir_cmd,
                     weir_reports)
from .ingest import DEFAULT_INGEST_DATA, INGEST_QUERIES, ingest_pipeline_text

# (stage, function-name patterns whose inclusive counts add up to it). The patterns
# match callgrind_annotate's "file:function" names; each is counted once, at its
# largest inclusive count (the function itself, not a fragment inlined elsewhere).
STAGES = [
    ("decode (read, split lines, parse, build columns)",
     [r"file_source_reader::poll_next\("]),
    ("local pre-aggregation (chained after the source)",
     [r"local_window_aggregate::process_batch\(", r"local_window_aggregate::process_watermark\("]),
    ("hand-over: key-by exchange (partitioning, copies)",
     [r"record_writer::write\("]),
    ("window: state access and aggregation per row",
     [r"global_window_aggregate::process_batch\(", r"sliced_window_operator::process_batch\(",
      r"per_window_operator::process_batch\("]),
    ("window: firing (emits the results)",
     [r"sliced_window_operator::process_watermark\(", r"per_window_operator::process_watermark\("]),
]
# Parts of the stages above, shown under them (not added): the keyed operators encode
# and hash each row's key themselves, in their own subtask, whatever the exchange did.
WITHIN = [
    ("  of which: key encoding and key-group hashing",
     [r"weir::encode_key\(", r"weir::assign_key_group\("]),
    ("  of which: simdjson stage 1 (structural index)", [r"dom_parser_implementation::stage1\("]),
]
WORKERS = r"caf::scheduler::worker<caf::policy::work_stealing>::run\("
LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$")


def inclusive_counts(annotate_text):
    """{function text: largest inclusive Ir} from callgrind_annotate --inclusive=yes."""
    out = {}
    for line in annotate_text.splitlines():
        m = LINE.match(line)
        if m:
            name = m.group(2)
            out[name] = max(out.get(name, 0), int(m.group(1).replace(",", "")))
    return out


def count(counts, pattern):
    rx = re.compile(pattern)
    return max((v for k, v in counts.items() if rx.search(k)), default=0)


def stages(counts, total):
    """[(stage, instructions)] of one run's inclusive counts, runtime and start-up last."""
    rows = [(name, sum(count(counts, p) for p in pats)) for name, pats in STAGES]
    # The local phase hands its partial rows to the key-by exchange from within its
    # own calls: the exchange's count is inside the local phase's, once.
    if rows[1][1]:
        rows[1] = (rows[1][0], max(rows[1][1] - rows[2][1], 0))
    workers = count(counts, WORKERS)
    staged = sum(v for _, v in rows)
    rows.append(("runtime: mailboxes, scheduling, watermarks, batches", max(workers - staged, 0)))
    rows.append(("start-up and shutdown (outside the subtask threads)", max(total - workers, 0)))
    return rows


def callgrind(weir, toml, p, tmp):
    out = Path(tmp) / "callgrind.out"
    proc = run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *weir_cmd(weir, toml, p)],
               what="weir under callgrind")
    total = int(re.search(r"refs:\s+([\d,]+)", proc.stderr).group(1).replace(",", ""))
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, check=True).stdout
    return total, inclusive_counts(text), weir_reports(proc.stdout)["rows"]


def cmd_cost(args):
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        raise SystemExit("bench/run cost needs valgrind (apt-get install valgrind)")
    weir = Path(args.weir)
    data_dir = Path(args.data_dir)
    report = {"query": args.query, "format": args.format, "parallelism": args.parallelism,
              "cores": cores()}
    with tempfile.TemporaryDirectory(prefix="weir-cost-") as tmp:
        small, small_n = generate_bid_file(weir, args.callgrind_events, data_dir, args.format)
        big, big_n = generate_bid_file(weir, args.events, data_dir, args.format)
        toml_small = Path(tmp) / "small.toml"
        toml_small.write_text(ingest_pipeline_text(args.query, small, args.format))
        toml_big = Path(tmp) / "big.toml"
        toml_big.write_text(ingest_pipeline_text(args.query, big, args.format))
        total, counts, rows = callgrind(weir, toml_small, args.parallelism, tmp)
        timed = [run(weir_cmd(weir, toml_big, args.parallelism), what="weir (timed)")
                 for _ in range(args.repeat)]
    cpu = min(t.cpu_seconds for t in timed)
    wall = min(t.wall_seconds for t in timed)
    ns_per_record = cpu * 1e9 / big_n
    per_record = total / small_n
    report.update(records_callgrind=small_n, instructions_per_record=per_record,
                  records_timed=big_n, cpu_seconds=cpu, wall_seconds=wall,
                  cpu_ns_per_record=ns_per_record, rows_callgrind=rows, stages=[])
    print(f"{args.query} {args.format} p={args.parallelism} on cores "
          f"{','.join(map(str, cores()))}: {per_record:,.0f} instructions/record "
          f"(callgrind, {small_n:,} records); {ns_per_record:,.0f} ns CPU/record "
          f"({big_n:,} records, best of {args.repeat}, wall {wall:.2f} s, CPU {cpu:.2f} s)")
    print(f"{'stage':56} {'instr/rec':>10} {'share':>6} {'~ns/rec':>8}")
    for name, v in stages(counts, total):
        share = v / total
        report["stages"].append({"stage": name, "instructions_per_record": v / small_n,
                                 "share": share, "ns_per_record": share * ns_per_record})
        print(f"{name:56} {v / small_n:>10,.0f} {share:>6.1%} {share * ns_per_record:>8,.0f}")
    for name, pats in WITHIN:
        v = sum(count(counts, p) for p in pats)
        report["stages"].append({"stage": name.strip(), "within": True,
                                 "instructions_per_record": v / small_n})
        print(f"{name:56} {v / small_n:>10,.0f} {v / total:>6.1%} "
              f"{v / total * ns_per_record:>8,.0f}")
    if args.json:
        print(json.dumps(report, indent=1))
    log("bench: the start-up row is per run, spread here over the callgrind run's records")
    return 0


def add_parser(sub):
    c = sub.add_parser("cost", help="the cost of a record by stage (callgrind, pinned timing)")
    c.add_argument("--weir", required=True, help="the weir (or weir-bench) binary")
    c.add_argument("--query", default="tumble", choices=INGEST_QUERIES)
    c.add_argument("--format", default="jsonl", choices=["jsonl", "csv"])
    c.add_argument("--parallelism", type=int, default=1)
    c.add_argument("--callgrind-events", type=int, default=300_000,
                   help="Nexmark events whose bids the callgrind run reads (default 300k)")
    c.add_argument("--events", type=int, default=3_000_000,
                   help="Nexmark events whose bids the timed runs read (default 3M)")
    c.add_argument("--repeat", type=int, default=3, help="timed runs; the least CPU is kept")
    c.add_argument("--data-dir", default=str(DEFAULT_INGEST_DATA))
    c.add_argument("--json", action="store_true")
    add_cores_option(c)
    c.set_defaults(func=cmd_cost)
