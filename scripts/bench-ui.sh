#!/usr/bin/env bash
# The web UI's Decisions pages on a tenant with a million decisions over 7
# days (issue 22): server time per page (UI handler, the in-process admin
# API call and PostgreSQL), p50 and p95 in ms, for the tenant's table, its
# summary (chart and top denying policies) in every range the UI offers,
# and the operator's fleet-wide table and summary. Target: p95 <= 100 ms
# per page. Seeding takes about two minutes.
#
# PostgreSQL is part of what is measured, so nothing is pinned.
#
#   BENCH_DECISIONS  decisions to seed (default 1000000)
#   ROUNDS           requests per page (default 20)
#   ENFORCE=1        fail when a page's p95 is over the target
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
(cd internal/ui && go test -run '^$' -bench DecisionsPage -benchtime "${ROUNDS:-20}x" -count 1 -timeout 30m .) |
  grep -E '^(Benchmark|seeded|--- FAIL|FAIL|[[:space:]]+bench_test)'
