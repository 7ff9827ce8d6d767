#!/usr/bin/env python3
"""Where the noise of `cpu_s_per_tx` comes from, in a stored power study (issue #13).

Reads the store of `power_study.py` through dyno (`dyno results export` and `dyno results
show`; read-only) and prints, per subject and for the A/A and +N% pairs:
- the execution-to-execution spread (coefficient of variation) of the numerator (CPU %,
  mean of the window's 1 s samples) and the denominator (`tps`, mean of the node's
  per-second lines), and of `cpu_s_per_tx` itself;
- the clock-tick quantisation bound of the CPU reading (1 tick over the window);
- the spread of the 1 s CPU samples inside one execution, and what it contributes to
  the execution's mean;
- how alike neighbouring executions are (autocorrelation in run order of each
  execution's CPU against its subject's mean): a slow drift of the machine;
- the correlation of the CPU with the node's own fixed-work stages (PoH ticking) and
  its voluntary context switches;
- the standard deviation of the paired per-round log ratios (what the paired t-test
  sees) of `cpu_s_per_tx`, of it divided by the PoH ticking time (the node's own
  speed proxy), and of `cpu_ref_per_ktx` when the store has the speed reference dyno
  stored up to 52704b2 (`ref_work_s`).

    python3 scripts/power/noise.py [--dyno target/release/dyno] /tmp/quiet/power/results.db
"""

import argparse
import collections
import json
import math
import os
import statistics as st
import subprocess
import sys


