#!/usr/bin/env bash
# Builds grafana-schema-check (scripts/ci/grafana-schema/, Go, over the Apache-2.0 Grafana
# Foundation SDK fetched from the Go module proxy) into ~/.cache/dyno/bin/, where the
# Grafana dashboards test (crates/dyno/tests/cli/grafana.rs) finds it and checks every
# dashboard against Grafana's dashboard schema. About a minute and a half of both cores
# the first time, seconds after (Go's build cache).
# Never fails the caller: without Go or the module proxy it says so, and that check
# skips with a printed note (the other dashboard checks run either way).
# Usage: scripts/ci/grafana-schema.sh
set -uo pipefail
src="$(cd "$(dirname "$0")/grafana-schema" && pwd)"
out="${XDG_CACHE_HOME:-$HOME/.cache}/dyno/bin/grafana-schema-check"

if ! command -v go >/dev/null 2>&1; then
  echo "note: Go is not installed; the dashboards' Grafana schema check will skip with a note"
  exit 0
fi
mkdir -p "$(dirname "$out")"
start=$(date +%s)
if (cd "$src" && go build -o "$out" .) >/tmp/dyno-grafana-schema-build.log 2>&1; then
  echo "grafana-schema-check built in $(( $(date +%s) - start )) s: $out"
else
  rm -f "$out"
  echo "note: grafana-schema-check did not build (see /tmp/dyno-grafana-schema-build.log); the Grafana schema check will skip with a note"
  tail -5 /tmp/dyno-grafana-schema-build.log
fi
exit 0
