#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""format = "protobuf" against jsonl on the same bids: N Nexmark-like bids
written as a file of length-delimited Protobuf messages (bid.proto, by
protoc's Python classes) and as JSON lines, each read by `weir run` from the
file source into a filter that reads every field (so projection push-down
skips nothing), three times each. Protobuf is read twice: with bid.proto
(proto3: weir's wire-format fast path) and with the same message declared
proto2 (the same bytes, which weir decodes with DynamicMessage). Prints, per format, the best wall time,
its records/s, and records per CPU second (user + system of weir), with
the commit, date, machine and load average.

    bench/ingest/protobuf.py [--weir build/weir] [--records 1000000]
"""
import argparse
import datetime
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

try:
    import google.protobuf  # noqa: F401
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")  # Debian's python3-protobuf


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def write_inputs(work, n):
    subprocess.run(["protoc", f"-I{HERE}", f"--python_out={work}",
                    os.path.join(HERE, "bid.proto")], check=True)
    sys.path.insert(0, work)
    import bid_pb2
    import json
    channels = ["Google", "Facebook", "Baidu", "Apple"]
    with open(os.path.join(work, "bids.pb"), "wb") as pb, \
            open(os.path.join(work, "bids.jsonl"), "w") as js:
        for i in range(n):
            ms = 1_700_000_000_000 + i
            b = bid_pb2.Bid(auction=1000 + i % 977, bidder=2000 + i % 1531,
                            price=100 + i * 7 % 100000, channel=channels[i % 4],
                            url=f"https://www.nexmark.com/item.htm?query={i % 1000}",
                            extra="")
            b.date_time.seconds, b.date_time.nanos = ms // 1000, ms % 1000 * 1_000_000
            s = b.SerializeToString()
            pb.write(varint(len(s)) + s)
            js.write(json.dumps({"auction": b.auction, "bidder": b.bidder,
                                 "price": b.price, "channel": b.channel, "url": b.url,
                                 "date_time": ms, "extra": ""}) + "\n")


def proto2(work):
    """bid.proto declared proto2: the same wire format, decoded by DynamicMessage."""
    text = open(os.path.join(HERE, "bid.proto")).read().replace(
        'syntax = "proto3";', 'syntax = "proto2";')
    lines = [("  optional " + line.strip()) if line.startswith("  ") else line
             for line in text.splitlines()]
    path = os.path.join(work, "bid2.proto")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def pipeline(work, fmt):
    proto = {"protobuf": os.path.join(HERE, "bid.proto"),
             "protobuf-dynamic": os.path.join(work, "bid2.proto")}.get(fmt)
    pb = f'proto_file = "{proto}"\nmessage = "nexmark.Bid"\n' if proto else ""
    path = os.path.join(work, "bids.pb" if proto else "bids.jsonl")
    return f"""
[job]
name = "ingest-{fmt}"
status_interval = "0s"

[[source]]
name = "bids"
type = "file"
path = "{path}"
format = "{"protobuf" if proto else fmt}"
{pb}schema = {{ auction = "int64", bidder = "int64", price = "int64", channel = "string", url = "string", date_time = "timestamp", extra = "string" }}

[[operator]]
name = "all"
type = "filter"
input = "bids"
where = "price >= 0 and auction >= 0 and bidder >= 0 and channel is not null and url is not null and date_time is not null and (extra is null or extra == '')"

[[sink]]
name = "out"
input = "all"
type = "blackhole"
"""


def timed(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", default=os.path.join(REPO, "build", "weir"))
    ap.add_argument("--records", type=int, default=1_000_000)
    args = ap.parse_args()
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "?")
    print(f"commit {commit}, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, "
          f"{os.cpu_count()} CPUs of {model}, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as work:
        write_inputs(work, args.records)
        proto2(work)
        for fmt in ["jsonl", "protobuf", "protobuf-dynamic"]:
            toml = os.path.join(work, f"{fmt}.toml")
            with open(toml, "w") as f:
                f.write(pipeline(work, fmt))
            runs = [timed([args.weir, "run", toml]) for _ in range(3)]
            wall, cpu = min(runs)
            print(f"{fmt:16} {args.records / wall:12,.0f} records/s (best of 3, {wall:.2f} s), "
                  f"{args.records / cpu:12,.0f} records per CPU second")


if __name__ == "__main__":
    main()
