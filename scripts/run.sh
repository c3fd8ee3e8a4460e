#!/usr/bin/env bash
# `make run`: build, start PostgreSQL (unless PORTCULLIS_DATABASE_URL is
# set), migrate, bootstrap an operator token, start the gateway, build the
# demo with the admin CLI, print how to use it, and keep the gateway in the
# foreground. Every step is idempotent, so `make run` can be run again on
# the same state directory.
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

say "starting the gateway"
bin/gateway --dev --state-dir "$STATE" --decision-log \
  --webhook-addr "$WEBHOOK_ADDR" --admin-addr "$ADMIN_ADDR" --metrics-addr "$METRICS_ADDR" &
GW=$!
# The gateway stops with this script, also when a demo step fails.
trap 'kill -TERM $GW 2>/dev/null; wait $GW' EXIT INT TERM

for _ in $(seq 1 600); do
  if curl -fsS "http://$METRICS_ADDR/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 $GW 2>/dev/null; then wait $GW; exit 1; fi
  sleep 0.1
done
curl -fsS "http://$METRICS_ADDR/readyz" >/dev/null

CA="$STATE/tls/ca.crt"
WEBHOOK_URL="https://${WEBHOOK_ADDR/127.0.0.1/localhost}"
ADMIN_URL="https://${ADMIN_ADDR/127.0.0.1/localhost}"

DEMO="$STATE/demo"
# The demo's own login, so that a config file of the user's is left alone.
export PORTCULLIS_CONFIG="$(cd "$STATE" && pwd)/config.yaml"

