#!/usr/bin/env bash
# Cold `ctxpack index` beside Repomix on the same tree, in one run: the two alternate (ctxpack,
# Repomix, ctxpack, …) on a scratch clone, so a machine whose speed drifts slows both alike.
# Prints each run's wall seconds and peak memory, the medians, and the median of the per-pair
# ratios.
#
#   cargo build --release
#   npm install --prefix /tmp/repomix repomix@1.14     # or any `repomix` on PATH
#   REPOMIX=/tmp/repomix/node_modules/.bin/repomix scripts/bench_vs_repomix.sh /path/to/repo [runs]
set -euo pipefail

repo=${1:?usage: bench_vs_repomix.sh REPO [RUNS]}
runs=${2:-3}
bin=${CTXPACK:-$(cd "$(dirname "$0")/.." && pwd)/target/release/ctxpack}
repomix=${REPOMIX:-repomix}
[ -x "$bin" ] || { echo "build first: cargo build --release ($bin missing)" >&2; exit 2; }
command -v "$repomix" >/dev/null || { echo "no repomix: set REPOMIX=/path/to/repomix" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q --no-local "$repo" "$work/repo"
cd "$work/repo"
files=$(git ls-files | wc -l)
echo "repository: $(basename "$repo") at $(git rev-parse --short HEAD), $files files; $("$repomix" --version | tail -n 1) as repomix"

run() { # output variable prefix, command...
  local prefix=$1; shift
  /usr/bin/time -f "%e %M" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  read -r secs kb <<<"$(tail -n 1 "$work/err")"
  eval "${prefix}_secs=$secs; ${prefix}_mb=$((kb / 1024))"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ours=() theirs=() ratios=()
for i in $(seq "$runs"); do
  rm -rf .ctxpack
  run a "$bin" index --quiet
  run b "$repomix" --quiet -o "$work/out.xml" .
  printf 'run %d: ctxpack index %6.2f s (%4d MB)   repomix %6.2f s (%4d MB)\n' \
    "$i" "$a_secs" "$a_mb" "$b_secs" "$b_mb"
  ours+=("$a_secs") theirs+=("$b_secs")
  ratios+=("$(awk -v a="$a_secs" -v b="$b_secs" 'BEGIN { printf "%.3f", a / b }')")
done
printf 'median: ctxpack index %.2f s, repomix %.2f s, ratio of pairs %.2f\n' \
  "$(printf '%s\n' "${ours[@]}" | median)" \
  "$(printf '%s\n' "${theirs[@]}" | median)" \
  "$(printf '%s\n' "${ratios[@]}" | median)"
