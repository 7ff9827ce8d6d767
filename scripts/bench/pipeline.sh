#!/usr/bin/env bash
# The leader pipeline's throughput per layout (docs/benchmarks/pipeline.md, "Leader
# pipeline"): `dyno pipeline bench` on a layout file, swept over tile counts, benchg
# inside, flat out; TPS median (min-max) per layout and the per-tile figures.
#
# usage: scripts/bench/pipeline.sh [SECONDS [SWEEP [CONFIG]]]
#        (default 2 s per layout, verify=1..2,bank=1..2, examples/pipeline/leader-2core.toml)
# env:   DYNO, OUT (scripts/bench/lib.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -le 3 ] || usage "$0 [SECONDS [SWEEP [CONFIG]]]"
SECONDS_PER_LAYOUT=${1:-2}
SWEEP=${2:-verify=1..2,bank=1..2}
CONFIG=examples/pipeline/leader-2core.toml
[ $# -lt 3 ] || CONFIG=$(from_caller "$3")
need_dyno
out_dir
"$DYNO" pipeline bench --config "$CONFIG" --duration "$SECONDS_PER_LAYOUT" --sweep "$SWEEP" \
    --db "$OUT/results.db"