def dyno_out(args, *cmd):
    """Standard output of a dyno command on the store (exit 2 with its message if it fails)."""
    p = subprocess.run([args.dyno, *cmd, "--db", args.store], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(f"noise: `dyno {' '.join(cmd)}` exited {p.returncode}: {p.stderr.strip()}", file=sys.stderr)
        sys.exit(2)
    return p.stdout


def load(args):
    """The store's complete compare executions and their samples, read through dyno
    (`dyno results export` for the samples, `dyno results show` for each run's subject,
    round and window), so the store may be SQLite or PostgreSQL at any schema version."""
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in dyno_out(args, "results", "export", "--format", "jsonl").splitlines():
        row = json.loads(line)
        if row["command"] == "compare" and row["value"] is not None:
            samples[row["run_id"]][row["metric"]].append((row["repetition"], row["value"]))
    runs, order = {}, []
    for rid in sorted(samples):
        show = json.loads(dyno_out(args, "results", "show", str(rid), "--format", "json"))
        if show["status"] != "complete":
            continue
        info, s = show["info"], show["info"]["settings"]
        order = s.get("comparison", {}).get("subjects", order)
        m = collections.defaultdict(list)
        for metric, values in samples[rid].items():
            m[metric] = [v for _, v in sorted(values)]
        runs[rid] = {"subject": info["subject"]["name"], "round": s["round"],
                     "started": info["started_at"], "m": m, "measure_s": s["workload"]["measure_s"]}
    return runs, order


def cv(xs):
    return st.stdev(xs) / st.mean(xs)


def corr(x, y):
    mx, my, sx, sy = st.mean(x), st.mean(y), st.pstdev(x), st.pstdev(y)
    if sx == 0 or sy == 0:
        return float("nan")
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / len(x) / sx / sy


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", metavar="STORE", help="the study's results store (a SQLite file or postgres://...)")
    ap.add_argument("--dyno", default="target/release/dyno")
    args = ap.parse_args()
    runs, order = load(args)
    if not runs:
        print(f"noise: no complete executions in {args.store}", file=sys.stderr)
        sys.exit(2)
    ex = []
    for r in runs.values():
        m = r["m"]
        if not m["cpu_percent"] or not m["jsonl:tps"]:
            continue
        cpu, tps = st.mean(m["cpu_percent"]), st.mean(m["jsonl:tps"])
        e = {"subject": r["subject"], "round": r["round"], "started": r["started"],
             "cpu": cpu, "tps": tps, "cpt": cpu / 100 / tps, "secs": m["cpu_percent"],
             "measure_s": r["measure_s"],
             "tick": st.mean(m["jsonl:stage_ticking_s"]) if m["jsonl:stage_ticking_s"] else None,
             "vol": st.mean(m["voluntary_switches_per_s"]) if m["voluntary_switches_per_s"] else None,
             "ref": st.mean(m["ref_work_s"]) if m["ref_work_s"] else None}
        ex.append(e)
    subjects = [s for s in order if any(e["subject"] == s for e in ex)] or \
        list(dict.fromkeys(e["subject"] for e in ex))
    by = {s: {e["round"]: e for e in ex if e["subject"] == s} for s in subjects}
    base = "base" if "base" in by else subjects[0]

    print("per subject, across executions (coefficient of variation):")
    print(f"{'subject':<11} {'n':>3} {'CPU %':>7} {'cv CPU':>7} {'cv tps':>7} {'cv cpu/tx':>9} "
          f"{'1 s cv':>7} {'ref cv':>7} {'r(CPU,tick)':>11} {'r(CPU,vol)':>10}")
    for s in subjects:
        es = list(by[s].values())
        if len(es) < 3:
            continue
        inner = st.median(cv(e["secs"]) for e in es if len(e["secs"]) > 1)
        refs = [e["ref"] for e in es if e["ref"]]
        ticks = [(e["cpu"], e["tick"]) for e in es if e["tick"]]
        vols = [(e["cpu"], e["vol"]) for e in es if e["vol"]]
        print(f"{s:<11} {len(es):>3} {st.mean(e['cpu'] for e in es):>7.2f} "
              f"{cv([e['cpu'] for e in es]):>7.4f} {cv([e['tps'] for e in es]):>7.4f} "
              f"{cv([e['cpt'] for e in es]):>9.4f} {inner:>7.4f} "
              f"{(cv(refs) if len(refs) > 2 else float('nan')):>7.4f} "
              f"{corr(*zip(*ticks)) if len(ticks) > 2 else float('nan'):>11.2f} "
              f"{corr(*zip(*vols)) if len(vols) > 2 else float('nan'):>10.2f}")
    e0 = ex[0]
    # /proc counts CPU time in ticks of CLK_TCK a second (this machine's: the study's, when
    # it ran here; 100 on most kernels, not all).
    hz = os.sysconf("SC_CLK_TCK")
    ticks = e0["cpu"] / 100 * e0["measure_s"] * hz
    print(f"\nclock ticks: ~{ticks:.0f} ticks of {1e3 / hz:.0f} ms per {e0['measure_s']:.0f} s window at "
          f"{e0['cpu']:.0f}% CPU: +-1 tick at each end is +-{100 / ticks:.2f}% at most")
    n_secs = len(e0["secs"])
    inner = st.median(cv(e["secs"]) for e in ex if len(e["secs"]) > 1)
    print(f"1 s samples: cv {inner:.4f} inside an execution -> {inner / math.sqrt(n_secs):.4f} "
          f"on the mean of {n_secs} (if independent)")

    order = sorted(ex, key=lambda e: e["started"])
    means = {s: st.mean(e["cpu"] for e in by[s].values()) for s in subjects}
    res = [e["cpu"] / means[e["subject"]] - 1 for e in order]
    lags = [lag for lag in (1, 2, 3, 5, 10, 25) if lag < len(res) - 2]
    print("autocorrelation of CPU residuals in run order (lag in executions): " +
          ", ".join(f"{lag}: {corr(res[:-lag], res[lag:]):.2f}" for lag in lags))

    print(f"\npaired log ratios against {base} (sd = what the paired t-test sees per round):")
    metrics = [("cpu_s_per_tx", lambda e: e["cpt"]),
               ("cpu_s_per_tx / PoH tick", lambda e: e["cpt"] / e["tick"] if e["tick"] else None),
               ("cpu_ref_per_ktx", lambda e: e["cpt"] / e["ref"] if e["ref"] else None)]
    for s in subjects:
        if s == base:
            continue
        parts = []
        for name, f in metrics:
            lr = [math.log(f(by[s][r]) / f(by[base][r])) for r in sorted(by[base])
                  if r in by[s] and f(by[s][r]) and f(by[base][r])]
            if len(lr) > 2:
                parts.append(f"{name}: mean {st.mean(lr):+.4f} sd {st.stdev(lr):.4f}")
        print(f"  {s:<11} " + " | ".join(parts))


if __name__ == "__main__":
    main()
