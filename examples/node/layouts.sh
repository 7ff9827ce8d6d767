#!/usr/bin/env bash
# Issue #25's per-layout table: for 1, 2, ... N verify tiles, examples/node/bench.sh's
# in-process pipeline and node-over-QUIC TPS on the same layout (VERIFY_TILES=n on both
# sides), their ratio, and each layout's efficiency per verify tile against one thread's
# Ed25519 verify rate from `dyno machine` measured in the same run.
#
# usage: examples/node/layouts.sh [MAX_TILES] [SECONDS]   (default: nproc - 3, at least 2;
#        10 s per phase). env: DYNO (default target/release/dyno), and bench.sh's.
# Build first: cargo build --release -p dyno.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DYNO=${DYNO:-target/release/dyno}
MAX=${1:-$(( $(nproc) > 5 ? $(nproc) - 3 : 2 ))}
SECS=${2:-10}

# One thread's verifications per second (the median of 3 repetitions), one by one or in
# batches as the layouts verify (bench.sh's VERIFY_BATCH, default 64).
export VERIFY_BATCH=${VERIFY_BATCH:-64}
case "$VERIFY_BATCH" in
''|*[!0-9]*|0) echo "$0: VERIFY_BATCH=$VERIFY_BATCH: must be a whole number of signatures, 1 to 1024" >&2; exit 2 ;;
esac
ROOT=$(mktemp -d -t dyno-layouts.XXXXXX)
if [ "$VERIFY_BATCH" -gt 1 ]; then
    METRIC=Ed25519BatchVerify; ONLY=Ed25519-BatchVerify
else
    METRIC=Ed25519Verify; ONLY=Ed25519-Verify
fi
"$DYNO" machine --only "$ONLY" --repeat 3 --no-save --allow-fail --format json \
    >"$ROOT/machine.json" 2>"$ROOT/machine.err"
ONE=$(python3 - "$ROOT/machine.json" "$METRIC" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
scores = [r["score"] for r in doc["results"] if r["metric"] == sys.argv[2]]
if not scores:
    sys.exit("no %s result in dyno machine's JSON" % sys.argv[2])
print(scores[0])
PY
)
echo "machine: $(nproc) CPUs; one thread's $METRIC rate: $ONE /s (dyno machine); batches of $VERIFY_BATCH; files in $ROOT"
ROWS=()
for n in $(seq 1 "$MAX"); do
    OUT="$ROOT/tiles-$n" VERIFY_TILES=$n DYNO=$DYNO "$HERE/bench.sh" "$SECS" >"$ROOT/tiles-$n.txt" 2>&1 \
        || { echo "bench.sh failed for $n tiles: see $ROOT/tiles-$n.txt"; exit 1; }
    ROWS+=("$n $(cat "$ROOT/tiles-$n/tps.txt")")
done
echo
printf '%s\n' "${ROWS[@]}" | python3 -c '
import sys
one = float(sys.argv[1])
print("| verify tiles | in-process TPS | node over QUIC TPS | node / in-process | in-process per tile / one thread | node per tile / one thread |")
print("|---|---|---|---|---|---|")
for line in sys.stdin:
    n, a, b, _ = line.split()
    n, a, b = int(n), float(a), float(b)
    print("| %d | %.0f | %.0f | %.3f | %.2f | %.2f |" % (n, a, b, b / a if a else 0, a / n / one, b / n / one))
' "$ONE"
