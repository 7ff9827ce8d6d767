#!/usr/bin/env python3
"""A small, bounded transaction load for a local CometBFT node (the kvstore app).

Sends unique `key=value` transactions with `broadcast_tx_async` over one kept-alive HTTP
connection to the node's RPC, at a fixed rate, for at most --duration seconds and at
most --max-txs transactions, to a loopback address only. Once a second it prints one
JSON line that `dyno compare` reads (load output "jsonl"):

  {"t": 3.0, "achieved_tps": 199, "errors": 0, "rpc_latency_p50_s": 0.0011,
   "rpc_latency_p99_s": 0.0042, "behind": 0}

`behind` counts transactions the sender could not send on time (it never bursts to
catch up, so a slow node shows as a lower achieved rate, not as a spike).
Stops cleanly on SIGINT or SIGTERM.
"""

import argparse
import http.client
import ipaddress
import json
import os
import signal
import socket
import sys
import time
import urllib.parse


def loopback_only(url):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        sys.exit(f"load.py: --rpc {url!r}: give http://127.0.0.1:PORT")
    try:
        addr = ipaddress.ip_address(socket.gethostbyname(parts.hostname))
    except (OSError, ValueError):
        sys.exit(f"load.py: --rpc {url!r}: cannot resolve {parts.hostname!r}")
    if not addr.is_loopback:
        sys.exit(f"load.py: --rpc {url!r}: only loopback addresses are allowed")
    return parts.hostname, parts.port or 80


def quantile(sorted_values, q):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[i]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rpc", required=True, help="node RPC, e.g. http://127.0.0.1:26657")
    p.add_argument("--rate", type=float, required=True, help="transactions per second")
    p.add_argument("--duration", type=float, required=True, help="seconds at most")
    p.add_argument("--max-txs", type=int, default=1_000_000, help="transactions at most")
    a = p.parse_args()
    if not (0 < a.rate <= 100_000) or not (0 < a.duration <= 24 * 3600):
        sys.exit("load.py: --rate must be in (0, 100000] and --duration in (0, 86400]")
    host, port = loopback_only(a.rpc)

    stopping = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.append(True))

    conn = http.client.HTTPConnection(host, port, timeout=5)
    nonce = f"{os.getpid()}-{time.time_ns()}"
    start = time.monotonic()
    next_report = 1.0
    interval = 1.0 / a.rate
    sent = errors = behind = 0
    sent_in_second = errors_in_second = 0
    latencies = []
    seq = 0
    while not stopping and seq < a.max_txs:
        now = time.monotonic() - start
        if now >= a.duration:
            break
        due = seq * interval
        if due > now:
            time.sleep(min(due - now, 0.05))
            continue
        if now - due > 1.0:
            # More than a second late: skip the backlog instead of bursting.
            skipped = int((now - due) / interval)
            behind += skipped
            seq += skipped
            continue
        tx = f"0x{f'dyno{nonce}-{seq}=v{seq}'.encode().hex()}"
        t0 = time.monotonic()
        try:
            conn.request("GET", f"/broadcast_tx_async?tx={tx}")
            resp = conn.getresponse()
            body = resp.read()
            ok = resp.status == 200 and b'"error"' not in body
        except (OSError, http.client.HTTPException):
            ok = False
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=5)
        latencies.append(time.monotonic() - t0)
        seq += 1
        if ok:
            sent += 1
            sent_in_second += 1
        else:
            errors += 1
            errors_in_second += 1
        if time.monotonic() - start >= next_report:
            latencies.sort()
            print(
                json.dumps(
                    {
                        "t": round(next_report, 3),
                        "achieved_tps": sent_in_second,
                        "errors": errors_in_second,
                        "rpc_latency_p50_s": quantile(latencies, 0.5),
                        "rpc_latency_p99_s": quantile(latencies, 0.99),
                        "behind": behind,
                    }
                ),
                flush=True,
            )
            next_report += 1.0
            sent_in_second = errors_in_second = 0
            latencies = []
    print(f"load.py: sent {sent}, errors {errors}, behind {behind}", flush=True, file=sys.stderr)


if __name__ == "__main__":
    main()
