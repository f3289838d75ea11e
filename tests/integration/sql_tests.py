# SPDX-License-Identifier: Apache-2.0
"""weir's SQL front end (docs/sql.md), through the real `weir` binary:

- nexmark: Nexmark-style queries over a generated, out-of-order bids file
  (q0 pass-through, q1 projection with arithmetic, q2 filter, a tumbling
  window count and max per auction, a hopping window count per auction with
  HAVING, a session window per bidder over a view). Each runs from SQL and
  from a hand-written TOML twin: the outputs must be equal as multisets,
  equal to the result computed here in Python, and `weir explain` must print
  the same logical graph for both.
- errors: bad scripts refused with exit 2 and the exact file:line:col and
  message (syntax, unknown table, column, function and option with a
  did-you-mean, a type error, a bad window size found by the loader, a
  negative SET value, a sink writing over a source, a NUL byte).
- unsupported: ORDER BY, a join, GROUP BY without a window, each named as not
  supported yet, exit 2.
- names: the operators the compiler names never take a name declared later.
- bytes: a script that is not UTF-8 refused at its first bad byte; a
  byte-order mark accepted; a parse tree too deep refused as such.
- cascade: a failed view is reported once, not by each query reading it.
- serve: `weir serve q.sql` runs the tumbling query to the same result.
"""
import json
import random

import pytest

from weirtest import read_jsonl, run

BASE = 1_700_000_000_000
BIDS = 3000

SOURCE_SQL = """\
-- Nexmark bids, out of order by at most 0.5 s.
CREATE SOURCE bids (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  date_time TIMESTAMP, extra VARCHAR
) WITH (connector = 'file', path = 'bids.jsonl', format = 'json',
        event_time = 'date_time', watermark = '1s');
"""

SOURCE_TOML = """\
[[source]]
name = "bids"
type = "file"
path = "bids.jsonl"
format = "jsonl"
schema = { auction = "int64", bidder = "int64", price = "int64", channel = "string", url = "string", date_time = "timestamp", extra = "string" }
event_time = { field = "date_time" }
watermark = { max_out_of_orderness = "1s" }
"""


def make_bids(seed):
    r = random.Random(seed)
    rows = []
    for i in range(BIDS):
        rows.append({
            "auction": r.randint(1000, 1010), "bidder": r.randint(1, 40),
            "price": r.randint(1, 10000), "channel": r.choice(["apple", "google", "baidu"]),
            "url": f"https://nexmark/{i}", "date_time": BASE + i * 100 - r.randint(0, 500),
            "extra": ""})
    return rows


def tumble(rows, size):
    out = {}
    for b in rows:
        start = b["date_time"] - b["date_time"] % size
        k = (b["auction"], start)
        n, top = out.get(k, (0, None))
        out[k] = (n + 1, b["price"] if top is None else max(top, b["price"]))
    return [{"auction": a, "window_start": s, "window_end": s + size, "bids": n,
             "max_price": top} for (a, s), (n, top) in out.items()]


def hop(rows, slide, size):
    out = {}
    for b in rows:
        last = b["date_time"] - b["date_time"] % slide
        start = last
        while start > b["date_time"] - size:
            out[(b["auction"], start)] = out.get((b["auction"], start), 0) + 1
            start -= slide
    return [{"auction": a, "window_start": s, "window_end": s + size, "bids": n}
            for (a, s), n in out.items() if n >= 3]


def sessions(rows, gap):
    by_key = {}
    for b in rows:
        if b["price"] < 5000:
            by_key.setdefault(b["bidder"], []).append(b)
    out = []
    for k, bs in by_key.items():
        bs.sort(key=lambda b: b["date_time"])
        cur = None
        for b in bs:
            if cur and b["date_time"] <= cur["last"] + gap:
                cur["last"] = b["date_time"]
                cur["n"] += 1
                cur["total"] += b["price"]
            else:
                if cur:
                    out.append(cur)
                cur = {"k": k, "first": b["date_time"], "last": b["date_time"], "n": 1,
                       "total": b["price"]}
        out.append(cur)
    return [{"bidder": s["k"], "window_start": s["first"], "window_end": s["last"] + gap,
             "n": s["n"], "total": s["total"]} for s in out]


