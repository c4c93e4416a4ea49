#!/usr/bin/env python3
"""Writes N JSON Lines documents of ~200 words each (deterministic) for scripts/bench_docs.sh.

Usage: bench_docs_gen.py N > docs.jsonl
Each line: {"title": "...", "status": "published"|"draft", "n": i, "text": "<~200 words>"}.
Words come from a 5,000-word synthetic vocabulary with a Zipf-like distribution, so some words
are common and most are rare, as in prose.
"""
import json
import random
import sys


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(1)
    syllables = ["da", "ta", "base", "search", "in", "dex", "ing", "cho", "co", "late", "cake",
                 "re", "ci", "pe", "vec", "tor", "query", "pack", "bud", "get", "to", "ken",
                 "store", "col", "lec", "tion", "fil", "ter", "rank", "score"]
    vocab = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
                    for _ in range(8000)})[:5000]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out = sys.stdout
    for i in range(n):
        words = rng.choices(vocab, weights=weights, k=200)
        doc = {
            "title": f"document {i}",
            "status": "published" if i % 3 else "draft",
            "n": i,
            "text": " ".join(words),
        }
        out.write(json.dumps(doc, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
