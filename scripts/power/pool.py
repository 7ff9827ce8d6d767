#!/usr/bin/env python3
"""Re-judges the 10-round trials of several stored power studies (`power_study.py`
stores) the same way and counts, per condition, the trials flagged: a regression for the
+N% subjects, any verdict for the A/A pair. Read-only on the stores.

    python3 scripts/power/pool.py --primary cpu_s_per_tx \\
        /tmp/q4/power10k/results.db:40 /tmp/q5/power-primary/results.db:30

STORE:ROUNDS names a store and how many of its rounds are complete (a multiple of the
trial length counts; an interrupted study's last round is left out)."""

import argparse
import json
import subprocess
import sys

CONDITIONS = ["base-again", "plus3", "plus5", "plus10"]


def die(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


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
        specs.append((db, int(rounds)))
    total = {c: [0, 0] for c in CONDITIONS}
    print(f"{'store':<48} " + " ".join(f"{c:>10}" for c in CONDITIONS))
    for db, rounds in specs:
        row = []
        for cand in CONDITIONS:
            hits = judged = 0
            for a in range(0, rounds - args.trial_rounds + 1, args.trial_rounds):
                cmd = [args.dyno, "compare", "report", "1", "--db", db, "--rounds",
                       f"{a}..{a + args.trial_rounds}", "--candidate", cand, "--test", "paired",
                       "--format", "json"]
                for m in args.primary:
                    cmd += ["--primary", m]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    die(f"{' '.join(cmd)}: {out.stderr.strip()}")
                v = [v for v in json.loads(out.stdout)["verdicts"] if v["metric"] == args.metric]
                if not v:
                    continue
                verdict = v[0]["verdict"]
                hits += verdict != "no_significant_change" if cand == "base-again" else verdict == "regression"
                judged += 1
            row.append(f"{hits}/{judged}")
            total[cand][0] += hits
            total[cand][1] += judged
        print(f"{db:<48} " + " ".join(f"{r:>10}" for r in row))
    print(f"{'all':<48} " + " ".join(f"{f'{h}/{n}':>10}" for h, n in total.values()))


if __name__ == "__main__":
    main()
