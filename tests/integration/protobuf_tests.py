# SPDX-License-Identifier: Apache-2.0
"""format = "protobuf" through the real `weir` binary, with messages written
by the reference library (Python classes protoc generates from
tests/integration/protobuf/events.proto, Debian's python3-protobuf):

- round-trip: every scalar type, an enum, proto3 `optional`, a Timestamp,
  wrappers, a nested message read whole (JSON text) and by path (`inner.a`,
  `inner.deeper.c`, `where.lat` from an imported file), repeated fields, a
  map and a oneof, in a file of length-delimited messages: weir's rows must
  equal the rows weir's jsonl format reads from the same messages' JSON
  form (json_format.MessageToDict, its 64-bit integers as JSON numbers);
  once through DynamicMessage (JSON-text fields declared) and once without
  the JSON-text fields, through the wire-format fast path.
- bad-input: an undecodable message in the middle and a message cut short
  at the end, dead-lettered with the file, the message number, the byte
  offset of its length prefix and a reason; every other message read.
- load-errors: a missing .proto, an unknown message (with a did-you-mean)
  and a declared field the message lacks (with a did-you-mean), each
  refused at file:line:col with exit 2.
- kafka: on a real broker (tests/kafka/kafka_broker.py), one message per
  Kafka message: the rows equal the round trip's; a truncated message is
  dead-lettered with its topic, partition and offset.

Each is the test function test_<name> (round-trip: test_round_trip).
"""
import datetime
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from weirtest import read_jsonl, run

try:
    import google.protobuf  # noqa: F401
except ImportError:
    # Debian's python3-protobuf (./dev installs it), for a python3 that is
    # not Debian's own (a virtualenv, pyenv).
    sys.path.append("/usr/lib/python3/dist-packages")
    import google.protobuf  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "protobuf")
PROTO = os.path.join(PROTO_DIR, "events.proto")

# The declared fields: scalars, nested paths, JSON text of nested values,
# and `missing_in_json`-free names only (every one is in the message).
SCHEMA = ('{ ts = "timestamp", id = "int64", ok = "bool", small = "int64", u32 = "int64", '
          'u64 = "int64", s32 = "int64", s64 = "int64", f32 = "int64", f64 = "float64", '
          'sf32 = "int64", sf64 = "int64", ratio = "float64", score = "float64", '
          'name = "string", blob = "string", color = "string", maybe = "int64", '
          'wrapped = "int64", wrapped_text = "string", inner = "string", '
          '"inner.a" = "int64", "inner.deeper.c" = "int64", tags = "string", '
          'counts = "string", attrs = "string", "where.lat" = "float64", '
          '"where.label" = "string", word = "string", number = "int64" }')
# Without the fields read as JSON text: weir reads these from the wire format
# itself (its fast path) rather than through DynamicMessage.
JSON_TEXT = ["inner", "tags", "counts", "attrs"]
SCHEMA_WIRE = SCHEMA
for _f in JSON_TEXT:
    SCHEMA_WIRE = SCHEMA_WIRE.replace(f'{_f} = "string", ', "")
FIELDS = ["ts", "id", "ok", "small", "u32", "u64", "s32", "s64", "f32", "f64", "sf32", "sf64",
          "ratio", "score", "name", "blob", "color", "maybe", "wrapped", "wrapped_text",
          "inner", "inner.a", "inner.deeper.c", "tags", "counts", "attrs", "where.lat",
          "where.label", "word", "number"]


def generated(sandbox):
    """The events_pb2 module protoc generates for events.proto (and geo_pb2)."""
    out = sandbox.path("pb2")
    os.makedirs(out, exist_ok=True)
    run(["protoc", f"-I{PROTO_DIR}", f"--python_out={out}", PROTO,
         os.path.join(PROTO_DIR, "common", "geo.proto")], what="protoc")
    sys.path.insert(0, out)
    try:
        return importlib.import_module("events_pb2")
    finally:
        sys.path.remove(out)


