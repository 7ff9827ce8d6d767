#!/bin/sh
# Starts one CometBFT release with the built-in kvstore application on a fresh copy of
# its pristine home, so every execution of the comparison starts from the same empty
# chain (a node that kept its blocks would replay them and grow from run to run).
#   run-node.sh v0.38.17
set -eu
v=${1:?usage: run-node.sh VERSION}
DIR=${DYNO_COMETBFT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dyno/cometbft}
bin="$DIR/$v/cometbft"
if [ ! -x "$bin" ]; then
    echo "run-node.sh: $bin is missing: run examples/compare-cometbft/install.sh" >&2
    exit 2
fi
work=${TMPDIR:-/tmp}/dyno-cometbft-$(id -u)
home="$work/$v"
rm -rf "$home"
mkdir -p "$work"
cp -R "$DIR/$v/home" "$home"
# exec: the node itself receives dyno's SIGINT and exits cleanly.
exec "$bin" start --home "$home" --proxy_app kvstore
