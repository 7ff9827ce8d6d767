#!/usr/bin/env bash
# What an idle strategy costs: voluntary context switches per second (all threads) and
# CPU of `dyno node` (the single-process node, its load inside) with a bench config at a
# fixed rate, read from /proc over 4 s after 2 s of warm-up; the node is then stopped.
#
# usage: examples/node/wakeups.sh CONFIG RATE     (build first: cargo build --release -p dyno)
# e.g.   examples/node/wakeups.sh crates/dyno-pipeline/workloads/value.toml 1
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 CONFIG RATE" >&2; exit 2; }
CONFIG=$1
RATE=$2
DYNO=${DYNO:-target/release/dyno}
[ -r "$CONFIG" ] || { echo "$0: CONFIG $CONFIG: not a readable file" >&2; exit 2; }
[ -x "$DYNO" ] || { echo "$0: $DYNO: not built (cargo build --release -p dyno)" >&2; exit 2; }
"$DYNO" node --config "$CONFIG" --rate "$RATE" --no-save --name "wakeups-$$" >/dev/null 2>&1 &
P=$!
trap 'kill -TERM $P 2>/dev/null || true; wait $P 2>/dev/null || true' EXIT
sleep 2
switches() { cat /proc/$P/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {s += $2} END {print s + 0}'; }
# utime + stime, in clock ticks of CLK_TCK a second (100 on most kernels, not all).
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' /proc/$P/stat; }
s0=$(switches); c0=$(ticks)
sleep 4
s1=$(switches); c1=$(ticks)
echo "$CONFIG at $RATE/s: $(( (s1 - s0) / 4 )) voluntary switches/s, CPU $(( (c1 - c0) * 100 / (4 * HZ) ))% of a core"
