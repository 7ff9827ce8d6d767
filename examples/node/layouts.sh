#!/usr/bin/env bash
# One row per node layout (issue #33): examples/node/bench.sh for each layout, and one
# table of (a) the in-process forge layout's TPS, (b) the node's capacity over QUIC, their
# ratio, the landed share at twice the capacity offered, the follower's validate+adopt
# p90 (slots) at the leader's capacity, and the loaded blocks it never adopted.
#
# usage: examples/node/layouts.sh [LAYOUTS] [SECONDS]
#   LAYOUTS: N (verify tiles 1, 2, ... N; default: nproc - 3, at least 2) or a comma list
#            of VERIFY[/BANK] tile counts, e.g. 4/2,8/2,12/4 (BANK default: BANK_TILES,
#            else 1)
#   SECONDS: per phase and per load step (default 5)
# env: DYNO (default target/release/dyno), OUT (keep every file; default a temporary
#      folder), and bench.sh's (SLOT_MS, REPLAY_THREADS, VERIFY_BATCH, TILE_TPS).
#
# Exits 1 when a layout's bench failed (a pool that ran out among the reasons: its
# figures would read low), naming the file with its output. Needs only the dyno binary,
# these example files and python3's standard library.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export DYNO=${DYNO:-target/release/dyno}
LAYOUTS=${1:-$(( $(nproc) > 5 ? $(nproc) - 3 : 2 ))}
SECS=${2:-5}
USAGE="usage: $0 [N | VERIFY[/BANK],...] [SECONDS]"
case "$SECS" in
'' | *[!0-9]* | 0) echo "$0: SECONDS=$SECS: must be a positive whole number; $USAGE" >&2; exit 2 ;;
esac
case "$LAYOUTS" in
*[!0-9,/]* | '' | ,* | *, | */ | /* | *,,* | *//*) echo "$0: LAYOUTS=$LAYOUTS: $USAGE" >&2; exit 2 ;;
*,* | */*) LIST=$(echo "$LAYOUTS" | tr ',' ' ') ;;
*) LIST=$(seq 1 "$LAYOUTS") ;;
esac
for l in $LIST; do
    case "$l" in 0 | 0/* | */0) echo "$0: layout $l: tile counts start at 1; $USAGE" >&2; exit 2 ;; esac
done
ROOT=${OUT:-$(mktemp -d -t dyno-layouts.XXXXXX)}
mkdir -p "$ROOT"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); layouts: $LIST; $SECS s per phase; files in $ROOT"
START=$(date +%s)
ROWS=()
for l in $LIST; do
    v=${l%%/*}
    b=${BANK_TILES:-1}
    case "$l" in */*) b=${l#*/} ;; esac
    name="tiles-$v-$b"
    OUT="$ROOT/$name" VERIFY_TILES=$v BANK_TILES=$b "$HERE/bench.sh" "$SECS" \
        >"$ROOT/$name.txt" 2>&1 || { echo "bench.sh failed for $v verify / $b bank tiles: see $ROOT/$name.txt" >&2; tail -3 "$ROOT/$name.txt" >&2; exit 1; }
    ROWS+=("$(cat "$ROOT/$name/row.txt")")
done
echo
printf '%s\n' "${ROWS[@]}" | python3 -c '
import sys
print("| verify tiles | bank tiles | (a) in-process TPS | (b) node capacity, TPS per slot | (b) / (a) | landed / capacity @ offered / capacity (about 2x) | follower validate+adopt p90, slots | loaded blocks never adopted |")
print("|---|---|---|---|---|---|---|---|")
for line in sys.stdin:
    v, b, a, cap, ratio, over, p90, loaded, missing = line.split()
    print("| %s | %s | %.0f | %.0f | %s | %s | %s | %s of %s |" % (v, b, float(a), float(cap), ratio, over, p90, missing, loaded))
'
echo
echo "took $(( $(date +%s) - START )) s"
