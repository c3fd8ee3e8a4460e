#!/usr/bin/env bash
# Webhook load test (issue 12): the gateway and a trivial Go webhook, each
# on core 1 with GOMAXPROCS=1, driven from core 0 by a vegeta open-loop
# client over HTTPS, HTTP/2 on one connection, with a bearer token. Prints
# the maximum throughput of each (closed-loop saturation, median of rounds),
# their ratio, and p50/p99 latency at fixed rates; fails on any error or
# wrong decision. About 3 minutes. The client runs with GOGC=400 so that
# its own collections disturb the latencies less; the servers keep Go's defaults.
#
#   DURATION  seconds per fixed-rate step (default 5)
#   ROUNDS    saturation rounds per server (default 3)
#   RATES     fixed rates, comma-separated (default 250,500,1000)
#   RATE_ROUNDS rounds of each fixed rate, alternating servers (default 3);
#             each server's round of median p99 is reported
#   VARIANT   extra gateway flags, e.g. "--gc-min-heap=536870912": adds a third
#             gateway run with them, to compare in the same run
#   PROFILE   a path: also write a CPU profile of the gateway at saturation,
#             and its allocations since start to PROFILE.allocs; the other
#             gateways' (norecord, variant) go to PROFILE.<name>
#             (builds the gateway with net/http/pprof added by -overlay)
#   TRACE     a directory: also write execution traces of the gateway and the
#             client, and each request's start and latency, during an extra
#             round of the gateway at the highest fixed rate, kept out of the
#             figures (pprof build, as PROFILE)
#   BASELINE_REV a git revision: also build the gateway of that revision (in a
#             temporary worktree) and run it as "baseline" in the same rounds,
#             to compare a change with what it replaces
#   RECORDING 1 (default) also runs the gateway with --decision-store=false
#             and compares: recording decisions may cost at most 15% of the
#             maximum throughput (issue 8); 0 skips it
#   ENFORCE=1 fail when a performance target is missed
#   TIMEOUT   for the whole run (default 60m)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
command -v taskset >/dev/null || { echo "bench-load: taskset is required" >&2; exit 1; }
[ "$(nproc --all)" -ge 2 ] || { echo "bench-load: needs two cores" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ -n "${PROFILE:-}${TRACE:-}" ]; then
	printf '{"Replace":{"%s":"%s"}}' "$PWD/cmd/gateway/zz_load_pprof.go" "$PWD/test/load/gateway-pprof.go.txt" >"$tmp/overlay.json"
	go build -overlay "$tmp/overlay.json" -o "$tmp/gateway" ./cmd/gateway
	case "${PROFILE:-}" in /* | "") ;; *) PROFILE="$PWD/$PROFILE" ;; esac
	case "${TRACE:-}" in /* | "") ;; *) TRACE="$PWD/$TRACE" ;; esac
else
	go build -o "$tmp/gateway" ./cmd/gateway
fi
(cd test/load && go test -c -o "$tmp/load.test" .)
baseline=""
if [ -n "${BASELINE_REV:-}" ]; then
	git worktree add --detach "$tmp/base" "$BASELINE_REV" >/dev/null
	trap 'git worktree remove --force "$tmp/base"; rm -rf "$tmp"' EXIT
	(cd "$tmp/base" && go build -o "$tmp/gateway-baseline" ./cmd/gateway)
	baseline="$tmp/gateway-baseline"
fi

cd test/load
PORTCULLIS_LOAD=1 \
	PORTCULLIS_LOAD_GATEWAY="$tmp/gateway" \
	PORTCULLIS_LOAD_DURATION="${DURATION:-5}" \
	PORTCULLIS_LOAD_ROUNDS="${ROUNDS:-3}" \
	PORTCULLIS_LOAD_RATES="${RATES:-250,500,1000}" \
	PORTCULLIS_LOAD_CPUPROFILE="${PROFILE:-}" \
	PORTCULLIS_LOAD_TRACE="${TRACE:-}" \
	PORTCULLIS_LOAD_VARIANT="${VARIANT:-}" \
	PORTCULLIS_LOAD_BASELINE="$baseline" \
	PORTCULLIS_LOAD_RATE_ROUNDS="${RATE_ROUNDS:-3}" \
	PORTCULLIS_LOAD_ENFORCE="${ENFORCE:-}" \
	PORTCULLIS_LOAD_RECORDING="${RECORDING:-1}" \
	GOMAXPROCS=1 GOGC=400 taskset -c 0 "$tmp/load.test" -test.run '^TestWebhookLoad$' -test.v -test.timeout "${TIMEOUT:-60m}"
