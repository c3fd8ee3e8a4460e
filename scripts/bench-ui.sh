#!/usr/bin/env bash
# The web UI's Decisions page on a tenant with a million decisions over 7
# days (issue 22): server time per page (UI handler, the in-process admin
# API call and PostgreSQL), p50 and p95 in ms. Target: p95 <= 100 ms per
# page. The summary (chart and top denying policies), which htmx loads
# after the page, is reported apart. Seeding takes about two minutes.
#
# PostgreSQL is part of what is measured, so nothing is pinned.
#
#   BENCH_DECISIONS  decisions to seed (default 1000000)
#   ROUNDS           requests per page (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
(cd internal/ui && go test -run '^$' -bench DecisionsPage -benchtime "${ROUNDS:-20}x" -count 1 -timeout 30m .) |
  grep -E '^(Benchmark|seeded)'
