#!/usr/bin/env bash
# Installs Debian's prometheus package (prometheus and promtool) when either is missing: the alert
# rule tests run promtool, and the e2e tests run a real Prometheus that scrapes the manager. The
# e2e tests run their own Prometheus on a free port with a configuration of their own.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: prometheus and promtool are missing and apt-get is not available: install Prometheus 2.42 or newer" >&2
  exit 1
fi
echo "==> installing Prometheus and promtool (Debian package prometheus)"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
command -v promtool >/dev/null && prometheus --version | head -1
