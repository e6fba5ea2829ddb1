#!/usr/bin/env bash
# Debian's chromium for the browser tests (tests/e2e/test_web_app.py; docs/adr/0034).
# Playwright drives it at /usr/bin/chromium and never downloads a browser of its own.
# Quick and silent when it is installed already.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "chromium is missing: install it with apt-get install chromium (as root)" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "installing chromium for the browser tests…"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
