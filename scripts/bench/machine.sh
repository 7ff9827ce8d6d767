#!/usr/bin/env bash
# `dyno machine`'s figures (docs/benchmarks/machine.md): every metric's score with its
# 95% CI and CV over REPEAT runs, the disk metrics in DIR; with `parity`, Substrate's own
# benchmark functions beside dyno-hw's in one process (the opt-in parity/ crate, built
# apart: see docs/machine.md), its arguments passed through.
#
# usage: scripts/bench/machine.sh [REPEAT [DIR]]     (default 1 run; DIR: a temporary
#                                                     folder under OUT)
#        scripts/bench/machine.sh parity [ARGS...]   (e.g. --rounds 10 --seconds 5)
# env:   DYNO, OUT (scripts/bench/lib.sh); PARITY (default
#        target/parity/production/dyno-parity); DURATION (seconds per metric; default
#        dyno's own, 5 s for Substrate's metrics and 1 s for the extras)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 [REPEAT [DIR]] | $0 parity [ARGS...]"

if [ "${1:-}" = parity ]; then
    shift
    PARITY=${PARITY:-target/parity/production/dyno-parity}
    [ -x "$PARITY" ] || {
        echo "$0: $PARITY: not built (CARGO_TARGET_DIR=target/parity cargo build --profile production --manifest-path parity/Cargo.toml)" >&2
        exit 2
    }
    out_dir
    exec "$PARITY" --dir "$OUT/disk" "$@"
fi

[ $# -le 2 ] || usage "$USAGE"
REPEAT=${1:-1}
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || usage "$USAGE (REPEAT: a whole number of runs, at least 1)"
need_dyno
out_dir
DIR=$OUT/disk
[ $# -lt 2 ] || DIR=$(from_caller "$2")
mkdir -p "$DIR"
DURATIONS=()
if [ -n "${DURATION:-}" ]; then
    for d in hash verify memory disk extra; do DURATIONS+=("--$d-duration" "$DURATION"); done
fi
"$DYNO" machine --base-path "$DIR" --repeat "$REPEAT" --allow-fail --db "$OUT/results.db" \
    ${DURATIONS[@]+"${DURATIONS[@]}"}
