#!/usr/bin/env bash
# Pack quality on real histories: ctxpack's default pipeline beside the bm25 and dump
# references, then one ablation per line. Prints Markdown tables (the ones in docs/quality.md).
#
#   cargo build --release
#   scripts/eval_quality.sh REPO...        # clones of the repositories to measure
#
# Each repository gets 40 tasks mined from its history; its own .ctxpack store is used (the
# first run indexes every task's parent, incrementally).
set -euo pipefail
bin=${CTXPACK:-$(cd "$(dirname "$0")/.." && pwd)/target/release/ctxpack}
budgets=${BUDGETS:-2000,8000,32000}

run() { # repo, label, extra args...
  local repo=$1 label=$2; shift 2
  "$bin" eval history --cwd "$repo" --commits 40 --budgets "$budgets" --format json "$@" |
    python3 -c '
import json, sys
label, repo = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
for r in d["results"]:
    name = label if r["ranker"] == "ctxpack" else r["ranker"]
    print("\t".join(map(str, [repo, name, r["budget"], r["fileRecall"], r["hitRate"], r["mrr"], r["tokenPrecision"], r["msPerPack"], d["tasks"]])))
' "$label" "$(basename "$repo")"
}

{
  for repo in "$@"; do
    run "$repo" "ctxpack"
    run "$repo" "diverse selector" --selector diverse --baseline none
    run "$repo" "skip selector" --selector skip --baseline none
    run "$repo" "no file evidence" --ablate file-evidence --baseline none
    run "$repo" "no test prior" --ablate test-prior --baseline none
    run "$repo" "plain chunk BM25" --ablate file-evidence,test-prior --baseline none
    run "$repo" "top-k fixed at 30" --top-k 30 --baseline none
  done
} | python3 -c '
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in sys.stdin if l.strip()]
budgets = sorted({int(r[2]) for r in rows})
repos = list(dict.fromkeys(r[0] for r in rows))
rankers = list(dict.fromkeys(r[1] for r in rows))
val = {(r[0], r[1], int(r[2])): r for r in rows}
print("### File recall by repository (ranker × budget)\n")
print("| ranker | budget | " + " | ".join(repos) + " | mean |")
print("| --- | --- | " + " | ".join("---" for _ in repos) + " | --- |")
for k in rankers:
    for b in budgets:
        xs = [float(val[(r, k, b)][3]) for r in repos if (r, k, b) in val]
        cells = [("%.3f" % float(val[(r, k, b)][3])) if (r, k, b) in val else "" for r in repos]
        print("| %s | %d | %s | **%.3f** |" % (k, b, " | ".join(cells), sum(xs) / max(len(xs), 1)))
print("\n### Means over the repositories\n")
print("| ranker | budget | recall | hit rate | MRR | token precision | ms/pack (median) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for k in rankers:
    for b in budgets:
        rs = [val[(r, k, b)] for r in repos if (r, k, b) in val]
        m = lambda i: sum(float(x[i]) for x in rs) / max(len(rs), 1)
        print("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.1f |" % (k, b, m(3), m(4), m(5), m(6), m(7)))
'
