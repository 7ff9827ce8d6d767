#!/bin/sh
# Installs the two pinned CometBFT releases the example compares, each into a directory
# of its own, and initialises one pristine single-validator home per release (the
# built-in kvstore application needs nothing else). Idempotent: what exists is kept.
#
#   examples/compare-cometbft/install.sh        # needs Go (go install fetches modules)
#
# Building costs about 1.5 minutes of two cores per release; it runs at nice 19 so other
# work on the machine keeps going. Set DYNO_COMETBFT_DIR to install elsewhere.
set -eu
DIR=${DYNO_COMETBFT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dyno/cometbft}
VERSIONS="v0.38.17 v1.0.1"
if ! command -v go >/dev/null 2>&1; then
    echo "install.sh: Go is not installed; see https://go.dev/doc/install" >&2
    exit 2
fi
for v in $VERSIONS; do
    bin="$DIR/$v/cometbft"
    if [ ! -x "$bin" ]; then
        echo "building cometbft $v into $DIR/$v" >&2
        start=$(date +%s)
        GOBIN="$DIR/$v" nice -n 19 go install "github.com/cometbft/cometbft/cmd/cometbft@$v"
        echo "built cometbft $v in $(( $(date +%s) - start )) s" >&2
    fi
    home="$DIR/$v/home"
    if [ ! -f "$home/config/genesis.json" ]; then
        "$bin" init --home "$home" >/dev/null 2>&1
        # Metrics on, peer listener on loopback only (RPC is on loopback by default).
        cfg="$home/config/config.toml"
        sed -i \
            -e 's/^prometheus = false/prometheus = true/' \
            -e 's#^prometheus_listen_addr = .*#prometheus_listen_addr = "127.0.0.1:26660"#' \
            -e 's#^laddr = "tcp://0.0.0.0:26656"#laddr = "tcp://127.0.0.1:26656"#' \
            "$cfg"
        grep -q '^prometheus = true' "$cfg"
        # One chain id for both releases: metrics carry it as a label, and a metric of
        # one release must have the same name as the other's to be compared.
        sed -i 's/"chain_id": "[^"]*"/"chain_id": "dyno-bench"/' "$home/config/genesis.json"
        grep -q '"chain_id": "dyno-bench"' "$home/config/genesis.json"
    fi
    echo "$v: $("$bin" version) at $bin" >&2
done
