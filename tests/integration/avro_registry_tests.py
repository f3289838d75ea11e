# SPDX-License-Identifier: Apache-2.0
"""format = "avro" with a schema registry (Confluent's wire format: byte 0,
the schema id as 4 bytes big-endian, the datum) on the Kafka source and sink,
through the real `weir` binary, a real broker (tests/kafka/kafka_broker.py)
and a real registry (tests/kafka/schema_registry_server.py: Apicurio
Registry, its Confluent-compatible API):

- source: messages written by fastavro with two registered writer schemas in
  one topic (the schema evolves mid-topic), each other than the declared
  fields (a removed field, an added field with a default, int read as int64,
  a nullable union, timestamp-millis), read into the same rows as the same
  records written as JSON lines and read by the jsonl format; a bad frame of
  each kind (too short, wrong magic byte, unknown schema id, truncated
  datum, a writer schema that does not resolve) dead-lettered with its topic,
  partition, offset and reason;
- source-unreachable: a registry that does not answer fails the job with a
  message naming its URL;
- basic-auth: through a proxy in front of the registry that asks for HTTP
  basic auth, credentials from the environment (basic_auth_user_info_env)
  read the topic; wrong ones fail the job with HTTP 401, the password in no
  output;
- tls: the same proxy over HTTPS with a self-signed certificate: read with
  `ca_file` naming it; refused without, the message naming the URL;
- sink: the rows a job writes with `format = "avro"` and a registry, read
  back from the topic by fastavro with the schema the registry holds under
  `<topic>-value`, equal the job's rows;
- sink-subjects: subject_strategy "record" and "topic_record" register
  under the record's full name (avro_record_name) and `<topic>-<name>`;
  without a registry the values are bare datums fastavro reads with the
  generated schema;
- sink-incompatible: a sink schema the registry refuses (the subject at
  BACKWARD compatibility holding an incompatible schema) fails the job,
  naming the subject and the registry's reason; nothing is written.

Each is the test function test_<name> (source-unreachable:
test_source_unreachable).
"""
import base64
import datetime
import http.server
import io
import json
import os
import ssl
import struct
import subprocess
import threading
import urllib.error
import urllib.request

import fastavro

from weirtest import read_jsonl, run

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

# The declared fields, the reader side.
SCHEMA = ('{ id = "int64", name = "string", amount = "float64", ts = "timestamp", '
          'note = "string", qty = "int64", country = "string" }')
FIELDS = ["id", "name", "amount", "ts", "note", "qty", "country"]

# Version 1: `qty` an int (read as int64), `legacy` not declared (skipped),
# no `country` (read as null).
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "qty", "type": "int"},
    {"name": "legacy", "type": "string"},
]}
# Version 2, registered under the same subject later: `id` a long, `legacy`
# removed, `country` added with a default, fields reordered.
V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "qty", "type": "long"},
    {"name": "country", "type": "string", "default": "??"},
]}
# A schema whose `name` (a long) cannot be read into the declared string.
UNRESOLVABLE = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "long"}]}


def records(n, version):
    out = []
    for i in range(n):
        ts_ms = 1_700_000_000_000 + i * 1000 + (0 if version == 1 else 10_000_000)
        r = {"id": i + 1000 * version, "name": f"n{i} é \"q\"", "amount": 0.25 + i,
             "ts": EPOCH + datetime.timedelta(milliseconds=ts_ms),
             "note": None if i % 2 else f"note {i}", "qty": i * 3 - 7}
        if version == 1:
            r["legacy"] = "dropped " * i
        else:
            r["country"] = ["DE", "FR", "JP"][i % 3]
        out.append(r)
    return out


def json_form(r):
    """Record `r` as a JSON line the jsonl format reads into the same row."""
    row = {k: r[k] for k in FIELDS if k in r}
    row["ts"] = (r["ts"] - EPOCH) // datetime.timedelta(milliseconds=1)
    return json.dumps(row)


def framed(schema_id, schema, record):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">i", schema_id) + buf.getvalue()