def make_messages(pb, n):
    out = []
    for i in range(n):
        m = pb.Event()
        m.id = i - 2 if i != 3 else -(2 ** 62)
        m.ok = i % 2 == 0
        m.small = -(2 ** 31) if i == 4 else i * 7
        m.u32 = 2 ** 32 - 1 - i
        m.u64 = 2 ** 63 - 1 - i if i % 2 else i
        m.s32 = -i * 1000
        m.s64 = -(2 ** 40) * i
        m.f32 = i * 3
        m.f64 = 2 ** 53 + i * 2 if i else 0
        m.sf32 = -i
        m.sf64 = -(2 ** 50) + i
        m.ratio = 0.5 + i  # exact in a float
        m.score = 1.25e10 * (i + 1) if i != 5 else 0.0
        m.name = f"n{i} é \"quoted\"\\" if i != 6 else ""
        m.blob = bytes(range(i, i + i % 5))
        m.color = i % 3
        if i % 2 == 0:
            m.maybe = i * 100 if i != 4 else 0  # present though 0
        ms = 1_700_000_000_000 + i * 1001
        m.ts.seconds, m.ts.nanos = divmod(ms, 1000)
        m.ts.nanos *= 1_000_000
        if i % 3:
            m.wrapped.value = i * 11 if i != 4 else 0
            m.wrapped_text.value = f"w{i}"
        if i != 7:
            m.inner.a = i + 1
            m.inner.b = f"x{i}"
            if i % 2:
                m.inner.deeper.c = -i
        m.tags.extend(f"t{j}" for j in range(i % 4))
        m.counts.extend([2 ** 40 + j for j in range(i % 3)])
        for j in range(i % 3):
            m.attrs[f"k{j}"] = j * i + 1
        if i % 4 != 1:
            m.where.lat = 48.5 + i
            m.where.lon = 2.25
            m.where.label = f"p{i}"
        if i % 3 == 1:
            m.word = f"w{i}"
        elif i % 3 == 2:
            m.number = i * 5
        m.extra = "skip me " * i
        out.append(m)
    return out


def delimited(messages):
    """The messages length-delimited (a varint length before each)."""
    out = bytearray()
    for m in messages:
        out += varint(m.ByteSize()) + m.SerializeToString()
    return bytes(out)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def int64_numbers(value, desc):
    """json_format's 64-bit integers (JSON strings) as numbers, as weir's
    jsonl reads them into int64 fields and writes them in JSON text."""
    from google.protobuf.descriptor import FieldDescriptor as FD
    wide = {FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_SINT64, FD.TYPE_FIXED64, FD.TYPE_SFIXED64}
    if desc.full_name == "google.protobuf.Timestamp":
        t = datetime.datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=datetime.timezone.utc)
        frac = value[19:].rstrip("Z").lstrip(".")
        return int(t.timestamp()) * 1000 + int((frac + "000")[:3])
    if desc.full_name.startswith("google.protobuf.") and desc.full_name.endswith("Value"):
        return int(value) if "Int64" in desc.full_name else value
    out = {}
    for k, v in value.items():
        f = desc.fields_by_name[k]
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[k] = {mk: (int(mv) if vf.type in wide else mv) for mk, mv in v.items()}
        elif f.message_type is not None:
            conv = (lambda x: int64_numbers(x, f.message_type))
            out[k] = [conv(x) for x in v] if f.label == FD.LABEL_REPEATED else conv(v)
        elif f.type in wide:
            out[k] = [int(x) for x in v] if f.label == FD.LABEL_REPEATED else int(v)
        else:
            out[k] = v
    return out


def json_line(m):
    """Message `m` as weir's jsonl reads the same values: its JSON form
    (json_format, proto field names, proto3 defaults included), 64-bit
    integers as numbers, a map's keys sorted, the paths weir declares as
    flat keys."""
    from google.protobuf import json_format
    top = json_format.MessageToDict(m, preserving_proto_field_name=True,
                                    including_default_value_fields=True)
    plain = json_format.MessageToDict(m, preserving_proto_field_name=True)
    # Nested messages without their default fields (weir writes a nested
    # message's present fields only).
    for k in ("inner", "where"):
        if k in plain:
            top[k] = plain[k]
    row = int64_numbers(top, m.DESCRIPTOR)
    inner = row.get("inner")
    row["inner.a"] = inner.get("a", 0) if inner is not None else None
    row["inner.deeper.c"] = (inner.get("deeper", {}).get("c", 0)
                             if inner is not None and "deeper" in inner else None)
    where = row.get("where")
    row["where.lat"] = where.get("lat", 0.0) if where is not None else None
    row["where.label"] = where.get("label", "") if where is not None else None
    for k in ("tags", "counts"):
        row.setdefault(k, [])
    # weir writes a map's entries sorted by key (their order means nothing).
    row["attrs"] = dict(sorted(row.get("attrs", {}).items()))
    return json.dumps(row, ensure_ascii=False)


