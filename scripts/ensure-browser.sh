#!/usr/bin/env bash
# Installs what the browser tests (make test-ui) need when it is missing:
# Debian's chromium and Node.js (apt-get, as root), and test/ui's npm
# packages at the versions of its lockfile. Nothing is started here.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v "${CHROMIUM:-chromium}" >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} with apt-get for the browser tests" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "The browser tests need ${missing[*]} (Debian/Ubuntu: sudo apt-get install ${missing[*]})." >&2
    exit 1
  fi
fi
# npm ci only when the installed tree is not the lockfile's.
if ! cmp -s test/ui/package-lock.json test/ui/node_modules/.portcullis-lock 2>/dev/null; then
  (cd test/ui && npm ci --no-audit --no-fund --loglevel=error)
  cp test/ui/package-lock.json test/ui/node_modules/.portcullis-lock
fi
