#!/usr/bin/env bash
# The hand-written AdmissionReview decoder against the library path it
# replaced (encoding/json into the k8s.io/api AdmissionReview, then each
# object into a map with the apimachinery JSON helpers) and against the JSON
# v2 design (encoding/json/v2 under GOEXPERIMENT=jsonv2, where it builds), on
# an UPDATE review of the ~6 KB baseline Pod, on one pinned core, rounds
# alternating. ROUNDS (default 6), CPU (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-6}"
CPU="${CPU:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

. scripts/bench-lib.sh

go test -c -o "$tmp/admission.test" ./internal/admission
v2=""
if GOEXPERIMENT=jsonv2 go test -c -o "$tmp/admission-v2.test" ./internal/admission 2>/dev/null; then
	v2="$tmp/admission-v2.test"
else
	echo "encoding/json/v2 does not build with this Go; comparing with the library path only" >&2
fi

cd internal/admission
: >"$tmp/out.txt"
for _ in $(seq "$ROUNDS"); do
	pin "$tmp/admission.test" -test.run '^$' -test.bench '^BenchmarkDecode(Library)?$' -test.benchmem -test.benchtime 1s |
		grep -E '^Benchmark' | tee -a "$tmp/out.txt"
	if [ -n "$v2" ]; then
		pin "$v2" -test.run '^$' -test.bench '^BenchmarkDecodeJSONv2$' -test.benchmem -test.benchtime 1s |
			grep -E '^Benchmark' | tee -a "$tmp/out.txt"
	fi
done

col() { grep -E "^$1(-[0-9]+)? " "$tmp/out.txt" | awk -v c="$2" '{print $c}' | median; }
hand="$(col BenchmarkDecode 3)"
lib="$(col BenchmarkDecodeLibrary 3)"
printf "median hand-written %10.0f ns/op %6.0f allocs/op\n" "$hand" "$(col BenchmarkDecode 9)"
printf "median library      %10.0f ns/op %6.0f allocs/op\n" "$lib" "$(col BenchmarkDecodeLibrary 9)"
awk -v h="$hand" -v l="$lib" 'BEGIN { printf "ratio library/hand-written: %.2fx\n", l / h }'
if [ -n "$v2" ]; then
	j="$(col BenchmarkDecodeJSONv2 3)"
	printf "median json/v2      %10.0f ns/op %6.0f allocs/op\n" "$j" "$(col BenchmarkDecodeJSONv2 9)"
	awk -v h="$hand" -v j="$j" 'BEGIN { printf "ratio json/v2/hand-written: %.2fx\n", j / h }'
fi
