#!/usr/bin/env bash
# The decision recorder into PostgreSQL (issue 8): the rate at which the
# writer empties a full queue with the default batch size, and 10,000
# decisions/s offered at a steady pace with the default queue, which must
# all reach the database directly (0 spilled, 0 lost; the benchmark fails
# otherwise). Target: >= 10,000 decisions/s. The first also reports the CPU
# time recording adds to the gateway process per decision (cpu-µs/decision),
# to set against the webhook's CPU per request (scripts/bench-load.sh).
#
# PostgreSQL is part of what is measured, so nothing is pinned: the
# recorder runs with GOMAXPROCS=1 and the throwaway server (pgtest, fsync
# off) takes the other core.
#
#   COUNT  decisions per run (default 100000)
#   ROUNDS runs of each benchmark (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/decisions.test" ./internal/decisions
(cd internal/decisions && GOMAXPROCS=1 "$tmp/decisions.test" -test.run '^$' -test.bench 'Recorder' \
	-test.benchtime "${COUNT:-100000}x" -test.count "${ROUNDS:-3}") | grep -E '^Benchmark'