# name: (SQL after the source, TOML after the source, expected rows)
QUERIES = {
    "q0": (
        "CREATE SINK q0 WITH (connector = 'file', path = 'out.jsonl') AS\n"
        "  SELECT * FROM bids;\n",
        '[[sink]]\nname = "q0"\ninput = "bids"\ntype = "file"\npath = "out.jsonl"\n',
        lambda rows: rows),
    "q1": (
        "CREATE TABLE q1 (auction BIGINT, bidder BIGINT, price DOUBLE, date_time TIMESTAMP)\n"
        "  WITH (connector = 'file', path = 'out.jsonl');\n"
        "INSERT INTO q1 SELECT auction, bidder, 0.908 * price AS euros, date_time FROM bids;\n",
        '[[operator]]\nname = "q1_select"\ntype = "select"\ninput = "bids"\n'
        'fields = { auction = "auction", bidder = "bidder", price = "0.908 * price", '
        'date_time = "date_time" }\n'
        '[[sink]]\nname = "q1"\ninput = "q1_select"\ntype = "file"\npath = "out.jsonl"\n',
        lambda rows: [{"auction": b["auction"], "bidder": b["bidder"],
                       "price": 0.908 * b["price"], "date_time": b["date_time"]}
                      for b in rows]),
    "q2": (
        "CREATE SINK q2 WITH (connector = 'file', path = 'out.jsonl') AS\n"
        "  SELECT auction, price FROM bids\n"
        "  WHERE auction IN (1001, 1007) AND NOT price BETWEEN 100 AND 9000;\n",
        '[[operator]]\nname = "q2_where"\ntype = "filter"\ninput = "bids"\n'
        'where = "auction in (1001, 1007) and not (price >= 100 and price <= 9000)"\n'
        '[[operator]]\nname = "q2_select"\ntype = "select"\ninput = "q2_where"\n'
        'fields = { auction = "auction", price = "price" }\n'
        '[[sink]]\nname = "q2"\ninput = "q2_select"\ntype = "file"\npath = "out.jsonl"\n',
        lambda rows: [{"auction": b["auction"], "price": b["price"]} for b in rows
                      if b["auction"] in (1001, 1007) and not 100 <= b["price"] <= 9000]),
    # Negative integer constants (libpg_query's JSON leaves their value out)
    # and one beyond 32 bits (the parser's numeric).
    "negative": (
        "CREATE SINK neg WITH (connector = 'file', path = 'out.jsonl') AS\n"
        "  SELECT auction, price * -1 AS m, 1700000000000 + price AS big\n"
        "  FROM bids WHERE price - 5000 > -1000 AND auction <> -5;\n",
        '[[operator]]\nname = "neg_where"\ntype = "filter"\ninput = "bids"\n'
        'where = "(price - 5000) > -1000 and auction != -5"\n'
        '[[operator]]\nname = "neg_select"\ntype = "select"\ninput = "neg_where"\n'
        'fields = { auction = "auction", m = "price * -1", big = "1700000000000 + price" }\n'
        '[[sink]]\nname = "neg"\ninput = "neg_select"\ntype = "file"\npath = "out.jsonl"\n',
        lambda rows: [{"auction": b["auction"], "m": -b["price"],
                       "big": 1_700_000_000_000 + b["price"]}
                      for b in rows if b["price"] - 5000 > -1000 and b["auction"] != -5]),
    "tumbling": (
        "CREATE SINK per_auction WITH (connector = 'file', path = 'out.jsonl') AS\n"
        "  SELECT auction, window_start, window_end, count(*) AS bids, max(price) AS max_price\n"
        "  FROM tumble(bids, date_time, INTERVAL '10' SECOND)\n"
        "  GROUP BY window_start, window_end, auction;\n",
        '[[operator]]\nname = "per_auction_window"\ntype = "window"\ninput = "bids"\n'
        'key_by = ["auction"]\nwindow = { type = "tumbling", size = "10s" }\n'
        'aggregate = { bids = "count(*)", max_price = "max(price)" }\n'
        '[[sink]]\nname = "per_auction"\ninput = "per_auction_window"\ntype = "file"\n'
        'path = "out.jsonl"\n',
        lambda rows: tumble(rows, 10_000)),
    "hopping": (
        "CREATE SINK busy WITH (connector = 'file', path = 'out.jsonl') AS\n"
        "  SELECT auction, window_start, window_end, count(*) AS bids\n"
        "  FROM hop(bids, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)\n"
        "  GROUP BY window_start, window_end, auction HAVING count(*) >= 3;\n",
        '[[operator]]\nname = "busy_window"\ntype = "window"\ninput = "bids"\n'
        'key_by = ["auction"]\nwindow = { type = "sliding", size = "10s", slide = "2s" }\n'
        'aggregate = { bids = "count(*)" }\n'
        '[[operator]]\nname = "busy_having"\ntype = "filter"\ninput = "busy_window"\n'
        'where = "bids >= 3"\n'
        '[[sink]]\nname = "busy"\ninput = "busy_having"\ntype = "file"\npath = "out.jsonl"\n',
        lambda rows: hop(rows, 2_000, 10_000)),
    "session": (
        "CREATE VIEW cheap AS SELECT bidder, price, date_time FROM bids WHERE price < 5000;\n"
        "SET job.parallelism = 2;\n"
        "CREATE SINK sessions WITH (connector = 'file', path = 'out.jsonl') AS\n"
        "  SELECT bidder, window_start, window_end, count(*) AS n, sum(price) AS total\n"
        "  FROM session(cheap, date_time, INTERVAL '3' SECOND)\n"
        "  GROUP BY window_start, window_end, bidder;\n",
        '[job]\nparallelism = 2\n'
        '[[operator]]\nname = "cheap_where"\ntype = "filter"\ninput = "bids"\n'
        'where = "price < 5000"\n'
        '[[operator]]\nname = "cheap"\ntype = "select"\ninput = "cheap_where"\n'
        'fields = { bidder = "bidder", price = "price", date_time = "date_time" }\n'
        '[[operator]]\nname = "sessions_window"\ntype = "window"\ninput = "cheap"\n'
        'key_by = ["bidder"]\nwindow = { type = "session", gap = "3s" }\n'
        'aggregate = { n = "count(*)", total = "sum(price)" }\n'
        '[[sink]]\nname = "sessions"\ninput = "sessions_window"\ntype = "file"\n'
        'path = "out.jsonl"\n',
        lambda rows: sessions(rows, 3_000)),
}