def file_toml(path, fmt, out, extra="", source_extra="", schema=SCHEMA):
    pb = (f'proto_file = "{PROTO}"\nproto_include = ["{PROTO_DIR}"]\n'
          'message = "test.events.Event"\n') if fmt == "protobuf" else ""
    return f"""
[job]
name = "protobuf"
status_interval = "0s"
{extra}

[[source]]
name = "in"
type = "file"
path = "{path}"
format = "{fmt}"
{pb}{source_extra}schema = {schema}
event_time = {{ field = "ts" }}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "{out}"
timestamp_format = "iso8601"
"""


def normalize(rows):
    return [{k: row.get(k) for k in FIELDS} for row in rows]


def expected_rows(sandbox, messages):
    """weir's rows from the messages' JSON form through format jsonl."""
    with open(sandbox.path("same.jsonl"), "w") as f:
        f.write("".join(json_line(m) + "\n" for m in messages))
    sandbox.run_toml(file_toml("same.jsonl", "jsonl", "from_json.jsonl"), name="json.toml")
    return normalize(read_jsonl(sandbox.path("from_json.jsonl")))


def test_round_trip(sandbox):
    pb = generated(sandbox)
    messages = make_messages(pb, 12)
    from_json = expected_rows(sandbox, messages)
    assert len(from_json) == len(messages), f"jsonl read {len(from_json)} rows"
    # Spot checks that the JSON form is what the messages say.
    assert from_json[3]["id"] == -(2 ** 62) and from_json[1]["u64"] == 2 ** 63 - 2
    assert from_json[1]["maybe"] is None and from_json[4]["maybe"] == 0
    assert from_json[0]["wrapped"] is None and from_json[4]["wrapped"] == 0
    assert from_json[7]["inner"] is None and from_json[7]["inner.a"] is None
    assert from_json[0]["inner.deeper.c"] is None and from_json[1]["inner.deeper.c"] == -1
    with open(sandbox.path("events.pb"), "wb") as f:
        f.write(delimited(messages))
    sandbox.run_toml(file_toml("events.pb", "protobuf", "out.jsonl"))
    rows = normalize(read_jsonl(sandbox.path("out.jsonl")))
    assert len(rows) == len(messages), f"{len(rows)} rows, expected {len(messages)}"
    for i, (got, want) in enumerate(zip(rows, from_json)):
        diff = {k: (got[k], want[k]) for k in FIELDS if got[k] != want[k]}
        assert not diff, f"row {i}: (protobuf, json) differ in {diff}"
    # The same messages read without the JSON-text fields take the
    # wire-format fast path: the same values.
    assert all(f'{f} = "string"' not in SCHEMA_WIRE for f in JSON_TEXT), SCHEMA_WIRE
    sandbox.run_toml(file_toml("events.pb", "protobuf", "wire.jsonl", schema=SCHEMA_WIRE),
                     name="wire.toml")
    wire = normalize(read_jsonl(sandbox.path("wire.jsonl")))
    assert len(wire) == len(messages), f"{len(wire)} rows from the fast path"
    for i, (got, want) in enumerate(zip(wire, from_json)):
        diff = {k: (got[k], want[k]) for k in FIELDS if k not in JSON_TEXT and got[k] != want[k]}
        assert not diff, f"row {i} (fast path): (protobuf, json) differ in {diff}"
    print(f"round-trip: {len(messages)} messages equal their JSON form, "
          "through DynamicMessage and the fast path")


