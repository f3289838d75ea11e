#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A month of USGS earthquakes from data/ indexed into OpenSearch, then read
# back with a search and aggregations:
#   examples/earthquakes-opensearch/run.sh [--port P] [--keep]
# Starts a local OpenSearch node the way the tests do (tests/opensearch/node.sh:
# OpenSearch 2.19 fetched with Maven into ~/.m2 the first time, single node,
# security off, 127.0.0.1) on port P (default 9200, the port pipeline.toml
# names; another port runs a copy of it under out/), or reuses the node that
# node.sh started there. Creates the indices with their mappings
# (indices.json), runs pipeline.toml with the weir binary (build/weir, or
# $WEIR), prints the results. A node started here is stopped at the end;
# --keep leaves it running (tests/opensearch/node.sh stop stops it).
# Needs: ./dev build (weir with the elasticsearch sink), Java 17 and Maven
# (./dev deps).
set -euo pipefail
cd "$(dirname "$0")/../.."
EX=examples/earthquakes-opensearch

PORT=9200 KEEP=0
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

NODE=tests/opensearch/node.sh
started=0
if ! $NODE status >/dev/null 2>&1; then
  started=1
  echo "== starting OpenSearch on 127.0.0.1:$PORT (tests/opensearch/node.sh)"
fi
URL=$($NODE start --port "$PORT" | sed -n 's/^URL=//p')
[ -n "$URL" ] || exit 1
stop_node() { $NODE stop; }
if [ "$started" -eq 1 ] && [ "$KEEP" -eq 0 ]; then trap stop_node EXIT; fi
echo "== OpenSearch at $URL"

PIPELINE=$EX/pipeline.toml
if [ "$PORT" != 9200 ]; then
  mkdir -p out/earthquakes-opensearch
  PIPELINE=out/earthquakes-opensearch/pipeline.toml
  sed "s|http://127.0.0.1:9200|$URL|" "$EX/pipeline.toml" >"$PIPELINE"
fi

# Fresh indices with explicit mappings: region a keyword to aggregate on,
# location a geo_point, time a date.
python3 - "$URL" "$EX/indices.json" <<'PY'
import json, sys, urllib.error, urllib.request
url, path = sys.argv[1], sys.argv[2]
def call(method, target, body=None):
    req = urllib.request.Request(url + target, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if method == "DELETE" and e.code == 404:
            return None
        sys.exit(f"run.sh: {method} {target}: {e.code} {e.read().decode()}")
for index, body in json.load(open(path)).items():
    call("DELETE", "/" + index)
    call("PUT", "/" + index, body)
    print(f"== created index {index}")
PY

echo "== weir run $PIPELINE"
"$WEIR" run "$PIPELINE"

python3 - "$URL" <<'PY'
import datetime, json, sys, urllib.request
url = sys.argv[1]
def call(method, target, body=None):
    req = urllib.request.Request(url + target, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)
call("POST", "/earthquakes,earthquakes-daily/_refresh")
print(f"== index earthquakes: {call('GET', '/earthquakes/_count')['count']} documents, "
      f"index earthquakes-daily: {call('GET', '/earthquakes-daily/_count')['count']} documents")

print("== events per region (terms aggregation on earthquakes)")
r = call("POST", "/earthquakes/_search", {
    "size": 0,
    "aggs": {"regions": {
        "terms": {"field": "region", "size": 50, "order": [{"_count": "desc"}, {"_key": "asc"}]},
        "aggs": {"earthquakes": {"filter": {"term": {"type": "earthquake"}}},
                 "max_mag": {"max": {"field": "mag"}}}}}})
print(f"{'region':<22}{'events':>8}{'earthquakes':>13}{'max_mag':>9}")
for b in r["aggregations"]["regions"]["buckets"]:
    print(f"{b['key']:<22}{b['doc_count']:>8}{b['earthquakes']['doc_count']:>13}"
          f"{b['max_mag']['value']:>9g}")

print("== the five strongest events (search sorted by mag)")
r = call("POST", "/earthquakes/_search", {
    "size": 5, "sort": [{"mag": "desc"}, {"time": "desc"}],
    "_source": ["id", "time", "mag", "region", "place"]})
print(f"{'id':<12}{'mag':>5}  {'region':<22}place")
for h in r["hits"]["hits"]:
    s = h["_source"]
    print(f"{s['id']:<12}{s['mag']:>5g}  {s['region']:<22}{s['place']}")

print("== the five busiest region-days, UTC (index earthquakes-daily)")
r = call("POST", "/earthquakes-daily/_search", {
    "size": 5, "sort": [{"events": "desc"}, {"window_start": "asc"}, {"region": "asc"}]})
print(f"{'day':<12}{'region':<22}{'events':>8}{'max_mag':>9}")
for h in r["hits"]["hits"]:
    s = h["_source"]
    day = datetime.datetime.fromtimestamp(s["window_start"] / 1000, datetime.timezone.utc)
    print(f"{day:%Y-%m-%d}  {s['region']:<22}{s['events']:>8}{s['max_mag']:>9g}")
PY

if [ "$started" -eq 1 ] && [ "$KEEP" -eq 1 ]; then
  echo "== the node keeps running at $URL; stop it with: $NODE stop"
fi
