#!/usr/bin/env bash
# Installs Debian's pgbouncer when it is missing (as root, with apt-get), for
# the drills (make drills), where the replicas' pool goes through it in
# transaction mode as a large fleet's does (docs/production.md,
# "PgBouncer"). Nothing is started here: the drills run their own, with a
# configuration of their own in a temporary directory.
set -euo pipefail
if command -v pgbouncer >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "pgbouncer not found; installing it with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
  exit 0
fi
cat >&2 <<'EOT'
pgbouncer was not found. Install it (Debian/Ubuntu: sudo apt-get install pgbouncer).
EOT
exit 1
