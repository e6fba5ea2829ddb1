#!/usr/bin/env bash
# Build the people's app into web/dist (served by the gateway at /; docs/adr/0033).
# Installs the npm packages from package-lock.json with `npm ci` when the lock file has
# changed since the last install, checks the generated types are current, then builds.
set -euo pipefail
cd "$(dirname "$0")/../web"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm (Node 20) is needed to build the people's app; the gateway serves / without it" >&2
  exit 1
fi
stamp=node_modules/.chips-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
npm run --silent check:types
npm run --silent build -- --logLevel warn
