# SPDX-License-Identifier: Apache-2.0
"""The web console of `weir serve` driven in Debian's headless Chromium over
the DevTools protocol (--remote-debugging-pipe: no extra Python package),
against the real binary (with --token, the page opened with ?access_token=)
and real TOML jobs. Every action is taken from the page (typing, file
picker, clicks) and its effect checked on the REST state:

  submit      a TOML with an unknown key: the loader's diagnostic is shown
              under its line (the line REST names), no job is created; the
              same job from the file picker runs
  subtasks    the per-subtask table of every operator: one row per subtask,
              its counters at most REST's later ones; a vertex of the job
              graph opens its operator's subtasks
  checkpoints completed checkpoints and a min/avg/max summary in the page
  tail        a sink's Server-Sent Events shown as rows with the job's fields
  charts      the throughput chart and charts added from the metric picker
              (one subtask; one line per subtask) have time axes (UTC clock
              labels) and lines; a page opened late draws the server's
              history (as many points as it kept)
  savepoint   triggered from the page: COMPLETED in the page and in REST,
              data.mdb on disk; one triggered over REST listed in the page
  stop        stop with a savepoint from the page: the job STOPPED (listed
              under Completed Jobs), the savepoint COMPLETED on disk; its
              checkpoint summary in the page equals REST's; a savepoint into
              a non-empty directory and a restore from a missing savepoint
              refused with the server's reason
  restart     "Restart from it" on that savepoint: a new job, restored from
              it per GET /jobs/{id}/checkpoints (latest.restored), shown in
              its Checkpoints tab; its Configuration tab shows the TOML
  cancel      the new job cancelled from the page: CANCELED in REST
  exceptions  a job failing on a bad record: the page lists REST's exception,
              its operator, subtask and location
  rates       the stopped job's rates and the end of its throughput chart 0

A screenshot of the console is kept as server-console.png in the build
directory.

Run it with `python3 -m pytest tests/integration/console_tests.py --weir
build/weir --build-dir build`.
"""
import base64
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import threading

import pytest

from weirtest import SCALE, wait_until
from weirtest.server import job_state, pipeline_text, submit_failing_job


def high_fd(fd):
    """`fd` moved to 10 or above, so that the child's dup2 onto 3 and 4
    never overwrites it."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


class Browser:
    """Headless Chromium over --remote-debugging-pipe: DevTools commands as
    NUL-terminated JSON on fd 3, answers and events on fd 4."""

    def __init__(self, chromium, profile, log):
        to_r, to_w = map(high_fd, os.pipe())
        from_r, from_w = map(high_fd, os.pipe())

        def child():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1280,1000",
             "about:blank"],
            pass_fds=(3, 4), preexec_fn=child, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=open(log, "w"))
        os.close(to_r)
        os.close(from_w)
        self.out = os.fdopen(to_w, "wb", buffering=0)
        self.inp = os.fdopen(from_r, "rb", buffering=0)
        self.next_id = 0
        self.answers = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]

    def _read(self):
        buf = b""
        while True:
            chunk = self.inp.read(65536)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                m = json.loads(msg)
                if "id" in m:
                    with self.cv:
                        self.answers[m["id"]] = m
                        self.cv.notify_all()

    def send(self, method, params=None, session=None):
        self.next_id += 1
        i = self.next_id
        m = {"id": i, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        self.out.write(json.dumps(m).encode() + b"\0")
        with self.cv:
            if not self.cv.wait_for(lambda: i in self.answers, timeout=30 * SCALE):
                raise AssertionError(f"DevTools: no answer to {method}")
            a = self.answers.pop(i)
        assert "error" not in a, f"DevTools {method}: {a.get('error')}"
        return a["result"]

    def js(self, expr):
        """The value of the JavaScript expression `expr` in the page
        (promises awaited)."""
        r = self.send("Runtime.evaluate", {"expression": expr, "awaitPromise": True,
                                           "returnByValue": True}, self.session)
        assert "exceptionDetails" not in r, f"{expr}: {r.get('exceptionDetails')}"
        return r["result"].get("value")

    def wait_js(self, expr, what, timeout=20.0):
        return wait_until(lambda: self.js(expr), what, timeout)

    def goto(self, url):
        self.send("Page.navigate", {"url": url}, self.session)
        self.wait_js("document.readyState === 'complete' && !!document.getElementById('jobs')",
                     f"{url} loaded")

    def click(self, selector):
        clicked = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                          " if (!e || e.disabled) return false; e.click(); return true; })()")
        assert clicked, f"no enabled {selector} to click"

    def set_value(self, selector, value):
        self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                f" e.value = {json.dumps(value)}; e.dispatchEvent(new Event('input'));"
                " e.dispatchEvent(new Event('change')); })()")

    def set_file(self, selector, path):
        obj = self.send("Runtime.evaluate", {"expression": f"document.querySelector({json.dumps(selector)})"},
                        self.session)["result"]["objectId"]
        self.send("DOM.setFileInputFiles", {"files": [str(path)], "objectId": obj}, self.session)

    def close(self):
        """Browser.close, then SIGKILL to what is left of chromium's process
        group (its renderer and GPU helpers), waited for."""
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=10 * SCALE)
        except (AssertionError, OSError, subprocess.TimeoutExpired):
            pass
        def gone():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                return True
            return False
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        wait_until(gone, "chromium's processes to exit")


@pytest.fixture
def browser(work, tmp_path_factory, request):
    """A headless Chromium (Browser), its log chromium.log in `work`, closed
    when the test ends; a failed test's output ends with the page's text.
    Its profile is a directory of its own: its LevelDB *.log files are not
    logs to show."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None, "chromium not installed"
    b = Browser(chromium, tmp_path_factory.mktemp("chromium-profile"), work / "chromium.log")
    yield b
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        try:
            print("--- the page:\n" + str(b.js(
                "document.getElementById('tail').replaceChildren(), "
                "location.hash + '\\n' + document.body.innerText"))[-3000:])
        except Exception:  # noqa: BLE001 - the page may be gone
            pass
    b.close()


