#!/usr/bin/env bash
# The libraries' own benchmarks, each one `cargo bench` target (figures in
# docs/benchmarks/: store.md, pipeline.md, node.md, machine.md): no dyno binary, the
# bench profile builds what it measures. Arguments after NAME go to the bench.
#
# usage: scripts/bench/crates.sh NAME [ARGS...]
#   stats        50 subjects x 20 samples x 5 metrics, 10,000-resample bootstrap CIs
#   store        1,000,000 samples inserted and exported (ARGS: a sample count)
#   fleet        SQLite beside a throwaway PostgreSQL server: stream, push, fleet query
#   link         dyno-tango's link against rtrb; the stem loop with and without accounting
#   shaping      dyno-net's shaping error on a 50 ms link
#   ingress      dyno-net's QUIC ingress, stream frames against datagrams
#   harness      dyno-hw's harness against a bare loop (BLAKE2-256)
#   replay       dyno-txn's replay of a 20k-transfer block over 1,024 accounts, sequential
#                and parallel at 1, 2, 4, ... threads (criterion; ARGS: criterion's)
#   racing-sim   dyno-tune's racing against exhaustive rounds on synthetic variants
#                (ARGS: seeds max_rounds min_effect [common] [rule min_rounds])
set -euo pipefail
cd "$(dirname "$0")/../.."
USAGE="$0 stats|store|fleet|link|shaping|ingress|harness|replay|racing-sim [ARGS...]"
[ $# -ge 1 ] || { echo "usage: $USAGE" >&2; exit 2; }
command -v cargo >/dev/null || { echo "$0: cargo not found (these are cargo bench targets)" >&2; exit 2; }
NAME=$1
shift
case "$NAME" in
stats) exec cargo bench -p dyno-stats -- "$@" ;;
store) exec cargo bench -p dyno-store --bench store -- "$@" ;;
fleet) exec cargo bench -p dyno-store --bench fleet -- "$@" ;;
link) exec cargo bench -p dyno-tango --bench link -- "$@" ;;
shaping) exec cargo bench -p dyno-net --bench shaping -- "$@" ;;
ingress) exec cargo bench -p dyno-net --bench ingress -- "$@" ;;
harness) exec cargo bench -p dyno-hw --bench harness_overhead -- "$@" ;;
replay) exec cargo bench -p dyno-txn --bench replay -- "$@" ;;
racing-sim) exec cargo run --release -p dyno-tune --example racing_sim -- "$@" ;;
*) echo "usage: $USAGE" >&2; exit 2 ;;
esac