def multiset(rows):
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def graph(explain_stdout):
    """The graph part of `weir explain` (a SQL script's adds its TOML)."""
    return explain_stdout.split("\n-- the equivalent TOML pipeline:")[0]


@pytest.mark.parametrize("query", sorted(QUERIES))
def test_nexmark(sandbox, seed, query):
    sql, toml, expected = QUERIES[query]
    rows = make_bids(seed)
    want = multiset(expected(rows))
    assert want, "the query selects no row of the generated bids"
    outputs, graphs = {}, {}
    for lang, text in (("sql", SOURCE_SQL + sql), ("toml", SOURCE_TOML + toml)):
        # The same file stem (the job's name) in two directories.
        sandbox.write(f"{lang}/bids.jsonl", "".join(json.dumps(b) + "\n" for b in rows))
        sandbox.write(f"{lang}/{query}.{lang}", text)
        p = run([sandbox.weir, "explain", f"{query}.{lang}"], cwd=sandbox.path(lang))
        graphs[lang] = graph(p.stdout)
        run([sandbox.weir, "run", "-q", f"{query}.{lang}"], cwd=sandbox.path(lang))
        outputs[lang] = multiset(read_jsonl(sandbox.path(lang, "out.jsonl")))
    assert graphs["sql"] == graphs["toml"], (
        f"explain differs:\n--- SQL\n{graphs['sql']}\n--- TOML\n{graphs['toml']}")
    assert "#0 bids (file_source" in graphs["sql"]
    assert outputs["sql"] == outputs["toml"]
    assert outputs["sql"] == want


