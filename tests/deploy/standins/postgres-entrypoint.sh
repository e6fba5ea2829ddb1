#!/bin/sh
# What docker-compose.yml asks of the official postgres image: on an empty data directory,
# create the cluster with POSTGRES_USER as its superuser (password POSTGRES_PASSWORD) and the
# database POSTGRES_DB, listening on every interface; then run postgres as the postgres user.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
as_postgres() { runuser -u postgres -- "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  chown postgres "$pwfile"
  # UTF8, as the official image does (it sets a UTF-8 locale); a bare one would be SQL_ASCII.
  as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "${POSTGRES_DB:-$POSTGRES_USER}" != postgres ]; then
    as_postgres createdb -U "$POSTGRES_USER" "${POSTGRES_DB:-$POSTGRES_USER}"
  fi
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*' "$@"
