#!/usr/bin/env bash
# Build-profile racing against exhaustive rounds on one study file
# (docs/benchmarks/tune.md): the variants built once, then `dyno tune run` racing and
# `--exhaustive`, each into its own fresh store so that neither sees the other's
# samples, and both reports (JSON beside them in OUT): the samples per variant (`n`)
# summed over each report are the runs racing and exhaustive took.
#
# usage: scripts/bench/tune.sh STUDY [MAX_ROUNDS]   (default 3 rounds)
# env:   DYNO, OUT (scripts/bench/lib.sh). Builds every variant with cargo: minutes each.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 STUDY [MAX_ROUNDS]"
[ $# -ge 1 ] && [ $# -le 2 ] || usage "$USAGE"
STUDY=$(from_caller "$1")
ROUNDS=${2:-3}
[ -r "$STUDY" ] || usage "$USAGE (STUDY $1: not a readable file)"
need_dyno
out_dir
"$DYNO" tune check "$STUDY" # refuses a study that cannot build before anything is built
"$DYNO" tune run "$STUDY" --build-only --db "$OUT/race.db"
"$DYNO" tune run "$STUDY" --max-rounds "$ROUNDS" --db "$OUT/race.db"
"$DYNO" tune run "$STUDY" --max-rounds "$ROUNDS" --exhaustive --db "$OUT/exhaustive.db"
"$DYNO" tune report "$STUDY" --db "$OUT/race.db" --format json >"$OUT/racing.json"
"$DYNO" tune report "$STUDY" --db "$OUT/exhaustive.db" --format json >"$OUT/exhaustive.json"
"$DYNO" tune report "$STUDY" --db "$OUT/exhaustive.db"