def produce_binary(broker, sandbox, topic, messages):
    """Each message its own file: kcat -P sends each file as one message."""
    paths = []
    for i, m in enumerate(messages):
        paths.append(sandbox.path(f"{topic}-{i:03d}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(m)
    run(["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-p", "0", *paths],
        what="kcat -P")


def consume_binary(broker, topic):
    """The values of `topic`'s partition 0, as bytes, in offset order."""
    p = subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o",
                        "beginning", "-e", "-q", "-f", "%S %s"],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, f"kcat -C: {p.stderr[-2000:]!r}"
    data, at, out = p.stdout, 0, []
    while at < len(data):
        sp = data.index(b" ", at)
        n = int(data[at:sp])
        out.append(data[sp + 1:sp + 1 + n])
        at = sp + 1 + n
    return out


def source_toml(broker, registry_url, topic, out):
    return f"""
[job]
name = "avro-registry"
status_interval = "0s"
on_bad_record = "dead_letter"
dead_letter = {{ path = "bad.jsonl" }}

[[source]]
name = "in"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{broker.bootstrap}"
bounded = "latest"
format = "avro"
schema_registry = {{ url = "{registry_url}" }}
schema = {SCHEMA}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "{out}"
"""


def json_toml(path, out):
    return f"""
[job]
name = "avro-registry-json"
status_interval = "0s"

[[source]]
name = "in"
type = "file"
path = "{path}"
format = "jsonl"
schema = {SCHEMA}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "{out}"
"""


def rows_of(path):
    return [{k: row.get(k) for k in FIELDS} for row in read_jsonl(path)]


def test_source(sandbox, kafka_broker, schema_registry):
    topic = "registry-orders"
    subject = f"{topic}-value"
    v1_id = schema_registry.register(subject, V1)
    v2_id = schema_registry.register(subject, V2)
    bad_id = schema_registry.register("registry-other-value", UNRESOLVABLE)
    assert len({v1_id, v2_id, bad_id}) == 3, f"schema ids {v1_id} {v2_id} {bad_id}"
    unknown_id = max(v1_id, v2_id, bad_id) + 1000
    good1, good2 = records(6, 1), records(6, 2)
    whole = framed(v1_id, V1, good1[0])
    bad = {
        2: (b"\x00\x00\x01", "shorter than the 5-byte frame header"),
        4: (b"\x01" + whole[1:], "magic byte 0x01"),
        7: (b"\x00" + struct.pack(">i", unknown_id) + whole[5:], f"unknown schema id {unknown_id}"),
        9: (whole[:len(whole) - 4], f"schema id {v1_id}: field"),
        12: (framed(bad_id, UNRESOLVABLE, {"id": 1, "name": 2}), "does not resolve"),
    }
    good = [framed(v1_id, V1, r) for r in good1] + [framed(v2_id, V2, r) for r in good2]
    messages = []
    for m in good:
        while len(messages) in bad:
            messages.append(bad[len(messages)][0])
        messages.append(m)
    assert len(messages) == len(good) + len(bad), f"{len(messages)} messages"
    kafka_broker.create_topic(topic, partitions=1)
    produce_binary(kafka_broker, sandbox, topic, messages)

    sandbox.run_toml(source_toml(kafka_broker, schema_registry.url, topic, "out.jsonl"))
    sandbox.write("orders.jsonl", "".join(json_form(r) + "\n" for r in good1 + good2))
    sandbox.run_toml(json_toml("orders.jsonl", "json-out.jsonl"), name="json.toml")
    got, want = rows_of(sandbox.path("out.jsonl")), rows_of(sandbox.path("json-out.jsonl"))
    assert len(want) == 12, f"the JSON form gave {len(want)} rows"
    assert got == want, f"rows differ from the JSON form's:\n{got[:3]}\n{want[:3]}"
    # Spot checks against the records themselves: the evolution is visible.
    assert got[0]["country"] is None and got[6]["country"] == "DE", f"country: {got}"
    assert got[1]["note"] is None and got[0]["note"] == "note 0", f"note: {got}"

    dead = read_jsonl(sandbox.path("bad.jsonl"))
    assert [d["offset"] for d in dead] == sorted(bad), f"dead letters: {dead}"
    for d in dead:
        assert d["topic"] == topic and d["partition"] == 0, f"origin: {d}"
        assert bad[d["offset"]][1] in d["reason"], (
            f"offset {d['offset']}: reason {d['reason']!r} lacks {bad[d['offset']][1]!r}")
        assert d["raw"] == bad[d["offset"]][0].hex(), f"raw of offset {d['offset']}: {d}"
    print(f"source: {len(got)} rows equal the JSON form's (schema ids {v1_id}, {v2_id}); "
          f"dead letters: {[d['reason'] for d in dead]}")


def test_source_unreachable(sandbox, kafka_broker, schema_registry):
    topic = "registry-unreachable"
    v1_id = schema_registry.register(f"{topic}-value", V1)
    kafka_broker.create_topic(topic, partitions=1)
    produce_binary(kafka_broker, sandbox, topic, [framed(v1_id, V1, records(1, 1)[0])])
    # A port nothing listens on: the registry at port 1 refuses connections.
    p = sandbox.run_toml(source_toml(kafka_broker, "http://127.0.0.1:1/ccompat", topic,
                                     "out.jsonl"), expect=None)
    assert p.returncode != 0, "a job whose registry cannot be reached succeeded"
    assert "schema registry at http://127.0.0.1:1/ccompat" in p.stderr, p.stderr[-2000:]
    assert "is the registry running" in p.stderr, p.stderr[-2000:]
    print(f"source-unreachable: exit {p.returncode}: {p.stderr.strip().splitlines()[-1]}")


class AuthProxy:
    """An HTTP server on a free port that forwards to `target` the requests
    carrying basic auth `user:password`, and answers the others 401; HTTPS
    with `tls` = (certificate file, key file)."""

    def __init__(self, target, user_info, tls=None):
        expected = "Basic " + base64.b64encode(user_info.encode()).decode()
        self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(handler):
                auth = handler.headers.get("Authorization")
                self.seen.append(auth)
                if auth != expected:
                    body = b'{"error_code":401,"message":"Unauthorized"}'
                    handler.send_response(401)
                    handler.send_header("Content-Length", str(len(body)))
                    handler.end_headers()
                    handler.wfile.write(body)
                    return
                n = int(handler.headers.get("Content-Length") or 0)
                req = urllib.request.Request(
                    target + handler.path, data=handler.rfile.read(n) if n else None,
                    method=handler.command,
                    headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        status, body = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, body = e.code, e.read()
                handler.send_response(status)
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            do_GET = do_POST = _forward

            def log_message(handler, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_basic_auth(sandbox, kafka_broker, schema_registry):
    topic = "registry-auth"
    v1_id = schema_registry.register(f"{topic}-value", V1)
    kafka_broker.create_topic(topic, partitions=1)
    produce_binary(kafka_broker, sandbox, topic,
                   [framed(v1_id, V1, r) for r in records(3, 1)])
    with AuthProxy(schema_registry.url, "alice:s3cret-pw") as proxy:
        toml = source_toml(kafka_broker, proxy.url, topic, "out.jsonl").replace(
            f'url = "{proxy.url}"', f'url = "{proxy.url}", basic_auth_user_info_env = "REG_AUTH"')
        path = sandbox.write("auth.toml", toml)
        ok = sandbox.run("run", path, "-q", env={**os.environ, "REG_AUTH": "alice:s3cret-pw"})
        assert len(read_jsonl(sandbox.path("out.jsonl"))) == 3, "rows read through the proxy"
        assert proxy.seen and all(a == proxy.seen[0] for a in proxy.seen), proxy.seen
        bad = sandbox.run("run", path, "-q", expect=None,
                          env={**os.environ, "REG_AUTH": "alice:wrong-pw"})
        assert bad.returncode != 0, "wrong credentials were accepted"
        assert "HTTP 401" in bad.stderr and "check basic_auth_user_info" in bad.stderr, (
            bad.stderr[-2000:])
        for p in (ok, bad):
            out = p.stdout + p.stderr
            assert "s3cret-pw" not in out and "wrong-pw" not in out, "a password was printed"
        unset = sandbox.run("run", path, "-q", expect=2,
                            env={k: v for k, v in os.environ.items() if k != "REG_AUTH"})
        assert "auth.toml:" in unset.stderr and "REG_AUTH" in unset.stderr, unset.stderr
    print(f"basic-auth: {len(proxy.seen)} requests through the proxy; 401: "
          f"{bad.stderr.strip().splitlines()[-1]}")


def test_tls(sandbox, kafka_broker, schema_registry):
    topic = "registry-tls"
    v1_id = schema_registry.register(f"{topic}-value", V1)
    kafka_broker.create_topic(topic, partitions=1)
    produce_binary(kafka_broker, sandbox, topic,
                   [framed(v1_id, V1, r) for r in records(2, 1)])
    cert, key = sandbox.path("cert.pem"), sandbox.path("key.pem")
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", key, "-out", cert], what="openssl req")
    with AuthProxy(schema_registry.url, "bob:pw", tls=(cert, key)) as proxy:
        assert proxy.url.startswith("https://")
        base = source_toml(kafka_broker, proxy.url, topic, "out.jsonl")
        trusted = base.replace(f'url = "{proxy.url}"',
                               f'url = "{proxy.url}", basic_auth_user_info = "bob:pw", '
                               f'ca_file = "cert.pem"')
        sandbox.run_toml(trusted, name="trusted.toml")
        assert len(read_jsonl(sandbox.path("out.jsonl"))) == 2, "rows read over https"
        untrusted = base.replace(f'url = "{proxy.url}"',
                                 f'url = "{proxy.url}", basic_auth_user_info = "bob:pw"')
        p = sandbox.run_toml(untrusted, name="untrusted.toml", expect=None)
        assert p.returncode != 0, "a certificate no CA vouches for was accepted"
        assert f"schema registry at {proxy.url}" in p.stderr and "ca_file" in p.stderr, (
            p.stderr[-2000:])
    print(f"tls: read with ca_file; without: {p.stderr.strip().splitlines()[-1]}")


def sink_toml(broker, registry_url, inp, topic, extra=""):
    return f"""
[job]
name = "avro-sink"
status_interval = "0s"

[[source]]
name = "in"
type = "file"
path = "{inp}"
format = "jsonl"
schema = {SCHEMA}

[[sink]]
name = "orders_out"
input = "in"
type = "kafka"
topic = "{topic}"
bootstrap_servers = "{broker.bootstrap}"
format = "avro"
schema_registry = {{ url = "{registry_url}" {extra} }}
"""


def test_sink(sandbox, kafka_broker, schema_registry):
    topic = "registry-sink"
    rows = records(5, 2) + records(4, 1)
    sandbox.write("orders.jsonl", "".join(json_form(r) + "\n" for r in rows))
    kafka_broker.create_topic(topic, partitions=1)
    sandbox.run_toml(sink_toml(kafka_broker, schema_registry.url, "orders.jsonl", topic))
    sandbox.run_toml(json_toml("orders.jsonl", "json-out.jsonl"), name="json.toml")
    want = rows_of(sandbox.path("json-out.jsonl"))

    assert f"{topic}-value" in schema_registry.subjects(), schema_registry.subjects()
    values = consume_binary(kafka_broker, topic)
    assert len(values) == len(want), f"{len(values)} messages, {len(want)} rows"
    got = []
    for v in values:
        assert v[0] == 0, f"magic byte {v[0]}"
        schema_id = struct.unpack(">i", v[1:5])[0]
        writer = fastavro.parse_schema(schema_registry.schema(schema_id))
        buf = io.BytesIO(v[5:])
        rec = fastavro.schemaless_reader(buf, writer, None)
        assert buf.tell() == len(v) - 5, "bytes after the datum"
        if rec["ts"] is not None:
            rec["ts"] = (rec["ts"] - EPOCH) // datetime.timedelta(milliseconds=1)
        got.append({k: rec.get(k) for k in FIELDS})
    for w in want:  # the file sink writes timestamps as ms already
        assert isinstance(w["ts"], int), w
    assert got == want, f"fastavro read back other rows:\n{got[:3]}\n{want[:3]}"
    written = schema_registry.schema(struct.unpack(">i", values[0][1:5])[0])
    assert written["name"] == "orders_out" and written.get("namespace") == "avro_sink", written
    print(f"sink: {len(got)} messages read back by fastavro equal the job's rows")


def test_sink_incompatible(sandbox, kafka_broker, schema_registry):
    topic = "registry-sink-refused"
    subject = f"{topic}-value"
    # `id` a string: the sink's `id` (a long) cannot read its data.
    schema_registry.register(subject, {"type": "record", "name": "orders_out",
                                       "namespace": "avro_sink", "fields": [
                                           {"name": "id", "type": "string"}]})
    schema_registry.set_compatibility(subject, "BACKWARD")
    sandbox.write("orders.jsonl", "".join(json_form(r) + "\n" for r in records(3, 2)))
    kafka_broker.create_topic(topic, partitions=1)
    p = sandbox.run_toml(sink_toml(kafka_broker, schema_registry.url, "orders.jsonl", topic),
                         expect=None)
    assert p.returncode != 0, "a sink whose schema the registry refuses succeeded"
    assert f"subject '{subject}'" in p.stderr and "refused" in p.stderr, p.stderr[-2000:]
    assert "ncompatib" in p.stderr, f"the registry's reason is missing: {p.stderr[-2000:]}"
    assert consume_binary(kafka_broker, topic) == [], "the refused sink wrote messages"
    print(f"sink-incompatible: exit {p.returncode}: {p.stderr.strip().splitlines()[-1]}")


def test_sink_subjects(sandbox, kafka_broker, schema_registry):
    rows = records(3, 2)
    sandbox.write("orders.jsonl", "".join(json_form(r) + "\n" for r in rows))
    sandbox.run_toml(json_toml("orders.jsonl", "json-out.jsonl"), name="json.toml")
    want = rows_of(sandbox.path("json-out.jsonl"))
    for strategy, topic, subject in (
            ("record", "registry-sink-record", "shop.Total"),
            ("topic_record", "registry-sink-tr", "registry-sink-tr-shop.Total")):
        kafka_broker.create_topic(topic, partitions=1)
        toml = sink_toml(kafka_broker, schema_registry.url, "orders.jsonl", topic,
                         f', subject_strategy = "{strategy}"').replace(
            'format = "avro"', 'format = "avro"\navro_record_name = "shop.Total"')
        sandbox.run_toml(toml, name=f"{strategy}.toml")
        assert subject in schema_registry.subjects(), (subject, schema_registry.subjects())
        values = consume_binary(kafka_broker, topic)
        ids = {struct.unpack(">i", v[1:5])[0] for v in values}
        assert len(values) == 3 and len(ids) == 1, f"{strategy}: {len(values)} values, ids {ids}"
        written = schema_registry.schema(ids.pop())
        assert (written["namespace"], written["name"]) == ("shop", "Total"), written
    # No registry: bare datums of the generated schema (every field ["null", T]).
    topic = "registry-sink-plain"
    kafka_broker.create_topic(topic, partitions=1)
    toml = sink_toml(kafka_broker, schema_registry.url, "orders.jsonl", topic).replace(
        f'schema_registry = {{ url = "{schema_registry.url}"  }}', "")
    assert "schema_registry" not in toml
    sandbox.run_toml(toml, name="plain.toml")
    types = {"id": "long", "name": "string", "amount": "double", "note": "string",
             "qty": "long", "country": "string",
             "ts": {"type": "long", "logicalType": "timestamp-millis"}}
    generated = fastavro.parse_schema({
        "type": "record", "name": "orders_out", "namespace": "avro_sink",
        "fields": [{"name": f, "type": ["null", types[f]], "default": None} for f in FIELDS]})
    got = []
    for v in consume_binary(kafka_broker, topic):
        buf = io.BytesIO(v)
        rec = fastavro.schemaless_reader(buf, generated, None)
        assert buf.tell() == len(v), "bytes after the datum"
        rec["ts"] = (rec["ts"] - EPOCH) // datetime.timedelta(milliseconds=1)
        got.append({k: rec.get(k) for k in FIELDS})
    assert got == want, f"bare datums read back:\n{got}\n{want}"
    print(f"sink-subjects: record and topic_record subjects registered; {len(got)} bare datums")
