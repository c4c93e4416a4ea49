#!/usr/bin/env python3
"""Fills a ctxpack server's ledger with packs, then times each page of the web view.

Usage: bench_ui.py BASE_URL REPO READ_TOKEN GOALS_FILE PACKS [REQUESTS]

Packs are built through the JSON API by two clients at once (goals from GOALS_FILE, budgets
2k/4k/8k), so the ledger holds PACKS real records. Then each page is requested REQUESTS times
in turn by one signed-in client, and the time to the last byte of each answer (loopback: the
server's time) is summarised as p50 and p99 in milliseconds, one Markdown table row per page.
Only the standard library is used.
"""
import concurrent.futures
import http.client
import json
import random
import sys
import time
import urllib.parse


def connection(base):
    parsed = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)


def request(base, method, path, headers=None, body=None):
    conn = connection(base)
    started = time.perf_counter()
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    return response.status, dict(response.getheaders()), data, elapsed


def fill(base, repo, token, goals, packs):
    budgets = [2000, 4000, 8000]

    def one(i):
        goal = goals[i % len(goals)]
        body = json.dumps({"goal": goal, "budget": budgets[i % 3], "index": False})
        status, headers, data, _ = request(
            base, "POST", f"/v1/repos/{repo}/pack",
            {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, body)
        if status != 200:
            raise SystemExit(f"pack {i}: {status} {data[:200]!r}")
        return headers.get("x-ctxpack-pack-id") or headers.get("X-Ctxpack-Pack-Id")

    started = time.time()
    ids = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for n, pack_id in enumerate(pool.map(one, range(packs)), 1):
            ids.append(pack_id)
            if n % 1000 == 0:
                print(f"  {n} packs in {time.time() - started:.0f} s", file=sys.stderr)
    return ids


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    low = int(k)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (k - low)


def main():
    base, repo, token, goals_file, packs = sys.argv[1:6]
    requests = int(sys.argv[6]) if len(sys.argv) > 6 else 100
    goals = [g.strip() for g in open(goals_file) if g.strip()]
    ids = fill(base, repo, token, goals, int(packs)) if int(packs) > 0 else []
    origin = base.rstrip("/")
    status, headers, _, _ = request(
        base, "POST", "/ui/login",
        {"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"},
        urllib.parse.urlencode({"token": token}))
    cookie = headers.get("set-cookie") or headers.get("Set-Cookie")
    if status != 303 or not cookie:
        raise SystemExit(f"sign-in failed: {status}")
    session = {"Cookie": cookie.split(";")[0]}
    status, _, data, _ = request(base, "GET", f"/ui/repos/{repo}/packs", session)
    text = data.decode()
    total = text.split('id="count">')[1].split(" packs")[0]
    print(f"ledger entries: {total}", file=sys.stderr)
    rng = random.Random(7)
    sample = [rng.choice(ids) for _ in range(requests)] if ids else []
    # A citation of each sampled pack, for the file page.
    citations = {}
    for pack_id in set(sample):
        _, _, data, _ = request(base, "GET", f"/ui/repos/{repo}/packs/{pack_id}", session)
        page = data.decode()
        marker = 'class="citation" href="'
        if marker in page:
            citations[pack_id] = page.split(marker)[1].split('"')[0].replace("&amp;", "&")
    goal_word = goals[0].split()[0]
    pages = [
        ("ledger, newest page", lambda i: ("GET", f"/ui/repos/{repo}/packs", None)),
        ("ledger, page 150 (packs 7,501–7,550)",
         lambda i: ("GET", f"/ui/repos/{repo}/packs?page=150", None)),
        ("ledger, filtered by goal",
         lambda i: ("GET", f"/ui/repos/{repo}/packs?goal={urllib.parse.quote(goal_word)}", None)),
        ("a pack", lambda i: ("GET", f"/ui/repos/{repo}/packs/{sample[i]}", None)),
        ("a file at its citation",
         lambda i: ("GET", citations.get(sample[i], f"/ui/repos/{repo}/packs"), None)),
        ("two packs compared",
         lambda i: ("GET", f"/ui/repos/{repo}/compare?a={sample[i]}&b={sample[-1 - i]}", None)),
        ("try a goal (builds and records a pack)",
         lambda i: ("POST", f"/ui/repos/{repo}/try",
                    urllib.parse.urlencode({"goal": goals[i % len(goals)], "budget": "4000",
                                            "at": "HEAD", "selector": "coverage"}))),
        ("quality", lambda i: ("GET", "/ui/quality", None)),
    ]
    print("| page | p50 (ms) | p99 (ms) | requests |")
    print("| --- | --- | --- | --- |")
    for name, make in pages:
        times = []
        for i in range(requests):
            method, path, body = make(i)
            headers = dict(session)
            if body is not None:
                headers.update({"Origin": origin,
                                "Content-Type": "application/x-www-form-urlencoded"})
            status, _, data, elapsed = request(base, method, path, headers, body)
            if status not in (200, 303):
                raise SystemExit(f"{name}: {status} {data[:300]!r}")
            times.append(elapsed)
        print(f"| {name} | {percentile(times, 50):.1f} | {percentile(times, 99):.1f} | {len(times)} |")


if __name__ == "__main__":
    main()
