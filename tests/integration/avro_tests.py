# SPDX-License-Identifier: Apache-2.0
"""format = "avro" on the file source, through the real `weir` binary, with
Avro Object Container Files written by fastavro:

- round-trip: every Avro type weir reads (boolean, int, long, float, double,
  string, bytes, enum, nullable unions, timestamp-millis/micros, date,
  decimal, uuid, a nested record, an array, a map), a writer schema other
  than the declared fields (fields reordered, one extra, one missing, int
  read as float64), in each codec (null, deflate, xz): weir's rows must equal
  the rows weir reads from the same records written as JSON lines, and the
  values computed here.
- bad-input: a corrupt block (its sync marker damaged) and a datum whose
  union index is out of range, dead-lettered with the file, the record
  number, the block's byte offset and a reason; every other record read.
- load-errors: a declared type the writer's type cannot be read as, and a
  file that is not Avro, each refused at load time with file:line:col, exit 2.
- kafka: on a real broker (tests/kafka/kafka_broker.py), one datum per
  message (fastavro's schemaless writer, the writer schema in an .avsc file):
  the rows equal the round trip's; a truncated datum and one written with
  another schema are dead-lettered with their topic, partition and offset.

Each is the test function test_<name> (round-trip: test_round_trip).
"""
import datetime
import decimal
import io
import json
import uuid

import fastavro

from weirtest import read_jsonl, run


WRITER = {
    "type": "record", "name": "Event", "namespace": "test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "ok", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "score", "type": "double"},
        {"name": "name", "type": "string"},
        {"name": "blob", "type": "bytes"},
        {"name": "color", "type": {"type": "enum", "name": "Color",
                                   "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "maybe", "type": ["null", "long"]},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                   "precision": 10, "scale": 2}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "extra", "type": "string"},  # not declared: skipped
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "a", "type": "long"}, {"name": "b", "type": ["null", "string"]}]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
    ],
}

# The declared fields (the reader side): reordered, `missing` not written,
# `extra` not declared, `small` (an Avro int) read as float64.
SCHEMA = ('{ ts = "timestamp", id = "int64", ok = "bool", small = "float64", ratio = "float64", '
          'score = "float64", name = "string", blob = "string", color = "string", '
          'maybe = "int64", ts_us = "timestamp", day = "timestamp", price = "string", '
          'uid = "string", inner = "string", tags = "string", attrs = "string", '
          'missing = "string" }')
FIELDS = ["ts", "id", "ok", "small", "ratio", "score", "name", "blob", "color", "maybe",
          "ts_us", "day", "price", "uid", "inner", "tags", "attrs", "missing"]

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def make_records(n):
    out = []
    for i in range(n):
        ts_ms = 1_700_000_000_000 + i * 1000
        out.append({
            "id": i - 2 if i != 3 else -(2 ** 62),
            "ok": i % 2 == 0,
            "small": -(2 ** 31) if i == 4 else i * 7,
            "ratio": 0.5 + i,
            "score": 1.25e10 * (i + 1) if i != 5 else -0.0,
            "name": f"n{i} é\u00e9 \"quoted\"\\" if i != 6 else "",
            "blob": f"b{i}".encode(),
            "color": ["RED", "GREEN", "BLUE"][i % 3],
            "maybe": None if i % 2 else i * 100,
            "ts": EPOCH + datetime.timedelta(milliseconds=ts_ms),
            # micros: floored to ms, also before the epoch
            "ts_us": EPOCH + datetime.timedelta(microseconds=ts_ms * 1000 + 999)
            if i != 7 else EPOCH - datetime.timedelta(microseconds=1500),
            "day": datetime.date(2024, 2, 28) + datetime.timedelta(days=i),
            "price": decimal.Decimal(f"{i * 3}.{i:02d}") if i != 8 else decimal.Decimal("-0.05"),
            "uid": uuid.UUID(int=i * 0x1234567890abcdef + 1),
            "extra": "skip me " * i,
            "inner": {"a": i, "b": None if i % 3 == 0 else f"x{i}"},
            "tags": [f"t{j}" for j in range(i % 4)],
            "attrs": {f"k{j}": j * i for j in range(i % 3)},
        })
    return out


