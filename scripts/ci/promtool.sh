#!/usr/bin/env bash
# Installs promtool (Debian's prometheus package) for the Grafana dashboards test
# (crates/dyno/tests/cli/grafana.rs), which has Prometheus' own parser check every panel query.
# The package also brings the server, which crates/dyno/tests/cli/prometheus.rs starts on
# loopback to have every dashboard query answered (it skips with a note without it).
# Never fails the caller: where promtool cannot be installed, it says so and that check
# skips with a printed note (the metric-name check runs either way).
# Usage: scripts/ci/promtool.sh
set -uo pipefail
. "$(dirname "$0")/apt.sh"

if command -v promtool >/dev/null 2>&1; then
  echo "promtool: $(promtool --version 2>&1 | head -1)"
  exit 0
fi

apt_install prometheus

if command -v promtool >/dev/null 2>&1; then
  echo "promtool installed: $(promtool --version 2>&1 | head -1)"
else
  echo "note: promtool could not be installed; the dashboards' PromQL check will skip with a note"
fi
exit 0
