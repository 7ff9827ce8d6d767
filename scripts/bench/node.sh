#!/usr/bin/env bash
# The reference node on a network (docs/benchmarks/node.md): the figures of
# examples/node/bench.sh (in-process pipeline against one validator fed over QUIC by
# `dyno load`, and a follower's adoption), of examples/node/layouts.sh (the same per
# number of verify tiles) and of examples/node/wakeups.sh (what an idle strategy costs).
#
# usage: scripts/bench/node.sh [SECONDS]                       (bench.sh; default 2 s a phase)
#        scripts/bench/node.sh layouts [MAX_TILES [SECONDS]]    (default 2 tiles, 2 s a phase)
#        scripts/bench/node.sh wakeups [CONFIG [RATE]]          (default the value workload, 1/s)
# env:   DYNO, OUT (scripts/bench/lib.sh), and bench.sh's (SLOT_MS, OVERLOAD, VERIFY_TILES,
#        VERIFY_BATCH)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 [SECONDS] | $0 layouts [MAX_TILES [SECONDS]] | $0 wakeups [CONFIG [RATE]]"
case "${1:-}" in
layouts | wakeups) [ $# -le 3 ] || usage "$USAGE" ;;
*) [ $# -le 1 ] || usage "$USAGE" ;;
esac
need_dyno
export DYNO
case "${1:-}" in
layouts) exec examples/node/layouts.sh "${2:-2}" "${3:-2}" ;;
wakeups)
    CONFIG=crates/dyno-pipeline/workloads/value.toml
    [ $# -lt 2 ] || CONFIG=$(from_caller "$2")
    exec examples/node/wakeups.sh "$CONFIG" "${3:-1}"
    ;;
*)
    out_dir
    export OUT
    exec examples/node/bench.sh "${1:-2}"
    ;;
esac
