# SPDX-License-Identifier: Apache-2.0
"""`tests/opensearch/node.sh start [--port P]` reuses a node started before
only where it was asked for: with another --port it refuses (exit 1) and
says where the running node is, instead of printing the other node's URL as
if it were on P.

No OpenSearch node runs here: the node the state file names is a stand-in
(a `sleep` process in its own process group, which `node.sh stop` kills as
it would the node's JVM). The script itself, its state file and its stop are
the real ones."""
import json
import os
from pathlib import Path

from weirtest import free_port, run

NODE_SH = Path(__file__).resolve().parent / "node.sh"


def node_sh(state, *args):
    env = dict(os.environ, WEIR_OPENSEARCH_STATE=str(state))
    return run([NODE_SH, *args], timeout=60, expect=None, env=env)


def test_node_script(work, procs):
    stand_in = procs.start(["sleep", "120"], start_new_session=True)
    running, other = free_port(), free_port()
    while other == running:
        other = free_port()
    state = work / "state.json"
    node_dir = work / "node"
    node_dir.mkdir()
    url = f"http://127.0.0.1:{running}"
    state.write_text(json.dumps({"pid": stand_in.pid, "url": url, "dir": str(node_dir)}))

    p = node_sh(state, "start", "--port", str(other))
    assert p.returncode == 1 and f"not on port {other}" in p.stderr and url in p.stderr and (
        "URL=" not in p.stdout), (
        f"start --port {other} with a node on {running}: expected exit 1 naming both, "
        f"got {p.returncode}:\n{p.stdout}{p.stderr}")
    assert stand_in.poll() is None, "the refusal touched the running node"
    for args in (("start", "--port", str(running)), ("start",), ("status",)):
        p = node_sh(state, *args)
        assert p.returncode == 0 and p.stdout.strip() == f"URL={url}", (
            f"{' '.join(args)}: expected the running node's URL, got {p.returncode}:\n"
            f"{p.stdout}{p.stderr}")
    p = node_sh(state, "stop")
    assert p.returncode == 0, f"stop failed:\n{p.stderr}"
    stand_in.wait(timeout=10)
    assert not state.exists() and not node_dir.exists(), (
        "stop left the state file or the node's directory")
