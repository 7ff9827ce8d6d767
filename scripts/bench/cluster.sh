#!/usr/bin/env bash
# Block propagation over a cluster of reference nodes (docs/benchmarks/cluster.md):
# `dyno cluster run` on a copy of a cluster file with its window, node count and forging
# set from the command line, then dyno's report (adoption on 50/80/100% of the nodes,
# the forging loop, slot-start lateness, CPU and RSS per node).
#
# With --scale, the largest cluster this machine takes (docs/cluster.md, "Scale"): the
# file at each node count of STEPS in turn, each refused if `dyno cluster check` says it
# does not fit (exit 2, with the arithmetic) and judged after its run: complete, every
# block of the window on every node, every node a fault struck back at the tip, forks
# resolved (a block only the minority of a partition adopted, lost when its fork
# resolved, is counted apart: "missing" shows N+Mf, M such blocks). One line per step; it stops at the first step that fails and names the
# largest that passed. Runs from a folder holding only a release `dyno`, the cluster
# files and scripts/bench (no cargo, no registries; python3 reads the JSON).
#
# usage: scripts/bench/cluster.sh FILE [DURATION_S [WARMUP_S]]            (default 10 s after 2 s)
#        scripts/bench/cluster.sh --scale FILE [DURATION_S [WARMUP_S]]    (default: the file's)
# env:   DYNO, OUT (scripts/bench/lib.sh); NODES (nodes.count and nodes.producers: every
#        node a producer), FORGE (node.forge: tiles|sequential), FORGE_AT
#        (node.forge_at: whole_slot|slot_start), BASE_PORT (cluster.base_port; ports
#        from 32768 up are the kernel's ephemeral range), RATE (workload.rate_tps: every
#        transaction reaches every node, so a node's CPU grows with it, not with the
#        cluster: about 0.03% of a core per TPS on the 2-core machine);
#        --scale: STEPS (node counts, ascending; default the file's nodes.count), the
#        producers then the file's nodes.producers or the step's count if smaller.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
USAGE="$0 [--scale] FILE [DURATION_S [WARMUP_S]]"
SCALE=
if [ "${1:-}" = "--scale" ]; then
    SCALE=1
    shift
fi
[ $# -ge 1 ] && [ $# -le 3 ] || usage "$USAGE"
FILE=$(from_caller "$1")
[ -r "$FILE" ] || usage "$USAGE (FILE $1: not a readable file)"
for n in ${2:-} ${3:-} ${STEPS:-} ${RATE:-}; do
    case "$n" in '' | *[!0-9]*) usage "$USAGE (durations, STEPS and RATE are whole numbers: $n)" ;; esac
done
need_dyno
out_dir

