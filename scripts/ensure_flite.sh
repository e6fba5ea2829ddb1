#!/usr/bin/env bash
# Debian's flite, the speech the voice-note tests speak (tests/e2e/test_voice_notes.py,
# services/attachments/tests/test_voice.py; docs/adr/0137). Its slt voice says the test
# sentences; pocketsphinx, which hears voice notes, hears them word for word.
# Quick and silent when it is installed already.
set -euo pipefail
if command -v flite >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "flite is missing: install it with apt-get install flite (as root)" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "installing flite for the voice-note tests…"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends flite >/dev/null