def position(script, marker):
    """line:col (1-based) in `script` of `marker`, a substring found once in
    it; a '^' inside the marker points at the character after it."""
    text = marker.replace("^", "")
    assert script.count(text) == 1, f"marker {text!r} is not unique"
    at = script.index(text) + max(marker.find("^"), 0)
    line = script.count("\n", 0, at) + 1
    return f"{line}:{at - (script.rfind(chr(10), 0, at) + 1) + 1}"


ERRORS = [
    # (statement after the source, where the first diagnostic points, message)
    ("CREATE SINK s WITH (connector = 'stdout') AS SELECT auction, prise FROM bids;",
     "prise", "unknown column 'prise', did you mean 'price'?"),
    ("CREATE SINK s WITH (connector = 'stdout') AS SELECT lowr(channel) FROM bids;",
     "lowr", "unknown function 'lowr', did you mean 'lower'?"),
    ("CREATE SINK s WITH (connector = 'stdout') AS SELECT auction FROM bidz;",
     "bidz", "unknown table 'bidz', did you mean 'bids'?"),
    ("CREATE SINK s WITH (connector = 'stdout') AS SELECT auction + channel FROM bids;",
     "+", "operator '+' needs numbers, got int64 and string"),
    ("CREATE SINK s WITH (connector = 'stdout') AS SELECT auction FROM bids WHERE price >;",
     ">^;", 'syntax error at or near ";"'),
    ("CREATE SINK s WITH (connector = 'stdout') AS\n"
     "SELECT count(*) AS n FROM tumble(TABLE bids, DESCRIPTOR(date_time), INTERVAL '1' SECOND)\n"
     "GROUP BY window_start, window_end;", "TABLE", 'syntax error at or near "TABLE"'),
    ("CREATE SINK s WITH (connector = 'stdot') AS SELECT auction FROM bids;",
     "connector", "unknown sink type 'stdot'"),
    ("CREATE SINK s WITH (connector = 'file', path = 'o.jsonl', formt = 'json') AS\n"
     "SELECT auction FROM bids;", "formt", "unknown option 'formt'"),
    ("CREATE SINK s WITH (connector = 'file') AS SELECT auction FROM bids;",
     "SINK ^s", "missing required option 'path'"),
    ("CREATE SINK s WITH (connector = 'stdout') AS\n"
     "SELECT auction, window_start, window_end, count(*) AS n\n"
     "FROM tumble(bids, date_time, INTERVAL '0' SECOND)\n"
     "GROUP BY window_start, window_end, auction;",
     "'0'", 'window.size must be a positive duration, got "0s"'),
    ("CREATE SINK s WITH (connector = 'stdout') AS\n"
     "SELECT bidder, window_start, window_end, count(*) AS n\n"
     "FROM tumble(bids, date_time, INTERVAL '10' SECOND)\n"
     "GROUP BY window_start, window_end, auction;",
     "bidder", "column 'bidder' must appear in GROUP BY or be used in an aggregate function"),
    ("CREATE SINK s WITH (connector = 'stdout') AS\n"
     "SELECT auction, window_start, window_end, count(*) AS n\n"
     "FROM tumble(bids, url, INTERVAL '10' SECOND)\n"
     "GROUP BY window_start, window_end, auction;",
     "url", "tumble() windows on bids's event time 'date_time', not 'url'"),
    # A source without a column list (a format with its own schema).
    ("CREATE SOURCE logs WITH (connector = 'file', format = 'apache_combined', "
     "path = 'bids.jsonl'); CREATE SINK s WITH (connector = 'stdout') AS SELECT pth FROM logs;",
     "pth", "unknown column 'pth', did you mean 'path'?"),
    ("CREATE TABLE out (a BIGINT) WITH (connector = 'stdout');\n"
     "INSERT INTO out SELECT auction, price FROM bids;",
     "INTO ^out", "the query gives 2 columns but 1 is declared"),
    # Negative values of options and SET reach the loader's checks as written.
    ("SET job.parallelism = -1;\n"
     "CREATE SINK s WITH (connector = 'stdout') AS SELECT auction FROM bids;",
     "-1", "job.parallelism must be at least 1, got -1"),
    # A sink never writes over what the script reads.
    ("CREATE SOURCE other (auction BIGINT) WITH (connector = 'file', path = 'o.jsonl',\n"
     "  format = 'json');\nINSERT INTO bids SELECT auction FROM other;",
     "INTO ^bids", "'bids' is a source (CREATE SOURCE): INSERT INTO writes to a sink table"),
    ("CREATE TABLE t (a BIGINT) WITH (connector = 'file', path = 'bids.jsonl');\n"
     "INSERT INTO t SELECT auction FROM bids;",
     "INTO ^t", "'t' would write to bids.jsonl, the path source 'bids' reads"),
    # The parser reads a C string: a NUL byte would end the script early.
    ("CREATE SINK s WITH (connector = 'stdout') AS SELECT auction\0 FROM bids;",
     "\0", "the script holds a NUL byte"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(sandbox, case):
    statement, marker, message = ERRORS[case]
    where = position(statement, marker)
    where = f"{int(where.split(':')[0]) + SOURCE_SQL.count(chr(10))}:{where.split(':')[1]}"
    sandbox.write("bids.jsonl", "")
    sandbox.write("bad.sql", SOURCE_SQL + statement + "\n")
    for command in ("validate", "run", "explain"):
        p = sandbox.run(command, "bad.sql", expect=2)
        assert p.stderr.splitlines()[0] == f"bad.sql:{where}: error: {message}", p.stderr
        assert "nothing was started" in p.stderr


def test_names(sandbox, seed):
    """The operators the compiler names (s_where, s_select) never take a
    name the script declares further down."""
    rows = make_bids(seed)
    sandbox.write("bids.jsonl", "".join(json.dumps(b) + "\n" for b in rows))
    sandbox.write("names.sql", SOURCE_SQL
        + "CREATE SINK s WITH (connector = 'file', path = 'a.jsonl') AS\n"
          "  SELECT auction FROM bids WHERE price > 9000;\n"
          "CREATE SINK s_where WITH (connector = 'file', path = 'b.jsonl') AS\n"
          "  SELECT price FROM bids WHERE price < 100;\n"
          "CREATE VIEW s_select AS SELECT bidder FROM bids WHERE bidder = 7;\n"
          "CREATE SINK t WITH (connector = 'file', path = 'c.jsonl') AS SELECT * FROM s_select;\n")
    sandbox.run("run", "names.sql", "-q")
    assert multiset(read_jsonl(sandbox.path("a.jsonl"))) == multiset(
        [{"auction": b["auction"]} for b in rows if b["price"] > 9000])
    assert multiset(read_jsonl(sandbox.path("b.jsonl"))) == multiset(
        [{"price": b["price"]} for b in rows if b["price"] < 100])
    assert multiset(read_jsonl(sandbox.path("c.jsonl"))) == multiset(
        [{"bidder": 7} for b in rows if b["bidder"] == 7])


def test_bytes(sandbox):
    """A script that is not UTF-8 is refused where its first bad byte is; a
    byte-order mark is accepted."""
    sandbox.write("bids.jsonl", "")
    sink = b"CREATE SINK s WITH (connector = 'stdout') AS SELECT auction FROM bids;\n"
    lines = SOURCE_SQL.count("\n")
    with open(sandbox.path("bad.sql"), "wb") as f:
        f.write(SOURCE_SQL.encode() + sink.replace(b"auction", b"auction, '\xe9t\xff'"))
    p = sandbox.run("validate", "bad.sql", expect=2)
    col = sink.index(b"auction") + len(b"auction, '") + 1
    assert p.stderr.splitlines()[0] == (
        f"bad.sql:{lines + 1}:{col}: error: the script is not UTF-8 here (byte 0xE9)"), p.stderr
    with open(sandbox.path("bom.sql"), "wb") as f:
        f.write(b"\xef\xbb\xbf" + SOURCE_SQL.encode() + sink)
    sandbox.run("validate", "bom.sql", expect=0)
    # A parse tree too deep to walk: refused as such, not as an internal error.
    deep = sink.replace(b"SELECT auction", b"SELECT " + b" + ".join([b"price"] * 1000))
    with open(sandbox.path("deep.sql"), "wb") as f:
        f.write(SOURCE_SQL.encode() + deep)
    p = sandbox.run("validate", "deep.sql", expect=2)
    assert p.stderr.splitlines()[0] == (
        "deep.sql:1:1: error: the script nests too deeply (its parse tree is more than 1024 "
        "levels deep)"), p.stderr


UNSUPPORTED = [
    ("SELECT auction FROM bids ORDER BY price", "BY ^price", "ORDER BY is not supported yet"),
    ("SELECT a.auction FROM bids a JOIN bids b ON a.auction = b.auction", "JOIN ^bids",
     "a join is not supported yet"),
    ("SELECT auction, count(*) FROM bids GROUP BY auction", "BY ^auction",
     "GROUP BY without a window (a changelog aggregation) is not supported yet"),
    ("SELECT auction, row_number() OVER (PARTITION BY auction ORDER BY price) FROM bids",
     "row_number", "the window function row_number() OVER (...) is not supported yet"),
]


@pytest.mark.parametrize("case", range(len(UNSUPPORTED)))
def test_unsupported(sandbox, case):
    query, marker, message = UNSUPPORTED[case]
    statement = f"CREATE SINK s WITH (connector = 'stdout') AS {query};"
    where = position(statement, marker)
    where = f"{int(where.split(':')[0]) + SOURCE_SQL.count(chr(10))}:{where.split(':')[1]}"
    sandbox.write("bids.jsonl", "")
    sandbox.write("bad.sql", SOURCE_SQL + statement + "\n")
    p = sandbox.run("validate", "bad.sql", expect=2)
    lines = p.stderr.splitlines()
    assert lines[0] == f"bad.sql:{where}: error: {message}", p.stderr
    assert lines[1].startswith("  hint: "), p.stderr


def test_serve(work, serve, seed):
    """`weir serve q.sql` runs a script as it runs a TOML pipeline."""
    from weirtest import wait_until
    from weirtest.server import job_state
    rows = make_bids(seed)
    (work / "bids.jsonl").write_text("".join(json.dumps(b) + "\n" for b in rows))
    (work / "q.sql").write_text(SOURCE_SQL + QUERIES["tumbling"][0])
    s = serve(pipelines=["q.sql"])
    [jid] = s.ids
    wait_until(lambda: job_state(s, jid) in ("FINISHED", "FAILED"), "the SQL job to end", 60)
    assert job_state(s, jid) == "FINISHED", s.stderr()
    assert multiset(read_jsonl(work / "out.jsonl")) == multiset(tumble(rows, 10_000))
    s.stop()


def test_cascade(sandbox):
    """A view whose definition fails is reported once, not again by each
    statement that reads it; an unrelated error is still reported."""
    sandbox.write("bids.jsonl", "")
    script = (SOURCE_SQL
              + "CREATE VIEW v AS SELECT auction, prise FROM bids;\n"
              + "CREATE SINK a WITH (connector = 'stdout') AS SELECT * FROM v;\n"
              + "CREATE SINK b WITH (connector = 'stdout') AS SELECT auction FROM v;\n"
              + "CREATE SINK c WITH (connector = 'stdout') AS SELECT lowr(url) FROM bids;\n")
    sandbox.write("bad.sql", script)
    p = sandbox.run("validate", "bad.sql", expect=2)
    errors = [line for line in p.stderr.splitlines() if ": error: " in line]
    assert errors == [
        f"bad.sql:{position(script, 'prise')}: error: unknown column 'prise', "
        "did you mean 'price'?",
        f"bad.sql:{position(script, 'lowr')}: error: unknown function 'lowr', "
        "did you mean 'lower'?"], p.stderr
    assert "2 errors; nothing was started" in p.stderr
