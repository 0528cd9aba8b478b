#!/bin/sh
# Writes the secrets docker-compose.yml reads, with random passwords, into DIR
# (default: secrets/ beside docker-compose.yml); files already there are kept.
#   postgres_password             the PostgreSQL superuser's password
#   cuzk_owner, prover, orchestrator
#                                 one pgpass line each (*:*:*:login:password): the
#                                 login's service reads it as its passfile
# The directory is private to you; the files are readable (0644) so that the
# containers' own users (postgres, cuzk) can read the ones mounted into them.
set -eu
dir=${1:-$(dirname "$0")/../secrets}
mkdir -p "$dir"
chmod 700 "$dir"
random() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
write() { # file content
	[ -s "$dir/$1" ] && return 0
	(umask 022 && printf '%s\n' "$2" >"$dir/$1")
}
write postgres_password "$(random)"
for login in cuzk_owner prover orchestrator; do
	write "$login" "*:*:*:$login:$(random)"
done
echo "secrets in $dir"