build_demo() {
  local tenants clusters review since decisions
  # The token from its file, not the command line (ps, shell history).
  say "admin login --token-file $TOKEN_FILE"
  bin/admin login --server "$ADMIN_URL" --token-file "$TOKEN_FILE" --ca-file "$CA"

  # The answers are read whole before grep looks at them: grep -q stopping
  # early must not fail the command it reads from.
  tenants="$(bin/admin tenant list -o json)"
  if grep -q '"name": *"demo"' <<<"$tenants"; then
    say "tenant demo exists"
  else
    say "admin tenant create demo"
    bin/admin tenant create demo --display-name "Demo tenant"
  fi
  say "admin tenant limits demo"
  bin/admin tenant limits demo

  clusters="$(bin/admin cluster list --tenant demo -o json)"
  if ! grep -q '"name": *"kind-demo"' <<<"$clusters"; then
    say "admin cluster create kind-demo --tenant demo --auth token --out $DEMO"
    bin/admin cluster create kind-demo --tenant demo --auth token --labels env=dev --out "$DEMO"
  elif [ ! -s "$DEMO/kubeconfig.yaml" ]; then
    say "cluster kind-demo exists but $DEMO/kubeconfig.yaml does not: admin credential create --out $DEMO"
    bin/admin credential create --tenant demo --cluster kind-demo --auth token --description "make run demo" --out "$DEMO"
  else
    say "cluster kind-demo exists (its kubeconfig is $DEMO/kubeconfig.yaml)"
  fi

  # The namespaces as \`kubectl get namespaces -o yaml\` would print them, and
  # two Pod reviews: one the baseline policies allow, one they deny.
  bin/demo files --samples samples/baseline --dir "$DEMO"

  say "admin namespaces import --tenant demo --cluster kind-demo -f $DEMO/namespaces.yaml"
  bin/admin namespaces import --tenant demo --cluster kind-demo -f "$DEMO/namespaces.yaml"

  # The cluster's custom resource definitions, as \`kubectl get crd -o yaml\`
  # would print them: policies then see a Widget the apiserver converted for
  # the webhook in the version they match.
  say "admin crds import --tenant demo --cluster kind-demo -f samples/crds/crds.yaml"
  bin/admin crds import --tenant demo --cluster kind-demo -f samples/crds/crds.yaml

  # The two files: the directory also holds pod.json, which is no policy.
  say "admin apply --tenant demo -f samples/baseline/policies.yaml -f samples/baseline/bindings.yaml"
  bin/admin apply --tenant demo -f samples/baseline/policies.yaml -f samples/baseline/bindings.yaml

  # Five MutatingAdmissionPolicies: a team label, imagePullPolicy and
  # seccompProfile defaults, a toleration, an ephemeral-storage limit.
  say "admin apply --tenant demo -f samples/mutating/"
  bin/admin apply --tenant demo -f samples/mutating/

  # The webhooks leave Events, reviews, pods/binding, leases and status
  # writes out; rewriting them from the policies issues no credential.
  say "admin cluster artifacts kind-demo --tenant demo --out $DEMO"
  bin/admin cluster artifacts kind-demo --tenant demo --out "$DEMO"

  # Without --mutate or --validate, admin test runs the admission chain:
  # the mutating policies, then the validating ones on the mutated pod.
  for review in allowed-pod denied-pod; do
    say "admin test --tenant demo --cluster kind-demo -f $DEMO/$review.json"
    bin/admin test --tenant demo --cluster kind-demo -f "$DEMO/$review.json"
  done
  # What each mutation did.
  say "admin test --tenant demo --cluster kind-demo -f $DEMO/allowed-pod.json --mutate --explain"
  bin/admin test --tenant demo --cluster kind-demo -f "$DEMO/allowed-pod.json" --mutate --explain

  say "sending the same two reviews to the webhooks, as an apiserver would: first mutate, then validate"
  since="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  bin/demo send --url "$WEBHOOK_URL/t/demo/mutate" --ca "$CA" --dir "$DEMO"
  bin/demo send --url "$WEBHOOK_URL/t/demo/validate" --ca "$CA" --dir "$DEMO"

  # A managed control plane (EKS, GKE, AKS) cannot load an
  # AdmissionConfiguration: such a cluster authenticates by a secret in its
  # webhook URLs, which webhooks.yaml carries (so it is written 0600).
  if ! grep -q '"name": *"managed-demo"' <<<"$clusters"; then
    say "admin cluster create managed-demo --tenant demo --auth url --out $DEMO/managed"
    bin/admin cluster create managed-demo --tenant demo --auth url --out "$DEMO/managed"
    bin/admin namespaces import --tenant demo --cluster managed-demo -f "$DEMO/namespaces.yaml"
  fi
  if [ -s "$DEMO/managed/webhooks.yaml" ]; then
    say "sending allowed-pod.json to managed-demo's validate URL, with no other credential"
    curl -fsS --cacert "$CA" -H "Content-Type: application/json" --data @"$DEMO/allowed-pod.json" \
      "$(sed -n 's/^ *url: \(.*\/validate\)$/\1/p' "$DEMO/managed/webhooks.yaml")?timeout=10s"
    echo
  else
    say "cluster managed-demo exists but $DEMO/managed/webhooks.yaml does not: rotate its credential with --out $DEMO/managed"
  fi

  # The gateway stores decisions in batches, within a fraction of a second.
  say "admin decisions --tenant demo --since $since"
  for _ in $(seq 1 20); do
    decisions="$(bin/admin decisions --tenant demo --since "$since")"
    if ! grep -q '^No decisions' <<<"$decisions"; then break; fi
    sleep 0.2
  done
  printf '%s\n' "$decisions"

  # The policy catalog: the Pod Security Standards, restricted, installed
  # with the Warn action, so that the verdicts above stay the baseline
  # policies', and only on the clusters labelled env=demo (the binding's
  # portcullis.dev/cluster-selector): kind-demo is, managed-demo is not.
  say "admin cluster label kind-demo --tenant demo env=demo --overwrite"
  bin/admin cluster label kind-demo --tenant demo env=demo --overwrite
  if bin/admin catalog upgrade pod-security-restricted --tenant demo --dry-run >/dev/null 2>&1; then
    say "catalog entry pod-security-restricted is installed"
  else
    say "admin catalog install pod-security-restricted --tenant demo --action Warn --cluster-selector env=demo"
    bin/admin catalog install pod-security-restricted --tenant demo --action Warn --cluster-selector env=demo
  fi
  say "admin test --tenant demo --cluster kind-demo -f $DEMO/denied-pod.json (with the catalog's warnings)"
  bin/admin test --tenant demo --cluster kind-demo -f "$DEMO/denied-pod.json"
  say "admin test --tenant demo --cluster managed-demo -f $DEMO/denied-pod.json (no env=demo label: no catalog warnings)"
  bin/admin test --tenant demo --cluster managed-demo -f "$DEMO/denied-pod.json"
}

