#!/usr/bin/env bash
# One layout of the reference node, measured against its own in-process pipeline, in
# one run (issue #33's honest node bench):
#
#  (a) in-process: `dyno pipeline bench` on the node's forge layout (forge-layout.toml:
#      the tiles a node leader forges with, VERIFY_TILES verify and BANK_TILES bank
#      tiles), benchg inside, flat out, its pre-signed pool sized to the phase
#      (TILE_TPS x verify tiles x (SECONDS + 1)); a pool that ran out before the end is an
#      error (exit 1): benchg would have signed live and (a) would read low;
#  (b) the node's capacity: one validator `dyno node run` fed by a separate `dyno load`
#      over QUIC in steps of SECONDS each, offered 1x, 2x (and 4x while landed still
#      grew by 5%) (a)'s TPS, each step's pool sized to it (rate x seconds); landed per
#      step = the median of its blocks' transactions over the slot (the first and last
#      block of a step left out). Capacity = the most landed in a step, so a node faster
#      than (a) shows; the overload figure is landed / capacity at the step offered
#      closest to twice the capacity (at least 1.5x), written RATIO@OFFEREDx (the node
#      refuses what it cannot take before checking signatures: docs/node.md, "Overload");
#  (c) a leader and a follower (stake 0) on a 20 ms link, `dyno load` offering the
#      leader's capacity from (b): the follower's validation + adoption time per loaded
#      block as a fraction of the slot (p50, p90), the loaded blocks it never adopted, and
#      the leader's landed TPS per slot in this phase. On a machine of fewer than 8 CPUs
#      the leader and the follower would otherwise share every core (the leader at its
#      capacity from (b) takes them all, and no follower keeps up with a leader that has
#      its cores too): there each gets half of the CPUs, as on machines of their own
#      (`taskset`, PAIR_CPUS); the load runs on the leader's half (clients send to the
#      leader; on a real network the load generator's own cost is on a third machine,
#      so this understates the leader's rate: LOAD_CPUS moves it), and the leader,
#      offered more than its half takes, lands its sustained rate on its half.
#
# usage: examples/node/bench.sh [SECONDS]        (default 5 s per phase and per step)
# env:   DYNO (default target/release/dyno), SLOT_MS (default 400), OUT (a directory to
#        keep every file; default a temporary one), VERIFY_TILES (the nodes'
#        verify_tiles and (a)'s verify tiles; default 1), BANK_TILES (the nodes'
#        bank_tiles and (a)'s bank tiles; default 1), REPLAY_THREADS (the nodes'
#        replay_threads; default: the node's own, one per core), VERIFY_BATCH (default
#        64), TILE_TPS ((a)'s pool per verify tile per second; default 60000),
#        PAIR_CPUS ((c)'s CPUs as LEADER/FOLLOWER taskset lists, e.g. 0-7/8-15, or
#        "none" to pin nothing; default: halves of the CPUs below 8 CPUs, else none),
#        LOAD_CPUS ((c)'s load: a taskset list, or "any"; default the leader's CPUs).
#
# Prints one line of figures; the last line of stdout, and $OUT/row.txt, is the row
# examples/node/layouts.sh tabulates. Needs only the dyno binary, these example files and
# python3's standard library. Every process it starts is stopped when it exits, even on
# error or Ctrl-C.
set -euo pipefail

SECONDS_PER_PHASE=${1:-5}
DYNO=${DYNO:-target/release/dyno}
SLOT_MS=${SLOT_MS:-400}
VERIFY_TILES=${VERIFY_TILES:-1}
BANK_TILES=${BANK_TILES:-1}
VERIFY_BATCH=${VERIFY_BATCH:-64}
TILE_TPS=${TILE_TPS:-60000}
whole() { # NAME VALUE: a positive whole number, or exit 2 naming it
    case "$2" in
    '' | *[!0-9]* | 0) echo "$0: $1=$2: must be a positive whole number" >&2; exit 2 ;;
    esac
}
whole SECONDS "$SECONDS_PER_PHASE"; whole SLOT_MS "$SLOT_MS"; whole VERIFY_TILES "$VERIFY_TILES"
whole BANK_TILES "$BANK_TILES"; whole VERIFY_BATCH "$VERIFY_BATCH"; whole TILE_TPS "$TILE_TPS"
[ -z "${REPLAY_THREADS:-}" ] || whole REPLAY_THREADS "$REPLAY_THREADS"
NCPU=$(nproc)
if [ -z "${PAIR_CPUS:-}" ]; then
    if [ "$NCPU" -ge 2 ] && [ "$NCPU" -lt 8 ]; then
        H=$(( NCPU / 2 ))
        PAIR_CPUS="0-$(( H - 1 ))/$H-$(( NCPU - 1 ))"
    else
        PAIR_CPUS=none
    fi
