# shellcheck shell=bash
# Throwaway PostgreSQL server for the ledger tests (package ledger,
# cmd/dplp/internal/cli). Meant to be sourced by .ci/run (bash, as root, on Debian):
#
#   source .ci/postgres.sh
#
# It finds the server binaries (/usr/lib/postgresql/*/bin, or postgres,
# initdb and pg_ctl on PATH), installing the Debian package "postgresql" when
# there are none; initdb's a cluster in a fresh temporary directory owned by
# user postgres (root cannot run the server; the user is created if missing);
# starts it listening ONLY on a unix socket in that directory; creates
# database dplp; exports
#
#   DPLP_TEST_POSTGRES_DSN=postgres://postgres@/dplp?host=DIR/sock
#
# and registers an EXIT trap (chained after any existing one) that stops the
# server and removes the directory. It never aborts the sourcing script:
# when anything fails it prints why on stderr and leaves
# DPLP_TEST_POSTGRES_DSN unset, so the PostgreSQL tests skip with a message.
# Safe under set -euo pipefail. Run as a normal user it works too (the
# server then runs as that user), provided the binaries are installed.

dplp_pg_log() { echo "postgres.sh: $*" >&2; }

# dplp_pg_bindir prints a directory holding postgres, initdb and pg_ctl.
dplp_pg_bindir() {
	local d best=""
	# The highest major version wins (sort -V: 9.6 < 15 < 16).
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
		if [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			best="$d"
		fi
	done
	if [ -z "$best" ] && command -v postgres >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		best=$(dirname "$(command -v postgres)")
	fi
	[ -n "$best" ] || return 1
	echo "$best"
}

dplp_pg_start() {
	local bindir dir
	local -a as_pg
	if ! bindir=$(dplp_pg_bindir); then
		if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
			dplp_pg_log "no PostgreSQL server binaries found and cannot install them (need root and apt-get)"
			return 1
		fi
		dplp_pg_log "installing PostgreSQL (apt-get install -y postgresql)"
		if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null ||
			{ DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }; }; then
			dplp_pg_log "apt-get install postgresql failed"
			return 1
		fi
		bindir=$(dplp_pg_bindir) || { dplp_pg_log "postgresql installed but no server binaries found"; return 1; }
	fi

	as_pg=()
	if [ "$(id -u)" = 0 ]; then
		if ! id -u postgres >/dev/null 2>&1; then
			useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh postgres ||
				{ dplp_pg_log "cannot create user postgres"; return 1; }
		fi
		if command -v runuser >/dev/null 2>&1; then
			as_pg=(runuser -u postgres --)
		else
			as_pg=(su postgres -s /bin/sh -c '"$0" "$@"')
		fi
	fi

	# A short path: unix socket paths are limited to about 100 bytes.
	dir=$(mktemp -d /tmp/dplp-pg.XXXXXX) || { dplp_pg_log "mktemp failed"; return 1; }
	DPLP_PG_DIR=$dir
	mkdir -p "$dir/sock" || return 1
	if [ "$(id -u)" = 0 ]; then
		chown -R postgres: "$dir" || { dplp_pg_log "chown $dir failed"; return 1; }
	fi
	chmod 700 "$dir" || return 1

	if ! "${as_pg[@]}" "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
		dplp_pg_log "initdb failed:"; cat "$dir/initdb.log" >&2
		return 1
	fi
	if ! "${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses='' -c unix_socket_directories=$dir/sock" start >/dev/null 2>&1; then
		dplp_pg_log "pg_ctl start failed:"; cat "$dir/server.log" >&2 2>/dev/null || true
		return 1
	fi
	DPLP_PG_BINDIR=$bindir
	DPLP_PG_AS=("${as_pg[@]}")
	local createdb="$bindir/createdb"
	[ -x "$createdb" ] || createdb=$(command -v createdb) || { dplp_pg_log "createdb not found"; return 1; }
	if ! "${as_pg[@]}" "$createdb" -h "$dir/sock" -U postgres dplp >"$dir/createdb.log" 2>&1; then
		dplp_pg_log "createdb failed:"; cat "$dir/createdb.log" >&2
		return 1
	fi
	export DPLP_TEST_POSTGRES_DSN="postgres://postgres@/dplp?host=$dir/sock"
	dplp_pg_log "PostgreSQL ($("$bindir/postgres" --version 2>/dev/null || echo '?')) on unix socket $dir/sock; DPLP_TEST_POSTGRES_DSN=$DPLP_TEST_POSTGRES_DSN"
}

# dplp_pg_stop stops the server and removes its directory (idempotent).
dplp_pg_stop() {
	if [ -n "${DPLP_PG_DIR:-}" ] && [ -d "$DPLP_PG_DIR" ]; then
		if [ -n "${DPLP_PG_BINDIR:-}" ] && [ -f "$DPLP_PG_DIR/data/postmaster.pid" ]; then
			"${DPLP_PG_AS[@]}" "$DPLP_PG_BINDIR/pg_ctl" -D "$DPLP_PG_DIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
		fi
		rm -rf "$DPLP_PG_DIR" || true
	fi
	DPLP_PG_DIR=""
	unset DPLP_TEST_POSTGRES_DSN || true
}

DPLP_PG_DIR=""
DPLP_PG_BINDIR=""
DPLP_PG_AS=()
if dplp_pg_start; then
	# Chain after an existing EXIT trap instead of replacing it.
	dplp_pg_prev_trap=$(trap -p EXIT)
	if [ -n "$dplp_pg_prev_trap" ]; then
		dplp_pg_prev_trap=$(eval "dplp_pg_f() { printf '%s' \"\$3\"; }; dplp_pg_f ${dplp_pg_prev_trap}")
		# shellcheck disable=SC2064
		trap "dplp_pg_stop; ${dplp_pg_prev_trap}" EXIT
	else
		trap dplp_pg_stop EXIT
	fi
	unset dplp_pg_prev_trap
else
	dplp_pg_log "PostgreSQL unavailable: the PostgreSQL ledger tests will skip"
	dplp_pg_stop
fi
true
