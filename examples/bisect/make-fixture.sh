#!/bin/sh
# The fixture of `dyno compare bisect`'s tests and benchmark: a git repository of a small
# C server (node.c) whose CPU per unit of work is set per commit, the paced load that
# drives it, and the comparison file that bisects it.
#
#   make-fixture.sh DIR [--commits N] [--culprit INDEX:PERCENT]... [--broken INDEX]...
#                       [--work N] [--rate R] [--measure-s S]
#
# Commit i (tags c0 .. c<N-1>) costs WORK multiply-adds per unit, times (1 + PERCENT/100)
# for every culprit at or before i; a broken commit does not compile. DIR gets repo/
# (the repository), load (the load generator, built once) and cmp.toml (good = c0, bad =
# c<N-1>); run `dyno compare bisect DIR/cmp.toml --good c0 --bad c<N-1>`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
shift
commits=64 work=2000000 rate=100 measure_s=2 culprits="" broken=""
while [ $# -gt 0 ]; do
    case $1 in
        --commits) commits=$2; shift 2 ;;
        --culprit) culprits="$culprits $2"; shift 2 ;;
        --broken) broken="$broken $2"; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --measure-s) measure_s=$2; shift 2 ;;
        *) echo "make-fixture.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$dir/repo"
dir=$(cd "$dir" && pwd)
cc -O2 -o "$dir/load" "$here/load.c"
cd "$dir/repo"
git init -q .
git config user.email fixture@example.invalid
git config user.name "Fixture Author"
cp "$here/node.c" node.c
i=0
while [ "$i" -lt "$commits" ]; do
    # WORK of commit i: the base times every culprit's factor up to i (integer math).
    w=$work
    for c in $culprits; do
        at=${c%%:*} pct=${c#*:}
        if [ "$at" -le "$i" ]; then w=$((w * (100 + pct) / 100)); fi
    done
    {
        echo "#define COMMIT $i"
        echo "#define WORK ${w}L"
        for b in $broken; do
            if [ "$b" -eq "$i" ]; then echo "#error commit $i does not build"; fi
        done
    } > version.h
    git add -A
    git commit -qm "node: commit $i (work $w per unit)"
    git tag "c$i"
    i=$((i + 1))
done
cat > "$dir/cmp.toml" <<TOML
# Bisect fixture: one commit or more of $commits raise the CPU per unit of work.
primary = ["cpu_s_per_unit"]
grace_s = 2

[[subject]]
name = "node"
git = { repo = "$dir/repo", rev = "c$((commits - 1))", build = ["cc", "-O2", "-o", "{out}", "node.c"] }
args = ["$dir/node.sock", "$dir/node.jsonl"]
ready = { log = "listening" }
addresses = { sock = "$dir/node.sock" }
metrics = { jsonl = "$dir/node.jsonl" }

[[workload]]
name = "paced"
rate = $rate
warmup_s = 1
measure_s = $measure_s
work = { metric = "jsonl:units", unit = "unit" }
[workload.load]
command = ["$dir/load", "{sock}", "{rate}", "{load_s}"]
TOML
