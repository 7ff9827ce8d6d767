# Shared by the scripts in scripts/bench/ (sourced, not run): the repository root as the
# working directory, the dyno binary they measure, and a folder for what a run leaves.
#
# env: DYNO (default target/release/dyno; a relative path is taken from where the script
#      was started), OUT (a folder for a run's files; default a new temporary one).

# usage TEXT: prints the usage line and exits 2 (the exit code of a usage error).
usage() {
    echo "usage: $1" >&2
    exit 2
}

# The binary and OUT as absolute paths, so that they survive the cd below.
DYNO=${DYNO:-target/release/dyno}
case "$DYNO" in
/*) ;;
*/*) DYNO="$PWD/$DYNO" ;;
*) DYNO=$(command -v "$DYNO" || echo "$DYNO") ;;
esac
case "${OUT:-/}" in
/*) ;;
*) OUT="$PWD/$OUT" ;;
esac
START=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# from_caller PATH: PATH as given on the command line (relative to where the script was
# started), made absolute; the scripts' own defaults are relative to the repository root.
from_caller() {
    case "$1" in
    /*) echo "$1" ;;
    *) echo "$START/$1" ;;
    esac
}

# need_dyno: refuses a missing binary (dyno itself refuses to measure with a debug build
# unless DYNO_ALLOW_DEBUG_BUILD is set).
need_dyno() {
    [ -x "$DYNO" ] || {
        echo "$0: $DYNO: not built (cargo build --release -p dyno, or set DYNO)" >&2
        exit 2
    }
}

# out_dir: creates OUT (a new temporary folder unless set) and says where it is.
out_dir() {
    OUT=${OUT:-$(mktemp -d -t "dyno-bench-$(basename "$0" .sh).XXXXXX")}
    mkdir -p "$OUT"
    echo "$(basename "$0"): $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); files in $OUT" >&2
}
