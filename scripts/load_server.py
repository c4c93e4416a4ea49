#!/usr/bin/env python3
"""A bounded load test of `ctxpack serve`: CLIENTS threads POST packs for SECONDS.

Usage: load_server.py --urls URL[,URL…] --repo NAME --tokens FILE --goals FILE
                      [--clients 32] [--seconds 60] [--budget 8000]

Client i uses the i-th token of FILE (one per line; an agent each) and the servers in turn,
and asks for the goals of FILE (one per line) in turn, each with `"index": false`. Prints the
number of packs, throughput, p50/p90/p99/max latency of the whole HTTP exchange, and every
non-200 answer by status. Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--goals", required=True)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--budget", type=int, default=8000)
    args = parser.parse_args()
    urls = [urllib.parse.urlsplit(u) for u in args.urls.split(",")]
    tokens = [t.strip() for t in open(args.tokens) if t.strip()]
    goals = [g.strip() for g in open(args.goals) if g.strip()]
    if len(tokens) < args.clients:
        raise SystemExit(f"{len(tokens)} tokens for {args.clients} clients")
    latencies: list[float] = []
    failures: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + args.seconds

    def client(i: int) -> None:
        url = urls[i % len(urls)]
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        headers = {"Authorization": f"Bearer {tokens[i]}", "Content-Type": "application/json"}
        n = i
        while time.monotonic() < deadline:
            body = json.dumps({"goal": goals[n % len(goals)], "budget": args.budget, "index": False})
            n += args.clients
            started = time.monotonic()
            try:
                connection.request("POST", f"/v1/repos/{args.repo}/pack?format=json", body, headers)
                response = connection.getresponse()
                response.read()
                status = str(response.status)
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
                connection.close()
                connection = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
            elapsed = time.monotonic() - started
            with lock:
                if status == "200":
                    latencies.append(elapsed)
                else:
                    failures[status] = failures.get(status, 0) + 1

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    print(f"clients {args.clients}, servers {len(urls)}, {wall:.1f} s")
    print(f"packs {len(latencies)}, throughput {len(latencies) / wall:.1f}/s")
    if latencies:
        print(
            f"latency ms: p50 {pct(0.50):.1f}, p90 {pct(0.90):.1f}, p99 {pct(0.99):.1f}, "
            f"max {latencies[-1] * 1000:.1f}, mean {statistics.mean(latencies) * 1000:.1f}"
        )
    print(f"errors {sum(failures.values())} {json.dumps(failures, sort_keys=True)}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