# copy SRC DST KEY=VALUE...: SRC with each `table.key` set, replaced where the file has it,
# else added at the top of its table (a table the file lacks is appended). A value
# `min:N` is the file's own value or N, whichever is smaller.
copy() {
    python3 - "$@" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
for spec in sys.argv[3:]:
    path, value = spec.split("=", 1)
    table, key = path.split(".")
    header = next((i for i, l in enumerate(lines) if l.strip() == f"[{table}]"), None)
    if header is None:
        lines += ["", f"[{table}]", f"{key} = {value.removeprefix('min:')}"]
        continue
    end = next((i for i in range(header + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    at = next((i for i in range(header + 1, end) if re.match(rf"{key}\s*=", lines[i])), None)
    if value.startswith("min:"):
        cap = int(value[4:])
        own = int(re.match(rf"{key}\s*=\s*(\d+)", lines[at]).group(1)) if at is not None else cap
        value = str(min(own, cap))
    if at is None:
        lines.insert(header + 1, f"{key} = {value}")
    else:
        lines[at] = f"{key} = {value}"
open(sys.argv[2], "w").write("\n".join(lines))
EOF
}

WINDOW=()
[ -n "${2:-}" ] && WINDOW+=("cluster.duration_s=$2")
[ -n "${3:-}" ] && WINDOW+=("cluster.warmup_s=$3")
COMMON=(${FORGE:+"node.forge=\"$FORGE\""} ${FORGE_AT:+"node.forge_at=\"$FORGE_AT\""}
    ${BASE_PORT:+"cluster.base_port=$BASE_PORT"} ${RATE:+"workload.rate_tps=$RATE"})

if [ -z "$SCALE" ]; then
    copy "$FILE" "$OUT/cluster.toml" \
        "cluster.duration_s=${2:-10}" "cluster.warmup_s=${3:-2}" \
        ${NODES:+"nodes.count=$NODES" "nodes.producers=$NODES"} "${COMMON[@]}"
    exec "$DYNO" cluster run "$OUT/cluster.toml" --dir "$OUT/run" --db "$OUT/results.db" \
        --html "$OUT/report.html"
fi

# --scale: one step after another.
STEPS=${STEPS:-$(sed -n 's/^count *= *\([0-9]*\).*/\1/p' "$FILE" | head -1)}
[ -n "$STEPS" ] || usage "$USAGE (no nodes.count in $FILE and no STEPS)"
printf '%-6s %-6s %-9s %-16s %-7s %-8s %-10s %-8s %-10s %-15s %-7s %s\n' nodes fits startup \
    "100% p50/p99" blocks missing recovered "forks" "CPU/node" "RSS/own" wall verdict
largest=
for n in $STEPS; do
    copy "$FILE" "$OUT/scale-$n.toml" "nodes.count=$n" "nodes.producers=min:$n" \
        "${WINDOW[@]}" "${COMMON[@]}"
    if ! "$DYNO" cluster check "$OUT/scale-$n.toml" >"$OUT/check-$n.txt" 2>&1; then
        printf '%-6s %-6s %s\n' "$n" no "$(grep -m1 'do not fit\|error' "$OUT/check-$n.txt")"
        break
    fi
    start=$(date +%s.%N)
    set +e
    "$DYNO" cluster run "$OUT/scale-$n.toml" --dir "$OUT/run-$n" --db "$OUT/results.db" \
        --format json >"$OUT/step-$n.json" 2>"$OUT/step-$n.err"
    code=$?
    set -e
    wall=$(python3 -c "import sys,time; print(f'{time.time() - float(sys.argv[1]):.0f}')" "$start")
    verdict=$(python3 - "$OUT/step-$n.json" "$code" "$n" "$wall" <<'EOF'
import json, sys
path, code, n, wall = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    r = json.load(open(path))
except (OSError, ValueError):
    print(f"{n:<6} {'yes':<6} run failed (exit {code}): see {path.replace('.json', '.err')}")
    sys.exit()
m = {x["key"]: x for x in r["metrics"]}
full = m["adoption_1.00"]
s = full["summary"] or {}
ms = lambda v: f"{v * 1e3:.0f}" if v is not None else "-"
st = r.get("startup") or {}
faults = r.get("faults") or {}
struck = [x for f in faults.get("faults", []) for x in f.get("nodes_recovered", [])]
back = sum(1 for x in struck if x.get("back_at_tip_s") is not None)
resolved = (faults.get("forks") or {}).get("resolved", True)
res = r.get("resources") or []
cpu = sum(x["cpu_mean_percent"] for x in res) / max(len(res), 1)
rss = sum(x["rss_max_bytes"] for x in res) / max(len(res), 1) / 2**20
own = sum(x.get("rss_anon_max_bytes", 0) for x in res) / max(len(res), 1) / 2**20
# A block missing from some node is expected only when a partition's minority forged it
# and the fork resolved the other way: it was adopted by no more nodes than the side of
# the partition its leader was on. Any other missing block fails the step.
sides = [(f["at_slot"], f["end_slot"] or 1 << 62, set(f["nodes"]))
         for f in faults.get("faults", []) if f["kind"] == "partition"]
def forked(b):
    for start, end, cut in sides:
        if start <= b["slot"] < end + 2:
            side = len(cut) if b["leader"] in cut else r["node_count"] - len(cut)
            if b["adopted_by"] <= side:
                return True
    return False
lost = [b for b in r["per_block"] if b["adoption_s"][-1] is None]
forked_away = sum(1 for b in lost if resolved and forked(b))
missing = len(lost) - forked_away
ok = code == 0 and r["blocks"] > 0 and missing == 0 and back == len(struck) and resolved
print(f"{n:<6} {'yes':<6} {st.get('ready_s', 0):<9.1f} {ms(s.get('p50_s')) + '/' + ms(s.get('p99_s')) + ' ms':<16} "
      f"{r['blocks']:<7} {f'{missing}+{forked_away}f':<8} {f'{back}/{len(struck)}':<10} {'resolved' if resolved else 'open':<8} "
      f"{cpu:<9.3f}% {f'{rss:.1f}/{own:.1f} MiB':<15} {wall + ' s':<7} {'pass' if ok else 'FAIL'}")
EOF
)
    echo "$verdict"
    case "$verdict" in *" pass") largest=$n ;; *) break ;; esac
done
if [ -n "$largest" ]; then
    echo "largest cluster this machine takes: $largest nodes (of the steps tried; $(nproc) CPUs; files in $OUT)"
else
    echo "no step passed ($(nproc) CPUs; files in $OUT)"
fi
