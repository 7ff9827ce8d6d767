#!/usr/bin/env python3
"""What `dyno cluster report` does not give about a leader and its followers, from their
node event logs (docs/node.md, "The event log").

usage: adoption.py [--row] [--min-txs N] SLOT_MS LEADER.jsonl FOLLOWER.jsonl [...]

The propagation figures themselves (a follower's fetched -> adopted time, adoption after
the slot's start, the blocks each node adopted) are `dyno cluster report --nodes N
LEADER.jsonl FOLLOWER.jsonl ...`'s. This prints what its report lacks: the leader's
transactions per block (its sustained TPS = txs / slot) and in all, how many blocks each
follower rejected, and with `--min-txs N` a follower's validation + adoption time
(fetch_completed -> adopted) as a fraction of the slot over the blocks of more than N
transactions only (the loaded ones, without the empty blocks around a load): the report
has no per-block transaction count to select them by. With `--row` (one follower,
`--min-txs` given) it prints one line for scripts instead: that time's p50 and p90 (in
slots), the loaded blocks, those the follower never adopted, and the blocks it rejected.
A block the follower took through a range sync (no `fetch_completed`) is timed from its
`header_received`.
"""
import json
import sys


def events(path):
    out = []
    with open(path) as f:
        for line in f:
            v = json.loads(line)
            if v.get("kind") == "event":
                out.append(v)
    return out


def centiles(xs):
    xs = sorted(xs)
    if not xs:
        return "none"
    pick = lambda q: xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]
    return "p50 %.4f  p90 %.4f  max %.4f  (n=%d)" % (pick(0.5), pick(0.9), xs[-1], len(xs))


def pick(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def follower_times(forged, ev, min_txs, slot_ms):
    """Per loaded block the follower adopted, its fetched (or announced) -> adopted time
    in slots; and the loaded blocks it never adopted."""
    start = {e["block"]: e["ts_ns"] for e in ev if e["event"] == "header_received"}
    start.update({e["block"]: e["ts_ns"] for e in ev if e["event"] == "fetch_completed"})
    adopted = {e["block"]: e["ts_ns"] for e in ev if e["event"] == "adopted"}
    loaded = [b for b, f in forged.items() if f["txs"] > min_txs]
    times = [(adopted[b] - start[b]) / 1e6 / slot_ms for b in loaded if b in adopted and b in start]
    return times, loaded, [b for b in loaded if b not in adopted]


def main():
    args = sys.argv[1:]
    row = False
    if args and args[0] == "--row":
        row = True
        args = args[1:]
    min_txs = None
    if len(args) >= 2 and args[0] == "--min-txs":
        try:
            min_txs = int(args[1])
        except ValueError:
            print("--min-txs: `%s` is not a whole number of transactions" % args[1], file=sys.stderr)
            sys.exit(2)
        args = args[2:]
    if len(args) < 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        sys.exit(2)
    slot_ms = float(args[0])
    forged = {e["block"]: e for e in events(args[1]) if e["event"] == "forged"}
    if row:
        if min_txs is None or len(args) != 3:
            print("--row takes --min-txs N and one follower", file=sys.stderr)
            sys.exit(2)
        ev = events(args[2])
        times, loaded, missing = follower_times(forged, ev, min_txs, slot_ms)
        rejected = sum(1 for e in ev if e["event"] == "rejected")
        print("%.4f %.4f %d %d %d" % (pick(times, 0.5), pick(times, 0.9), len(loaded), len(missing), rejected))
        return
    txs = [e["txs"] for e in forged.values()]
    print("leader blocks %d, txs per block %s, TPS %s; %d txs in all" % (
        len(txs), centiles(txs), centiles([t / (slot_ms / 1e3) for t in txs]), sum(txs)))
    for path in args[2:]:
        ev = events(path)
        print(path)
        print("  rejected %d blocks" % sum(1 for e in ev if e["event"] == "rejected"))
        if min_txs is None:
            continue
        times, loaded, missing = follower_times(forged, ev, min_txs, slot_ms)
        print("  validate+adopt / slot, blocks of more than %d txs: %s; %d of %d never adopted" % (
            min_txs, centiles(times), len(missing), len(loaded)))


if __name__ == "__main__":
    main()
