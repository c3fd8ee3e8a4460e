#!/usr/bin/env bash
# Installs Debian's haproxy when it is missing (as root, with apt-get), for
# the drills (make drills), where it stands in for a Service or a cloud load
# balancer in front of the gateway replicas. Nothing is started here.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "haproxy not found; installing it with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
  exit 0
fi
cat >&2 <<'EOT'
haproxy was not found. Install it (Debian/Ubuntu: sudo apt-get install haproxy).
EOT
exit 1
