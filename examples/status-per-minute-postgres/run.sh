#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Requests per HTTP status per minute from data/'s access log, upserted
# exactly once into a PostgreSQL table, then read back with psql:
#   examples/status-per-minute-postgres/run.sh [--port P] [--keep]
# Starts a throwaway PostgreSQL 15 server the way the tests do
# (tests/weirtest/servers.py: initdb into a temporary directory, trust
# authentication on 127.0.0.1 only, as the postgres user when run as root),
# on port P (default: a free one), creates the table (schema.sql), runs
# pipeline.toml with the weir binary (build/weir, or $WEIR) and prints the
# table's totals. The server is stopped and removed at the end; --keep leaves
# it running and prints how to connect and how to stop it.
# Needs: ./dev build (weir with the postgres sink), postgresql-15 (./dev deps).
set -euo pipefail
cd "$(dirname "$0")/../.."
EX=examples/status-per-minute-postgres

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
PG_BIN=${WEIR_PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$PG_BIN/initdb" ] || ! command -v psql >/dev/null; then
  echo "run.sh: PostgreSQL 15 is not installed ($PG_BIN/initdb, psql): ./dev deps installs it" >&2
  exit 1
fi
[ -n "$PORT" ] || PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The server refuses to run as root: as root it runs as the postgres user.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
PGDIR=$(mktemp -d "${TMPDIR:-/tmp}/weir-pg-XXXXXX")
[ "$(id -u)" -ne 0 ] || chown postgres:postgres "$PGDIR"
chmod 700 "$PGDIR"
stop_server() {
  as_postgres "$PG_BIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$PGDIR"
}
if [ "$KEEP" -eq 0 ]; then trap stop_server EXIT; fi

echo "== PostgreSQL 15 on 127.0.0.1:$PORT ($PGDIR)"
as_postgres "$PG_BIN/initdb" -D "$PGDIR/data" -A trust -U postgres -E UTF8 --no-sync \
  --no-locale >"$PGDIR/initdb.log" 2>&1 || { cat "$PGDIR/initdb.log" >&2; exit 1; }
# max_prepared_transactions: the exactly-once sink prepares one transaction
# per subtask and checkpoint (at least twice the parallelism).
if ! as_postgres "$PG_BIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 60 \
    -o "-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1 -c max_prepared_transactions=10 -c fsync=off -c timezone=UTC" \
    start >/dev/null; then
  cat "$PGDIR/server.log" >&2
  exit 1
fi

# libpq reads these: the pipeline's connection names no port.
export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres PGTZ=UTC
psql -X -q -v ON_ERROR_STOP=1 -f "$EX/schema.sql"

echo "== weir run $EX/pipeline.toml"
# --fresh: a new server, so no checkpoint of an earlier run to resume from.
"$WEIR" run "$EX/pipeline.toml" --fresh

echo "== the table status_per_minute"
psql -X -v ON_ERROR_STOP=1 <<'SQL'
\echo '-- requests per status: minutes with that status, requests, the busiest minute, bytes sent'
SELECT status, count(*) AS minutes, sum(requests) AS requests, max(requests) AS peak_minute,
       sum(bytes) AS bytes
  FROM status_per_minute GROUP BY status ORDER BY requests DESC, status;
\echo '-- the five busiest minutes, UTC, with their requests per status'
SELECT to_char(minute, 'YYYY-MM-DD HH24:MI') AS minute, sum(requests) AS requests,
       string_agg(status || ':' || requests, ' ' ORDER BY status) AS by_status
  FROM status_per_minute GROUP BY minute ORDER BY requests DESC, minute LIMIT 5;
\echo '-- requests and errors (status >= 400) per day, UTC'
SELECT to_char(minute, 'YYYY-MM-DD') AS day, sum(requests) AS requests,
       coalesce(sum(requests) FILTER (WHERE status >= 400), 0) AS errors,
       round(100.0 * coalesce(sum(requests) FILTER (WHERE status >= 400), 0) / sum(requests), 2)
         AS error_pct
  FROM status_per_minute GROUP BY day ORDER BY day;
\echo '-- rows, requests, and prepared transactions left (exactly once: none)'
SELECT (SELECT count(*) FROM status_per_minute) AS rows,
       (SELECT sum(requests) FROM status_per_minute) AS requests,
       (SELECT count(*) FROM pg_prepared_xacts) AS prepared_left;
SQL

if [ "$KEEP" -eq 1 ]; then
  stop="$PG_BIN/pg_ctl -D $PGDIR/data stop && rm -rf $PGDIR"
  [ "$(id -u)" -ne 0 ] || stop="runuser -u postgres -- $stop"
  echo "== the server keeps running:"
  echo "   PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres psql -c 'TABLE status_per_minute LIMIT 5'"
  echo "   stop it: $stop"
fi
