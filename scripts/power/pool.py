#!/usr/bin/env python3
"""Re-judges the 10-round trials of several stored power studies (`power_study.py`
stores) the same way and counts, per condition, the trials flagged on one metric: a
regression for the +N% subjects, any verdict for the A/A pair. Read-only on the stores.

    python3 scripts/power/pool.py --primary cpu_s_per_tx \\
        /tmp/q4/power10k/results.db:40 /tmp/q5/power-primary/results.db:30

STORE:ROUNDS names a store and how many of its rounds are complete (whole trials count;
an interrupted study's last round is left out)."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from power_study import CONDITIONS, die, flagged_verdict, verdicts  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stores", nargs="+", metavar="STORE:ROUNDS")
    ap.add_argument("--dyno", default="target/release/dyno")
    ap.add_argument("--metric", default="cpu_s_per_tx", help="the metric whose verdicts are counted")
    ap.add_argument("--primary", action="append", default=[], metavar="METRIC",
                    help="judge with this primary metric (repeatable; default: every metric primary)")
    ap.add_argument("--trial-rounds", type=int, default=10)
    args = ap.parse_args()
    specs = []
    for spec in args.stores:
        db, _, rounds = spec.rpartition(":")
        if not db or not rounds.isdigit():
            die(f"`{spec}`: expected STORE:ROUNDS, e.g. target/power/results.db:40")
        if not os.path.exists(db):
            die(f"`{spec}`: no store {db}")
        specs.append((db, int(rounds)))
    if not os.access(args.dyno, os.X_OK):
        die(f"--dyno {args.dyno}: not an executable (cargo build --release -p dyno)")
    conditions = [c for c, _ in CONDITIONS]
    total = {c: [0, 0] for c in conditions}
    print(f"{'store':<48} " + " ".join(f"{c:>10}" for c in conditions))
    for db, rounds in specs:
        row = []
        for cand in conditions:
            hits = judged = 0
            for a in range(0, rounds - args.trial_rounds + 1, args.trial_rounds):
                trial = (a, a + args.trial_rounds)
                v = [v for v in verdicts(args, db, trial, "paired", cand) if v["metric"] == args.metric]
                if v:
                    hits += flagged_verdict(v[0])
                    judged += 1
            row.append(f"{hits}/{judged}")
            total[cand][0] += hits
            total[cand][1] += judged
        print(f"{db:<48} " + " ".join(f"{r:>10}" for r in row))
    print(f"{'all':<48} " + " ".join(f"{f'{h}/{n}':>10}" for h, n in total.values()))


if __name__ == "__main__":
    main()
