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

# The control plane is built with the installed Go, which must be 1.26.7 or newer; rollgate itself is
# built with the Go release the Makefile names (GO_VERSION), which the go command fetches.
ver=$(cd / && GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//')
IFS=. read -r major minor patch <<<"$ver.0.0"
if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && { [ "$minor" -lt 26 ] || { [ "$minor" -eq 26 ] && [ "${patch%%[!0-9]*}" -lt 7 ]; }; }; }; then
  echo "error: Go $ver is too old: install Go 1.26.7 or newer" >&2; exit 1
fi
