#!/usr/bin/env bash
# Production drills (issue 23, docs/production.md "Drills"): two gateway
# replicas, each its own process with its own --state-dir, on one
# PostgreSQL (their pool through PgBouncer in transaction mode, their
# LISTEN connection direct), behind HAProxy (TCP, health checks on /readyz), under an
# open-loop client sending AdmissionReviews over TLS (HTTP/2) from several
# tenants and clusters. Each drill prints its figure and fails when it
# misses its target. About 5 minutes; needs root (PostgreSQL runs as the
# postgres user, drill 7 mounts a tmpfs).
#
#   RATE     requests per second (default 500)
#   OUTAGE   seconds of the Postgres outage of drill 3 (default 60)
#   RUN      a -test.run pattern to pick drills (default: all of them),
#            e.g. 'TestDrills/rolling' or 'TestDrill(ColdStart|Revocation)'
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
scripts/ensure-haproxy.sh
scripts/ensure-pgbouncer.sh
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gateway" ./cmd/gateway
(cd test/load && go test -c -o "$tmp/load.test" .)
cd test/load
PORTCULLIS_DRILLS=1 \
	PORTCULLIS_LOAD_GATEWAY="$tmp/gateway" \
	PORTCULLIS_DRILL_RATE="${RATE:-500}" \
	PORTCULLIS_DRILL_OUTAGE="${OUTAGE:-60}" \
	"$tmp/load.test" -test.run "${RUN:-^TestDrill}" -test.v -test.timeout 30m
