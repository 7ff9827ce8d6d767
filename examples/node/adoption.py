#!/usr/bin/env python3
"""Per-block propagation figures from node event logs (docs/node.md, "The event log").

usage: adoption.py SLOT_MS LEADER.jsonl FOLLOWER.jsonl [...]

For every block forged in LEADER.jsonl and adopted by a follower, prints the centiles over
blocks of: the follower's validation + adoption time (fetch_completed -> adopted) as a
fraction of the slot, and adoption after the slot's scheduled start, in ms. Also the
leader's transactions per block (its sustained TPS = txs / slot).
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
    slot_ms = float(sys.argv[1])
    leader = events(sys.argv[2])
    forged = {e["block"]: e for e in leader if e["event"] == "forged"}
    starts = {e["slot"]: e["scheduled_ns"] for e in leader if e["event"] == "slot_start"}
    txs = [e["txs"] for e in forged.values()]
    print("leader blocks %d, txs per block %s, TPS %s" % (
        len(txs), centiles(txs), centiles([t / (slot_ms / 1e3) for t in txs])))
    for path in sys.argv[3:]:
        ev = events(path)
        done = {e["block"]: e["ts_ns"] for e in ev if e["event"] == "fetch_completed"}
        adopted = {e["block"]: e["ts_ns"] for e in ev if e["event"] == "adopted"}
        frac, after = [], []
        for b, f in forged.items():
            if b in done and b in adopted:
                frac.append((adopted[b] - done[b]) / 1e6 / slot_ms)
                after.append((adopted[b] - starts[f["slot"]]) / 1e6)
        print(path)
        print("  validate+adopt / slot: " + centiles(frac))
        print("  adopted after slot start, ms: " + centiles(after))


if __name__ == "__main__":
    main()
