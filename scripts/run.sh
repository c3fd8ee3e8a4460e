#!/usr/bin/env bash
# `make run`: build, start PostgreSQL (unless PORTCULLIS_DATABASE_URL is
# set), migrate, bootstrap an operator token, start the gateway, load the
# demo, print how to use it, and keep the gateway in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE="${PORTCULLIS_STATE_DIR:-.portcullis}"
WEBHOOK_ADDR="${PORTCULLIS_WEBHOOK_ADDR:-127.0.0.1:8443}"
ADMIN_ADDR="${PORTCULLIS_ADMIN_ADDR:-127.0.0.1:9443}"
METRICS_ADDR="${PORTCULLIS_METRICS_ADDR:-127.0.0.1:9090}"
mkdir -p "$STATE" bin

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

say "building"
go build -o bin/ ./cmd/gateway ./cmd/admin ./hack/devpg ./hack/demo

if [ -z "${PORTCULLIS_DATABASE_URL:-}" ]; then
  say "starting the local PostgreSQL in $STATE/postgres"
  PORTCULLIS_DATABASE_URL="$(bin/devpg start --dir "$STATE/postgres")"
fi
export PORTCULLIS_DATABASE_URL

say "migrating"
bin/admin migrate

TOKEN_FILE="$STATE/operator-token"
if [ ! -s "$TOKEN_FILE" ]; then
  if token="$(bin/admin bootstrap 2>/dev/null)"; then
    (umask 077; printf '%s\n' "$token" > "$TOKEN_FILE")
  fi
fi
TOKEN="$(cat "$TOKEN_FILE" 2>/dev/null || echo '<shown once by the first `admin bootstrap` on this database>')"

say "seeding the demo: tenant, cluster, baseline policies, namespaces"
bin/demo seed --dir "$STATE/demo"

say "starting the gateway"
bin/gateway --dev --state-dir "$STATE" --decision-log \
  --webhook-addr "$WEBHOOK_ADDR" --admin-addr "$ADMIN_ADDR" --metrics-addr "$METRICS_ADDR" &
GW=$!
trap 'kill -TERM $GW 2>/dev/null; wait $GW' INT TERM

for _ in $(seq 1 600); do
  if curl -fsS "http://$METRICS_ADDR/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 $GW 2>/dev/null; then wait $GW; exit 1; fi
  sleep 0.1
done
curl -fsS "http://$METRICS_ADDR/readyz" >/dev/null

CA="$STATE/tls/ca.crt"
WEBHOOK_URL="https://${WEBHOOK_ADDR/127.0.0.1/localhost}"
ADMIN_URL="https://${ADMIN_ADDR/127.0.0.1/localhost}"

say "sending two Pod reviews to the demo tenant, as an apiserver would"
bin/demo send --url "$WEBHOOK_URL/t/demo/validate" --ca "$CA" --dir "$STATE/demo"

say "the demo tenant's latest decisions, as stored in PostgreSQL"
bin/demo decisions

cat <<EOT

Portcullis is running.

  webhook   $WEBHOOK_URL      (apiservers call /t/<tenant>/validate)
  admin     $ADMIN_URL      (REST API under /api/v1)
  metrics   http://$METRICS_ADDR       (/livez /readyz /metrics)
  CA file   $CA
  database  $PORTCULLIS_DATABASE_URL
  operator token (kept in $TOKEN_FILE):
            $TOKEN

Demo: tenant "demo", cluster "kind-demo" (bearer token in $STATE/demo/token),
the 10 baseline policies from samples/baseline, and two sample reviews.
Each answer is stored in the decisions table (see docs/decisions.md) and,
under --decision-log, also logged as an "admission decision" line.

Try it:
  # the webhook, as an apiserver calls it (allowed-pod.json or denied-pod.json):
  curl --cacert $CA -H "Authorization: Bearer \$(cat $STATE/demo/token)" -H "Content-Type: application/json" \\
       --data @$STATE/demo/denied-pod.json "$WEBHOOK_URL/t/demo/validate?timeout=10s"
  # the admin API:
  curl --cacert $CA -H "Authorization: Bearer \$(cat $TOKEN_FILE)" $ADMIN_URL/api/v1/whoami

Ctrl-C stops the gateway. The local PostgreSQL keeps running; \`make db-stop\` stops it.
EOT

wait $GW
