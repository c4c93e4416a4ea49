#!/usr/bin/env bash
# Pack quality on real histories: ctxpack's default pipeline beside the bm25 and dump
# references, then one ablation per line. Prints Markdown tables (the ones in docs/quality.md).
#
#   cargo build --release
#   scripts/eval_quality.sh REPO...        # clones of the repositories to measure
#   LARGE="cargo terraform mypy" BUDGETS=2000,8000 scripts/eval_quality.sh ../fd ... ../mypy
#   GOLD=prose scripts/eval_quality.sh ...   # tasks about the documentation instead of the code
#   GOLD=changelog scripts/eval_quality.sh ... # tasks about the change log and release notes
#
# Each repository gets 40 tasks mined from its history; its own .ctxpack store is used (the
# first run indexes every task's parent, incrementally). Repositories named in LARGE (by
# directory name) get a mean of their own beside the mean of the others and of all.
set -euo pipefail
bin=${CTXPACK:-$(cd "$(dirname "$0")/.." && pwd)/target/release/ctxpack}
budgets=${BUDGETS:-2000,8000,32000}
gold=${GOLD:-code}

run() { # repo, label, extra args...
  local repo=$1 label=$2; shift 2
  "$bin" eval history --cwd "$repo" --gold "$gold" --commits 40 --budgets "$budgets" --format json "$@" |
    python3 -c '
import json, sys
label, repo = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
for r in d["results"]:
    name = label if r["ranker"] == "ctxpack" else r["ranker"]
    print("\t".join(map(str, [repo, name, r["budget"], r["fileRecall"], r["hitRate"], r["mrr"], r.get("goldShare", r.get("tokenPrecision")), r["msPerPack"], d["tasks"], r.get("bodyRecall", 0), r.get("editRecall") or 0, r.get("editHit") or 0])))
' "$label" "$(basename "$repo")"
}

{
  for repo in "$@"; do
    run "$repo" "ctxpack" --baseline bm25,bm25-path,dump
    run "$repo" "no co-change" --ablate cochange --baseline none
    run "$repo" "no history" --ablate history --baseline none
    run "$repo" "neither (no history signals)" --ablate history,cochange --baseline none
    run "$repo" "no imports" --ablate imports --baseline none
    run "$repo" "diverse selector" --selector diverse --baseline none
    run "$repo" "skip selector" --selector skip --baseline none
    run "$repo" "no file evidence" --ablate file-evidence --baseline none
    run "$repo" "no test prior" --ablate test-prior --baseline none
    run "$repo" "plain chunk BM25" --ablate file-evidence,test-prior --baseline none
    run "$repo" "top-k fixed at 30" --top-k 30 --baseline none
  done
} | python3 -c '
import os, sys
rows = [l.rstrip("\n").split("\t") for l in sys.stdin if l.strip()]
budgets = sorted({int(r[2]) for r in rows})
repos = list(dict.fromkeys(r[0] for r in rows))
rankers = list(dict.fromkeys(r[1] for r in rows))
val = {(r[0], r[1], int(r[2])): r for r in rows}
large = set(os.environ.get("LARGE", "").split())
groups = [("mean", repos)]
if large & set(repos):
    groups = [("mean of the others", [r for r in repos if r not in large]),
              ("mean of " + ", ".join(r for r in repos if r in large), [r for r in repos if r in large]),
              ("mean of all", repos)]
def mean(xs):
    return sum(xs) / max(len(xs), 1)
for title, col in (("File recall", 3), ("Body recall", 9), ("Edit-location recall", 10), ("Edit hit", 11), ("Gold share", 6)):
    print("### %s by repository (ranker × budget)\n" % title)
    print("| ranker | budget | " + " | ".join(repos) + " | " + " | ".join(g for g, _ in groups) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in repos + groups) + " |")
    for k in rankers:
        for b in budgets:
            cells = [("%.3f" % float(val[(r, k, b)][col])) if (r, k, b) in val else "" for r in repos]
            means = ["**%.3f**" % mean([float(val[(r, k, b)][col]) for r in g if (r, k, b) in val]) for _, g in groups]
            print("| %s | %d | %s | %s |" % (k, b, " | ".join(cells), " | ".join(means)))
    print()
print("### Means over all the repositories\n")
print("| ranker | budget | recall | body recall | edit-location recall | edit hit | gold share | hit rate | MRR | ms/pack (median) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for k in rankers:
    for b in budgets:
        rs = [val[(r, k, b)] for r in repos if (r, k, b) in val]
        m = lambda i: mean([float(x[i]) for x in rs])
        print("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f |" % (k, b, m(3), m(9), m(10), m(11), m(6), m(4), m(5), m(7)))
'
