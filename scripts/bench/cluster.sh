#!/usr/bin/env bash
# Block propagation over a cluster of reference nodes (docs/benchmarks/cluster.md):
# `dyno cluster run` on a copy of a cluster file with its window, node count and forging
# set from the command line, then dyno's report (adoption on 50/80/100% of the nodes,
# the forging loop, slot-start lateness, CPU and RSS per node).
#
# usage: scripts/bench/cluster.sh FILE [DURATION_S [WARMUP_S]]   (default 10 s after 2 s)
# env:   DYNO, OUT (scripts/bench/lib.sh); NODES (nodes.count and nodes.producers: every
#        node a producer), FORGE (node.forge: tiles|sequential), FORGE_AT
#        (node.forge_at: whole_slot|slot_start), BASE_PORT (cluster.base_port; ports
#        from 32768 up are the kernel's ephemeral range)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 FILE [DURATION_S [WARMUP_S]]"
[ $# -ge 1 ] && [ $# -le 3 ] || usage "$USAGE"
FILE=$(from_caller "$1")
[ -r "$FILE" ] || usage "$USAGE (FILE $1: not a readable file)"
need_dyno
out_dir
# The copy: the keys set by table, each replaced where the file has it, else added at
# the top of its table (a table the file lacks is appended).
python3 - "$FILE" "$OUT/cluster.toml" \
    "cluster.duration_s=${2:-10}" "cluster.warmup_s=${3:-2}" \
    ${NODES:+"nodes.count=$NODES" "nodes.producers=$NODES"} \
    ${FORGE:+"node.forge=\"$FORGE\""} ${FORGE_AT:+"node.forge_at=\"$FORGE_AT\""} \
    ${BASE_PORT:+"cluster.base_port=$BASE_PORT"} <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
for spec in sys.argv[3:]:
    path, value = spec.split("=", 1)
    table, key = path.split(".")
    header = next((i for i, l in enumerate(lines) if l.strip() == f"[{table}]"), None)
    if header is None:
        lines += ["", f"[{table}]", f"{key} = {value}"]
        continue
    end = next((i for i in range(header + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    at = next((i for i in range(header + 1, end) if re.match(rf"{key}\s*=", lines[i])), None)
    if at is None:
        lines.insert(header + 1, f"{key} = {value}")
    else:
        lines[at] = f"{key} = {value}"
open(sys.argv[2], "w").write("\n".join(lines))
EOF
"$DYNO" cluster run "$OUT/cluster.toml" --dir "$OUT/run" --db "$OUT/results.db" \
    --html "$OUT/report.html"