def expected_row(r):
    """The row weir must give for record `r` (its file sink's jsonl: timestamps
    as ISO-8601 UTC text with ms)."""
    def iso(ms):
        t = EPOCH + datetime.timedelta(milliseconds=ms)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    ts_ms = (r["ts"] - EPOCH) // datetime.timedelta(milliseconds=1)
    us = (r["ts_us"] - EPOCH) // datetime.timedelta(microseconds=1)
    day_ms = (r["day"] - datetime.date(1970, 1, 1)).days * 86_400_000
    return {
        "ts": iso(ts_ms), "id": r["id"], "ok": r["ok"], "small": float(r["small"]),
        "ratio": r["ratio"], "score": r["score"], "name": r["name"],
        "blob": r["blob"].decode(), "color": r["color"], "maybe": r["maybe"],
        "ts_us": iso(us // 1000), "day": iso(day_ms), "price": str(r["price"]),
        "uid": str(r["uid"]),
        "inner": json.dumps(r["inner"], separators=(",", ":")),
        "tags": json.dumps(r["tags"], separators=(",", ":")),
        "attrs": json.dumps(r["attrs"], separators=(",", ":")),
        "missing": None,
    }


def json_line(r):
    """Record `r` as weir's jsonl source reads the same values."""
    row = expected_row(r)
    row["inner"], row["tags"], row["attrs"] = r["inner"], r["tags"], r["attrs"]
    del row["missing"]
    return json.dumps(row)


def file_toml(path, fmt, out, extra=""):
    return f"""
[job]
name = "avro"
status_interval = "0s"
{extra}

[[source]]
name = "in"
type = "file"
path = "{path}"
format = "{fmt}"
schema = {SCHEMA}
event_time = {{ field = "ts" }}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "{out}"
timestamp_format = "iso8601"
"""


def normalize(rows):
    # Key order and the float -0.0's sign are not what is compared.
    return [{k: row.get(k) for k in FIELDS} for row in rows]


def test_round_trip(sandbox):
    records = make_records(12)
    expected = [expected_row(r) for r in records]
    with open(sandbox.path("same.jsonl"), "w") as f:
        f.write("".join(json_line(r) + "\n" for r in records))
    sandbox.run_toml(file_toml("same.jsonl", "jsonl", "from_json.jsonl"), name="json.toml")
    from_json = normalize(read_jsonl(sandbox.path("from_json.jsonl")))
    assert from_json == expected, (
        f"jsonl rows differ from the expected:\n{from_json[:2]}\n{expected[:2]}")
    parsed = fastavro.parse_schema(WRITER)
    for codec in ["null", "deflate", "xz"]:
        data = sandbox.path(f"events-{codec}.avro")
        with open(data, "wb") as f:
            # Small blocks: several per file.
            fastavro.writer(f, parsed, records, codec=codec, sync_interval=200)
        sandbox.run_toml(file_toml(data, "avro", f"out-{codec}.jsonl"), name=f"{codec}.toml")
        rows = normalize(read_jsonl(sandbox.path(f"out-{codec}.jsonl")))
        assert len(rows) == len(records), (
            f"{codec}: {len(rows)} rows, expected "
            f"{len(records)}")
        for i, (got, want) in enumerate(zip(rows, expected)):
            assert got == want, f"{codec}: row {i} is\n{got}\nexpected\n{want}"
        assert rows == from_json, f"{codec}: rows differ from the JSON form's"
    print(f"round-trip: {len(records)} records in 3 codecs equal their JSON form")


SYNC = bytes([0xA5, 0x5A]) * 8


def read_long(data, at):
    """The zig-zag varint at data[at]: (value, offset after it)."""
    shift = v = 0
    while True:
        b = data[at]
        at += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (v >> 1) ^ -(v & 1), at


def test_bad_input(sandbox):
    records = make_records(40)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(WRITER), records, codec="null",
                    sync_interval=400, sync_marker=SYNC)
    data = bytearray(buf.getvalue())
    # Each block: its offset and record count.
    blocks, at = [], data.index(SYNC) + 16
    while at < len(data):
        count, after_count = read_long(data, at)
        size, after_size = read_long(data, after_count)
        blocks.append((at, count, after_count))
        at = after_size + size + 16
    assert len(blocks) >= 4, f"expected at least 4 blocks, got {len(blocks)}"
    counts = [c for _, c, _ in blocks]
    # The second block's size off by one: its sync marker is not where
    # the size says, so the block is corrupt.
    data[blocks[1][2]] ^= 0x02
    # In the fourth block, the first datum's `maybe` union index out of
    # range: that datum is bad and the rest of its block unframed.
    _, datum_at = read_long(data, blocks[3][2])
    first = records[sum(counts[:3])]
    partial = dict(WRITER, fields=WRITER["fields"][:8])
    prefix = io.BytesIO()
    fastavro.schemaless_writer(prefix, fastavro.parse_schema(partial),
                               {f["name"]: first[f["name"]] for f in partial["fields"]})
    data[datum_at + len(prefix.getvalue())] = 0x14  # union index 10
    path = sandbox.path("bad.avro")
    with open(path, "wb") as f:
        f.write(bytes(data))
    sandbox.run_toml(file_toml(path, "avro", "out.jsonl",
                      extra='on_bad_record = "dead_letter"\n'
                            'dead_letter = { path = "bad.jsonl" }'))
    rows = read_jsonl(sandbox.path("out.jsonl"))
    lost = set(range(counts[0], counts[0] + counts[1]))
    lost |= set(range(sum(counts[:3]), sum(counts[:4])))
    want_ids = [r["id"] for i, r in enumerate(records) if i not in lost]
    got_ids = [r["id"] for r in rows]
    assert got_ids == want_ids, f"rows read: {got_ids}, expected {want_ids}"
    bad = read_jsonl(sandbox.path("bad.jsonl"))
    assert len(bad) == 2, f"expected 2 dead letters, got {bad}"
    assert (all(b.get("origin") == path or b.get("path") == path or path in json.dumps(b)
            for b in bad)), (
        f"dead letters without their file: {bad}")
    assert "sync marker" in bad[0]["reason"], f"first dead letter: {bad[0]}"
    assert ("union branch 10 out of range" in bad[1]["reason"]
            and "maybe" in bad[1]["reason"]), (
        f"second dead letter: {bad[1]}")
    assert str(blocks[3][0]) in json.dumps(bad[1]), (
        f"the bad datum's block offset {blocks[3][0]} is not given: {bad[1]}")
    # Its number among the records read: the corrupt block's are not counted.
    number = sum(counts[:3]) - counts[1] + 1
    assert bad[1]["line"] == number, (
        f"the bad datum's record number {number} is not given: {bad[1]}")
    print(f"bad-input: {len(rows)} rows read, {len(bad)} dead letters: "
          f"{[b['reason'] for b in bad]}")


