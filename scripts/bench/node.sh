#!/usr/bin/env bash
# The reference node on a network (docs/benchmarks/node.md): the figures of
# examples/node/bench.sh (one layout: the in-process pipeline, the node's capacity over
# QUIC from `dyno load` stepped up past it, and a follower's keep-up at that rate), of
# examples/node/layouts.sh (one row per layout) and of examples/node/wakeups.sh (what an
# idle strategy costs).
#
# usage: scripts/bench/node.sh [SECONDS]                       (bench.sh; default 2 s a phase)
#        scripts/bench/node.sh layouts [LAYOUTS [SECONDS]]      (default 1,2 verify tiles, 2 s;
#                                                               LAYOUTS: N or VERIFY[/BANK],...)
#        scripts/bench/node.sh wakeups [CONFIG [RATE]]          (default the value workload, 1/s)
# env:   DYNO, OUT (scripts/bench/lib.sh), and bench.sh's (SLOT_MS, VERIFY_TILES, BANK_TILES,
#        REPLAY_THREADS, VERIFY_BATCH, TILE_TPS)
#
# The issue #33 goals on a 16-core machine (about 3 minutes), from a folder holding the
# stripped release binary as ./dyno and this repository's examples/ and scripts/:
#   DYNO=./dyno scripts/bench/node.sh layouts 4/2,8/2,12/2 5
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
