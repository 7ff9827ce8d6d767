#!/usr/bin/env python3
"""Where the noise of `cpu_s_per_tx` comes from, in a stored power study (issue #13).

Reads the SQLite store of `power_study.py` (read-only) and prints, per subject and for
the A/A and +N% pairs:
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

    python3 scripts/power/noise.py /tmp/quiet/power/results.db
"""

import collections
import json
import math
import sqlite3
import statistics as st
import sys


def load(db_path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    names = dict(db.execute("select id, name from subjects"))
    runs, order = {}, []
    for rid, sid, settings, started, status in db.execute(
            "select id, subject_id, settings, started_at, status from runs"):
        if status != "complete":
            continue
        s = json.loads(settings)
        order = s.get("comparison", {}).get("subjects", order)
        runs[rid] = {"subject": names[sid], "round": s["round"], "started": started,
                     "m": collections.defaultdict(list), "measure_s": s["workload"]["measure_s"]}
    for rid, metric, value in db.execute(
            "select run_id, metric, value from samples order by run_id, metric, repetition"):
        if rid in runs and value is not None:
            runs[rid]["m"][metric].append(value)
    return runs, order


def cv(xs):
    return st.stdev(xs) / st.mean(xs)


def corr(x, y):
    mx, my, sx, sy = st.mean(x), st.mean(y), st.pstdev(x), st.pstdev(y)
    if sx == 0 or sy == 0:
        return float("nan")
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / len(x) / sx / sy


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    runs, order = load(sys.argv[1])
    if not runs:
        print(f"noise: no complete executions in {sys.argv[1]}", file=sys.stderr)
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
    ticks = e0["cpu"] / 100 * e0["measure_s"] * 100
    print(f"\nclock ticks: ~{ticks:.0f} ticks of 10 ms per {e0['measure_s']:.0f} s window at "
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