fi
case "$PAIR_CPUS" in
none) LEADER_CPUS=; FOLLOWER_CPUS= ;;
*/*) LEADER_CPUS=${PAIR_CPUS%%/*}; FOLLOWER_CPUS=${PAIR_CPUS#*/}
     for c in "$LEADER_CPUS" "$FOLLOWER_CPUS"; do
         taskset -c "$c" true 2>/dev/null || { echo "$0: PAIR_CPUS=$PAIR_CPUS: '$c' is not a CPU list of this machine (taskset -c)" >&2; exit 2; }
     done ;;
*) echo "$0: PAIR_CPUS=$PAIR_CPUS: want LEADER/FOLLOWER CPU lists (e.g. 0/1) or none" >&2; exit 2 ;;
esac
LOAD_CPUS=${LOAD_CPUS:-$LEADER_CPUS}
[ "$LOAD_CPUS" != any ] || LOAD_CPUS=
[ -z "$LOAD_CPUS" ] || taskset -c "$LOAD_CPUS" true 2>/dev/null \
    || { echo "$0: LOAD_CPUS=$LOAD_CPUS: not a CPU list of this machine (taskset -c)" >&2; exit 2; }
[ -x "$DYNO" ] || { echo "$0: DYNO=$DYNO: not an executable (build: cargo build --release -p dyno)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d -t dyno-node-bench.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, getattr(socket, sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}

wait_ready() { # METRICS_ADDR
    python3 - "$1" <<'EOF'
import sys, time, urllib.request
for _ in range(600):
    try:
        if urllib.request.urlopen("http://%s/ready" % sys.argv[1], timeout=1).status == 200:
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.1)
sys.exit("node at %s never became ready" % sys.argv[1])
EOF
}

