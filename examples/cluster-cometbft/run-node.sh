#!/bin/sh
# One CometBFT node of a `dyno cluster` testnet, all on 127.0.0.1.
#
#   run-node.sh RELEASE VALIDATORS {id} {listen} {ingress} {peers} {config}
#
# The first node to start generates every node's home with `cometbft testnet` (under a
# lock, in the run directory, which is the directory of {config}); each node then starts
# with the ports dyno gave it: {listen} for p2p, {ingress} for RPC (where the load and the
# readiness probe go). Its peers are the cluster file's topology ({peers}), mapped from
# dyno's ports to CometBFT node ids; peer exchange is off so the topology stays as given.
# The kvstore application is CometBFT's built-in one. The node writes its log to
# standard output, which dyno keeps as <run dir>/<id>.out and reads with [extract] rules.
set -eu
# CometBFT logs local time; UTC keeps it the same clock as the [extract] time_format reads.
export TZ=UTC
release=$1 validators=$2 id=$3 listen=$4 rpc=$5 peers=$6 config=$7
bin=${DYNO_COMETBFT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dyno/cometbft}/$release/cometbft
[ -x "$bin" ] || { echo "run-node.sh: $bin missing: run examples/compare-cometbft/install.sh" >&2; exit 2; }
run=$(dirname "$config")
net=$run/cometbft
(
    flock 9
    if [ ! -d "$net" ]; then
        "$bin" testnet --v "$validators" --o "$net.tmp" --starting-ip-address 127.0.0.1 >/dev/null
        mv "$net.tmp" "$net"
    fi
) 9>"$run/cometbft.lock"
index=${id#n}
port=${listen##*:}
base=$((port - 3 * index))
# dyno's peer ports -> ID@127.0.0.1:port, the id read from the peer's own home.
persistent=
for p in $(echo "$peers" | tr ',' ' '); do
    pport=${p##*:}
    peer=$(( (pport - base) / 3 ))
    pid=$("$bin" show-node-id --home "$net/node$peer")
    persistent="${persistent:+$persistent,}$pid@127.0.0.1:$pport"
done
exec "$bin" start --home "$net/node$index" --proxy_app=kvstore \
    --p2p.laddr "tcp://$listen" --rpc.laddr "tcp://$rpc" \
    --p2p.persistent_peers "$persistent" --p2p.pex=false
