#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The page-view dashboard over Kafka: data/'s access log produced into a
# topic with kcat, read by the job, its requests per status per minute
# written to another topic exactly once, then read back read_committed:
#   examples/kafka-dashboard/run.sh [--port P] [--keep]
# Starts a Kafka broker of its own the way the tests do (tests/kafka/broker.sh:
# Kafka 3.9.1, KRaft, one node on 127.0.0.1, fetched with Maven into ~/.m2 the
# first time) on port P (default: a free one), creates the topics access-log
# (4 partitions) and status-per-minute, produces the log's 9,999 JSON lines
# with kcat, runs pipeline.toml with the weir binary (build/weir, or $WEIR;
# on another port than 9092, a copy of it under out/kafka-dashboard/), prints
# the top pages (the job's summary), the topic status-per-minute consumed
# read_committed and summarised, and what the file sinks committed under
# out/kafka-dashboard/. The broker is stopped and removed at the end; --keep
# leaves it running and prints how to read the topics and how to stop it.
# Needs: ./dev build (weir with the kafka source and sink), Java 17, Maven
# and kcat (./dev deps).
set -euo pipefail
cd "$(dirname "$0")/../.."
EX=examples/kafka-dashboard
OUT=out/kafka-dashboard

PORT="" KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --port) PORT=${2:?--port needs a number}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (--port P, --keep)" >&2; exit 2 ;;
  esac
done

WEIR=${WEIR:-build/weir}
if [ ! -x "$WEIR" ]; then
  echo "run.sh: no weir binary at $WEIR: build it with ./dev build (or set WEIR=/path/to/weir)" >&2
  exit 1
fi
for tool in kcat java mvn python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "run.sh: $tool is not installed: ./dev deps installs it" >&2
    exit 1
  fi
done

# A broker of its own, whatever `tests/kafka/broker.sh start` started
# before: its own state file, so that stopping it stops no other.
export WEIR_KAFKA_STATE
WEIR_KAFKA_STATE=$(mktemp "${TMPDIR:-/tmp}/weir-kafka-dashboard-XXXXXX.json")
rm -f "$WEIR_KAFKA_STATE"
BROKER=tests/kafka/broker.sh
stop_broker() { $BROKER stop; rm -f "$WEIR_KAFKA_STATE"; }
if [ "$KEEP" -eq 0 ]; then trap stop_broker EXIT; fi

echo "== starting Kafka on 127.0.0.1:${PORT:-<a free port>} (tests/kafka/broker.sh)"
mkdir -p out
if ! BOOTSTRAP=$($BROKER start ${PORT:+--port "$PORT"} 2>out/kafka-dashboard.broker.log |
    sed -n 's/^BOOTSTRAP=//p') || [ -z "$BOOTSTRAP" ]; then
  cat out/kafka-dashboard.broker.log >&2
  exit 1
fi
rm -f out/kafka-dashboard.broker.log
echo "== Kafka at $BOOTSTRAP"
$BROKER create-topic access-log 4
# The windows carry the log's 2015 event times as message timestamps: without
# retention.ms = -1 the broker would delete them at its next retention check.
$BROKER create-topic status-per-minute 1 --config retention.ms=-1

LOG=data/apache_access_logs/apache_logs_anon.jsonl
# kcat's retries while the new broker loads its coordinators are noise: its
# messages are shown only if it fails.
if ! kcat -P -b "$BOOTSTRAP" -t access-log -X enable.idempotence=true -l "$LOG" \
    2>out/kafka-dashboard.kcat.log; then
  cat out/kafka-dashboard.kcat.log >&2
  exit 1
fi
rm -f out/kafka-dashboard.kcat.log
echo "== topic access-log: records per partition (kcat -C)"
kcat -C -b "$BOOTSTRAP" -t access-log -e -q -f '%p\n' | sort -n | uniq -c |
  awk '{ n += $1; printf "partition %s  %6d\n", $2, $1 } END { printf "total        %6d\n", n }'

# The job's own outputs, from this run only.
rm -rf "$OUT"
mkdir -p "$OUT"
PIPELINE=$EX/pipeline.toml
if [ "$BOOTSTRAP" != 127.0.0.1:9092 ]; then
  PIPELINE=$OUT/pipeline.toml
  sed "s|\"127.0.0.1:9092\"|\"$BOOTSTRAP\"|" "$EX/pipeline.toml" >"$PIPELINE"
fi
echo "== weir run $PIPELINE"
# --fresh: a new broker, so no checkpoint of an earlier run to resume from.
"$WEIR" run "$PIPELINE" --fresh

echo "== topic status-per-minute, read_committed (kcat -C -X isolation.level=read_committed)"
# key <TAB> value, one message a line.
kcat -C -b "$BOOTSTRAP" -t status-per-minute -e -q -X isolation.level=read_committed \
  -f '%k\t%s\n' >"$OUT/status-per-minute.topic.tsv"
python3 - "$OUT/status-per-minute.topic.tsv" <<'PY'
import collections, datetime, json, sys
rows = [line.split("\t", 1) for line in open(sys.argv[1]).read().splitlines()]
values = [json.loads(v) for _, v in rows]
keyed = sum(k == str(v["status"]) for (k, _), v in zip(rows, values))
windows = collections.Counter((v["window_start"], v["status"]) for v in values)
print(f"messages {len(values)}, keyed by their status {keyed}, "
      f"(minute, status) more than once {sum(n > 1 for n in windows.values())}")
print("-- requests per status: minutes with that status, requests, the busiest minute")
per = collections.defaultdict(lambda: [0, 0, 0])
for v in values:
    s = per[v["status"]]
    s[0], s[1], s[2] = s[0] + 1, s[1] + v["requests"], max(s[2], v["requests"])
print(f"{'status':>6}{'minutes':>9}{'requests':>10}{'peak_minute':>13}")
for status, (m, r, p) in sorted(per.items(), key=lambda kv: (-kv[1][1], kv[0])):
    print(f"{status:>6}{m:>9}{r:>10}{p:>13}")
print("-- the five busiest minutes, UTC, with their requests per status")
minutes = collections.defaultdict(dict)
for v in values:
    minutes[v["window_start"]][v["status"]] = v["requests"]
print(f"{'minute':<16}{'requests':>10}  by_status")
for start, by in sorted(minutes.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:5]:
    t = datetime.datetime.fromtimestamp(start / 1000, datetime.timezone.utc)
    print(f"{t:%Y-%m-%d %H:%M}{sum(by.values()):>10}  "
          + " ".join(f"{status}:{n}" for status, n in sorted(by.items())))
print(f"-- total: {sum(v['requests'] for v in values)} requests in {len(minutes)} minutes")
PY

echo "== files committed under $OUT/ (one directory of parts per file sink)"
for sink in views views_late status_per_minute errors; do
  rows=$( (cat "$OUT/$sink"/part-* 2>/dev/null || true) | wc -l)
  printf '%-18s %6d rows\n' "$sink" "$rows"
done
views=$( (cat "$OUT/views"/part-* 2>/dev/null || true) |
  python3 -c 'import json, sys; print(sum(json.loads(l)["views"] for l in sys.stdin if l.strip()))')
echo "views in $OUT/views: $views"

if [ "$KEEP" -eq 1 ]; then
  echo "== the broker keeps running at $BOOTSTRAP:"
  echo "   kcat -C -b $BOOTSTRAP -t status-per-minute -e -X isolation.level=read_committed"
  echo "   stop it: WEIR_KAFKA_STATE=$WEIR_KAFKA_STATE $BROKER stop"
fi
