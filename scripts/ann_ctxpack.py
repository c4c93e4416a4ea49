#!/usr/bin/env python3
"""Recall and latency of ctxpack's approximate index (`docs ann`) against its exact scan.

Usage (a store made by scripts/bench_docs.sh, whose collection `docs` has embeddings of field
`text`; only the Python standard library is needed):

    python3 scripts/ann_ctxpack.py STORE DOCS.jsonl [--lists N] [--probes N]

It declares the index with `ctxpack docs ann create` (timing the build), then runs the queries
scripts/ann_recall.py also asks (200 of 120 words and 200 of 30, drawn from the corpus's own words)
through `ctxpack docs vsearch --k 10`, each as a whole process, with and without `--exact`,
and prints the share of the exact top 10 the index finds and the median time of each. A
30-word query has few enough distinct components for the exact sparse scan, so the planner
never sends it to the index: its recall is 1 by construction. CTXPACK names the binary
(target/release/ctxpack by default). The index stays declared; `ctxpack docs ann drop` removes it.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time


def sample_queries(docs):
    """200 pairs of queries, 120 and 30 words, drawn (seeded) from the first 2,000 documents."""
    rng = random.Random(7)
    words = []
    with open(docs) as f:
        for i, line in enumerate(f):
            if i >= 2000:
                break
            words += json.loads(line)["text"].split()
    out = []
    for q in range(200):
        for n, name in ((120, "long"), (30, "short")):
            out.append((f"{name}{q}", " ".join(rng.choice(words) for _ in range(n))))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("docs")
    parser.add_argument("--lists", type=int, default=0)
    parser.add_argument("--probes", type=int, default=0)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.environ.get("CTXPACK", os.path.join(root, "target/release/ctxpack"))
    started = time.time()
    built = subprocess.run(
        [binary, "docs", "ann", "create", args.store, "docs", "text",
         "--lists", str(args.lists), "--probes", str(args.probes), "--format", "json"],
        check=True, capture_output=True, text=True)
    print(f"built in {time.time() - started:.1f} s: {built.stdout.strip()}")

    def search(text, exact):
        command = [binary, "docs", "vsearch", args.store, "docs", "text", text, "--k", "10"]
        if exact:
            command.append("--exact")
        started = time.time()
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        elapsed = (time.time() - started) * 1000
        return [json.loads(line)["id"] for line in out.splitlines()], elapsed

    results = {"long": ([], [], []), "short": ([], [], [])}
    for name, text in sample_queries(args.docs):
        kind = "long" if name.startswith("long") else "short"
        found, approximate_ms = search(text, False)
        truth, exact_ms = search(text, True)
        recall, fast, slow = results[kind]
        recall.append(len(set(map(json.dumps, found)) & set(map(json.dumps, truth))) / max(1, len(truth)))
        fast.append(approximate_ms)
        slow.append(exact_ms)
    for kind, words in (("long", 120), ("short", 30)):
        recall, fast, slow = results[kind]
        print(f"{words}-word queries: recall@10 {statistics.mean(recall):.3f}; median "
              f"{statistics.median(fast):.1f} ms through the index, {statistics.median(slow):.1f} ms exact")


if __name__ == "__main__":
    main()
