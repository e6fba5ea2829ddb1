#!/bin/sh
# What docker-compose.yml relies on of the official nginx image's entrypoint: the
# executable *.envsh files of /docker-entrypoint.d are sourced (and *.sh run), in order; then
# every /etc/nginx/templates/*.template is written to NGINX_ENVSUBST_OUTPUT_DIR (default
# /etc/nginx/conf.d) with the environment's variables, and only those, substituted.
set -eu
for f in /docker-entrypoint.d/*; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  case "$f" in
    *.envsh) . "$f" ;;
    *.sh) "$f" ;;
  esac
done
templates=${NGINX_ENVSUBST_TEMPLATE_DIR:-/etc/nginx/templates}
out=${NGINX_ENVSUBST_OUTPUT_DIR:-/etc/nginx/conf.d}
if [ -d "$templates" ]; then
  defined=$(printf '${%s} ' $(awk 'END { for (name in ENVIRON) { print ( name ~ /^[a-zA-Z_][a-zA-Z0-9_]*$/ ) ? name : "" } }' < /dev/null))
  for template in "$templates"/*.template; do
    [ -f "$template" ] || continue
    name=$(basename "$template" .template)
    envsubst "$defined" < "$template" > "$out/$name"
  done
fi
exec "$@"
