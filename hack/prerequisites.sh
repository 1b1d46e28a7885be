#!/usr/bin/env bash
# Fails with one actionable line when a tool the build needs is missing. Everything else (the
# control plane, kwok, controller-gen) is built by the Makefile from the Go module proxy.
set -euo pipefail

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: '$1' is not installed: $2" >&2; exit 1; }
}
need go   "install Go 1.26.7 or newer (https://go.dev/doc/install) and put it on PATH"
need git  "install git (Debian: apt-get install -y git)"
need curl "install curl (Debian: apt-get install -y curl)"

# go.mod says go 1.26.7 (a dependency needs it); older Go refuses the module or, with the default
# GOTOOLCHAIN=auto, downloads 1.26.7 from the module proxy.
ver=$(cd / && GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//')
IFS=. read -r major minor patch <<<"$ver.0.0"
if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && { [ "$minor" -lt 26 ] || { [ "$minor" -eq 26 ] && [ "${patch%%[!0-9]*}" -lt 7 ]; }; }; }; then
  echo "error: Go $ver is too old: install Go 1.26.7 or newer" >&2; exit 1
fi
