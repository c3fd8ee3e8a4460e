#!/usr/bin/env bash
# `make bench`: every benchmark suite, each on one pinned core
# (GOMAXPROCS=1, taskset -c 1) so that figures are comparable within a run.
set -euo pipefail
cd "$(dirname "$0")/.."
for s in scripts/bench-*.sh; do
  [ -x "$s" ] || continue
  echo "== $s"
  "$s"
done