def test_load_errors(sandbox):
    path = sandbox.path("events.avro")
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(WRITER), make_records(2))
    toml = file_toml(path, "avro", "out.jsonl").replace('name = "string"', 'name = "int64"')
    p = sandbox.run_toml(toml, expect=2)
    assert ("pipeline.toml:" in p.stderr and "field 'name'" in p.stderr
            and "cannot be read as int64" in p.stderr), (
        f"stderr: {p.stderr}")
    notavro = sandbox.path("text.avro")
    with open(notavro, "w") as f:
        f.write('{"a": 1}\n')
    p = sandbox.run_toml(file_toml(notavro, "avro", "out.jsonl"), expect=2)
    assert "pipeline.toml:" in p.stderr and "not an Avro container file" in p.stderr, (
        f"stderr: {p.stderr}")
    print("load-errors: both refused with exit 2")


def test_kafka(sandbox, kafka_broker):
    records = make_records(12)
    parsed = fastavro.parse_schema(WRITER)
    files = []
    for i, r in enumerate(records):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        files.append(buf.getvalue())
    # Two bad messages, at offsets 3 and 8: a datum cut short, and one of
    # another writer schema (its bytes do not end where this schema's do).
    bad_at = {3: files[3][:len(files[3]) // 2]}
    other = fastavro.parse_schema({"type": "record", "name": "Other", "fields": [
        {"name": "id", "type": "long"}, {"name": "pad", "type": "string"}]})
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, records[0])
    extra = io.BytesIO()
    fastavro.schemaless_writer(extra, other, {"id": 1, "pad": "x" * 20})
    bad_at[8] = buf.getvalue() + extra.getvalue()
    messages = []
    for f in files:
        if len(messages) in bad_at:
            messages.append(bad_at[len(messages)])
        messages.append(f)
    assert len(messages) == 14, "message count"
    paths = []
    for i, m in enumerate(messages):
        paths.append(sandbox.path(f"m{i:02d}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(m)
    with open(sandbox.path("event.avsc"), "w") as f:
        json.dump(WRITER, f)
    broker = kafka_broker
    broker.create_topic("avro-events", partitions=1)
    # kcat -P with files: each file is one message, bytes as they are.
    run(["kcat", "-P", "-b", broker.bootstrap, "-t", "avro-events", "-p", "0", *paths],
        what="kcat -P")
    toml = f"""
[job]
name = "avro-kafka"
status_interval = "0s"
on_bad_record = "dead_letter"
dead_letter = {{ path = "bad.jsonl" }}

[[source]]
name = "in"
type = "kafka"
topics = ["avro-events"]
bootstrap_servers = "{broker.bootstrap}"
bounded = "latest"
format = "avro"
avro_schema = "event.avsc"
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
    expected = [expected_row(r) for r in records]
    assert rows == expected, f"kafka rows differ:\n{rows[:2]}\n{expected[:2]}"
    bad = read_jsonl(sandbox.path("bad.jsonl"))
    assert [b.get("offset") for b in bad] == [3, 8], f"dead letters: {bad}"
    assert all(b.get("topic") == "avro-events" and b.get("partition") == 0 for b in bad), (
        f"dead letters without topic and partition: {bad}")
    assert "truncated datum" in bad[0]["reason"], f"first dead letter: {bad[0]}"
    assert "after the datum's end" in bad[1]["reason"], f"second dead letter: {bad[1]}"
    assert bad[0]["raw"] == bad_at[3].hex(), f"raw is not the datum's hex: {bad[0]}"
    print(f"kafka: {len(rows)} rows equal the expected, 2 dead letters: "
          f"{[b['reason'] for b in bad]}")

