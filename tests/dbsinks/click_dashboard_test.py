# SPDX-License-Identifier: Apache-2.0
"""The click dashboard to Redis (examples/click-dashboard-redis/), end to end:
the real `weir` binary runs the example pipelines unchanged but for the Redis
port (a redis-server started here on a free port) and the checkpoint
directory, on the real access log in data/; then Redis is read and
compared with counts computed here from the same file.

- event time: every hash clicks:<minute start, epoch ms> holds, for each page
  (request path), the clicks of that minute, and the sorted set top:<minute>
  the same counts as scores, exactly as counted here; no other key.
- processing time, the clock replayed from `ts` (one record per batch, so the
  clock advances record by record: the window of a click is the minute of the
  largest ts read so far): per window the total clicks equal those computed
  here, and the last minute, which the clock never passes, does not fire.
"""
import collections
import os
from pathlib import Path

from weirtest import read_jsonl, run


LOG = "data/apache_access_logs/apache_logs_anon.jsonl"


def run_example(weir, repo, redis, work, name, *flags):
    src = Path(repo) / "examples" / "click-dashboard-redis" / f"{name}.toml"
    text = src.read_text()
    assert "port = 6379" in text, f"{src}: no 'port = 6379' to point at the test's Redis"
    text = text.replace("port = 6379", f"port = {redis.port}")
    text = text.replace('dir = "state/', f'dir = "{work}/state/')
    toml = os.path.join(work, f"{name}.toml")
    with open(toml, "w") as f:
        f.write(text)
    # From the repository root: the pipelines read data/ relative to it.
    return run([weir, "run", toml, "--fresh", *flags], cwd=repo, what=name)


def test_click_dashboard(weir, repo, work, redis_server):
    clicks = read_jsonl(repo / LOG)
    redis = redis_server
    # Event time: per minute and page, computed independently.
    run_example(weir, repo, redis, work, "event-time")
    want = collections.defaultdict(collections.Counter)
    for c in clicks:
        want[c["ts"] // 60_000 * 60_000][c["path"]] += 1
    got = redis.dump()
    hashes = {k: v for k, v in got.items() if k.startswith("clicks:")}
    tops = {k: v for k, v in got.items() if k.startswith("top:")}
    assert len(hashes) + len(tops) == len(got), (
        f"unexpected keys: {sorted(set(got) - set(hashes) - set(tops))[:5]}")
    want_hashes = {f"clicks:{ws}": {p: str(n) for p, n in pages.items()}
                   for ws, pages in want.items()}
    if hashes != want_hashes:
        missing = sorted(set(want_hashes) - set(hashes))
        wrong = sorted(k for k in want_hashes if k in hashes and hashes[k] != want_hashes[k])
        raise AssertionError(f"event time: {len(hashes)} hashes vs {len(want_hashes)} minutes; "
                             f"missing {missing[:3]}, different {wrong[:3]}")
    want_tops = {f"top:{ws}": sorted((p, float(n)) for p, n in pages.items())
                 for ws, pages in want.items()}
    assert tops == want_tops, ("event time: the top:<minute> sorted sets differ from the "
        "counts computed here")
    total = sum(int(n) for h in hashes.values() for n in h.values())
    assert total == len(clicks), f"event time: {total} clicks counted, {len(clicks)} read"
    print(f"ok: event time: {len(hashes)} minutes, {total} clicks, every page's count "
          "equal to the independent count")

    # Processing time on the replayed clock, record by record.
    redis.cli("FLUSHDB")
    run_example(weir, repo, redis, work, "processing-time", "--batch-size", "1")
    clock, per_window = 0, collections.Counter()
    for c in clicks:
        clock = max(clock, c["ts"])
        per_window[clock // 60_000 * 60_000] += 1
    last = clock // 60_000 * 60_000
    fired = {ws: n for ws, n in per_window.items() if ws != last}
    got = redis.dump()
    got_windows = {int(k.split(":", 1)[1]): sum(int(n) for n in h.values())
                   for k, h in got.items() if k.startswith("pclicks:")}
    assert len(got_windows) == len(got), "processing time: keys other than pclicks:*"
    assert got_windows == fired, (
        f"processing time: {len(got_windows)} windows, {sum(got_windows.values())} "
        f"clicks; expected {len(fired)} windows, {sum(fired.values())} clicks (the "
        f"last minute, {per_window[last]} clicks, unfired)")
    print(f"ok: processing time: {len(fired)} windows fired, {sum(fired.values())} of "
          f"{len(clicks)} clicks; the last minute ({per_window[last]} clicks) did not "
          "fire")
