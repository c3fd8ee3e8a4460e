#!/usr/bin/env bash
# Decisions per second per PostgreSQL core (issue 23, docs/production.md
# "Decisions at fleet scale"): the real recorder (internal/decisions,
# binary COPY in the default batches) writes a full queue into a local
# PostgreSQL server with its default, durable settings (fsync on, unlike the
# tests' throwaway server). The postmaster is started on core PG_CPU
# (default 0), so every backend it forks runs there; the recorder runs on
# core CPU (default 1) with GOMAXPROCS=1. Reports per run decisions/s
# (wall), the server's CPU seconds and decisions per second of one busy
# server core, with every index of the schema (indexes=schema) and with
# the key alone (indexes=key).
#
#   COUNT  decisions per run (default 200000)
#   ROUNDS runs of each (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh
scripts/ensure-postgres.sh
tmp="$(mktemp -d)"
chmod 755 "$tmp"
go build -o "$tmp/devpg" ./hack/devpg
go test -c -o "$tmp/decisions.test" ./internal/decisions
stop() { "$tmp/devpg" stop --dir "$tmp/pg" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap stop EXIT
# pg_ctl forks the postmaster, which inherits this affinity, and every
# backend inherits the postmaster's.
url="$(taskset -c "${PG_CPU:-0}" "$tmp/devpg" start --dir "$tmp/pg" 2>/dev/null)"
pid="$(head -n1 "$tmp/pg/data/postmaster.pid")"
echo "postgres $(taskset -cp "$pid" | sed 's/.*: /on core /'), $(psql "$url" -Atc 'SHOW fsync' 2>/dev/null | sed 's/^/fsync /' || echo 'fsync unknown (no psql)')"
(cd internal/decisions && PORTCULLIS_TEST_DATABASE_URL="$url" pin "$tmp/decisions.test" -test.run '^$' \
	-test.bench 'RecorderPostgresCore' -test.benchtime "${COUNT:-200000}x" -test.count "${ROUNDS:-2}") | grep -E '^Benchmark'
