# SPDX-License-Identifier: Apache-2.0
"""The embedding examples on the real access log: Flink's ClickCounter
(examples/click-counter) and the bot counter (examples/embedded-bot-counter).
The pipeline tests run the built examples, the install tests the ones they
build against the installed library or through add_subdirectory."""
import collections
from pathlib import Path

from weirtest import read_jsonl, run

LOG = "data/apache_access_logs/apache_logs_anon.log"
JSONL = "data/apache_access_logs/apache_logs_anon.jsonl"


def check_click_counter(example, repo, work):
    """Runs the click-counter binary `example` at parallelism 2 on the
    access log into `work`/clicks.jsonl; each client's running counts must
    be 1, 2, 3, ... in order and end at its count in the log's JSONL."""
    out = Path(work) / "clicks.jsonl"
    proc = run([example, Path(repo) / LOG, out, "2"], timeout=300, what="the example")
    rows = read_jsonl(out)
    want = collections.Counter(r["client"] for r in read_jsonl(Path(repo) / JSONL))
    final = {}
    seen = collections.Counter()
    for r in rows:
        client = r["client"]
        seen[client] += 1
        # Per client the counts arrive in order: 1, 2, 3, ...
        assert r["clicks"] == seen[client], (
            f"client {client}: count {r['clicks']} where {seen[client]} was expected")
        final[client] = r["clicks"]
    assert final == dict(want), f"click counts differ: {len(final)} clients vs {len(want)}"
    assert len(rows) == sum(want.values()), "one running count per request expected"
    assert "read 9999 records (1 bad)" in proc.stdout, f"unexpected report: {proc.stdout}"


def check_embedded_bot_counter(example, repo, work):
    """Runs the embedded-bot-counter binary `example` on the access log into
    `work`/bots.jsonl; each bot's last running count must equal its requests
    in the log's JSONL, one row per bot request."""
    out = Path(work) / "bots.jsonl"
    proc = run([example, Path(repo) / LOG, out], timeout=300, what="the example")
    rows = read_jsonl(out)
    final = {}
    for r in rows:
        final[r["agent"]] = max(final.get(r["agent"], 0), r["requests"])
    want = collections.Counter(
        r["agent"] for r in read_jsonl(Path(repo) / JSONL)
        if r["agent"] and "bot" in r["agent"].lower())
    assert final == dict(want), f"bot counts differ: {len(final)} agents vs {len(want)}"
    assert len(rows) == sum(want.values()), "one running count per bot request expected"
    assert "read 9999 records (1 bad)" in proc.stdout, f"unexpected report: {proc.stdout}"
