# SPDX-License-Identifier: Apache-2.0
"""The embedding example (examples/embedded-service) with weir's HTTP server
inside it: started with port 0 (a free one), it prints the URL; the test
fetches the dashboard (GET /) and /jobs while the host runs its job, then,
once the job has ended, /jobs/{id} (FINISHED, the records the two threads
pushed) and closes the example's stdin; the example's own checks (no failed
live query, the totals add up) decide its exit code, which must be 0.

The example binary comes with --example (the embedded_service target);
--events sets how many events each thread pushes (default 20,000).
"""
import json
import re
import subprocess
import urllib.request

from weirtest import SCALE


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=30 * SCALE) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read()


def test_embedded_service(example, procs, pytestconfig):
    events = pytestconfig.getoption("events")
    p = procs.start([example("embedded_service"), events, "0"], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True)
    lines = []

    def next_line():
        line = p.stdout.readline()
        assert line, "the example ended early:\n" + "".join(lines[-20:])
        lines.append(line)
        return line

    m = None
    while not m:
        m = re.match(r"serving on (http://127\.0\.0\.1:\d+)/", next_line())
    base = m.group(1)
    jm = re.match(r"job ([0-9a-f]{32})$", next_line().strip())
    assert jm, f"no job id after the URL: {lines[-1]!r}"
    jid = jm.group(1)
    status, ctype, body = get(base, "/")
    assert status == 200 and ctype.startswith("text/html") and b"app.js" in body, (
        f"GET /: {status} {ctype}")
    status, ctype, body = get(base, "/jobs")
    jobs = json.loads(body)["jobs"]
    assert status == 200 and [j["id"] for j in jobs] == [jid] and (
        jobs[0]["name"] == "purchases"), f"/jobs: {jobs}"
    while "job ended" not in next_line():
        pass
    detail = json.loads(get(base, f"/jobs/{jid}")[2])
    assert detail["state"] == "FINISHED", f"state {detail['state']}"
    names = [v["name"] for v in detail["vertices"]]
    assert "purchases_per_user" in names and "revenue_per_minute" in names, (
        f"vertices {names}")
    assert detail["result"]["records-read"] == 2 * events, f"records read {detail['result']}"
    p.stdin.close()
    lines.append(p.stdout.read())
    p.wait(timeout=60 * SCALE)
    assert p.returncode == 0, f"the example exited {p.returncode}:\n" + "".join(lines[-20:])
    print("".join(lines[-8:]), end="")
