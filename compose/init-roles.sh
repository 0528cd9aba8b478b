#!/bin/sh
# cuzk's database and logins for docker-compose.yml, created once, on the first start
# of an empty data volume: the postgres image runs /docker-entrypoint-initdb.d/*.sh as
# the superuser before `cuzk migrate` runs. Each login's password comes from its
# secret, a pgpass line (*:*:*:user:password) that the login's own service reads as
# its passfile (compose/secrets.sh writes them).
#   cuzk_owner    owns the database and cuzk's schema: cuzk migrate and cuzk setup
#   prover        cuzk workers, a member of cuzk_worker
#   orchestrator  an example submitter, a member of cuzk_submitter
# The group roles are created here as cuzk migrate would (it keeps existing ones), so
# that the logins can join them before the schema exists.

secrets=${CUZK_SECRETS_DIR:-/run/secrets}
cuzk_password() {
	pw=$(cut -d: -f5- "$secrets/$1") || return 1
	if [ -z "$pw" ]; then
		echo "cuzk: secret $secrets/$1 holds no password (want a line *:*:*:$1:PASSWORD; compose/secrets.sh writes one)" >&2
		return 1
	fi
	printf '%s' "$pw"
}
owner_pw=$(cuzk_password cuzk_owner) &&
	prover_pw=$(cuzk_password prover) &&
	orchestrator_pw=$(cuzk_password orchestrator) &&
	psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname postgres \
		-v owner="$owner_pw" -v prover="$prover_pw" -v orchestrator="$orchestrator_pw" <<'SQL'
CREATE ROLE cuzk_submitter NOLOGIN;
CREATE ROLE cuzk_worker NOLOGIN;
-- CREATEROLE because cuzk's migrations create and grant its group roles.
CREATE ROLE cuzk_owner LOGIN CREATEROLE PASSWORD :'owner';
CREATE ROLE prover LOGIN PASSWORD :'prover' IN ROLE cuzk_worker;
CREATE ROLE orchestrator LOGIN PASSWORD :'orchestrator' IN ROLE cuzk_submitter;
CREATE DATABASE cuzk OWNER cuzk_owner;
-- Only cuzk's logins connect (the owner always may).
REVOKE ALL ON DATABASE cuzk FROM PUBLIC;
GRANT CONNECT ON DATABASE cuzk TO prover, orchestrator;
SQL
