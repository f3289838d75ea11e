# SPDX-License-Identifier: Apache-2.0
"""The recovery contract (docs/concepts/recovery.md) through the real `weir`
binary on real LMDB files: nothing acknowledged or committed is lost on a
restore, a damaged store is refused with guidance, never a crash.

A rate-limited generator feeds a keyed running count into the exactly-once
file sink, checkpoints every 100 ms, retain 3. The job is stopped with
SIGTERM once three checkpoints exist; that store and output are the pristine
copy every case starts from. A rerun on it finishes the input at full speed;
its committed output must be each key's counts 1..n exactly once (computed
from the generator's definition, seq % 5).

Each is the test function test_<name> with - as _ (test_truncated_tail, ...):
  truncated-tail     data.mdb short by 1..16 pages: `weir checkpoints list`
                     and `weir run` refuse with "is truncated ... --fresh"
                     (or, when only free pages were cut, the store is intact:
                     the listing is unchanged and the rerun's output exact);
                     never a signal
  rollback           `weir serve`, an http source with ack = "checkpoint":
                     five requests acknowledged, SIGTERM, the two newest
                     manifests damaged: serving again refuses (naming the
                     checkpoint and --allow-rollback), every acknowledged row
                     stays committed; `weir serve --allow-rollback` restores
                     the older checkpoint; every manifest damaged: refused
                     with or without --allow-rollback
  all-damaged        `weir run` with every manifest damaged refuses (exit 1,
                     nothing touched), --allow-rollback too; --fresh starts
                     over with exact output
  savepoint-refused  a partial savepoint (no data.mdb, or a truncated one) is
                     refused and the job's own checkpoints are all still
                     there; a good savepoint's run killed before its first
                     checkpoint leaves them too, and a plain rerun refuses
                     (rerun with the flag); the flag again gives exact
                     output and supersedes them
  faults-truncate    the fault-injection sweep: data.mdb cut at every page
                     boundary (0 pages .. its size)
  faults-flip        bytes flipped: in every manifest, in state values, in
                     every field of both meta pages, in the offset, key size
                     or value size of every node of every branch and leaf
                     page (--sweep: each of the three), and at seeded random
                     non-zero bytes of data.mdb (40; --sweep: 400)
  faults-missing     data.mdb, lock.mdb, the savepoint's data.mdb or
                     lock.mdb missing; a run killed while it made a new
                     store (WEIR_FAULT=kill_in_store_create:1), then rerun
  faults-disk-full   the file size limit (RLIMIT_FSIZE: write() fails with
                     EFBIG as on a full disk) reached at a range of sizes
                     during a run (6; --sweep: 24); every run ends cleanly
                     and a rerun without the limit is exact
  faults-enospc      a real full disk: state and output on a tmpfs of their
                     own (needs root to mount it) of a range of sizes (15;
                     --sweep: 60): each run finishes or fails saying "No
                     space left on device", and a rerun with room is exact
Every faults-* case ends in a refusal (exit 1, a message naming --fresh or
--allow-rollback, store and output byte for byte unchanged) or in a run whose
output is exact; a signal fails the test. --sweep widens the flip and disk
sweeps (minutes); the seed is printed, --seed (or WEIR_SEED) replays it.

WEIR_TEST_TIME_SCALE stretches the waits and timeouts.
"""
import collections
import hashlib
import json
import os
import pathlib
import random
import re
import shutil
import signal
import struct
import subprocess
import time

from weirtest import SCALE, file_size_limit, run, wait_until
from weirtest.server import post_ingest

COUNT = 6000
KEYS = 5
PAGE = 4096


PIPELINE = """
[job]
name = "recovery"
status_interval = "0s"

[checkpoint]
interval = "100ms"
dir = "{work}/state"
retain = 3

[[source]]
name = "gen"
type = "generator"
count = {count}
rate = {rate}
fields = {{ seq = "seq", key = "seq % {keys}" }}

[[operator]]
name = "counts"
type = "running_count"
input = "gen"
key_by = ["key"]

[[sink]]
name = "out"
input = "counts"
type = "file"
path = "{work}/out"
"""


