#!/usr/bin/env bash
# Installs what the PostgreSQL tests of dyno-store and dyno (tests/cli/fleet.rs) need: a
# PostgreSQL server (initdb, postgres, pg_isready, psql) and pg_config to find them. The
# tests start their own throwaway server on a Unix socket in a temporary directory; under
# root they run it as the `postgres` user, which Debian's package creates.
# Never fails the caller: where PostgreSQL cannot be installed, it says so and the tests
# skip with a printed note.
# Usage: scripts/ci/postgres.sh
set -uo pipefail
. "$(dirname "$0")/apt.sh"

have_server() {
  local bindir
  bindir=$(pg_config --bindir 2>/dev/null) || bindir=""
  if [ -n "$bindir" ] && [ -x "$bindir/initdb" ]; then
    return 0
  fi
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

if have_server && id postgres >/dev/null 2>&1; then
  echo "PostgreSQL: $(pg_config --version 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)"
  exit 0
fi

# postgresql pulls the server of Debian's current major; libpq-dev brings pg_config.
# The package starts a cluster of its own; the tests do not use it.
apt_install postgresql libpq-dev

if have_server && id postgres >/dev/null 2>&1; then
  echo "PostgreSQL installed: $(pg_config --version 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)"
else
  echo "note: PostgreSQL could not be installed; the PostgreSQL tests will skip with a note"
fi
exit 0
