#!/usr/bin/env bash
# Release comparisons (docs/benchmarks/compare.md): `dyno compare run` of a comparison
# file into a fresh store, its verdict table and HTML report; with `power`, the
# statistical power study (scripts/power/power_study.py), its arguments passed through.
#
# usage: scripts/bench/compare.sh FILE [ROUNDS]    (default: the file's rounds)
#        scripts/bench/compare.sh power [ARGS...]  (default a 2-round smoke study: --rounds 2
#                                                   --trial-rounds 2 --n 1,2,3 --measure-s 2 --rate 200)
# env:   DYNO, OUT (scripts/bench/lib.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 FILE [ROUNDS] | $0 power [ARGS...]"
[ $# -ge 1 ] || usage "$USAGE"
if [ "$1" != power ]; then
    [ $# -le 2 ] || usage "$USAGE"
    FILE=$(from_caller "$1")
    [ -r "$FILE" ] || usage "$USAGE (FILE $1: not a readable file)"
fi
need_dyno
out_dir
if [ "$1" = power ]; then
    shift
    [ $# -gt 0 ] || set -- --rounds 2 --trial-rounds 2 --n 1,2,3 --warmup-s 0 --measure-s 2 --rate 200
    exec python3 scripts/power/power_study.py --dyno "$DYNO" --out "$OUT" "$@"
fi
"$DYNO" compare run "$FILE" ${2:+--rounds "$2"} --db "$OUT/results.db" --html "$OUT/report.html"
