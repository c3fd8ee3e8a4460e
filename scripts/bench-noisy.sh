#!/usr/bin/env bash
# Noisy-neighbour benchmark (issue 21): one gateway with its default limits,
# on both cores as it runs by default on this machine; tenant B sends its
# corpus at RATE req/s while tenant A keeps WORKERS near-cost-limit requests
# in flight (a legal policy of nine validations of about 9e5 each). Rounds
# alternate, in the same run: B alone; B beside busy loops at nice 19 and
# no tenant A (what any low-priority CPU burner does to B on this machine);
# B with A; and B with A's concurrency limit lifted (what the limit
# prevents). Prints B's p50 and p99 for each, as the client sees them
# (median of the rounds, and over all rounds pooled) and as the gateway
# does (its decisions' latency), their ratios to B alone, and how many of
# A's evaluations ran on the low-priority lane (all but A's first must).
# The target is a p99 ratio of at most 1.2 with the default limits. About
# two minutes.
#
#   DURATION  seconds per round (default 5)
#   RATE      tenant B's rate (default 200)
#   WORKERS   tenant A's requests in flight (default 6)
#   ROUNDS    rounds of each condition (default 3); medians are reported
#   ENFORCE=1 fail when the target is missed
#   VARIANT   extra gateway flags, e.g. "--gc-min-heap=1073741824"
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
[ "$(nproc --all)" -ge 2 ] || { echo "bench-noisy: needs two cores" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gateway" ./cmd/gateway
(cd test/load && go test -c -o "$tmp/load.test" .)
cd test/load
PORTCULLIS_NOISY=1 \
	PORTCULLIS_LOAD_GATEWAY="$tmp/gateway" \
	PORTCULLIS_LOAD_DURATION="${DURATION:-5}" \
	PORTCULLIS_NOISY_RATE="${RATE:-200}" \
	PORTCULLIS_NOISY_WORKERS="${WORKERS:-6}" \
	PORTCULLIS_LOAD_RATE_ROUNDS="${ROUNDS:-3}" \
	PORTCULLIS_LOAD_ENFORCE="${ENFORCE:-}" \
	PORTCULLIS_LOAD_VARIANT="${VARIANT:-}" \
	GOGC=400 "$tmp/load.test" -test.run '^TestNoisyNeighbour$' -test.v -test.timeout "${TIMEOUT:-20m}"
