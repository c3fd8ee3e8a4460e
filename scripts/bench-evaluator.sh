#!/usr/bin/env bash
# Benchmarks of internal/evaluator on one pinned core:
#   - compile time of the 10 baseline policies and heap per compiled policy;
#   - evaluation time of the realistic Pod as the tenant grows to 1, 10, 100
#     and 1000 policies (only the baseline ones match);
#   - the evaluator against the apiserver's own ValidatingAdmissionPolicy
#     plugin on the same Pod, in the same binary, rounds alternating, and the
#     ratio of their medians;
#   - the same for mutation: Snapshot.Mutate against the apiserver's
#     MutatingAdmissionPolicy plugin, with the five policies of
#     samples/mutating on the same Pod.
# ROUNDS (default 6) sets the number of alternating rounds; CPU (default 1)
# the core. BASELINE_REV (a git revision) also builds the evaluator of that
# revision (in a temporary worktree) and runs it in the same alternating
# rounds, to compare a change with what it replaces.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-6}"
CPU="${CPU:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

. scripts/bench-lib.sh

go test -c -o "$tmp/evaluator.test" ./internal/evaluator
(cd test/differential && go test -c -o "$tmp/differential.test" .)
if [ -n "${BASELINE_REV:-}" ]; then
	git worktree add --detach "$tmp/base" "$BASELINE_REV" >/dev/null
	trap 'git worktree remove --force "$tmp/base"; rm -rf "$tmp"' EXIT
	(cd "$tmp/base/test/differential" && go test -c -o "$tmp/baseline.test" .)
fi

echo "== evaluator: compile, heap per policy, evaluation by tenant size"
(cd internal/evaluator && pin "$tmp/evaluator.test" -test.run '^$' -test.bench 'CompileBaseline|ValidateBaseline' \
	-test.benchmem -test.count "$ROUNDS" -test.benchtime 1s) | tee "$tmp/evaluator.txt" | grep -E '^Benchmark'

echo "== evaluator vs apiserver plugin, realistic Pod, $ROUNDS alternating rounds"
: >"$tmp/diff.txt"
for _ in $(seq "$ROUNDS"); do
	for b in BenchmarkBaselinePlugin BenchmarkBaselineEvaluator; do
		(cd test/differential && pin "$tmp/differential.test" -test.run '^$' -test.bench "^$b\$" -test.benchmem -test.benchtime 2s 2>/dev/null) |
			grep -E '^Benchmark' | tee -a "$tmp/diff.txt"
	done
	if [ -n "${BASELINE_REV:-}" ]; then
		(cd test/differential && pin "$tmp/baseline.test" -test.run '^$' -test.bench '^BenchmarkBaselineEvaluator$' -test.benchmem -test.benchtime 2s 2>/dev/null) |
			grep -E '^Benchmark' | sed 's/^BenchmarkBaselineEvaluator/BenchmarkBeforeEvaluator/' | tee -a "$tmp/diff.txt"
	fi
done

plugin="$(grep '^BenchmarkBaselinePlugin' "$tmp/diff.txt" | awk '{print $3}' | median)"
eval="$(grep '^BenchmarkBaselineEvaluator' "$tmp/diff.txt" | awk '{print $3}' | median)"
pa="$(grep '^BenchmarkBaselinePlugin' "$tmp/diff.txt" | awk '{print $7}' | median)"
ea="$(grep '^BenchmarkBaselineEvaluator' "$tmp/diff.txt" | awk '{print $7}' | median)"
awk -v p="$plugin" -v e="$eval" -v pa="$pa" -v ea="$ea" 'BEGIN {
	printf "median plugin    %10.0f ns/op %6.0f allocs/op\n", p, pa
	printf "median evaluator %10.0f ns/op %6.0f allocs/op\n", e, ea
	printf "ratio plugin/evaluator: %.2fx\n", p / e
}'
echo "== mutation: evaluator vs apiserver plugin, realistic Pod, 5 policies, $ROUNDS alternating rounds"
: >"$tmp/mutate.txt"
for _ in $(seq "$ROUNDS"); do
	for b in BenchmarkMutatePlugin BenchmarkMutateEvaluator; do
		(cd test/differential && pin "$tmp/differential.test" -test.run '^$' -test.bench "^$b\$" -test.benchmem -test.benchtime 2s 2>/dev/null) |
			grep -E '^Benchmark' | tee -a "$tmp/mutate.txt"
	done
done
mplugin="$(grep '^BenchmarkMutatePlugin' "$tmp/mutate.txt" | awk '{print $3}' | median)"
meval="$(grep '^BenchmarkMutateEvaluator' "$tmp/mutate.txt" | awk '{print $3}' | median)"
mpa="$(grep '^BenchmarkMutatePlugin' "$tmp/mutate.txt" | awk '{print $7}' | median)"
mea="$(grep '^BenchmarkMutateEvaluator' "$tmp/mutate.txt" | awk '{print $7}' | median)"
awk -v p="$mplugin" -v e="$meval" -v pa="$mpa" -v ea="$mea" 'BEGIN {
	printf "median mutating plugin    %10.0f ns/op %6.0f allocs/op\n", p, pa
	printf "median mutating evaluator %10.0f ns/op %6.0f allocs/op\n", e, ea
	printf "ratio plugin/evaluator (mutation): %.2fx\n", p / e
}'

if [ -n "${BASELINE_REV:-}" ]; then
	before="$(grep '^BenchmarkBeforeEvaluator' "$tmp/diff.txt" | awk '{print $3}' | median)"
	ba="$(grep '^BenchmarkBeforeEvaluator' "$tmp/diff.txt" | awk '{print $7}' | median)"
	awk -v b="$before" -v e="$eval" -v ba="$ba" -v rev="$BASELINE_REV" 'BEGIN {
		printf "median evaluator at %s %10.0f ns/op %6.0f allocs/op\n", rev, b, ba
		printf "ratio %s/now: %.2fx\n", rev, b / e
	}'
fi
