#!/usr/bin/env bash
# Podman, Buildah and debootstrap from Debian, for the deploy test (tests/deploy/test_compose_real.py):
# it builds the image from the Dockerfile and runs docker-compose.yml with them, on base images
# it builds from Debian packages. podman-compose comes from the dev dependencies (uv sync).
# Quick and silent when everything is installed already. Docker users need none of this.
set -euo pipefail
missing=()
for tool in podman buildah debootstrap runc; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
# Rootful containers on a plain filesystem need these beside podman itself.
# Names between containers: dnsname under CNI (Debian's default), aardvark-dns under netavark.
for pkg in uidmap slirp4netns fuse-overlayfs containernetworking-plugins \
  golang-github-containernetworking-plugin-dnsname aardvark-dns; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "missing ${missing[*]}: install them with apt-get install (as root)" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "installing ${missing[*]} for the deploy test…"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
