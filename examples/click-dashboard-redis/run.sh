#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The click dashboard into Redis: data/'s access log counted per page per
# minute, in event time and in processing time, then read back with redis-cli:
#   examples/click-dashboard-redis/run.sh [--port P] [--keep]
# Starts a throwaway redis-server the way the tests do (tests/weirtest/servers.py:
# 127.0.0.1 only, no persistence, its directory a temporary one) on port P
# (default: a free one), runs event-time.toml and then processing-time.toml
# (with --batch-size 1) with the weir binary (build/weir, or $WEIR; on another
# port than 6379, copies of them under out/click-dashboard-redis/), and prints
# what Redis holds: the clicks:<minute> hashes and top:<minute> sorted sets of
# the event-time job, the pclicks:<minute> hashes of the processing-time job.
# The server is stopped and removed at the end; --keep leaves it running and
# prints how to query it and how to stop it.
# Needs: ./dev build (weir with the redis sink), redis-server and redis-cli
# (./dev deps).
set -euo pipefail
cd "$(dirname "$0")/../.."
EX=examples/click-dashboard-redis
OUT=out/click-dashboard-redis

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
for tool in redis-server redis-cli python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "run.sh: $tool is not installed: ./dev deps installs it" >&2
    exit 1
  fi
done
[ -n "$PORT" ] || PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

rc() { redis-cli -p "$PORT" --raw "$@"; }
RDIR=$(mktemp -d "${TMPDIR:-/tmp}/weir-redis-XXXXXX")
stop_server() {
  rc SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  # SHUTDOWN returns once the server closed the connection; it removes its
  # pid file on its way out.
  local deadline=$((SECONDS + 10))
  while [ -e "$RDIR/redis.pid" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  rm -rf "$RDIR"
}
if [ "$KEEP" -eq 0 ]; then trap stop_server EXIT; fi

echo "== redis-server on 127.0.0.1:$PORT ($RDIR)"
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$RDIR" \
  --daemonize yes --pidfile "$RDIR/redis.pid" --logfile "$RDIR/redis.log"
deadline=$((SECONDS + 20))
until [ "$(rc PING 2>/dev/null)" = PONG ]; do
  if [ $SECONDS -ge $deadline ]; then
    echo "run.sh: redis-server did not answer PING on port $PORT within 20 s:" >&2
    cat "$RDIR/redis.log" >&2 || true
    exit 1
  fi
  sleep 0.05
done

mkdir -p "$OUT"
pipeline() {  # the example's pipeline file, pointed at this server
  if [ "$PORT" = 6379 ]; then
    echo "$EX/$1.toml"
  else
    sed "s|^port = 6379$|port = $PORT|" "$EX/$1.toml" >"$OUT/$1.toml"
    echo "$OUT/$1.toml"
  fi
}

# --fresh: a new server, so no checkpoint of an earlier run to resume from.
P=$(pipeline event-time)
echo "== weir run $P"
"$WEIR" run "$P" --fresh
P=$(pipeline processing-time)
echo "== weir run $P --batch-size 1"
# One record per batch: the replayed clock advances record by record.
"$WEIR" run "$P" --fresh --batch-size 1

minute() { date -u -d "@$(($1 / 1000))" '+%Y-%m-%d %H:%M'; }
# Per hash whose key matches the pattern: its key, its fields (pages) and the
# sum of its values (clicks), one line each, in one server-side script.
SUM_HASHES='local out = {}
for _, key in ipairs(redis.call("KEYS", ARGV[1])) do
  local sum = 0
  for _, v in ipairs(redis.call("HVALS", key)) do sum = sum + tonumber(v) end
  out[#out + 1] = key .. " " .. redis.call("HLEN", key) .. " " .. sum
end
return out'
hashes() { rc EVAL "$SUM_HASHES" 0 "$1" | sort; }

echo "== event time: hashes clicks:<minute start, epoch ms> (HLEN and the sum of HVALS per key)"
hashes 'clicks:*' >"$OUT/clicks.txt"
awk '{ n++; pages += $2; clicks += $3 } END { printf "hashes %d, fields %d, clicks %d\n", n, pages, clicks }' \
  "$OUT/clicks.txt"
echo "-- the five busiest minutes, UTC: key, clicks, pages"
sort -k3,3nr -k1,1 "$OUT/clicks.txt" | head -5 | while read -r key pages clicks; do
  printf '%s  %-22s %6d %6d\n' "$(minute "${key#clicks:}")" "$key" "$clicks" "$pages"
done
busiest=$(sort -k3,3nr -k1,1 "$OUT/clicks.txt" | head -1 | cut -d' ' -f1)
busiest=${busiest#clicks:}
echo "-- sorted sets top:<minute start>: $(rc --scan --pattern 'top:*' | wc -l)"
echo "-- ZREVRANGE top:$busiest 0 4 WITHSCORES ($(minute "$busiest"), the busiest minute)"
rc ZREVRANGE "top:$busiest" 0 4 WITHSCORES | paste - - | awk '{ printf "%6d  %s\n", $2, $1 }'

echo "== processing time: hashes pclicks:<minute start, epoch ms>"
hashes 'pclicks:*' >"$OUT/pclicks.txt"
awk '{ n++; pages += $2; clicks += $3 } END { printf "hashes %d, fields %d, clicks %d\n", n, pages, clicks }' \
  "$OUT/pclicks.txt"
last=$(tail -1 "$OUT/pclicks.txt" | cut -d' ' -f1)
echo "-- the last window fired: $last ($(minute "${last#pclicks:}"))"
echo "== keys in Redis: $(rc DBSIZE)"

if [ "$KEEP" -eq 1 ]; then
  echo "== the server keeps running:"
  echo "   redis-cli -p $PORT HGETALL clicks:$busiest"
  echo "   redis-cli -p $PORT ZREVRANGE top:$busiest 0 9 WITHSCORES"
  echo "   stop it: redis-cli -p $PORT SHUTDOWN NOSAVE && rm -rf $RDIR"
fi
