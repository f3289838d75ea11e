#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""DuckDB's side of the ingest benchmark (bench/run ingest; run by the venv's Python).

  duckdb_query.py QUERY --file PATH --format jsonl|csv --threads T [--digest] [--sql]

Runs one ingest query as SQL over read_json / read_csv of the bids file and prints one JSON
line {"engine":"duckdb","query":..,"threads":T,"seconds":S,"rows":N[,"digest":D]}.

- Timed runs (no --digest): the query is wrapped as
  SELECT count(*), bit_xor(hash(every result column)) FROM (query), so DuckDB reads and
  computes every column of the result (it would otherwise prune the columns nobody reads),
  and nothing is copied to Python. seconds is the query's execution, in-process (the Python
  start-up and `import duckdb` are left out, in DuckDB's favour, as Flink's mini-cluster
  start-up is).
- --digest: the result rows are fetched and hashed as weir's blackhole sink does
  (weir::row_hasher, include/weir/blackhole/sink.hpp), vectorised with numpy:
  the digest is the sum of the rows' hashes mod 2^64, so it ignores row order.
"""

import argparse
import json
import sys
import time

import duckdb
import numpy as np

COLUMNS = ("{'auction': 'BIGINT', 'bidder': 'BIGINT', 'price': 'BIGINT', 'channel': 'VARCHAR', "
           "'url': 'VARCHAR', 'date_time': 'BIGINT', 'extra': 'VARCHAR'}")
SHIFT = 68719476736  # 2^36, as bench/nexmark/q5.toml and q7.toml rank

# Each query's SELECT over `bids`, its columns in the order weir's pipeline emits them
# (bench/ingest/*.toml). Windows are [start, start + size) over date_time in ms.
QUERIES = {
    "q0": "SELECT auction, bidder, price, date_time, extra FROM bids",
    "q1": ("SELECT auction, bidder, CAST(price AS DOUBLE) * CAST(0.908 AS DOUBLE) AS price, "
           "date_time, extra FROM bids"),
    "q2": "SELECT auction, price FROM bids WHERE auction % 123 = 0",
    # Sliding 10 s windows every 2 s: each bid is in the 5 windows starting at its 2 s
    # boundary and the 4 before; per window the auction with the most bids (ties: the
    # largest id) as max(num * 2^36 + auction).
    "q5": f"""
        WITH counts AS (
          SELECT date_time - date_time % 2000 - k * 2000 AS starts, auction, count(*) AS num
          FROM bids, range(0, 5) AS t(k)
          GROUP BY starts, auction),
        hottest AS (
          SELECT starts, max(num * {SHIFT} + auction) AS top FROM counts GROUP BY starts)
        SELECT starts AS window_start, starts + 10000 AS window_end,
               top % {SHIFT} AS auction, top // {SHIFT} AS num
        FROM hottest""",
    "q7": f"""
        WITH highest AS (
          SELECT date_time - date_time % 10000 AS starts,
                 max(price * {SHIFT} + auction) AS top
          FROM bids GROUP BY starts)
        SELECT starts AS window_start, starts + 10000 AS window_end,
               top % {SHIFT} AS auction, top // {SHIFT} AS price
        FROM highest""",
    "tumble": """
        SELECT auction, date_time - date_time % 10000 AS window_start,
               date_time - date_time % 10000 + 10000 AS window_end,
               count(*) AS num, max(price) AS max_price
        FROM bids GROUP BY auction, window_start""",
}

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(z):
    """weir::expr::mix64 on a numpy uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def add_strings(state, values):
    """row_hasher::add_string for each row: the length, then 8-byte little-endian chunks."""
    encoded = [v.encode("utf-8") for v in values]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.uint64, count=len(encoded))
    state = mix64(state ^ lengths)
    width = int(lengths.max()) if len(encoded) else 0
    if width == 0:
        return state
    width = (width + 7) // 8 * 8
    raw = np.zeros((len(encoded), width), dtype=np.uint8)
    fixed = np.array(encoded, dtype=f"S{width}")  # zero-padded
    raw[:, :] = fixed.view(np.uint8).reshape(len(encoded), width)
    words = raw.view("<u8")
    for k in range(width // 8):
        present = lengths > np.uint64(8 * k)
        state = np.where(present, mix64(state ^ words[:, k]), state)
    return state


def digest_of(columns, types):
    """The sum of the rows' row_hasher hashes, mod 2^64, and the row count."""
    n = len(columns[0]) if columns else 0
    total = 0
    chunk = 1 << 20
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        state = np.full(hi - lo, 0x243F6A8885A308D3, dtype=np.uint64)
        for col, t in zip(columns, types):
            part = col[lo:hi]
            if t == "VARCHAR":
                state = add_strings(state, part)
            elif t == "DOUBLE":
                state = mix64(state ^ np.ascontiguousarray(part, dtype=np.float64).view(np.uint64))
            else:
                state = mix64(state ^ np.asarray(part, dtype=np.int64).view(np.uint64))
        total = (total + int(mix64(state).sum(dtype=np.uint64))) % 2**64
    return total


def source(fmt, path):
    p = str(path).replace("'", "''")
    if fmt == "jsonl":
        return f"read_json('{p}', format = 'newline_delimited', columns = {COLUMNS})"
    return f"read_csv('{p}', header = true, delim = ',', quote = '\"', columns = {COLUMNS})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("query", choices=list(QUERIES))
    ap.add_argument("--file", required=True)
    ap.add_argument("--format", choices=["jsonl", "csv"], required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--digest", action="store_true")
    ap.add_argument("--sql", action="store_true", help="print the SQL and exit")
    args = ap.parse_args()
    query = QUERIES[args.query].strip()
    bids = f"bids AS (SELECT * FROM {source(args.format, args.file)})"
    if query.startswith("WITH "):  # the query's own CTEs follow bids
        sql = f"WITH {bids}, {query[len('WITH '):]}"
    else:
        sql = f"WITH {bids} {query}"
    if args.sql:
        print(sql)
        return 0
    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    out = {"engine": "duckdb", "query": args.query, "format": args.format,
           "threads": args.threads, "parallelism": args.threads,
           "duckdb_version": duckdb.__version__}
    if args.digest:
        start = time.perf_counter()
        rel = con.execute(sql)
        names = [d[0] for d in rel.description]
        types = [str(d[1]) for d in rel.description]
        data = rel.fetchnumpy()
        out["seconds"] = time.perf_counter() - start
        columns = [data[name] for name in names]
        out["rows"] = len(columns[0]) if columns else 0
        out["digest"] = "%016x" % digest_of(columns, types)
        out["columns"] = names
    else:
        cols = con.execute(f"SELECT * FROM ({sql}) LIMIT 0").description
        names = ", ".join('"' + d[0] + '"' for d in cols)
        timed = f"SELECT count(*), bit_xor(hash({names})) FROM ({sql})"
        start = time.perf_counter()
        rows, _ = con.execute(timed).fetchone()
        out["seconds"] = time.perf_counter() - start
        out["rows"] = rows
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
