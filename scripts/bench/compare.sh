#!/usr/bin/env bash
# Release comparisons (docs/benchmarks/compare.md): `dyno compare run` of a comparison
# file into a fresh store, its verdict table and HTML report. Four studies:
#
#   precision: examples/compare-cometbft/precision.toml (two CometBFT releases until the
#     CPU per transaction is known to 5%) without and with core isolation (the node on
#     NODE_CPUS, the load on LOAD_CPUS), then its A/A (precision-aa.toml) with isolation;
#     prints the rounds and minutes each took and where it stopped. Needs
#     examples/compare-cometbft/install.sh first.
#   side-by-side: examples/compare-cometbft/precision-side-by-side.toml (the same
#     releases, both running at once) to 5% within 30 minutes, the same file interleaved
#     with a 15-minute budget, then its A/A (precision-side-by-side-aa.toml).
#   power: the statistical power of `dyno compare` on the reference node: one comparison
#     of base, base-again (A/A), +3%, +5% and +10% CPU per transaction (`dyno node
#     --extra-work-per-tx N`), judged by `dyno compare power` in disjoint trials.
#   bisect: `dyno compare bisect` of the fixture repository (examples/bisect/
#     make-fixture.sh: 64 commits of a small C server under a paced load) with one 10%
#     culprit, then one 5% culprit; prints for each the culprit found, the revisions
#     tested, the builds, the rounds and the minutes it took (docs/bisect.md).
#
# usage: scripts/bench/compare.sh FILE [ROUNDS]    (default: the file's rounds)
#        scripts/bench/compare.sh precision         env NODE_CPUS (default: the last CPU),
#                                                   LOAD_CPUS (default: the others),
#                                                   MAX_MINUTES (each comparison's budget;
#                                                   default the files' 45)
#        scripts/bench/compare.sh side-by-side          env MAX_MINUTES (default 30 side by side,
#                                                   15 for the interleaved reference)
#        scripts/bench/compare.sh bisect                env CULPRIT (commit index, default 41)
#        scripts/bench/compare.sh power [ROUNDS [TRIAL_ROUNDS]]
#                                                   env N="A,B,C" (hash rounds per tx for
#                                                   +3/5/10%; default 43,71,139: the 10,000
#                                                   TPS calibration), RATE (10000),
#                                                   WARMUP_S (2), MEASURE_S (12)
# env:   DYNO, OUT (scripts/bench/lib.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 FILE [ROUNDS] | $0 precision | $0 side-by-side | $0 bisect | $0 power [ROUNDS [TRIAL_ROUNDS]]"
[ $# -ge 1 ] || usage "$USAGE"
MODE=$1
case "$MODE" in
precision | side-by-side | bisect) [ $# -eq 1 ] || usage "$USAGE" ;;
power)
    [ $# -le 3 ] || usage "$USAGE"
    ROUNDS=${2:-40}
    TRIAL=${3:-10}
    for v in "$ROUNDS" "$TRIAL"; do
        case "$v" in '' | *[!0-9]*) usage "$USAGE (ROUNDS and TRIAL_ROUNDS: whole numbers)" ;; esac
    done
    [ "$ROUNDS" -ge "$TRIAL" ] && [ "$TRIAL" -ge 2 ] || usage "$USAGE (ROUNDS >= TRIAL_ROUNDS >= 2)"
    IFS=, read -r N3 N5 N10 <<<"${N:-43,71,139}"
    for v in "$N3" "$N5" "$N10" "${RATE:=10000}"; do
        case "$v" in '' | *[!0-9]*) usage "$USAGE (N: three whole numbers A,B,C; RATE: a whole number)" ;; esac
    done
    ;;
