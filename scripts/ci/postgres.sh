#!/usr/bin/env bash
# Installs what the PostgreSQL tests of dyno-store and dyno (tests/fleet_cli.rs) need: a
# PostgreSQL server (initdb, postgres, pg_isready, psql) and pg_config to find them. The
# tests start their own throwaway server on a Unix socket in a temporary directory; under
# root they run it as the `postgres` user, which Debian's package creates.
# Never fails the caller: where PostgreSQL cannot be installed, it says so and the tests
# skip with a printed note.
# Usage: scripts/ci/postgres.sh
set -uo pipefail

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

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
  if [ ! -f /tmp/.dyno-apt-updated ]; then
    $sudo apt-get update -qq >/dev/null 2>&1 && touch /tmp/.dyno-apt-updated
  fi
  # postgresql pulls the server of Debian's current major; libpq-dev brings pg_config.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    postgresql libpq-dev >/dev/null 2>&1
  # The package starts a cluster of its own; the tests do not use it.
fi

if have_server && id postgres >/dev/null 2>&1; then
  echo "PostgreSQL installed: $(pg_config --version 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)"
else
  echo "note: PostgreSQL could not be installed; the PostgreSQL tests will skip with a note"
fi
exit 0