def test_console(work, build_dir, serve, browser):
    root = work / "savepoints"
    # With --token: the page and everything it asks for carry ?access_token=.
    token = "console-token"
    s = serve(args=["--savepoint-dir", str(root), "--token", token], token=token)
    b = browser
    assert s.request("GET", "/jobs", token=False)[0] == 401, "the token is not required"
    base = f"http://127.0.0.1:{s.port}/?access_token={token}"
    b.goto(base + "#/submit")
    b.wait_js("document.getElementById('overview').textContent.startsWith('weir ')",
              "the page's script answered by the API")

    # submit: an unknown key, its diagnostic under its line.
    good, _ = pipeline_text(work, "console", rate=2000, parallelism=2, checkpoint=True)
    bad = good.replace("parallelism = 2\n", "parallelism = 2\nparalelism = 3\n", 1)
    bad_line = bad.split("\n").index("paralelism = 3") + 1
    b.set_value("#submit-name", "console.toml")
    b.set_value("#submit-text", bad)
    b.click("#submit-button")
    b.wait_js("document.querySelector('#submit-annotated .diag') !== null", "a diagnostic shown")
    status, _, body = s.request("POST", "/jobs?file=console.toml", bad)
    assert status == 400, f"REST answers the bad TOML {status}"
    rest = json.loads(body)["diagnostics"]
    assert rest and rest[0]["line"] == bad_line, (
        f"REST diagnostics {rest}, bad line {bad_line}")
    shown = b.js("""Array.from(document.querySelectorAll('#submit-annotated .diag')).map(d => ({
        line: Number(d.dataset.line), column: Number(d.dataset.column),
        text: d.querySelector('.diag-message').textContent,
        after: d.previousElementSibling && d.previousElementSibling.dataset.line}))""")
    assert len(shown) == len(rest), f"{len(shown)} diagnostics shown, REST has {len(rest)}"
    for d, r in zip(shown, rest):
        assert (d["line"] == r["line"] and d["column"] == r["column"]
                and r["message"] in d["text"] and d["after"] == str(r["line"])), (
            f"diagnostic {d} not shown under its line as REST's {r}")
    assert b.js(f"document.querySelectorAll('#submit-gutter .ln')[{bad_line - 1}]"
                ".classList.contains('error')"), "the gutter marks the bad line"
    assert s.get("/jobs")["jobs"] == [], "a refused submission created a job"
    print(f"submit: {rest[0]['file']}:{bad_line}:{rest[0]['column']} shown under line {bad_line}")

    # submit from the file picker.
    (work / "console.toml").write_text(good)
    b.set_value("#submit-text", "")
    b.set_file("#submit-file", work / "console.toml")
    b.wait_js(f"document.getElementById('submit-text').value === {json.dumps(good)}",
              "the file picker filling the editor")
    b.click("#submit-button")
    jid = b.wait_js("(location.hash.match(/^#\\/jobs\\/([0-9a-f]+)\\//) || [])[1]",
                    "the page on the submitted job")
    assert s.get(f"/jobs/{jid}")["name"] == "console", "the submitted job's name"
    wait_until(lambda: job_state(s, jid) == "RUNNING", "the submitted job RUNNING")

    # subtasks: one row per subtask, counters between two REST reads.
    b.js(f"location.hash = '#/jobs/{jid}/subtasks'")
    b.wait_js("document.querySelectorAll('.subtask-table[data-operator=\"gen\"] tbody tr').length == 2"
              " && Number((document.querySelector('.subtask-table[data-operator=\"gen\"] .records-out')"
              "?.textContent || '0').replace(/,/g, '')) > 0", "the subtasks of gen with records")
    before = s.get(f"/jobs/{jid}")
    shown = b.js("""(() => { const r = {}; for (const t of document.querySelectorAll('.subtask-table'))
        r[t.dataset.operator] = Array.from(t.tBodies[0].rows).map(tr => [Number(tr.dataset.subtask),
          Number(tr.querySelector('.records-out').textContent.replace(/,/g, ''))]); return r; })()""")
    after = s.get(f"/jobs/{jid}")
    for v_after in after["vertices"]:
        name = v_after["name"]
        v_before = next(v for v in before["vertices"] if v["name"] == name)
        assert name in shown and len(shown[name]) == v_after["parallelism"], (
            f"subtasks of {name}: {shown.get(name)}")
        for (k, n), sb, sa in zip(shown[name], v_before["subtasks"], v_after["subtasks"]):
            assert k == sa["subtask"], f"{name} subtask order {shown[name]}"
    # A counter never decreases: what the page shows is at most REST's later value.
    for name, rows in shown.items():
        v_after = next(v for v in after["vertices"] if v["name"] == name)
        for (k, n), sa in zip(rows, v_after["subtasks"]):
            assert 0 <= n <= sa["write-records"], (
                f"{name}/{k}: page {n}, REST {sa['write-records']}")
    # a vertex of the job graph opens its subtasks.
    b.js(f"location.hash = '#/jobs/{jid}/overview'")
    b.wait_js("document.querySelector('#graph g.operator[data-operator=\"per_key\"]') !== null", "the graph")
    b.js("document.querySelector('#graph g.operator[data-operator=\"per_key\"]')"
         ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    b.wait_js("location.hash.endsWith('/subtasks') && Array.from(document.querySelectorAll('.subtask-table'))"
              ".map(t => t.dataset.operator).join() === 'per_key'", "per_key's subtasks from the graph")
    print(f"subtasks: {sum(len(r) for r in shown.values())} subtask rows")

    # checkpoints and their summary.
    b.js(f"location.hash = '#/jobs/{jid}/checkpoints'")
    b.wait_js("document.querySelector('#checkpoints tbody .state-COMPLETED') !== null"
              " && (document.querySelector('#checkpoint-summary tr[data-stat=\"max\"] td')?.textContent || '-') !== '-'",
              "a completed checkpoint and its summary")
    done = [c for c in s.get(f"/jobs/{jid}/checkpoints")["history"] if c["status"] == "COMPLETED"]
    shown_ids = b.js("Array.from(document.querySelectorAll('#checkpoints tbody tr')).map(r => Number(r.dataset.checkpoint))")
    assert set(shown_ids) & {c["id"] for c in done}, (
        f"checkpoints {shown_ids} vs REST {done[:3]}")

    # tail of the raw sink.
    b.js(f"location.hash = '#/jobs/{jid}/tail'")
    b.wait_js("document.getElementById('tail-sink').options.length == 2", "the sinks to tail")
    b.set_value("#tail-sink", "raw")
    b.click("#tail-start")
    b.wait_js("document.querySelectorAll('#tail .tail-row').length >= 20", "20 rows in the tail")
    rows = [json.loads(t) for t in b.js(
        "Array.from(document.querySelectorAll('#tail .tail-row')).map(e => e.textContent)")]
    assert all(r["key"] == r["seq"] % 4 and r["ts"] == r["seq"] * 10 for r in rows), (
        f"tail rows not the generator's: {rows[:3]}")
    assert b.js("document.getElementById('tail-status').textContent.startsWith('following raw')"), (
        "the tail's status")
    b.click("#tail-stop")
    print(f"tail: {len(rows)} rows of raw")

    # charts: the throughput chart and one from the metric picker. They
    # draw the server's history: a page opened now starts 8 s back.
    hist = wait_until(lambda: (lambda h: h if len(h["times"]) >= 8 else None)(
        s.get(f"/jobs/{jid}/vertices/per_key/metrics/history?get=read-records")),
        "8 samples of per_key in the server's history")
    b.goto(base + f"&opened=late#/jobs/{jid}/metrics")  # a new document, not a hash change
    b.wait_js("document.getElementById('metric-operator').options.length == 4", "the metric picker")
    b.set_value("#metric-operator", "per_key")
    b.set_value("#metric-subtask", "1")
    b.set_value("#metric-name", "read-records")
    b.click("#metric-add")
    chart = '.metric-chart[data-chart="per_key|1|read-records"] svg'
    points = b.wait_js(f"Number((document.querySelector('{chart} path.series') || {{dataset: {{}}}}).dataset.points) >= 3"
                       f" && Number(document.querySelector('{chart} path.series').dataset.points)",
                       "the picked metric's line")
    assert points >= len(hist["times"]), (
        f"a chart opened now has {points} points, the server kept {len(hist['times'])}")
    b.set_value("#metric-subtask", "each")
    b.set_value("#metric-name", "write-records-per-second")
    b.click("#metric-add")
    each = '.metric-chart[data-chart="per_key|each|write-records-per-second"] svg'
    b.wait_js(f"Array.from(document.querySelectorAll('{each} path.series'))"
              ".filter(p => Number(p.dataset.points) >= 3).map(p => p.dataset.series).join() === 'subtask 0,subtask 1'",
              "one line per subtask of per_key")
    ticks = b.js(f"Array.from(document.querySelectorAll('{chart} .x-tick')).map(e => e.textContent)")
    assert ticks and all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in ticks), (
        f"time axis {ticks}")
    b.js(f"location.hash = '#/jobs/{jid}/overview'")
    b.wait_js("document.querySelectorAll('#chart path.series').length == 2"
              " && document.querySelectorAll('#chart .x-tick').length >= 2", "the throughput chart")

    # savepoint from the page.
    b.set_value("#savepoint-target", "sp-1")
    b.click("#savepoint-button")
    b.wait_js("document.querySelector('#savepoints tr.savepoint[data-status=\"COMPLETED\"]') !== null",
              "the savepoint COMPLETED in the page")
    trig = b.js("document.querySelector('#savepoints tr.savepoint').dataset.trigger")
    st = s.get(f"/jobs/{jid}/savepoints/{trig}")
    assert (st["status"]["id"] == "COMPLETED" and st["operation"]["location"] == str(root / "sp-1")
            and (root / "sp-1/data.mdb").exists()), (
        f"savepoint {trig}: {st}")
    assert job_state(s, jid) == "RUNNING", "a savepoint leaves the job running"

    # a refused savepoint (the directory is not empty): REST's reason shown.
    b.click("#savepoint-button")
    refusal = b.wait_js("document.querySelector('#message.error:not([hidden])') &&"
                        " document.getElementById('message').textContent", "the refusal shown")
    assert "not empty" in refusal, f"the refusal shown: {refusal!r}"
    assert b.js("document.querySelectorAll('#savepoints tr.savepoint').length") == 1, (
        "a refused savepoint listed")

    # a savepoint asked with curl (not from this page): listed by the page.
    status, _, body = s.request("POST", f"/jobs/{jid}/savepoints", '{"target-directory": "sp-curl"}')
    assert status == 202, f"savepoint over REST: {status} {body!r}"
    curl_trig = json.loads(body)["request-id"]
    b.wait_js(f"document.querySelector('#savepoints tr.savepoint[data-trigger=\"{curl_trig}\"][data-status=\"COMPLETED\"]')"
              f"?.querySelector('.location').textContent === {json.dumps(str(root / 'sp-curl'))}",
              "the savepoint triggered with curl COMPLETED in the page")
    listed = b.js("Array.from(document.querySelectorAll('#savepoints tr.savepoint'))"
                  ".map(r => r.dataset.trigger)")
    assert listed == [curl_trig, trig], (
        f"the page lists the savepoints {listed}, expected newest first {[curl_trig, trig]}")

    # stop with a savepoint from the page.
    b.set_value("#savepoint-target", "sp-stop")
    b.click("#stop-button")
    b.wait_js("document.querySelectorAll('#savepoints tr.savepoint[data-status=\"COMPLETED\"]').length === 3",
              "the stop savepoint COMPLETED in the page", timeout=30)
    trig2 = b.js("document.querySelector('#savepoints tr.savepoint').dataset.trigger")
    kind = b.js("document.querySelector('#savepoints tr.savepoint td:nth-child(3)').textContent")
    assert trig2 not in (trig, curl_trig) and kind == "stop with savepoint", (
        f"the newest savepoint {trig2} ({kind!r}) is not the stop's")
    st = s.get(f"/jobs/{jid}/savepoints/{trig2}")
    assert (st["status"]["id"] == "COMPLETED" and st["operation"]["stop"] is True
            and (root / "sp-stop/data.mdb").exists()), (
        f"stop with savepoint: {st}")
    wait_until(lambda: job_state(s, jid) == "STOPPED", "STOPPED after the stop")
    b.wait_js(f"document.querySelector('#completed-jobs tr[data-job=\"{jid}\"] .state-STOPPED') !== null"
              f" && !document.querySelector('#jobs tr[data-job=\"{jid}\"]')", "the job under Completed Jobs")
    print(f"savepoints: {root / 'sp-1'}, stop into {root / 'sp-stop'}")

    # the stopped job's checkpoint summary: REST's, value for value.
    b.js(f"location.hash = '#/jobs/{jid}/checkpoints'")
    b.wait_js("document.getElementById('job-state').textContent.startsWith('STOPPED')"
              " && document.querySelector('#checkpoint-summary tbody').dataset.source === 'server'",
              "the stopped job's summary from the server")
    summary = s.get(f"/jobs/{jid}/checkpoints")["summary"]
    shown = b.js("""Array.from(document.querySelectorAll('#checkpoint-summary tbody tr')).flatMap(tr =>
        Array.from(tr.querySelectorAll('td')).map(td => [td.dataset.metric, tr.dataset.stat, Number(td.dataset.value)]))""")
    assert len(shown) == 9 and all(summary[m][k] == v for m, k, v in shown), (
        f"summary shown {shown}, REST {summary}")
    assert (summary["end_to_end_duration"]["max"] >= summary["end_to_end_duration"]["min"]
            and summary["state_size"]["max"] > 0), (
        f"REST summary {summary}")

    # a refused restore: the server's reason shown, no job started.
    jobs_before = len(s.get("/jobs")["jobs"])
    b.js(f"location.hash = '#/jobs/{jid}/savepoints'")
    b.js("document.getElementById('message').hidden = true")
    b.set_value("#restore-path", "no-such-savepoint")
    b.click("#restore-button")
    refusal = b.wait_js("document.querySelector('#message.error:not([hidden])') &&"
                        " document.getElementById('message').textContent", "the refused restore shown")
    assert "no-such-savepoint" in refusal, f"the refused restore: {refusal!r}"
    assert len(s.get("/jobs")["jobs"]) == jobs_before, "a refused restore started a job"

    # restart from the stop's savepoint.
    b.click(f'#savepoints tr.savepoint[data-trigger="{trig2}"] button.restart')
    new = b.wait_js(f"(location.hash.match(/^#\\/jobs\\/([0-9a-f]+)\\//) || [])[1] !== '{jid}'"
                    " && (location.hash.match(/^#\\/jobs\\/([0-9a-f]+)\\//) || [])[1]",
                    "the page on the restarted job")
    wait_until(lambda: job_state(s, new) == "RUNNING", "the restarted job RUNNING")
    cp = s.get(f"/jobs/{new}/checkpoints")
    restored = (cp.get("latest") or {}).get("restored")
    assert restored and str(root / "sp-stop") in json.dumps(restored), (
        f"the restarted job is not restored from {root / 'sp-stop'}: {cp}")
    b.wait_js("(document.querySelector('#checkpoint-latest tr.restored td')?.textContent || '').includes('sp-stop')",
              "the restore shown in the page")
    assert restored["is_savepoint"] and restored["id"] == st["operation"]["checkpoint-id"], (
        f"restored {restored}, the savepoint was checkpoint {st['operation']['checkpoint-id']}")
    b.js(f"location.hash = '#/jobs/{new}/configuration'")
    shown = b.wait_js("Array.from(document.querySelectorAll('#config-text .src-line code'))"
                      ".map(e => e.textContent).join('\\n')", "the configuration tab")
    assert shown == s.get(f"/jobs/{new}/config")["toml"] == good, (
        f"the configuration tab shows {shown[:200]!r}")
    print(f"restart: job {new} restored from {restored}")

    # cancel it from the page.
    b.click("#cancel-button")
    b.click("#cancel-yes")
    wait_until(lambda: job_state(s, new) == "CANCELED", "the job CANCELED")
    b.wait_js("document.getElementById('job-state').textContent.startsWith('CANCELED')",
              "CANCELED in the page")

    # exceptions of a failing job.
    fid = submit_failing_job(s, work)
    entries = s.get(f"/jobs/{fid}/exceptions")["entries"]
    assert entries, "the failed job has no exception"
    b.js(f"location.hash = '#/jobs/{fid}/exceptions'")
    msg = b.wait_js("(document.querySelector('#exceptions td.message') || {}).textContent",
                    "the exception in the page")
    assert msg == entries[0]["message"], f"page shows {msg!r}, REST {entries[0]['message']!r}"
    where = b.js("['task', 'subtask', 'location'].map(c => document.querySelector('#exceptions td.' + c).textContent)")
    assert where == ["in", "0", entries[0]["location"]] and entries[0]["location"], (
        f"page shows operator, subtask, location {where}, REST {entries[0]}")
    print(f"exceptions: {msg[:100]}")

    shot = build_dir / "server-console.png"
    b.js(f"location.hash = '#/jobs/{jid}/overview'")
    b.wait_js(f"document.getElementById('job-title').textContent.includes('{jid}')"
              " && document.querySelector('#graph g.operator') !== null", "the first job redrawn")
    # The stopped job moves nothing: its rates and the end of its
    # throughput chart are 0 once the page has the server's answer (it may
    # first redraw the job as it last saw it, running).
    shown = []

    def rates_at_zero():
        shown[:] = b.js("document.querySelectorAll('#chart path.series').length == 2 ? "
                        "Array.from(document.querySelectorAll('#operators .rate-in, "
                        "#operators .rate-out, #chart path.series title'))"
                        ".map(e => e.textContent) : []")
        return shown and all(r == "0.0" or r.endswith(": 0.0/s") for r in shown)
    try:
        wait_until(rates_at_zero, "the stopped job's rates at 0", 10)
    except AssertionError:
        raise AssertionError(f"the stopped job shows rates {shown}") from None
    data = b.send("Page.captureScreenshot", {}, b.session)["data"]
    shot.write_bytes(base64.b64decode(data))
    assert s.stop() == 0, "weir serve exit 0"
