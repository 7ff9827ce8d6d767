#!/bin/sh
# The binary's non-test lines (issue 36: the binary parses, calls and renders; goal under
# 4,000). For each .rs under crates/dyno/src except *tests.rs: the lines before its first
# line starting `#[cfg(test)]` (all of them when it has none). Prints one line per file,
# largest first, then the total.
#   scripts/binary_lines.sh            # from the repository root
#   scripts/binary_lines.sh --total    # the total alone
set -eu
cd "$(dirname "$0")/.."
counts=$(find crates/dyno/src -name '*.rs' ! -name '*tests.rs' | sort | while read -r f; do
    printf '%s %s\n' "$(awk '/^#\[cfg\(test\)\]/ { exit } { n++ } END { print n + 0 }' "$f")" "$f"
done | sort -rn)
total=$(printf '%s\n' "$counts" | awk '{ s += $1 } END { print s + 0 }')
if [ "${1:-}" = "--total" ]; then
    echo "$total"
else
    printf '%s\n' "$counts"
    echo "$total total"
fi
