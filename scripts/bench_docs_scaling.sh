#!/usr/bin/env bash
# Search latency as a collection grows: runs scripts/bench_docs.sh at 100,000, 300,000 and
# 1,000,000 documents in WORK_DIR (each corpus is generated once and kept there) and draws
# docs/scaling-docs.svg from the medians.
#
#   scripts/bench_docs_scaling.sh [WORK_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/target/bench-docs}
mkdir -p "$work"
for n in ${SIZES:-100000 300000 1000000}; do
  "$root/scripts/bench_docs.sh" "$n" "$work" | tee "$work/run-$n.log"
  rm -rf "$work/bench.ctxpack"
done
python3 "$root/scripts/plot_scaling.py" --docs "$work" "$root/docs/scaling-docs.svg"
