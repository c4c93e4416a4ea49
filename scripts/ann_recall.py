#!/usr/bin/env python3
"""Recall and latency of an HNSW graph over a document store's vectors, against the exact scan.

Usage (a store made by scripts/bench_docs.sh, or any store whose collection `docs` has
embeddings of field `text`):

    python3 -m venv /tmp/ann && /tmp/ann/bin/pip install numpy hnswlib
    /tmp/ann/bin/python scripts/ann_recall.py STORE DOCS.jsonl

It samples 200 queries of 120 words and 200 of 30 words from the words of the first 2,000
documents (seeded, so every run asks the same), embeds them by importing them into the
collection `ann-queries` of STORE with `ctxpack docs import --embed text` (CTXPACK names the
binary; target/release/ctxpack by default), reads both vector files, and prints, for graphs of
connectivity 16 and 32 and search expansions 32 to 512, the share of the exact top 10 (by
cosine, as `docs vsearch` ranks) that the graph finds, and the time per query on one thread.
"""
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ann_ctxpack import sample_queries  # noqa: E402

HEADER_BYTES = 128


def vector_file(store, collection, field):
    hexed = lambda s: s.encode().hex()
    return os.path.join(store, "vectors", hexed(collection), hexed(field) + ".vec")


def read_vectors(path):
    """The rows of a vector file (format 2: blocks of rows, each stored column by column)."""
    data = open(path, "rb").read()
    if len(data) < HEADER_BYTES or data[:8] != b"CTXPVEC\n" or struct.unpack_from("<I", data, 8)[0] != 2:
        sys.exit(f"{path}: not a vector file of format 2; run `ctxpack docs vsync` with this build first")
    dim, = struct.unpack_from("<I", data, 12)
    count, = struct.unpack_from("<Q", data, 16)
    block, = struct.unpack_from("<I", data, 80)
    offset, rows = HEADER_BYTES, []
    for start in range(0, count, block):
        n = min(block, count - start)
        columns = np.frombuffer(data, dtype="<f4", count=n * dim, offset=offset)
        rows.append(columns.reshape(dim, n).T)
        offset += n * dim * 4
    return np.vstack(rows).astype(np.float32), dim


def normalised(a):
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return a / norms


def main():
    store, docs = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.environ.get("CTXPACK", os.path.join(root, "target/release/ctxpack"))
    import hnswlib

    queries = os.path.join(os.path.dirname(os.path.abspath(store)), "ann-queries.jsonl")
    with open(queries, "w") as out:
        for name, text in sample_queries(docs):
            out.write(json.dumps({"_id": name, "text": text}) + "\n")
    subprocess.run([binary, "docs", "import", store, "ann-queries", queries, "--embed", "text"],
                   check=True, stdout=subprocess.DEVNULL)
    x, dim = read_vectors(vector_file(store, "docs", "text"))
    q, _ = read_vectors(vector_file(store, "ann-queries", "text"))
    x, q = normalised(x), normalised(q)
    k = 10
    exact = np.argsort(-(q @ x.T), axis=1)[:, :k]
    print(f"{len(x)} documents; non-zero components: documents {np.mean((x != 0).sum(1)):.0f}, "
          f"120-word queries {np.mean((q[0::2] != 0).sum(1)):.0f}, "
          f"30-word queries {np.mean((q[1::2] != 0).sum(1)):.0f}")
    for m in (16, 32):
        graph = hnswlib.Index(space="ip", dim=dim)
        graph.init_index(max_elements=len(x), ef_construction=200, M=m, random_seed=1)
        graph.set_num_threads(2)
        started = time.time()
        graph.add_items(x, np.arange(len(x)))
        built = time.time() - started
        graph.set_num_threads(1)
        for ef in (32, 64, 128, 256, 512):
            graph.set_ef(ef)
            started = time.time()
            found, _ = graph.knn_query(q, k=k)
            per_query = (time.time() - started) / len(q) * 1000
            recall = {
                name: np.mean([len(set(a) & set(b)) / k for a, b in zip(found[s], exact[s])])
                for name, s in (("120 words", slice(0, None, 2)), ("30 words", slice(1, None, 2)))
            }
            print(f"M={m} (built in {built:.1f} s on 2 threads) ef={ef}: recall@10 "
                  f"{recall['120 words']:.3f} (120 words), {recall['30 words']:.3f} (30 words), "
                  f"{per_query:.2f} ms a query")


if __name__ == "__main__":
    main()
