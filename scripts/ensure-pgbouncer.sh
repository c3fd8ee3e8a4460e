#!/usr/bin/env bash
# Installs Debian's pgbouncer when it is missing (as root, with apt-get), for
# the drills (make drills), where the replicas' pool goes through it in
# transaction mode as a large fleet's does (docs/production.md,
# "PgBouncer"). Nothing is started here: the drills run their own, with a
# configuration of their own in a temporary directory.
exec "$(dirname "$0")/ensure-package.sh" pgbouncer