def test_bad_input(sandbox):
    pb = generated(sandbox)
    messages = make_messages(pb, 10)
    parts = [varint(m.ByteSize()) + m.SerializeToString() for m in messages]
    # Message 4 (0-based 3): a field of wire type 7, which does not exist.
    bad_body = bytes([0x0F, 0x01, 0x02, 0x03])
    parts[3] = varint(len(bad_body)) + bad_body
    # The last message cut short: its prefix says more bytes than are left.
    parts[-1] = parts[-1][:len(parts[-1]) // 2]
    data = b"".join(parts)
    offsets = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    with open(sandbox.path("bad.pb"), "wb") as f:
        f.write(data)
    sandbox.run_toml(file_toml("bad.pb", "protobuf", "out.jsonl",
                               extra='on_bad_record = "dead_letter"\n'
                                     'dead_letter = { path = "dead.jsonl" }'))
    rows = read_jsonl(sandbox.path("out.jsonl"))
    want_ids = [m.id for i, m in enumerate(messages) if i not in (3, 9)]
    assert [r["id"] for r in rows] == want_ids, f"rows: {[r['id'] for r in rows]}"
    bad = read_jsonl(sandbox.path("dead.jsonl"))
    assert len(bad) == 2, f"expected 2 dead letters, got {bad}"
    assert bad[0]["file"] == "bad.pb" and bad[0]["line"] == 4 and bad[0]["offset"] == offsets[3], (
        f"first dead letter's origin: {bad[0]}")
    assert "not a valid test.events.Event message" in bad[0]["reason"], bad[0]
    assert bad[0]["raw"] == bad_body.hex(), f"raw is not the message's hex: {bad[0]}"
    assert bad[1]["line"] == 10 and bad[1]["offset"] == offsets[9], (
        f"second dead letter's origin: {bad[1]}")
    assert "truncated message" in bad[1]["reason"], bad[1]
    print(f"bad-input: {len(rows)} rows, dead letters: {[b['reason'] for b in bad]}")


def test_map_duplicate_key(sandbox):
    """A map key that comes twice in a message (two serialized messages
    concatenated merge, as Protobuf defines) keeps its last value in the
    map's JSON text, as parsing into a map does."""
    pb = generated(sandbox)
    first, second = pb.Event(id=1), pb.Event()
    first.ts.FromMilliseconds(1_700_000_000_000)  # the job's event time
    first.attrs["k"], first.attrs["a"] = 1, 5
    second.attrs["k"] = 2
    body = first.SerializeToString() + second.SerializeToString()
    with open(sandbox.path("map.pb"), "wb") as f:
        f.write(varint(len(body)) + body)
    merged = pb.Event()
    merged.ParseFromString(body)
    assert dict(merged.attrs) == {"k": 2, "a": 5}, dict(merged.attrs)
    sandbox.run_toml(file_toml("map.pb", "protobuf", "out.jsonl"))
    rows = read_jsonl(sandbox.path("out.jsonl"))
    # The text itself: json.loads would keep the last of two keys too.
    assert [r["attrs"] for r in rows] == ['{"a":5,"k":2}'], rows


def test_bad_tail(sandbox):
    """A file whose end cannot be framed (a message cut short, or a length
    prefix that is not a varint) is one dead letter. With checkpoints, the
    final one records the file's end: a rerun on the same directory resumes
    there, is not refused, and dead-letters nothing again."""
    pb = generated(sandbox)
    messages = make_messages(pb, 3)
    good = b"".join(varint(m.ByteSize()) + m.SerializeToString() for m in messages)
    tails = {"cut": varint(100) + b"\x01\x02\x03", "prefix": b"\xff" * 11}
    for name, tail in tails.items():
        with open(sandbox.path(f"{name}.pb"), "wb") as f:
            f.write(good + tail)
        extra = (f'on_bad_record = "dead_letter"\ndead_letter = {{ path = "{name}-dead.jsonl" }}\n'
                 f'[checkpoint]\ndir = "{name}-state"\ninterval = "100ms"')
        toml = file_toml(f"{name}.pb", "protobuf", f"{name}-out", extra=extra)
        for attempt in (1, 2):
            sandbox.run_toml(toml, name=f"{name}.toml")
            rows = [r for part in sorted(Path(sandbox.path(f"{name}-out")).glob("part-*"))
                    for r in read_jsonl(part)]
            assert sorted(r["id"] for r in rows) == sorted(m.id for m in messages), (
                f"{name}, run {attempt}: rows {[r['id'] for r in rows]}")
            bad = read_jsonl(sandbox.path(f"{name}-dead.jsonl"))
            assert len(bad) == 1, f"{name}, run {attempt}: {len(bad)} dead letters: {bad}"
            assert bad[0]["offset"] == len(good), f"{name}: the dead letter's origin: {bad[0]}"
    print(f"bad-tail: {sorted(tails)}: one dead letter each, the rerun resumes at the end")


def test_load_errors(sandbox):
    with open(sandbox.path("e.pb"), "wb") as f:
        f.write(b"")
    base = file_toml("e.pb", "protobuf", "out.jsonl")
    # (pipeline, the text of the line the error must point at, what it says)
    cases = [
        (base.replace(PROTO, "missing.proto"), "proto_file =",
         ["cannot read missing.proto"]),
        # A device never ends: refused, not read forever.
        (base.replace(PROTO, "/dev/zero"), "proto_file =", ["/dev/zero is not a regular file"]),
        (base.replace('message = "test.events.Event"', 'message = "test.events.Evnt"'),
         "message =",
         ["message test.events.Evnt is not defined", "did you mean \"test.events.Event\"?"]),
        (base.replace('"inner.a" = "int64"', '"inner.aa" = "int64"'), "schema =",
         ["field 'inner.aa' is not in message test.events.Event",
          "did you mean \"inner.a\"?"]),
        (base.replace('name = "string"', 'nmae = "string"'), "schema =",
         ["field 'nmae' is not in message", "did you mean \"name\"?"]),
        (base.replace('tags = "string"', 'tags = "int64"'), "schema =",
         ["field 'tags'", "repeated string", "no array type"]),
    ]
    for i, (toml, at, wants) in enumerate(cases):
        line = next(n for n, text in enumerate(toml.split("\n"), 1) if text.startswith(at))
        p = sandbox.run_toml(toml, expect=2, name=f"case{i}.toml")
        assert f"case{i}.toml:{line}:" in p.stderr, (
            f"case {i}: not at line {line} ({at}): {p.stderr}")
        for w in wants:
            assert w in p.stderr, f"case {i}: {w!r} not in stderr:\n{p.stderr}"
    print(f"load-errors: {len(cases)} refused with exit 2")


def test_kafka(sandbox, kafka_broker):
    pb = generated(sandbox)
    messages = make_messages(pb, 12)
    from_json = expected_rows(sandbox, messages)
    values = [m.SerializeToString() for m in messages]
    cut = values[5][:-1]  # its last field, a string, one byte short
    values.insert(5, cut)  # offset 5: a truncated message
    paths = []
    for i, v in enumerate(values):
        paths.append(sandbox.path(f"m{i:02d}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(v)
    broker = kafka_broker
    broker.create_topic("pb-events", partitions=1)
    run(["kcat", "-P", "-b", broker.bootstrap, "-t", "pb-events", "-p", "0", *paths],
        what="kcat -P")
    toml = f"""
[job]
name = "protobuf-kafka"
status_interval = "0s"
on_bad_record = "dead_letter"
dead_letter = {{ path = "dead.jsonl" }}

[[source]]
name = "in"
type = "kafka"
topics = ["pb-events"]
bootstrap_servers = "{broker.bootstrap}"
bounded = "latest"
format = "protobuf"
proto_file = "{PROTO}"
proto_include = ["{PROTO_DIR}"]
message = "test.events.Event"
schema = {SCHEMA}
event_time = {{ field = "ts" }}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "out.jsonl"
timestamp_format = "iso8601"
"""
    sandbox.run_toml(toml)
    rows = normalize(read_jsonl(sandbox.path("out.jsonl")))
    assert rows == from_json, f"kafka rows differ:\n{rows[:1]}\n{from_json[:1]}"
    bad = read_jsonl(sandbox.path("dead.jsonl"))
    assert [b.get("offset") for b in bad] == [5], f"dead letters: {bad}"
    assert bad[0].get("topic") == "pb-events" and bad[0].get("partition") == 0, bad[0]
    assert "not a valid test.events.Event message" in bad[0]["reason"], bad[0]
    assert bad[0]["raw"] == cut.hex(), f"raw is not the message's hex: {bad[0]}"
    print(f"kafka: {len(rows)} rows equal the JSON form's, dead letter: {bad[0]['reason']}")
