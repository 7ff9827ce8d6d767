#!/usr/bin/env python3
"""Statistical power of `dyno compare`, measured (issue #13).

1. Calibrates `--extra-work-per-tx N` for +3%, +5% and +10% CPU per transaction against
   the base build: one short `dyno compare run` of the base against a probe N, whose
   paired `cpu_s_per_tx` ratio gives the cost of one hash round (the work is linear in N).
2. Runs ONE `dyno compare run` with subjects base, base-again (A/A), +3%, +5%, +10% for
   R rounds of the `value` workload.
3. Splits the stored rounds into disjoint trials of T rounds (`dyno compare report
   --rounds A..B`), judges each trial with the unpaired and the paired test, and prints,
   per condition, metric and test, how often the change was flagged: power for +3/5/10%
   (a regression verdict), the false-positive rate for A/A (any verdict, either way).

Everything is measured by dyno itself; this script only writes comparison files, runs
dyno and counts verdicts. Its store is a fresh SQLite file in --out, so it never mixes
with other comparisons.

    cargo build --release -p dyno
    python3 scripts/power/power_study.py --rounds 40 --warmup-s 2 --measure-s 3

`noise.py` takes the noise of `cpu_s_per_tx` apart on the store this writes. At 1,000 TPS
most of the node's CPU is its idle tiles waking, not per-transaction work; `--rate 3000`
raises the per-transaction share (docs/benchmarks/compare.md, "Where the noise of
`cpu_s_per_tx` comes from").

Duration: about (R x 5 + calibration rounds x 4) executions of (warm-up + window + ~0.5 s);
measured on the busy 2-core machine: R = 10, 2 s + 3 s -> 252 s for the comparison.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

CONDITIONS = [("base-again", 0.0), ("plus3", 0.03), ("plus5", 0.05), ("plus10", 0.10)]
METRICS = ["cpu_percent", "cpu_s_per_tx", "bank_s_per_tx", "jsonl:stage_forged_s", "jsonl:tps"]
TESTS = ["unpaired", "paired", "signed-rank"]


def die(msg):
    print(f"power_study: {msg}", file=sys.stderr)
    sys.exit(2)


def comparison_file(path, args, subjects, rounds, out):
    """Writes a comparison file: every subject is the same binary with its own N."""
    lines = [
        f"rounds = {rounds}",
        f"noise_band = {args.noise_band}",
        "alpha = 0.05",
        f"seed = {args.seed}",
        "grace_s = 10",
        "",
    ]
    for name, n in subjects:
        log = os.path.join(out, f"node-{name}.jsonl")
        command = [
            args.dyno, "node", "--workload", "{workload}", "--rate", "{rate}",
            "--no-save", "--no-ledger-check", "--extra-work-per-tx", str(n),
            "--name", f"power-{name}", "--node-log", log,
        ]
        lines += [
            "[[subject]]",
            f'name = "{name}"',
            "command = " + json.dumps(command),
            f'metrics = {{ jsonl = "{log}" }}',
            # The window must not hold the node's start-up: it signs rate x 30 s of
            # transactions on every CPU before its tiles run (at 10,000/s that outlasted a
            # 2 s warm-up, and the first 1 s samples read 200% CPU).
            "ready = { log = '^running [0-9]+ tiles', timeout_s = 120 }",
            "",
        ]
    lines += [
        "[[workload]]",
        'name = "value"',
        f"rate = {args.rate}",
        f"warmup_s = {args.warmup_s}",
        f"measure_s = {args.measure_s}",
    ]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run(cmd, db, capture=True):
    env = dict(os.environ, DYNO_DB=db)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if capture else None, text=True)
    # 1 = a regression was found (with --fail-on-regression only); anything else failed.
    if p.returncode not in (0, 1):
        die(f"`{' '.join(cmd)}` exited {p.returncode}")
    return p.stdout


def verdicts(args, db, rounds, test, candidate=None):
    """`dyno compare report` of the first stored comparison as JSON verdicts; with a
    candidate, that candidate alone against the baseline (its own Holm family)."""
    cmd = [args.dyno, "compare", "report", "1", "--format", "json", "--test", test]
    if rounds is not None:
        cmd += ["--rounds", f"{rounds[0]}..{rounds[1]}"]
    if candidate is not None:
        cmd += ["--candidate", candidate]
    for metric in args.primary:
        cmd += ["--primary", metric]
    return json.loads(run(cmd, db))["verdicts"]


def flagged_verdict(v):
    """Whether a verdict counts as flagged: a regression for the +N% subjects (the
    direction of the injected work), any verdict for the A/A pair (a false positive)."""
    if v["candidate"] == "base-again":
        return v["verdict"] != "no_significant_change"
    return v["verdict"] == "regression"


def trial_verdicts(args, db, rounds, test):
    """Every candidate's verdicts of one trial: judged in one family (--family all) or
    each candidate in its own (per-candidate, what a comparison of two releases gets)."""
    if args.family == "all":
        return verdicts(args, db, rounds, test)
    return [v for cand, _ in CONDITIONS for v in verdicts(args, db, rounds, test, cand)]


def percent(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def noise_table(args, db, trial_mdc):
    """Per condition, dyno's own reading of all the rounds at once (the paired log
    ratios' sd, the family they were corrected in, the rounds a 5% change needs with 80%
    power) beside what each trial could have flagged (its stated power, the median over
    the trials). dyno states power at 80% and for 5% only; the lag-1 autocorrelation is
    taken here from the per-round values dyno reports."""
    print()
    print(f"Over all {args.rounds} rounds (paired, each candidate against base), and what a "
          f"{args.trial_rounds}-round paired trial could flag (`dyno compare report`'s stated power):")
    print("(r1: lag-1 autocorrelation of the per-round log ratios; the t-test assumes rounds "
          "independent, r1 near 0)")
    print(f"{'condition':<11} {'metric':<13} {'ratio':>7} {'sd':>7} {'r1':>6} {'family':>6} "
          f"{'trial flags 80%':>16} {'rounds for 5%':>14}")
    for cand, _ in CONDITIONS:
        vs = verdicts(args, db, None, "paired", cand)
        for metric in ("cpu_s_per_tx", "cpu_percent"):
            v = next((v for v in vs if v["metric"] == metric), None)
            if v is None or v["log_ratio_sd"] is None or v["power"] is None:
                print(f"{cand:<11} {metric:<13} (rounds missing: not paired here)")
                continue
            logs = [math.log(c / b) for b, c in zip(v["baseline_values"], v["candidate_values"])]
            mean = statistics.mean(logs)
            r1 = sum((x - mean) * (y - mean) for x, y in zip(logs, logs[1:])) / \
                sum((x - mean) ** 2 for x in logs)
            mdcs = [m for m in trial_mdc.get((cand, metric), []) if m is not None]
            trial = percent(statistics.median(mdcs)) if mdcs else "-"
            needed = v["power"]["rounds_for_reference_change"]
            print(f"{cand:<11} {metric:<13} {v['ratio']:>7.4f} {100 * v['log_ratio_sd']:>6.2f}% {r1:>6.2f} "
                  f"{v['power']['family']:>6} {trial:>16} {needed if needed else '-':>14}")


def calibrate(args):
    out = os.path.join(args.out, "calibration")
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, "results.db")
    if os.path.exists(db):
        os.remove(db)
    # Two passes: the first probe's slope aims the second probe at +10%, where the
    # change is large against the noise; the slope is the mean of both passes.
    probe, slopes = args.probe, []
    for i in range(2):
        if os.path.exists(db):
            os.remove(db)
        path = os.path.join(out, f"calibrate-{i}.toml")
        comparison_file(path, args, [("base", 0), ("probe", probe)], args.calibration_rounds, out)
        run([args.dyno, "compare", "run", path, "--fresh", "--format", "json"], db)
        v = [x for x in verdicts(args, db, None, "paired") if x["metric"] == "cpu_s_per_tx"]
        if not v:
            die("calibration: no cpu_s_per_tx verdict (does the node write tps to its log?)")
        ratio = v[0]["ratio"]
        slope = (ratio - 1.0) / probe
        print(f"calibration {i + 1}: N = {probe} -> cpu_s_per_tx x {ratio:.4f} "
              f"[{v[0]['ratio_low']:.4f}, {v[0]['ratio_high']:.4f}] "
              f"(paired, {args.calibration_rounds} rounds)")
        if slope <= 0:
            die(f"calibration: N = {probe} did not raise the CPU per tx; raise --probe")
        slopes.append(slope)
        probe = max(1, round(0.10 / slope))
    slope = sum(slopes) / len(slopes)
    print(f"calibration: {slope * 1e2:.5f}% CPU per tx per hash round")
    return {name: max(1, round(x / slope)) for name, x in CONDITIONS if x > 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dyno", default="target/release/dyno")
    ap.add_argument("--out", default="target/power")
    ap.add_argument("--rounds", type=int, default=40, help="R: rounds of the one comparison")
    ap.add_argument("--trial-rounds", type=int, default=10, help="T: rounds per trial")
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--measure-s", type=float, default=3.0)
    ap.add_argument("--rate", type=int, default=1000, help="transactions per second offered")
    ap.add_argument("--noise-band", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--probe", type=int, default=400, help="N of the calibration probe")
    ap.add_argument("--calibration-rounds", type=int, default=6)
    ap.add_argument("--n", default=None,
                    help="skip calibration: N for +3,+5,+10%% as A,B,C (e.g. from an earlier run)")
    ap.add_argument("--family", choices=["per-candidate", "all"], default="per-candidate",
                    help="Holm's family: each candidate's metrics on their own (what a "
                         "comparison of two releases gets; the default) or every candidate's "
                         "together (the tables in docs/benchmarks/compare.md before 2026-11-24 16:00 UTC)")
    ap.add_argument("--primary", action="append", default=[], metavar="METRIC",
                    help="judge the trials with this primary metric (repeatable; `dyno compare "
                         "report --primary`): Holm's family is the primary metrics alone, and "
                         "'any metric' counts only them")
    ap.add_argument("--tabulate-only", action="store_true",
                    help="only judge the trials of the comparison stored in --out by an earlier run")
    args = ap.parse_args()
    if args.rounds < args.trial_rounds:
        die(f"--rounds {args.rounds} is less than one trial of --trial-rounds {args.trial_rounds}")
    if not os.access(args.dyno, os.X_OK):
        die(f"--dyno {args.dyno}: not an executable (cargo build --release -p dyno)")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    db = os.path.join(args.out, "results.db")
    if args.tabulate_only:
        if not os.path.exists(db):
            die(f"--tabulate-only: no store {db} (run the study first)")
        tabulate(args, db)
        return
    if args.n:
        try:
            a, b, c = (int(x) for x in args.n.split(","))
        except ValueError:
            die(f"--n {args.n}: expected three integers A,B,C")
        ns = {"plus3": a, "plus5": b, "plus10": c}
    else:
        ns = calibrate(args)
    print("N per condition: " + ", ".join(f"{k} = {v}" for k, v in ns.items()))

    if os.path.exists(db):
        os.remove(db)
    path = os.path.join(args.out, "power.toml")
    subjects = [("base", 0), ("base-again", 0)] + [(k, ns[k]) for k in ("plus3", "plus5", "plus10")]
    comparison_file(path, args, subjects, args.rounds, args.out)
    t1 = time.time()
    run([args.dyno, "compare", "run", path, "--fresh", "--format", "json"], db)
    t2 = time.time()
    tabulate(args, db)
    print(f"calibration {t1 - t0:.0f} s, comparison {t2 - t1:.0f} s, reports {time.time() - t2:.0f} s")


def tabulate(args, db):
    """Judges every trial of the stored comparison with every test and prints the counts."""
    trials = [(a, a + args.trial_rounds) for a in range(0, args.rounds - args.trial_rounds + 1, args.trial_rounds)]
    # flagged[(condition, metric, test)] = (flagged trials, judged trials, ratios)
    flagged = {}
    # trial_mdc[(condition, metric)] = each paired trial's minimum detectable change
    trial_mdc = {}
    for test in TESTS:
        for r in trials:
            vs = trial_verdicts(args, db, r, test)
            anything = {}
            for v in vs:
                key = (v["candidate"], v["metric"], test)
                hit = flagged_verdict(v)
                # "any metric" is the comparison's verdict: its primary metrics only.
                if v.get("primary", True):
                    anything[v["candidate"]] = anything.get(v["candidate"], False) or hit
                if test == "paired":
                    trial_mdc.setdefault((v["candidate"], v["metric"]), []).append(
                        v.get("min_detectable_change"))
                if v["metric"] in METRICS:
                    f, n, ratios = flagged.get(key, (0, 0, []))
                    ratio = [v["ratio"]] if v["ratio"] is not None else []
                    flagged[key] = (f + hit, n + 1, ratios + ratio)
            for cand, hit in anything.items():
                key = (cand, "any metric", test)
                f, n, ratios = flagged.get(key, (0, 0, []))
                flagged[key] = (f + hit, n + 1, ratios)

    print()
    print(f"{len(trials)} disjoint trials of {args.trial_rounds} rounds from one comparison of "
          f"{args.rounds} rounds (warm-up {args.warmup_s} s, window {args.measure_s} s, "
          f"rate {args.rate}/s, noise band {args.noise_band}); Holm over "
          + ("every metric and candidate of a trial" if args.family == "all"
             else "each candidate's metrics in a trial (--candidate)")
          + (f", primary metrics {', '.join(args.primary)} (the rest secondary)" if args.primary else "")
          + ". Flagged: a regression (+N%), any verdict (A/A).")
    header = f"{'condition':<11} {'metric':<22} {'test':<11} {'flagged':>9} {'rate':>6} {'median ratio':>13}"
    print(header)
    print("-" * len(header))
    for cond, _ in CONDITIONS:
        for metric in METRICS + ["any metric"]:
            for test in TESTS:
                f, n, ratios = flagged.get((cond, metric, test), (0, 0, []))
                if n == 0:
                    continue
                rs = sorted(ratios)
                med = f"{rs[len(rs) // 2]:.4f}" if rs else "-"
                print(f"{cond:<11} {metric:<22} {test:<11} {f:>4} / {n:<2} {100.0 * f / n:>5.0f}% {med:>13}")
    noise_table(args, db, trial_mdc)
    print()
    print(f"store {db} (dyno compare report 1 --db {db} --rounds A..B --test paired|unpaired"
          f" [--candidate NAME])")


if __name__ == "__main__":
    main()