# node_config FILE ID PEER_PORT INGRESS_PORT METRICS_PORT [PEER_ID PEER_PORT]
node_config() {
    {
        echo "id = \"$2\""
        echo "genesis = \"genesis.toml\""
        echo "peer_listen = \"127.0.0.1:$3\""
        echo "ingress_listen = \"127.0.0.1:$4\""
        echo "metrics_listen = \"127.0.0.1:$5\""
        echo "node_log = \"$2.jsonl\""
        echo "mempool_capacity = 400000"
        echo "verify_tiles = $VERIFY_TILES"
        echo "verify_batch = $VERIFY_BATCH"
        echo "bank_tiles = $BANK_TILES"
        if [ -n "${REPLAY_THREADS:-}" ]; then echo "replay_threads = $REPLAY_THREADS"; fi
        if [ $# -ge 7 ]; then
            printf '\n[[peers]]\nid = "%s"\naddr = "localhost:%s"\nlatency_ms = 20\n' "$6" "$7"
        fi
    } >"$1"
}

on_cpus() { # CPUS CMD...: CMD on CPUS (a taskset list; empty: anywhere)
    local cpus=$1
    shift
    if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi
}

start_node() { # CONFIG STDOUT [CPUS]
    # Not through on_cpus: `$!` must be the node itself (taskset execs it), which is what
    # stop_node and cleanup signal.
    if [ -n "${3:-}" ]; then
        taskset -c "$3" "$DYNO" node run --config "$1" --quiet --format json >"$2" 2>"$2.err" &
    else
        "$DYNO" node run --config "$1" --quiet --format json >"$2" 2>"$2.err" &
    fi
    PIDS+=($!)
    LAST_PID=$!
}

stop_node() { # PID
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# load GENESIS TARGET RATE JSON [CPUS]: dyno load at RATE for the phase, its pool rate x
# seconds; fails (exit 1) when the pool ran out or a send failed.
load() {
    on_cpus "${5:-}" "$DYNO" load --genesis "$1" --target "$2" --rate "$3" --duration "$SECONDS_PER_PHASE" \
        --format json >"$4" 2>"$4.err"
    python3 - "$4" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r["pool_exhausted"]:
    sys.exit("%s: the load's pool of %d ran out before the phase's end" % (sys.argv[1], r["signed"]))
if r["errors"]:
    sys.exit("%s: %d send errors (first: %s)" % (sys.argv[1], r["errors"], r["first_error"]))
EOF
}

now_ns() { python3 -c 'import time; print(time.time_ns())'; }

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); layout: $VERIFY_TILES verify, $BANK_TILES bank tiles; files in $OUT" >&2

# (a) in-process benchg on the node's forge layout, as many verify and bank tiles as the
# node has, the node's batch size (like with like), its pool sized to the phase.
# The pool covers the window and the start before it (the tiles start, benchg fills the
# links) with a second to spare.
PRESIGN=$(( TILE_TPS * VERIFY_TILES * (SECONDS_PER_PHASE + 1) ))
LAYOUT="$OUT/forge-layout.toml"
sed -e "s/^verify_tile_count = .*/verify_tile_count = $VERIFY_TILES/" \
    -e "s/^bank_tile_count = .*/bank_tile_count = $BANK_TILES/" \
    -e "s/^presign = .*/presign = $PRESIGN/" \
    -e "s/^batch = .*/batch = $(( VERIFY_BATCH > 256 ? 256 : VERIFY_BATCH ))/" \
    "$HERE/forge-layout.toml" >"$LAYOUT"
"$DYNO" pipeline bench --config "$LAYOUT" --duration "$SECONDS_PER_PHASE" \
    --no-save --format json >"$OUT/inprocess.json" 2>"$OUT/inprocess.err"
IN_TPS=$(python3 - "$OUT/inprocess.json" "$PRESIGN" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("pool_exhausted_after_s") is not None:
    sys.exit("(a): the pre-signed pool of %s ran out after %.1f s (benchg then signs live and "
             "(a) reads low); raise TILE_TPS" % (sys.argv[2], r["pool_exhausted_after_s"]))
print(r["tps"]["median"])
EOF
)
echo "(a) in-process: median $IN_TPS TPS (pool $PRESIGN, not exhausted)" >&2

# (b) the node's capacity, stepping the offered rate up from (a)'s.
mkdir -p "$OUT/solo"
"$DYNO" node genesis --out "$OUT/solo/genesis.toml" --validators solo=1 --slot-ms "$SLOT_MS" \
    --start-in 1 --max-block-txs 1000000 --force >/dev/null
SP=$(free_port SOCK_STREAM); SI=$(free_port SOCK_DGRAM); SM=$(free_port SOCK_STREAM)
node_config "$OUT/solo/solo.toml" solo "$SP" "$SI" "$SM"
start_node "$OUT/solo/solo.toml" "$OUT/solo/summary.json"
SOLO=$LAST_PID
wait_ready "127.0.0.1:$SM"
: >"$OUT/solo/steps.txt"
PREV=0
for MULT in 1 2 4; do
    RATE=$(python3 -c 'import sys; print(max(1, int(float(sys.argv[1]) * int(sys.argv[2]))))' "$IN_TPS" "$MULT")
    # The load signs its pool before it starts sending: the window starts after that.
    load "$OUT/solo/genesis.toml" "127.0.0.1:$SI" "$RATE" "$OUT/solo/load-$MULT.json" &
    LOADER=$!
    PIDS+=($LOADER)
    T0=$(python3 - "$OUT/solo/load-$MULT.json.err" <<'EOF'
import os, sys, time
# dyno load prints its first per-second line once sending began.
for _ in range(6000):
    if os.path.exists(sys.argv[1]) and "t=" in open(sys.argv[1]).read():
        break
    time.sleep(0.01)
print(time.time_ns() - 1_000_000_000)
EOF
)
    wait "$LOADER"
    T1=$(now_ns)
    LANDED=$(python3 - "$OUT/solo/solo.jsonl" "$SLOT_MS" "$T0" "$T1" <<'EOF'
import json, sys
slot_ms, t0, t1 = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
blocks = [v for v in map(json.loads, open(sys.argv[1]))
          if v.get("kind") == "event" and v["event"] == "forged" and t0 <= v["ts_ns"] <= t1]
blocks.sort(key=lambda v: v["ts_ns"])
per_slot = sorted(v["txs"] * 1000.0 / slot_ms for v in blocks[1:-1])
print(per_slot[len(per_slot) // 2] if per_slot else 0)
EOF
)
    echo "$MULT $RATE $LANDED" >>"$OUT/solo/steps.txt"
    echo "(b) offered $RATE/s (${MULT}x a): landed $LANDED TPS per slot" >&2
    # Stop stepping once landed stopped growing (by 5%).
    if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 1.05 * float(sys.argv[2]) else 1)' "$LANDED" "$PREV"; then
        break
    fi
    PREV=$LANDED
done
sleep $(( (SLOT_MS * 3) / 1000 + 1 ))
stop_node "$SOLO"
read -r CAPACITY OVERLOAD <<<"$(python3 - "$OUT/solo/steps.txt" <<'EOF'
import sys
steps = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
cap = max(s[2] for s in steps)
# The overload figure: the step offered closest to twice the capacity (at least 1.5x),
# as landed / capacity "@" offered / capacity.
over = sorted((abs(s[1] / cap - 2), s) for s in steps if cap > 0 and s[1] >= 1.5 * cap)
print(cap, "%.3f@%.2fx" % (over[0][1][2] / cap, over[0][1][1] / cap) if over else "n/a")
EOF
)"

# (c) leader -> follower at the leader's capacity from (b).
RATE=$(python3 -c 'import sys; print(max(1, int(float(sys.argv[1]))))' "$CAPACITY")
mkdir -p "$OUT/pair"
"$DYNO" node genesis --out "$OUT/pair/genesis.toml" --validators n1=1,n2=0 --slot-ms "$SLOT_MS" \
    --start-in 1 --max-block-txs 1000000 --force >/dev/null
P1=$(free_port SOCK_STREAM); I1=$(free_port SOCK_DGRAM); M1=$(free_port SOCK_STREAM)
P2=$(free_port SOCK_STREAM); I2=$(free_port SOCK_DGRAM); M2=$(free_port SOCK_STREAM)
node_config "$OUT/pair/n1.toml" n1 "$P1" "$I1" "$M1" n2 "$P2"
node_config "$OUT/pair/n2.toml" n2 "$P2" "$I2" "$M2" n1 "$P1"
start_node "$OUT/pair/n1.toml" "$OUT/pair/n1.json" "$LEADER_CPUS"; N1=$LAST_PID
start_node "$OUT/pair/n2.toml" "$OUT/pair/n2.json" "$FOLLOWER_CPUS"; N2=$LAST_PID
wait_ready "127.0.0.1:$M1"; wait_ready "127.0.0.1:$M2"
load "$OUT/pair/genesis.toml" "127.0.0.1:$I1" "$RATE" "$OUT/pair/load.json" "$LOAD_CPUS"
sleep $(( (SLOT_MS * 5) / 1000 + 2 ))   # let the last blocks reach the follower
stop_node "$N1"; stop_node "$N2"
FOLLOWER=$(python3 "$HERE/adoption.py" --row --min-txs $(( RATE * SLOT_MS / 10000 )) "$SLOT_MS" \
    "$OUT/pair/n1.jsonl" "$OUT/pair/n2.jsonl")
read -r F_P50 F_P90 F_LOADED F_MISSING F_REJECTED <<<"$FOLLOWER"
# The leader's landed TPS per slot in (c): the median of its loaded blocks.
PAIR_TPS=$(python3 - "$OUT/pair/n1.jsonl" "$SLOT_MS" "$(( RATE * SLOT_MS / 10000 ))" <<'EOF'
import json, sys
slot_ms, min_txs = float(sys.argv[2]), int(sys.argv[3])
txs = sorted(v["txs"] for v in map(json.loads, open(sys.argv[1]))
             if v.get("kind") == "event" and v["event"] == "forged" and v["txs"] > min_txs)
print(round(txs[len(txs) // 2] * 1000.0 / slot_ms) if txs else 0)
EOF
)

RATIO=$(python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print("%.3f" % (b / a if a else 0))' "$IN_TPS" "$CAPACITY")
echo "(b) capacity $CAPACITY TPS per slot = $RATIO x (a); landed / capacity at about twice the capacity offered: $OVERLOAD" >&2
PINNED=${LEADER_CPUS:+"leader on CPUs $LEADER_CPUS, follower on $FOLLOWER_CPUS, load on ${LOAD_CPUS:-any}; "}
echo "(c) ${PINNED}offered $RATE/s, the leader landed $PAIR_TPS TPS per slot; follower: validate+adopt / slot p50 $F_P50 p90 $F_P90 over $F_LOADED loaded blocks; $F_MISSING never adopted, $F_REJECTED rejected" >&2
# The row: verify tiles, bank tiles, (a), (b) capacity, ratio, overload, follower p90,
# loaded blocks, missing.
ROW="$VERIFY_TILES $BANK_TILES $IN_TPS $CAPACITY $RATIO $OVERLOAD $F_P90 $F_LOADED $F_MISSING"
echo "$ROW" >"$OUT/row.txt"
echo "$ROW"
