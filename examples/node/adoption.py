#!/usr/bin/env python3
"""Per-block propagation figures from node event logs (docs/node.md, "The event log").

usage: adoption.py [--min-txs N] SLOT_MS LEADER.jsonl FOLLOWER.jsonl [...]

For every block forged in LEADER.jsonl and adopted by a follower, prints the centiles over
blocks of: the follower's validation + adoption time (fetch_completed -> adopted) as a
fraction of the slot, and adoption after the slot's scheduled start, in ms. Also the
leader's transactions per block (its sustained TPS = txs / slot) and in all, and per
follower how many of the leader's blocks it adopted and how many blocks it rejected.
`--min-txs N` also prints the follower's figures over the blocks of more than N
transactions only (the loaded ones, without the empty blocks around a load).
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


def main():
    args = sys.argv[1:]
    min_txs = None
    if len(args) >= 2 and args[0] == "--min-txs":
        try:
            min_txs = int(args[1])
        except ValueError:
            print("--min-txs: `%s` is not a whole number of transactions" % args[1], file=sys.stderr)
            sys.exit(2)
        args = args[2:]
    if len(args) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    slot_ms = float(args[0])
    leader = events(args[1])
    forged = {e["block"]: e for e in leader if e["event"] == "forged"}
    starts = {e["slot"]: e["scheduled_ns"] for e in leader if e["event"] == "slot_start"}
    txs = [e["txs"] for e in forged.values()]
    print("leader blocks %d, txs per block %s, TPS %s; %d txs in all" % (
        len(txs), centiles(txs), centiles([t / (slot_ms / 1e3) for t in txs]), sum(txs)))
    for path in args[2:]:
        ev = events(path)
        done = {e["block"]: e["ts_ns"] for e in ev if e["event"] == "fetch_completed"}
        adopted = {e["block"]: e["ts_ns"] for e in ev if e["event"] == "adopted"}
        rejected = sum(1 for e in ev if e["event"] == "rejected")
        frac, after, loaded = [], [], []
        for b, f in forged.items():
            if b in done and b in adopted:
                frac.append((adopted[b] - done[b]) / 1e6 / slot_ms)
                after.append((adopted[b] - starts[f["slot"]]) / 1e6)
                if min_txs is not None and f["txs"] > min_txs:
                    loaded.append(frac[-1])
        print(path)
        print("  adopted %d of the leader's %d blocks, rejected %d" % (
            sum(1 for b in forged if b in adopted), len(forged), rejected))
        print("  validate+adopt / slot: " + centiles(frac))
        if min_txs is not None:
            print("  validate+adopt / slot, blocks of more than %d txs: %s" % (
                min_txs, centiles(loaded)))
        print("  adopted after slot start, ms: " + centiles(after))


if __name__ == "__main__":
    main()
