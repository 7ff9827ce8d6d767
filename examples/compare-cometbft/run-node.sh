#!/bin/sh
# Starts one CometBFT release with the built-in kvstore application on a fresh copy of
# its pristine home, so every execution of the comparison starts from the same empty
# chain (a node that kept its blocks would replay them and grow from run to run).
#   run-node.sh v0.38.17
# Two copies at once (side by side, precision-side-by-side.toml) each need their own
# home and ports; dyno fills these from `{dir}` and `{port:NAME}` per execution:
#   NODE_HOME  the home to use (default: a directory per release under $TMPDIR)
#   RPC_PORT, P2P_PORT, PROMETHEUS_PORT  (defaults: the home's 26657, 26656, 26660)
set -eu
v=${1:?usage: run-node.sh VERSION}
DIR=${DYNO_COMETBFT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dyno/cometbft}
bin="$DIR/$v/cometbft"
if [ ! -x "$bin" ]; then
    echo "run-node.sh: $bin is missing: run examples/compare-cometbft/install.sh" >&2
    exit 2
fi
work=${TMPDIR:-/tmp}/dyno-cometbft-$(id -u)
home=${NODE_HOME:-$work/$v}
rm -rf "$home"
mkdir -p "$(dirname "$home")"
cp -R "$DIR/$v/home" "$home"
if [ -n "${PROMETHEUS_PORT:-}" ]; then
    sed -i "s#^prometheus_listen_addr = .*#prometheus_listen_addr = \"127.0.0.1:$PROMETHEUS_PORT\"#" \
        "$home/config/config.toml"
fi
# exec: the node itself receives dyno's SIGINT and exits cleanly.
exec "$bin" start --home "$home" --proxy_app kvstore \
    --rpc.laddr "tcp://127.0.0.1:${RPC_PORT:-26657}" \
    --p2p.laddr "tcp://127.0.0.1:${P2P_PORT:-26656}"