if [ -s "$TOKEN_FILE" ]; then
  build_demo
else
  say "no operator token in $TOKEN_FILE (this database was bootstrapped before): skipping the demo"
fi

cat <<EOT

Portcullis is running.

  webhook   $WEBHOOK_URL      (apiservers call /t/<tenant>/validate and /t/<tenant>/mutate)
  admin     $ADMIN_URL      (REST API under /api/v1, OpenAPI at /api/v1/openapi.json)
  web UI    $ADMIN_URL/ui/  (docs/ui.md)
  metrics   http://$METRICS_ADDR       (/livez /readyz /metrics)
  CA file   $CA
  database  $PORTCULLIS_DATABASE_URL
  operator token (kept in $TOKEN_FILE):
            $TOKEN

Demo: tenant "demo" with cluster "kind-demo" (its apiserver files are in $DEMO)
and cluster "managed-demo" (a managed control plane: its webhooks.yaml, whose
URLs carry its secret, is in $DEMO/managed), the 10 baseline policies from
samples/baseline, the catalog's Pod Security Standards (restricted, as
warnings, bound to the clusters labelled env=demo), and two sample reviews.
Each answer is stored in the decisions table (see docs/decisions.md) and,
under --decision-log, also logged as an "admission decision" line.

Sign in to the web UI: open $ADMIN_URL/ui/ (the browser warns about the
development certificate; its CA is $CA), and paste the operator token
from $TOKEN_FILE into "Token". Tenant "demo" then shows every page with data.

Try the admin CLI (bin/admin is logged in through $PORTCULLIS_CONFIG):
  export PORTCULLIS_CONFIG=$PORTCULLIS_CONFIG
  bin/admin get policies --tenant demo
  bin/admin get bindings --tenant demo
  bin/admin get namespaces --tenant demo --cluster kind-demo
  bin/admin get crds --tenant demo --cluster kind-demo
  bin/admin test --tenant demo --cluster kind-demo -f $DEMO/denied-pod.json --explain
  bin/admin test --tenant demo --cluster kind-demo -f $DEMO/allowed-pod.json --mutate --explain
  bin/admin test --tenant demo --cluster kind-demo -f $DEMO/denied-pod.json --validate
  bin/admin get map --tenant demo
  bin/admin catalog list --tenant demo
  bin/admin catalog show pod-security-baseline
  bin/admin history --tenant demo vap baseline-no-privileged
  bin/admin credential list --tenant demo --cluster kind-demo
  bin/admin decisions --tenant demo --verdict denied
  bin/admin audit --tenant demo
  bin/admin tenant limits demo
  bin/admin help
The webhook, as an apiserver calls it (allowed-pod.json or denied-pod.json):
  curl --cacert $CA -H "Authorization: Bearer \$(sed -n 's/^ *token: //p' $DEMO/kubeconfig.yaml)" \\
       -H "Content-Type: application/json" --data @$DEMO/denied-pod.json "$WEBHOOK_URL/t/demo/validate?timeout=10s"
and as a managed control plane calls it, authenticated by the URL alone:
  curl --cacert $CA -H "Content-Type: application/json" --data @$DEMO/denied-pod.json \\
       "\$(sed -n 's/^ *url: \\(.*\\/validate\\)\$/\\1/p' $DEMO/managed/webhooks.yaml)?timeout=10s"

Ctrl-C stops the gateway. The local PostgreSQL keeps running; \`make db-stop\` stops it.
EOT

wait $GW