*)
    [ $# -le 2 ] || usage "$USAGE"
    FILE=$(from_caller "$1")
    [ -r "$FILE" ] || usage "$USAGE (FILE $1: not a readable file)"
    ;;
esac
need_dyno
out_dir

# pinned FILE NODE_CPUS LOAD_CPUS: FILE with every subject on NODE_CPUS and the load on
# LOAD_CPUS.
pinned() {
    awk -v node="$2" -v load="$3" '
        { print }
        /^\[\[subject\]\]$/ { print "cpus = \"" node "\"" }
        /^\[workload\.load\]$/ { print "cpus = \"" load "\"" }
    ' "$1"
}

# study NAME FILE: one comparison into its own store; prints its rounds, minutes and
# where it stopped.
study() {
    local start end
    start=$(date +%s)
    echo "== $1: $(cut -d' ' -f1-3 /proc/loadavg) (load average at the start)" >&2
    "$DYNO" compare run "$2" --fresh --db "$OUT/$1.db" --html "$OUT/$1.html" \
        ${MAX_MINUTES:+--max-minutes "$MAX_MINUTES"} >"$OUT/$1.txt" 2>"$OUT/$1.err" || true
    end=$(date +%s)
    echo "$1: $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
    grep -E '^(precision|noise|regression|improvement|no significant change):' "$OUT/$1.txt" || tail -3 "$OUT/$1.err"
}

# bisected NAME PERCENT: the fixture with one culprit of PERCENT at CULPRIT, bisected
# from c0 to c63 into its own store; prints what it found and what it cost.
bisected() {
    local start end culprit=${CULPRIT:-41}
    examples/bisect/make-fixture.sh "$OUT/$1" --culprit "$culprit:$2" >&2
    start=$(date +%s)
    echo "== $1: $(cut -d' ' -f1-3 /proc/loadavg) (load average at the start)" >&2
    "$DYNO" compare bisect "$OUT/$1/cmp.toml" --good c0 --bad c63 --format json \
        --db "$OUT/$1.db" --build-dir "$OUT/$1/builds" >"$OUT/$1.json" 2>"$OUT/$1.err" || true
    end=$(date +%s)
    echo "$1: $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
    python3 - "$OUT/$1.json" "$(git -C "$OUT/$1/repo" rev-parse "c$culprit")" <<'PY' || tail -3 "$OUT/$1.err"
import json, sys
r = json.load(open(sys.argv[1]))
found = [c["commit"]["hash"] for c in r["culprits"]]
rounds = sum(s["rounds"] for s in r["steps"])
print(f"  culprit {'found' if found == [sys.argv[2]] else 'NOT found: ' + ', '.join(found)}; "
      f"{r['tested']} revisions tested, {len(r['steps'])} steps, {r['builds']} builds, "
      f"{rounds} rounds, {r['minutes']:.1f} min measuring and building")
PY
}

case "$MODE" in
side-by-side)
    # The pair side by side, the same interleaved, then the A/A side by side (#44).
    MAX_MINUTES=${MAX_MINUTES:-30} study side-by-side examples/compare-cometbft/precision-side-by-side.toml
    sed -e 's/^schedule = "side_by_side"/schedule = "interleaved"/' -e '/^cpus = /d' \
        examples/compare-cometbft/precision-side-by-side.toml >"$OUT/interleaved.toml"
    MAX_MINUTES=${MAX_MINUTES:-15} study interleaved "$OUT/interleaved.toml"
    MAX_MINUTES=${MAX_MINUTES:-30} study side-by-side-aa examples/compare-cometbft/precision-side-by-side-aa.toml
    ;;
bisect)
    bisected bisect-10pct 10
    bisected bisect-5pct 5
    ;;
precision)
    CPUS=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
    LAST=${CPUS##*[,-]}
    NODE_CPUS=${NODE_CPUS:-$LAST}
    LOAD_CPUS=${LOAD_CPUS:-$(awk -v last="$NODE_CPUS" 'BEGIN { for (i = 0; i < last; i++) printf "%s%d", (i ? "," : ""), i }')}
    [ -n "$LOAD_CPUS" ] || usage "$USAGE (one CPU only: set NODE_CPUS and LOAD_CPUS)"
    echo "core isolation: nodes on CPU $NODE_CPUS, the load on CPU $LOAD_CPUS" >&2
    # The subjects' and the load's `cwd` are relative to the repository root, where dyno
    # runs: the pinned copies can live in OUT.
    pinned examples/compare-cometbft/precision.toml "$NODE_CPUS" "$LOAD_CPUS" >"$OUT/pinned.toml"
    pinned examples/compare-cometbft/precision-aa.toml "$NODE_CPUS" "$LOAD_CPUS" >"$OUT/pinned-aa.toml"
    study precision examples/compare-cometbft/precision.toml
    study precision-pinned "$OUT/pinned.toml"
    study precision-aa-pinned "$OUT/pinned-aa.toml"
    ;;
power)
    node() {
        echo "[\"$DYNO\", \"node\", \"--workload\", \"{workload}\", \"--rate\", \"{rate}\", \"--no-save\", \"--no-ledger-check\", \"--extra-work-per-tx\", \"$2\", \"--name\", \"power-$1\", \"--node-log\", \"$OUT/node-$1.jsonl\"]"
    }
    {
        echo "rounds = $ROUNDS"
        echo "seed = 1"
        echo "grace_s = 10"
        echo "primary = [\"cpu_s_per_tx\"]"
        for s in base:0 base-again:0 plus3:"$N3" plus5:"$N5" plus10:"$N10"; do
            name=${s%%:*}
            n=${s#*:}
            echo
            echo "[[subject]]"
            echo "name = \"$name\""
            echo "command = $(node "$name" "$n")"
            echo "metrics = { jsonl = \"$OUT/node-$name.jsonl\" }"
            # The window must not hold the node's start-up (it signs its transactions
            # on every CPU before its tiles run).
            echo "ready = { log = '^running [0-9]+ tiles', timeout_s = 120 }"
        done
        echo
        echo "[[workload]]"
        echo "name = \"value\""
        echo "rate = $RATE"
        echo "warmup_s = ${WARMUP_S:-2}"
        echo "measure_s = ${MEASURE_S:-12}"
    } >"$OUT/power.toml"
    study power "$OUT/power.toml"
    "$DYNO" compare power 1 --trial-rounds "$TRIAL" --db "$OUT/power.db"
    ;;
*)
    "$DYNO" compare run "$FILE" ${2:+--rounds "$2"} --db "$OUT/results.db" --html "$OUT/report.html"
    ;;
esac
