#!/usr/bin/env python3
"""Draws scaling curves as SVG.

    python3 scripts/plot_scaling.py WORK_DIR OUT.svg           (bench_scaling.sh)
    python3 scripts/plot_scaling.py --docs WORK_DIR OUT.svg    (bench_docs_scaling.sh)

Monorepos: left, cold index seconds against files; right, whole-process pack p50 and p99 (ms)
against files (WORK_DIR/results-*/cold.tsv and packs.tsv). Documents: whole-process search
medians (ms) against documents (WORK_DIR/latency-N.tsv). Uses nothing beyond the standard
library.
"""

import csv
import glob
import os
import sys


def quantile(values, q):
    values = sorted(values)
    i = max(1, min(len(values), int(len(values) * q + 0.999)))
    return values[i - 1]


def load(work):
    points = []
    for d in glob.glob(os.path.join(work, "results-*")):
        with open(os.path.join(d, "cold.tsv")) as f:
            cold = next(csv.DictReader(f, delimiter="\t"))
        with open(os.path.join(d, "packs.tsv")) as f:
            packs = [float(r["seconds"]) for r in csv.DictReader(f, delimiter="\t")]
        points.append(
            {
                "files": int(cold["files"]),
                "mb": int(cold["bytes"]) / 1e6,
                "index": float(cold["seconds"]),
                "p50": quantile(packs, 0.5) * 1000,
                "p99": quantile(packs, 0.99) * 1000,
            }
        )
    return sorted(points, key=lambda p: p["files"])


def panel(x0, title, ylabel, points, series, ymax, x="files", xlabel="files in the tree"):
    w, h, left, bottom = 420, 300, 60, 40
    xmax = max(p[x] for p in points) * 1.05
    sx = lambda v: x0 + left + v / xmax * (w - left - 20)
    sy = lambda v: 20 + (h - bottom - 20) * (1 - v / ymax)
    out = [
        f'<text x="{x0 + w / 2}" y="14" text-anchor="middle" font-weight="bold">{title}</text>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(xmax)}" y2="{sy(0)}" stroke="black"/>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(0)}" y2="{sy(ymax)}" stroke="black"/>',
        f'<text x="{x0 + w / 2}" y="{h - 5}" text-anchor="middle">{xlabel}</text>',
        f'<text x="{x0 + 14}" y="{sy(ymax / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 {x0 + 14} {sy(ymax / 2)})">{ylabel}</text>',
    ]
    for i in range(5):
        v = ymax * i / 4
        out.append(f'<text x="{sx(0) - 4}" y="{sy(v) + 4}" text-anchor="end" font-size="10">{v:.0f}</text>')
    for p in points:
        out.append(
            f'<text x="{sx(p[x])}" y="{sy(0) + 14}" text-anchor="middle" font-size="10">'
            f'{p[x] // 1000}k</text>'
        )
    for key, colour, label in series:
        xy = " ".join(f"{sx(p[x]):.1f},{sy(p[key]):.1f}" for p in points)
        out.append(f'<polyline points="{xy}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in points:
            out.append(f'<circle cx="{sx(p[x]):.1f}" cy="{sy(p[key]):.1f}" r="3" fill="{colour}"/>')
            out.append(
                f'<text x="{sx(p[x]) + 5:.1f}" y="{sy(p[key]) - 5:.1f}" font-size="10">{p[key]:.0f}</text>'
            )
        last = points[-1]
        out.append(
            f'<text x="{sx(last[x]) - 5:.1f}" y="{sy(last[key]) + 16:.1f}" text-anchor="end" '
            f'font-size="11" fill="{colour}">{label}</text>'
        )
    return out


def write_svg(out, width, body):
    with open(out, "w") as f:
        f.write(
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="300" '
            f'font-family="sans-serif" font-size="12">\n<rect width="{width}" height="300" fill="white"/>\n'
        )
        f.write("\n".join(body))
        f.write("\n</svg>\n")


DOC_SERIES = [
    ("vsearch top-10", "#2ca02c", "vsearch (short query)"),
    ("vsearch top-10 --filter status=published", "#9467bd", "vsearch --filter"),
    ("context (budget 1000, approx, prefix)", "#ff7f0e", "context"),
    ("vsearch top-10 (long query: full scan)", "#d62728", "vsearch (long query)"),
]


def docs(work, out):
    points = []
    for path in glob.glob(os.path.join(work, "latency-*.tsv")):
        n = int(os.path.basename(path)[len("latency-"):-len(".tsv")])
        with open(path) as f:
            medians = {r["label"]: float(r["median_ms"]) for r in csv.DictReader(f, delimiter="\t")}
        points.append({"documents": n, **{key: medians[key] for key, _, _ in DOC_SERIES if key in medians}})
    points.sort(key=lambda p: p["documents"])
    if not points:
        sys.exit(f"no results under {work}")
    series = [s for s in DOC_SERIES if all(s[0] in p for p in points)]
    ymax = max(p[key] for p in points for key, _, _ in series) * 1.2
    body = panel(0, "search, whole process (median)", "milliseconds", points, series, ymax,
                 x="documents", xlabel="documents in the collection")
    write_svg(out, 440, body)
    for p in points:
        print(f"{p['documents']:>8} documents: " + ", ".join(f"{k} {p[k]:.0f} ms" for k, _, _ in series))


def main():
    if sys.argv[1] == "--docs":
        docs(sys.argv[2], sys.argv[3])
        return
    work, out = sys.argv[1], sys.argv[2]
    points = load(work)
    if not points:
        sys.exit(f"no results under {work}")
    index_max = max(p["index"] for p in points) * 1.2
    pack_max = max(max(p["p99"] for p in points) * 1.2, 500)
    body = panel(0, "cold index", "seconds", points, [("index", "#1f77b4", "index")], index_max)
    body += panel(
        440, "pack, whole process", "milliseconds", points,
        [("p50", "#2ca02c", "p50"), ("p99", "#d62728", "p99")], pack_max,
    )
    write_svg(out, 880, body)
    for p in points:
        print(f"{p['files']:>7} files {p['mb']:7.1f} MB: index {p['index']:6.1f} s, pack p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms")


if __name__ == "__main__":
    main()
