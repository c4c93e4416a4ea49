#!/usr/bin/env bash
# Index and pack time as the tree grows: builds monorepos of about 10,000, 30,000 and 100,000
# files (and the whole set) from the parts in SRC with scripts/monorepo.sh, measures each with
# scripts/bench_monorepo.sh, and draws docs/scaling-monorepo.svg.
#
#   cargo build --release
#   scripts/bench_scaling.sh SRC [WORK_DIR]
set -euo pipefail

src=${1:?usage: bench_scaling.sh SRC [WORK_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-$root/target/bench-scaling}
mkdir -p "$work"
for size in ${SIZES:-10000 30000 100000 0}; do
  name=$([ "$size" = 0 ] && echo all || echo "$size")
  REPLAY=${REPLAY:-10} "$root/scripts/monorepo.sh" "$src" "$work/mono-$name" "$size" | tail -n 2
  "$root/scripts/bench_monorepo.sh" "$work/mono-$name" "$work/results-$name"
  rm -rf "$work/results-$name/store"
done
python3 "$root/scripts/plot_scaling.py" "$work" "$root/docs/scaling-monorepo.svg"
