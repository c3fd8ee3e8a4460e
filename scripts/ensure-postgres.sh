#!/usr/bin/env bash
# Installs the PostgreSQL server binaries when none are on the machine
# (Debian/Ubuntu, as root). The tests and `make run` start their own servers
# from these binaries; nothing is started here.
set -euo pipefail
if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then exit 0; fi
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && exit 0; done
if [ -n "${PORTCULLIS_DATABASE_URL:-}${PORTCULLIS_TEST_DATABASE_URL:-}" ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL server binaries not found; installing them with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  exit 0
fi
cat >&2 <<'EOT'
PostgreSQL server binaries (initdb, postgres) were not found.
Install them (Debian/Ubuntu: sudo apt-get install postgresql),
or set PORTCULLIS_DATABASE_URL (make run) / PORTCULLIS_TEST_DATABASE_URL (make test)
to an existing PostgreSQL server.
EOT
exit 1
