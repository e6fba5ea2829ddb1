#!/usr/bin/env bash
# Build the people's app into web/dist (served by the gateway at /; docs/adr/0033).
# Installs the npm packages from package-lock.json with `npm ci` when the lock file has
# changed since the last install, checks the generated types are current, then builds.
#
# A build is skipped when nothing it is made from changed since the last one: web/dist
# keeps a digest of its sources (the app's files and the catalogue's schemas), so a second
# `make up` costs a checksum, not a build. `--check` only says whether web/dist is current
# (exit 0) or would be built (exit 1).
set -euo pipefail
cd "$(dirname "$0")/../web"
built=dist/.chips-sources

# Every file the build reads, named and hashed, as one digest.
sources_digest() {
    find index.html package.json package-lock.json tsconfig.json vite.config.ts src scripts \
        $([ -d public ] && echo public) ../docs/protocol/schemas ../docs/protocol/openapi.json \
        ../docs/protocol/asyncapi.json -type f -print0 |
        LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

digest=$(sources_digest)
if [[ -f dist/index.html && "$(cat "$built" 2>/dev/null)" == "$digest" ]]; then
    [[ "${1:-}" == "--check" ]] || echo "the app in web/dist is current; not rebuilt"
    exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
    echo "the app in web/dist is not current: its sources changed since it was built"
    exit 1
fi
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
echo "$digest" >"$built"
