#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small `_bulk`-compatible HTTP receiver that injects failures, for the
Elasticsearch sink's retry tests (tests/opensearch/bulk_retry_tests.py).

A real OpenSearch node cannot be made to fail a chosen item on a chosen
attempt, so the retry tests talk to this instead (the other sink tests use a
real node: tests/opensearch/opensearch_node.py). It answers POST /_bulk and
POST /<prefix>/_bulk as Elasticsearch 7/8 and OpenSearch do: NDJSON `index`
actions with `_index` and optional `_id` (a generated id otherwise), a JSON
response with `errors` and one item per action in order ({"index": {"_index",
"_id", "status", "error": {"type", "reason"}}}), 201 for a new document and
200 for an overwrite. Documents are kept in memory per index.

Failure injection (the `faults` given to BulkReceiver, or POST /_weir/faults):
  {"item_429_first": N}     each document's first N attempts get a per-item
                            429 es_rejected_execution_exception
  {"request_503_every": K}  every K-th bulk request fails as a whole with
                            HTTP 503 (nothing in it is indexed)
  {"always_429_ids": [...]} these ids are always rejected with 429
  {"reject_400_ids": [...]} these ids get 400 mapper_parsing_exception
GET /_weir/state returns {"documents": {index: {id: source}}, "requests": N,
"attempts": {id: N}}.

Run alone: bulk_receiver.py [--port P] [--faults JSON]  (prints URL=...)
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class BulkReceiver:
    def __init__(self, faults: dict | None = None, port: int = 0):
        self.faults = dict(faults or {})
        self.documents: dict[str, dict[str, dict]] = {}
        self.attempts: dict[str, int] = {}
        self.requests = 0
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status: int, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/_weir/state":
                    with receiver.lock:
                        self._reply(200, {"documents": receiver.documents,
                                          "requests": receiver.requests,
                                          "attempts": receiver.attempts})
                else:
                    self._reply(200, {"version": {"number": "weir-bulk-receiver"}})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                if self.path == "/_weir/faults":
                    with receiver.lock:
                        receiver.faults = json.loads(body or b"{}")
                    self._reply(200, {"acknowledged": True})
                elif self.path.split("?")[0].endswith("/_bulk"):
                    status, reply = receiver.bulk(body)
                    self._reply(status, reply)
                else:
                    self._reply(404, {"error": f"no handler for {self.path}"})

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def bulk(self, body: bytes):
        lines = [l for l in body.split(b"\n") if l.strip()]
        if len(lines) % 2:
            return 400, {"error": {"type": "illegal_argument_exception",
                                   "reason": "the bulk request must end with a newline"}}
        with self.lock:
            self.requests += 1
            every = self.faults.get("request_503_every")
            if every and self.requests % every == 0:
                return 503, {"error": {"type": "unavailable_shards_exception",
                                       "reason": "injected: the whole request fails"},
                             "status": 503}
            items = []
            errors = False
            for action_line, source_line in zip(lines[0::2], lines[1::2]):
                action = json.loads(action_line)
                if list(action) != ["index"]:
                    return 400, {"error": {"type": "illegal_argument_exception",
                                           "reason": f"unexpected action {list(action)}"}}
                meta = action["index"]
                index = meta["_index"]
                doc_id = meta.get("_id") or f"gen-{next(self._ids)}"
                source = json.loads(source_line)
                key = f"{index}/{doc_id}"
                attempt = self.attempts.get(key, 0) + 1
                self.attempts[key] = attempt
                item = {"_index": index, "_id": doc_id}
                if doc_id in self.faults.get("reject_400_ids", []):
                    item.update(status=400, error={
                        "type": "mapper_parsing_exception",
                        "reason": f"injected: failed to parse document with id '{doc_id}'"})
                elif (doc_id in self.faults.get("always_429_ids", [])
                      or attempt <= self.faults.get("item_429_first", 0)):
                    item.update(status=429, error={
                        "type": "es_rejected_execution_exception",
                        "reason": "injected: rejected execution of coordinating operation"})
                else:
                    docs = self.documents.setdefault(index, {})
                    item.update(status=200 if doc_id in docs else 201,
                                result="updated" if doc_id in docs else "created")
                    docs[doc_id] = source
                errors = errors or item["status"] >= 300
                items.append({"index": item})
            return 200, {"took": 1, "errors": errors, "items": items}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--faults", default="{}")
    a = ap.parse_args(argv)
    with BulkReceiver(json.loads(a.faults), a.port) as r:
        print(f"URL={r.url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
