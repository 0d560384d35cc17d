#!/bin/sh
# Run once by the first leader of a new cluster (patroni.yml bootstrap.post_bootstrap),
# with a superuser connection string as $1: the application's role (it also streams the
# seat map's changes, so REPLICATION) and its database.
set -eu
psql "$1" -v ON_ERROR_STOP=1 -v password="$PG_ONSALE_PASSWORD" <<'SQL'
CREATE ROLE onsale LOGIN REPLICATION PASSWORD :'password';
CREATE DATABASE onsale OWNER onsale;
SQL
