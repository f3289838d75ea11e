#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fraud detection end to end: generated card transactions with planted frauds,
# the job's alerts to a Kafka topic exactly once and to an OpenSearch index,
# both read back and compared with the frauds the generator planted:
#   examples/fraud-detection/run.sh [--seed N] [--keep]
# Generates the input with generate.py (--seed, default 42) into
# out/fraud-detection/input/, starts a Kafka broker and an OpenSearch node of
# its own the way the tests do (tests/kafka/broker.sh: Kafka 3.9.1, KRaft;
# tests/opensearch/node.sh: OpenSearch 2.19, security off; both fetched with
# Maven into ~/.m2 the first time, both on free ports of 127.0.0.1, each with
# its own state file, so that neither is one you started yourself), creates
# the topic fraud-alerts, runs pipeline.toml with the weir binary (build/weir,
# or $WEIR; on a copy under out/fraud-detection/ naming the servers' ports),
# and prints the topic read_committed, the index, and the alerts against
# out/fraud-detection/input/planted.jsonl. Both servers are stopped at the
# end; --keep leaves them running and prints how to read and stop them.
# Needs: ./dev build (weir with the kafka and elasticsearch sinks), Java 17,
# Maven and kcat (./dev deps).
set -euo pipefail
cd "$(dirname "$0")/../.."
EX=examples/fraud-detection
OUT=out/fraud-detection

SEED=42 KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) SEED=${2:?--seed needs a number}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (--seed N, --keep)" >&2; exit 2 ;;
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

rm -rf "$OUT"
echo "== python3 $EX/generate.py --seed $SEED"
python3 "$EX/generate.py" --out "$OUT/input" --seed "$SEED"

# The servers of this run: their own state files, so that stopping them
# stops no other.
STATE=$(mktemp -d "${TMPDIR:-/tmp}/weir-fraud-detection-XXXXXX")
export WEIR_KAFKA_STATE=$STATE/kafka.json WEIR_OPENSEARCH_STATE=$STATE/opensearch.json
echo "== the servers' state files: $STATE"
stop_servers() {
  tests/kafka/broker.sh stop || true
  tests/opensearch/node.sh stop >/dev/null 2>&1 || true
  rm -rf "$STATE"
}
if [ "$KEEP" -eq 0 ]; then trap stop_servers EXIT; fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
echo "== starting Kafka and OpenSearch (tests/kafka/broker.sh, tests/opensearch/node.sh)"
# In parallel: each JVM takes seconds to come up.
tests/kafka/broker.sh start >"$OUT/broker.out" 2>"$OUT/broker.err" & kafka_pid=$!
tests/opensearch/node.sh start --port "$(free_port)" >"$OUT/node.out" 2>"$OUT/node.err" & node_pid=$!
kafka_rc=0 node_rc=0
wait $kafka_pid || kafka_rc=$?
wait $node_pid || node_rc=$?
BOOTSTRAP=$(sed -n 's/^BOOTSTRAP=//p' "$OUT/broker.out")
URL=$(sed -n 's/^URL=//p' "$OUT/node.out")
if [ "$kafka_rc" -ne 0 ] || [ -z "$BOOTSTRAP" ]; then cat "$OUT/broker.err" >&2; exit 1; fi
if [ "$node_rc" -ne 0 ] || [ -z "$URL" ]; then cat "$OUT/node.err" >&2; exit 1; fi
rm -f "$OUT"/broker.out "$OUT"/broker.err "$OUT"/node.out "$OUT"/node.err
echo "== Kafka at $BOOTSTRAP, OpenSearch at $URL"
# The alerts carry the transactions' event times (November 2023) as their
# timestamps: without retention.ms = -1 the broker would delete them at its
# next retention check.
tests/kafka/broker.sh create-topic fraud-alerts 1 --config retention.ms=-1

PIPELINE=$OUT/pipeline.toml
sed -e "s|\"127.0.0.1:9092\"|\"$BOOTSTRAP\"|" -e "s|\"http://127.0.0.1:9200\"|\"$URL\"|" \
  "$EX/pipeline.toml" >"$PIPELINE"
echo "== weir run $PIPELINE"
# --fresh: new servers, so no checkpoint of an earlier run to resume from.
"$WEIR" run "$PIPELINE" --fresh

echo "== topic fraud-alerts, read_committed (kcat -C -X isolation.level=read_committed)"
kcat -C -b "$BOOTSTRAP" -t fraud-alerts -e -q -X isolation.level=read_committed \
  -f '%k\t%s\n' >"$OUT/fraud-alerts.topic.tsv"
python3 - "$URL" "$OUT/fraud-alerts.topic.tsv" "$OUT/input/planted.jsonl" <<'PY'
import collections, json, sys, urllib.request
url, topic_file, planted_file = sys.argv[1:]
def call(method, target, body=None):
    req = urllib.request.Request(url + target, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)
FIELDS = ("kind", "card", "account_id", "owner")

rows = [line.split("\t", 1) for line in open(topic_file).read().splitlines()]
topic = [json.loads(v) for _, v in rows]
ids = collections.Counter(a["alert_id"] for a in topic)
kinds = collections.Counter(a["kind"] for a in topic)
print(f"messages {len(topic)}, keyed by their alert id "
      f"{sum(k == a['alert_id'] for (k, _), a in zip(rows, topic))}, alert ids more than once "
      f"{sum(n > 1 for n in ids.values())}; velocity {kinds['velocity']}, pattern "
      f"{kinds['pattern']}")
print(f"{'alert_id':<44}{'kind':<10}{'account':<9}{'owner':<16}{'raised':>6}")
for a in sorted(topic, key=lambda a: (a["kind"], a["alert_id"])):
    print(f"{a['alert_id']:<44}{a['kind']:<10}{a['account_id']:<9}{a['owner']:<16}"
          f"{a['raised']:>6}")

call("POST", "/fraud-alerts/_refresh")
hits = call("POST", "/fraud-alerts/_search", {"size": 1000})["hits"]["hits"]
index = {h["_id"]: h["_source"] for h in hits}
same = sorted(tuple(a[k] for k in ("alert_id",) + FIELDS + ("raised",)) for a in index.values()) \
    == sorted(tuple(a[k] for k in ("alert_id",) + FIELDS + ("raised",)) for a in topic)
print(f"== index fraud-alerts: {len(index)} documents, under their alert id "
      f"{sum(i == d['alert_id'] for i, d in index.items())}, the topic's alerts: "
      f"{'yes' if same else 'no'}")

planted = {p["alert_id"]: p for p in map(json.loads, open(planted_file).read().splitlines())}
alerted = {a["alert_id"]: a for a in topic}
right = sum(1 for i, p in planted.items()
            if i in alerted and all(alerted[i][k] == p[k] for k in FIELDS))
print(f"== planted frauds ({planted_file}): {len(planted)}; alerted with their account and "
      f"owner {right}, not alerted {len(set(planted) - set(alerted))}; alerts for nothing "
      f"planted {len(set(alerted) - set(planted))}")
PY

if [ "$KEEP" -eq 1 ]; then
  echo "== the servers keep running:"
  echo "   kcat -C -b $BOOTSTRAP -t fraud-alerts -e -X isolation.level=read_committed"
  echo "   curl -s '$URL/fraud-alerts/_search?size=100&pretty'"
  echo "   stop them: WEIR_KAFKA_STATE=$WEIR_KAFKA_STATE tests/kafka/broker.sh stop;" \
       "WEIR_OPENSEARCH_STATE=$WEIR_OPENSEARCH_STATE tests/opensearch/node.sh stop; rm -r $STATE"
fi
