#!/usr/bin/env bash
# ensure-package.sh COMMAND [PACKAGE]: installs Debian's PACKAGE (default:
# COMMAND) when COMMAND is missing, as root with apt-get; otherwise says
# what to install and fails. Nothing is started here.
set -euo pipefail
cmd="$1" pkg="${2:-$1}"
if command -v "$cmd" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "$cmd not found; installing $pkg with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
  exit 0
fi
echo "$cmd was not found. Install it (Debian/Ubuntu: sudo apt-get install $pkg)." >&2
exit 1