def expected_rows():
    """Each key's running counts 1..n, n = how many seq in [0, COUNT) it has."""
    n = collections.Counter(s % KEYS for s in range(COUNT))
    return sorted((k, c) for k in n for c in range(1, n[k] + 1))


def committed(out):
    rows = []
    for p in sorted(pathlib.Path(out).glob("part-*")):
        for line in p.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append((r["key"], r["count"]))
    return sorted(rows)


def digest(paths):
    """A hash of every file under `paths` (names and bytes), to show a refused
    run touched nothing."""
    h = hashlib.sha256()
    for root in paths:
        for p in sorted(pathlib.Path(root).rglob("*")):
            if p.is_file() and p.name != "lock.mdb":
                h.update(str(p.relative_to(root)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def signalled(rc):
    return rc < 0 or rc >= 128


class Store:
    """The pristine store and output, and a work dir each case resets."""

    def __init__(self, weir, root):
        self.weir = weir
        self.root = root
        self.work = root / "job"
        self.work.mkdir()
        self.state = self.work / "state"
        self.out = self.work / "out"
        self.pristine = root / "pristine"
        self.toml = self.pipeline(rate=0)

    def pipeline(self, rate):
        path = self.work / ("slow.toml" if rate else "pipeline.toml")
        path.write_text(PIPELINE.format(work=self.work, count=COUNT, keys=KEYS,
                                        rate=rate or 10_000_000))
        return path

    def create(self):
        """Runs slowly until three checkpoints have committed output, stops
        with SIGTERM (a final checkpoint), keeps the result as pristine."""
        proc = subprocess.Popen([self.weir, "run", str(self.pipeline(rate=2000)), "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: proc.poll() is not None or len(list(self.out.glob("part-*"))) >= 3,
                       "three checkpoints with committed output")
            assert proc.poll() is None, (
                f"the job finished before three checkpoints: {proc.stderr.read()[-2000:]}")
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60 * SCALE)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 143, f"exit {proc.returncode} after SIGTERM: {err[-2000:]}"
        ids = self.ids()
        assert len(ids) == 3, f"expected 3 retained checkpoints, got {ids}"
        rows = committed(self.out)
        assert 0 < len(rows) < COUNT, f"{len(rows)} rows committed before the stop"
        shutil.copytree(self.work, self.pristine)
        return ids

    def reset(self):
        for d in ("state", "out"):
            shutil.rmtree(self.work / d, ignore_errors=True)
            shutil.copytree(self.pristine / d, self.work / d)

    def listing(self, directory=None):
        p = subprocess.run([self.weir, "checkpoints", "list", str(directory or self.state)],
                           capture_output=True, text=True, timeout=60 * SCALE)
        return p

    def ids(self, directory=None):
        """Every checkpoint listed, those a pending start over superseded
        (named below the table) included."""
        p = self.listing(directory)
        assert p.returncode == 0, f"weir checkpoints list: exit {p.returncode}: {p.stderr}"
        ids = [int(l.split()[0]) for l in p.stdout.splitlines()
               if l.split() and l.split()[0].isdigit()]
        for l in p.stdout.splitlines():
            if l.startswith("superseded: "):
                ids += [int(x) for x in l[len("superseded: "):].split(" (")[0].split(", ")]
        return sorted(ids)

    def run(self, *flags, fsize=None):
        """`weir run` of the pipeline, its files limited to `fsize` bytes."""
        return run([self.weir, "run", self.toml, "-q", *flags], timeout=120, expect=None,
                   preexec_fn=file_size_limit(fsize))


def manifest_offsets(data, ids=None):
    """Offsets of every manifest value in data.mdb's bytes ("WMNF", u16
    version, u8 status, u64 id at +7), stale copies in free pages included,
    for the given checkpoint ids (all when None)."""
    out = []
    for m in re.finditer(b"WMNF[\x01\x02]\x00", data):
        cid = int.from_bytes(data[m.start() + 7:m.start() + 15], "little")
        if ids is None or cid in ids:
            out.append((cid, m.start()))
    return out


def tree_pages(data):
    """Every page of data.mdb that looks like a branch or leaf page (names
    itself, flags 1 or 2; stale free ones included): (page number, "branch" or
    "leaf", [(node index, offset of its pointer, offset of the node)]), offsets
    into `data` (LMDB 0.9's MDB_page and MDB_node)."""
    out = []
    for pg in range(2, len(data) // PAGE):
        base = pg * PAGE
        pgno, _, flags, lower, _ = struct.unpack_from("<QHHHH", data, base)
        if pgno != pg or flags not in (1, 2) or lower < 16 or lower > PAGE:
            continue
        nodes = []
        for i in range((lower - 16) // 2):
            off = struct.unpack_from("<H", data, base + 16 + 2 * i)[0]
            if off + 8 <= PAGE:
                nodes.append((i, base + 16 + 2 * i, base + off))
        out.append((pg, "branch" if flags == 1 else "leaf", nodes))
    return out


def damage_manifests(state, ids):
    path = pathlib.Path(state) / "data.mdb"
    data = bytearray(path.read_bytes())
    hits = manifest_offsets(bytes(data), set(ids))
    assert {c for c, _ in hits} >= set(ids), f"manifests of {ids} not found in {path}"
    for _, off in hits:
        data[off + 20] ^= 0xFF  # inside trigger_ms: the checksum no longer matches
    path.write_bytes(bytes(data))


def expect_refusal(p, store, before, *words):
    """Exit 1 with the guidance words, no signal, nothing touched."""
    err = p.stderr
    assert not signalled(p.returncode), f"weir died by a signal (exit {p.returncode}):\n{err[-2000:]}"
    assert p.returncode == 1, f"exit {p.returncode}, expected a refusal (1):\n{err[-2000:]}"
    for w in words:
        assert w in err, f"the refusal does not say {w!r}:\n{err[-2000:]}"
    assert digest([store.state, store.out]) == before, (
        f"the refused run changed the store or the output:\n{err[-2000:]}")


def expect_exact(p, store, what):
    assert not signalled(p.returncode), (f"{what}: weir died by a signal ({p.returncode}):\n"
        f"{p.stderr[-2000:]}")
    assert p.returncode == 0, f"{what}: exit {p.returncode}:\n{p.stderr[-2000:]}"
    got = committed(store.out)
    want = expected_rows()
    assert got == want, (f"{what}: {len(got)} committed rows, {len(want)} expected "
        f"({len(set(want) - set(got))} missing, {len(got) - len(set(got))} twice)")


def outcome(store, p, before, what):
    """A faults-* case: a clean refusal or exact output; returns which."""
    if p.returncode == 0:
        expect_exact(p, store, what)
        return "exact"
    try:
        expect_refusal(p, store, before)
        assert "--fresh" in p.stderr or "--allow-rollback" in p.stderr, (
            "no guidance (--fresh / --allow-rollback)")
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None
    return "refused"


# ---- the three defects -------------------------------------------------------

def test_truncated_tail(weir, work):
    store = Store(weir, work)
    store.create()
    size = (store.pristine / "state/data.mdb").stat().st_size
    refused = intact = 0
    for pages in range(1, 17):
        store.reset()
        ids = store.ids()
        os.truncate(store.state / "data.mdb", max(0, size - pages * PAGE))
        before = digest([store.state, store.out])
        p = store.listing()
        assert not signalled(p.returncode), (
            f"short by {pages} pages: weir checkpoints list died (exit {p.returncode})")
        if p.returncode != 0:
            assert "is truncated" in p.stderr and "--fresh" in p.stderr, (
                f"short by {pages} pages: not the truncation message:\n{p.stderr}")
            r = store.run()
            expect_refusal(r, store, before, "is truncated", "--fresh")
            refused += 1
        else:
            # Only free pages were cut: the store is whole.
            assert store.ids() == ids, f"short by {pages} pages: listing changed"
            expect_exact(store.run(), store, f"short by {pages} pages")
            intact += 1
    assert refused > 0, "no truncation was refused"
    print(f"ok: 16 truncations: {refused} refused, {intact} cut only free pages")


HTTP = """
[job]
name = "acked"

[checkpoint]
interval = "200ms"
dir = "{work}/state"

[[source]]
name = "events"
type = "http"
format = "jsonl"
schema = {{ n = "int64" }}
ack = "checkpoint"
ack_timeout = "20s"

[[sink]]
name = "records"
input = "events"
type = "file"
path = "{work}/out"
"""


def test_rollback(weir, work, serve):
    pipeline = work / "acked.toml"
    pipeline.write_text(HTTP.format(work=work))

    def rows():
        out = []
        for p in sorted((work / "out").glob("part-*")):
            out += [json.loads(l)["n"] for l in p.read_text().splitlines() if l.strip()]
        return sorted(out)

    srv = serve([pipeline])
    try:
        for req in range(1, 6):
            body = "".join(json.dumps({"n": req * 100 + i}) + "\n" for i in range(3))
            deadline = time.monotonic() + 30 * SCALE
            while True:
                assert time.monotonic() < deadline, f"request {req} never acknowledged"
                st, _, res = post_ingest(srv.port, "events", body, key=f"req-{req}")
                if st == 202:
                    break
                assert st == 503, f"request {req}: {st} {res}"
                time.sleep(0.1)
    finally:
        srv.stop()
    acked = sorted(r * 100 + i for r in range(1, 6) for i in range(3))
    assert rows() == acked, f"committed {rows()}, acknowledged {acked}"
    ids = [int(l.split()[0]) for l in subprocess.run(
        [weir, "checkpoints", "list", str(work / "state")], capture_output=True,
        text=True).stdout.splitlines() if l.split() and l.split()[0].isdigit()]
    assert len(ids) == 3, f"retained checkpoints {ids}"
    damage_manifests(work / "state", ids[-2:])

    def serve_once(*flags):
        srv = serve([pipeline], args=flags)
        try:
            def settled():
                text = srv.stderr()
                if "restoring from checkpoint" in text or "failed" in text:
                    return text
                return None
            text = wait_until(settled, "the job to restore or to fail", 20)
            if "failed" in text:
                # The API says why too.
                exc = srv.get(f"/jobs/{srv.ids[0]}/exceptions")
                assert "--fresh" in (exc.get("root-exception") or ""), (
                    f"GET /jobs/{{id}}/exceptions does not give the refusal: {exc}")
            return text
        finally:
            srv.stop()

    log = serve_once()
    assert "restoring from checkpoint" not in log, (
        f"serving again restored an older checkpoint than the newest:\n{log[-2000:]}")
    assert f"checkpoint {ids[-1]}" in log and "--allow-rollback" in log and "--fresh" in log, (
        f"the refusal does not name checkpoint {ids[-1]} and the flags:\n{log[-2000:]}")
    assert f"checkpoint {ids[0]}" in log, (f"the refusal does not name checkpoint {ids[0]}, "
        f"the one a rollback restores:\n{log[-2000:]}")
    assert rows() == acked, f"acknowledged rows lost after the refusal: {rows()}"

    log = serve_once("--allow-rollback")
    assert f"restoring from checkpoint {ids[0]}" in log, (
        f"--allow-rollback did not restore checkpoint {ids[0]}:\n{log[-2000:]}")

    # Every manifest damaged: refused, rollback or not (nothing to roll back to).
    damage_manifests(work / "state", [i for i in ids_now(weir, work) if i not in ids[-2:]])
    kept = rows()
    for flags in ((), ("--allow-rollback",)):
        log = serve_once(*flags)
        assert ("restoring from checkpoint" not in log and "--fresh" in log
            and "failed" in log), (
            f"every manifest damaged, serve {flags}: not a refusal naming --fresh:\n"
            f"{log[-2000:]}")
        assert rows() == kept, f"serve {flags} changed the committed output"
    print(f"ok: checkpoints {ids[-2:]} damaged: refused; --allow-rollback restored "
          f"#{ids[0]}; all damaged: refused")


def ids_now(weir, work):
    p = subprocess.run([weir, "checkpoints", "list", str(work / "state")],
                       capture_output=True, text=True)
    return [int(l.split()[0]) for l in p.stdout.splitlines()
            if l.split() and l.split()[0].isdigit()]


def test_all_damaged(weir, work):
    store = Store(weir, work)
    ids = store.create()
    store.reset()
    damage_manifests(store.state, ids)
    before = digest([store.state, store.out])
    expect_refusal(store.run(), store, before, "--fresh")
    expect_refusal(store.run("--allow-rollback"), store, before, "--fresh")
    # Only the newest damaged: refused; --allow-rollback restores the one below.
    store.reset()
    damage_manifests(store.state, ids[-1:])
    before = digest([store.state, store.out])
    p = store.run()
    expect_refusal(p, store, before, f"checkpoint {ids[-1]}", f"checkpoint {ids[-2]}",
                   "--allow-rollback", "--fresh")
    p = store.run("--allow-rollback", "--log-level", "info")
    assert f"restoring from checkpoint {ids[-2]}" in p.stderr, (
        f"--allow-rollback did not restore #{ids[-2]}:\n{p.stderr[-2000:]}")
    expect_exact(p, store, "--allow-rollback")
    store.reset()
    damage_manifests(store.state, ids)
    expect_exact(store.run("--fresh"), store, "--fresh over damaged manifests")
    print(f"ok: every manifest of {ids} damaged: refused; newest damaged: refused, "
          f"--allow-rollback restored #{ids[-2]}; --fresh exact")


def test_savepoint_refused(weir, work, procs):
    store = Store(weir, work)
    ids = store.create()
    partial = work / "partial"
    for case in ("no data.mdb", "truncated data.mdb"):
        store.reset()
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(store.state, partial)
        if case == "no data.mdb":
            (partial / "data.mdb").unlink()
        else:
            os.truncate(partial / "data.mdb", (partial / "data.mdb").stat().st_size // 2)
        before = digest([store.state, store.out])
        p = store.run("--from-savepoint", str(partial))
        assert not signalled(p.returncode), f"{case}: weir died by a signal ({p.returncode})"
        assert p.returncode == 1, f"{case}: exit {p.returncode}:\n{p.stderr[-2000:]}"
        assert str(partial) in p.stderr, (f"{case}: the error does not name the savepoint:\n"
            f"{p.stderr[-2000:]}")
        assert store.ids() == ids, (f"{case}: the refused savepoint left checkpoints "
            f"{store.ids()} of {ids}")
        assert digest([store.state, store.out]) == before, f"{case}: the store or output changed"
    # A good savepoint (a copy of the store: its newest checkpoint), its run
    # killed before its first checkpoint (none for an hour): a plain rerun
    # must neither resume the old checkpoints nor start from nothing.
    store.reset()
    good = work / "good"
    shutil.copytree(store.state, good)
    hourly = store.work / "hourly.toml"
    hourly.write_text(store.pipeline(rate=500).read_text().replace('interval = "100ms"',
                                                                   'interval = "1h"'))
    proc = procs.start([weir, "run", hourly, "--from-savepoint", good],
                       stderr=subprocess.PIPE, text=True)
    seen = ""
    deadline = time.monotonic() + 30 * SCALE
    while "the checkpoints in" not in seen and time.monotonic() < deadline:
        line = proc.stderr.readline()
        assert line, f"the savepoint run ended: {seen[-2000:]}"
        seen += line
    proc.kill()
    proc.communicate()
    assert store.ids() == ids, f"the killed savepoint run changed the checkpoints: {store.ids()}"
    assert "superseded: " in store.listing().stdout, (
        f"the listing does not say a start over is pending:\n{store.listing().stdout}")
    before = digest([store.state, store.out])
    expect_refusal(store.run(), store, before, f"--from-savepoint {good} again",
                   f"--allow-rollback to restore checkpoint {ids[-1]}")
    p = store.run("--from-savepoint", str(good))
    expect_exact(p, store, "--from-savepoint")
    after = store.ids()
    assert not set(after) & set(ids), (f"after the savepoint run: checkpoints {after}, "
        f"the old ones {ids} should be gone")
    print(f"ok: partial savepoints refused, checkpoints {ids} kept; a good one superseded them")


# ---- the fault-injection suite -------------------------------------------------

def test_faults_truncate(weir, work):
    store = Store(weir, work)
    store.create()
    size = (store.pristine / "state/data.mdb").stat().st_size
    results = collections.Counter()
    for pages in range(0, size // PAGE + 1):
        store.reset()
        os.truncate(store.state / "data.mdb", pages * PAGE)
        before = digest([store.state, store.out])
        p = store.listing()
        assert not signalled(p.returncode), f"cut to {pages} pages: list died ({p.returncode})"
        assert p.returncode in (0, 1), f"cut to {pages} pages: list exit {p.returncode}"
        if p.returncode == 1:
            assert "truncated" in p.stderr or "damaged" in p.stderr, (
                f"cut to {pages} pages: list says {p.stderr}")
        results[outcome(store, store.run(), before, f"cut to {pages} pages")] += 1
    assert results["refused"] > 0, "no truncation was refused"
    print(f"ok: data.mdb of {size // PAGE} pages cut at every page boundary: {dict(results)}")


def test_faults_flip(weir, work, seed, sweep):
    store = Store(weir, work)
    ids = store.create()
    data = (store.pristine / "state/data.mdb").read_bytes()
    cases = []
    for cid, off in manifest_offsets(data):
        cases.append((f"manifest of checkpoint {cid} byte 30", off + 30))
    # State values: the running count's serialized key groups follow their
    # keys (checkpoint id big-endian, then the operator uid "counts").
    for cid in ids:
        for m in re.finditer(cid.to_bytes(8, "big") + b"counts\x00k", data):
            cases.append((f"a value of checkpoint {cid}", m.end() + 2 + 8))
            break
    rnd = random.Random(seed)
    # Most of a small store is zeros (free space); flips of its other bytes
    # (page headers, nodes, keys, values, meta pages) are the ones that matter.
    live = [i for i, b in enumerate(data) if b]
    for _ in range(400 if sweep else 40):
        off = rnd.choice(live)
        cases.append((f"random byte {off} (page {off // PAGE})", off))
    for page in (0, 1):  # every meta field: magic, version, sizes, roots, last page, txnid
        for field in range(16, 16 + 136, 4):
            cases.append((f"meta page {page} byte {field}", page * PAGE + field))
    cases = [(what, off, 0xFF) for what, off in cases]
    # Every node of every branch and leaf page: a size or offset a few bytes
    # off still lies inside its page, but no longer fits its neighbours (a
    # delete on that page then moves memory by a wrong length). Node i gets
    # the i-th of its faults in turn (--sweep: each of them).
    for pg, kind, nodes in tree_pages(data):
        for i, ptr, node in nodes:
            where = f"{kind} page {pg} node {i}"
            faults = [(f"{where}: its offset + 2", ptr, 0x02),
                      (f"{where}: its key size ^ 8", node + 6, 0x08)]
            if kind == "leaf":
                faults.append((f"{where}: its value size ^ 2", node, 0x02))
            cases += faults if sweep else [faults[i % len(faults)]]
    results = collections.Counter()
    for what, off, mask in cases:
        store.reset()
        path = store.state / "data.mdb"
        b = bytearray(path.read_bytes())
        b[off] ^= mask if "random" not in what else 1 << rnd.randrange(8)
        path.write_bytes(bytes(b))
        before = digest([store.state, store.out])
        p = store.listing()
        assert not signalled(p.returncode), f"{what}: list died ({p.returncode})"
        results[outcome(store, store.run(), before, what)] += 1
    print(f"ok: {len(cases)} flips (seed {seed}): {dict(results)}")


def test_faults_missing(weir, work):
    store = Store(weir, work)
    ids = store.create()
    store.reset()
    (store.state / "data.mdb").unlink()
    before = digest([store.state, store.out])
    expect_refusal(store.run(), store, before, "data.mdb", "--fresh")
    store.reset()
    (store.state / "lock.mdb").unlink()
    expect_exact(store.run(), store, "lock.mdb missing")
    for part in ("data.mdb", "lock.mdb"):
        store.reset()
        sp = work / f"savepoint-{part}"
        shutil.copytree(store.state, sp)
        (sp / part).unlink()
        before = digest([store.state, store.out])
        p = store.run("--from-savepoint", str(sp))
        if part == "data.mdb":
            assert p.returncode == 1 and str(sp) in p.stderr, (
                f"savepoint without data.mdb: exit {p.returncode}:\n{p.stderr[-2000:]}")
            assert digest([store.state, store.out]) == before and store.ids() == ids, (
                "a refused savepoint changed the store or the output")
        else:
            expect_exact(p, store, "savepoint without lock.mdb")
    # A run killed while it made a new store (before LMDB had written
    # data.mdb's meta pages, with lock.mdb already there) had committed
    # nothing: the rerun starts, it is not refused as a store that lost its
    # data.
    for d in ("state", "out"):
        shutil.rmtree(store.work / d, ignore_errors=True)
    env = dict(os.environ, WEIR_FAULT="kill_in_store_create:1")
    p = run([store.weir, "run", store.toml, "-q"], timeout=120, expect=None, env=env)
    assert p.returncode == -signal.SIGKILL and "kill_in_store_create" in p.stderr, (
        f"the run was not killed while making its store: exit {p.returncode}:\n"
        f"{p.stderr[-2000:]}")
    expect_exact(store.run(), store, "the rerun after a kill while the store was made")
    print("ok: missing data.mdb refused; missing lock.mdb harmless; savepoint likewise; "
          "killed while making a new store, the rerun is exact")


def test_faults_disk_full(weir, work, sweep):
    store = Store(weir, work)
    store.create()
    size = (store.pristine / "state/data.mdb").stat().st_size
    steps = 24 if sweep else 6
    results = collections.Counter()
    for i in range(steps):
        limit = size + (i * 3 * PAGE) // 2
        store.reset()
        p = store.run(fsize=limit)
        assert not signalled(p.returncode), f"limit {limit}: died by a signal ({p.returncode})"
        assert p.returncode in (0, 1), f"limit {limit}: exit {p.returncode}"
        if p.returncode == 1:
            assert "checkpoint storage" in p.stderr or "cannot write" in p.stderr, (
                f"limit {limit}: unclear error:\n{p.stderr[-2000:]}")
            results["failed cleanly"] += 1
        else:
            results["finished"] += 1
        expect_exact(store.run(), store, f"rerun after the {limit}-byte limit")
    assert results["failed cleanly"] > 0, "no size limit was reached"
    print(f"ok: {steps} size limits from {size} bytes: {dict(results)}, every rerun exact")


def test_faults_enospc(weir, work, sweep):
    """A real full disk: state and output on a tmpfs of their own (mount needs
    root), remounted at a range of sizes so that the disk fills up at
    different writes (LMDB pages, sink parts, renames)."""
    store = Store(weir, work)
    store.create()
    disk = store.work
    used = sum(p.stat().st_size for p in store.pristine.rglob("*") if p.is_file())
    # The runs write the rest of the input (~150 KiB of parts) and a few
    # checkpoints; the last sizes leave room for all of it.
    step = 4 * PAGE
    steps = 60 if sweep else 15
    toml = store.toml.read_text()
    shutil.rmtree(disk)
    disk.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={used + step}", "weir-enospc",
                            str(disk)], capture_output=True, text=True)
    assert mount.returncode == 0, f"mount -t tmpfs failed (this test needs root): {mount.stderr}"
    results = collections.Counter()
    try:
        for i in range(steps):
            size = used + (i + 1) * step
            for d in ("state", "out"):
                shutil.rmtree(disk / d, ignore_errors=True)
            subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)
            store.toml.write_text(toml)
            store.reset()
            p = store.run()
            assert not signalled(p.returncode), (
                f"{size}-byte disk: died by a signal ({p.returncode}):\n{p.stderr[-2000:]}")
            assert p.returncode in (0, 1), f"{size}-byte disk: exit {p.returncode}"
            if p.returncode == 1:
                assert "No space left on device" in p.stderr, (
                    f"{size}-byte disk: the error does not say the disk is full:\n"
                    f"{p.stderr[-2000:]}")
                results["failed cleanly"] += 1
            else:
                results["finished"] += 1
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
            expect_exact(store.run(), store, f"rerun after the {size}-byte disk was full")
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)
    assert results["failed cleanly"] > 0, "the disk never filled up"
    assert results["finished"] > 0, "no disk was large enough to finish"
    print(f"ok: {steps} disk sizes from {used + step} bytes: {dict(results)}, every rerun exact")
