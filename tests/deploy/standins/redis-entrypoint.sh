#!/bin/sh
# The official image builds redis with protected mode off (its network is the container's).
if [ "${1:-}" = redis-server ]; then
  shift
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
