#!/usr/bin/env bash
# Measures ctxpack on a monorepo built by scripts/monorepo.sh: a cold index of its base commit,
# the index of each replayed commit with the store's size after it, and whole-process packs of
# GOALS goals (the replayed commits' subjects) at its last commit.
#
#   cargo build --release
#   scripts/monorepo.sh SRC /tmp/mono
#   scripts/bench_monorepo.sh /tmp/mono [RESULTS_DIR]
#
# Writes RESULTS_DIR/cold.tsv, replay.tsv and packs.tsv (default: target/bench-monorepo) and
# prints a summary. Peak memory is split into anonymous memory and file-backed pages (the git
# pack files, which the kernel maps and may drop at will), read from /proc while each run goes.
set -euo pipefail

mono=${1:?usage: bench_monorepo.sh MONOREPO [RESULTS_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
results=${2:-$root/target/bench-monorepo}
bin=${CTXPACK:-$root/target/release/ctxpack}
goals=${GOALS:-50}
[ -x "$bin" ] || { echo "build first: cargo build --release ($bin missing)" >&2; exit 2; }
mkdir -p "$results"
store=$results/store
# SKIP_INDEX=1 measures packs on the store a previous run left.
skip_index=${SKIP_INDEX:-0}
[ "$skip_index" = 1 ] || rm -rf "$store"

# Runs a command; prints "wall_seconds peak_rss_mb peak_anon_mb": the first two from
# /usr/bin/time, the last sampled from /proc every 20 ms (so it can miss a short peak).
measure() {
  local timer pid anon=0 a
  /usr/bin/time -f "%e %M" -o "$results/time" "$@" >/dev/null 2>"$results/err" &
  timer=$!
  while kill -0 "$timer" 2>/dev/null; do
    pid=${pid:-$(pgrep -P "$timer" || true)}
    if [ -n "$pid" ] && a=$(awk '/^RssAnon/ { print $2 }' "/proc/$pid/status" 2>/dev/null) && [ -n "$a" ]; then
      [ "$a" -gt "$anon" ] && anon=$a
    fi
    sleep 0.02
  done
  wait "$timer" || { cat "$results/err" >&2; exit 1; }
  read -r secs kb <"$results/time"
  echo "$secs $((kb / 1024)) $((anon / 1024))"
}

quantile() { # q, reads numbers: the value at that quantile
  sort -g | awk -v q="$1" '{ v[NR] = $1 } END { i = int(NR * q + 0.999); if (i < 1) i = 1; print v[i] }'
}

if [ "$skip_index" != 1 ]; then
base=$(cat "$mono/base")
bytes=$(GIT_DIR=$mono git ls-tree -r -l "$base" | awk '$4 != "-" { s += $4 } END { print s + 0 }')
files=$(GIT_DIR=$mono git ls-tree -r "$base" | wc -l)
read -r secs rss anon < <(measure "$bin" index --cwd "$mono" --store "$store" --at "$base" --quiet)
printf 'files\tbytes\tseconds\tmb_per_s\tpeak_rss_mb\tpeak_anon_mb\tstore_bytes\n' >"$results/cold.tsv"
printf '%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\n' "$files" "$bytes" "$secs" \
  "$(echo "$bytes / 1000000 / $secs" | bc -l)" "$rss" "$anon" "$(du -sb "$store" | cut -f1)" >>"$results/cold.tsv"
printf 'cold index: %d files, %d MB in %.1f s (%.2f MB/s); peak RSS %d MB (%d MB anonymous)\n' \
  "$files" "$((bytes / 1000000))" "$secs" "$(echo "$bytes / 1000000 / $secs" | bc -l)" "$rss" "$anon"

printf 'n\tcommit\tseconds\tpeak_rss_mb\tstore_bytes\n' >"$results/replay.tsv"
n=0
while read -r commit; do
  n=$((n + 1))
  read -r secs rss _ < <(measure "$bin" index --cwd "$mono" --store "$store" --at "$commit" --quiet)
  printf '%d\t%s\t%.3f\t%s\t%s\n' "$n" "$commit" "$secs" "$rss" "$(du -sb "$store" | cut -f1)" >>"$results/replay.tsv"
done <"$mono/replayed"
times=$(tail -n +2 "$results/replay.tsv" | cut -f3)
sizes=$(tail -n +2 "$results/replay.tsv" | cut -f5)
printf 'replayed %d commits: index median %s s, max %s s; the store grew %d bytes a commit on average\n' \
  "$(echo "$times" | wc -l)" "$(echo "$times" | quantile 0.5)" "$(echo "$times" | quantile 1)" \
  "$(echo "$sizes" | awk 'NR == 1 { a = $1 } { b = $1; n = NR } END { print (b - a) / (n - 1) }')"

fi

head=$(GIT_DIR=$mono git rev-parse HEAD)
printf 'goal\tseconds\tpeak_rss_mb\n' >"$results/packs.tsv"
GIT_DIR=$mono git log --format=%s -n "$goals" "$head" | while IFS= read -r goal; do
  read -r secs rss _ < <(measure "$bin" pack "$goal" --cwd "$mono" --store "$store" --at "$head" --no-ledger --quiet)
  printf '%s\t%.3f\t%s\n' "$goal" "$secs" "$rss" >>"$results/packs.tsv"
done
times=$(tail -n +2 "$results/packs.tsv" | cut -f2)
printf 'pack (%d goals, whole process): p50 %s s, p99 %s s, peak RSS %s MB\n' \
  "$(echo "$times" | wc -l)" "$(echo "$times" | quantile 0.5)" "$(echo "$times" | quantile 0.99)" \
  "$(tail -n +2 "$results/packs.tsv" | cut -f3 | quantile 1)"
