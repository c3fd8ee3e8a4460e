#!/usr/bin/env bash
# Installs Debian's haproxy when it is missing (as root, with apt-get), for
# the drills (make drills), where it stands in for a Service or a cloud load
# balancer in front of the gateway replicas. Nothing is started here.
exec "$(dirname "$0")/ensure-package.sh" haproxy
