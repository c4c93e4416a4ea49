#!/usr/bin/env bash
# Snapshot benchmark: cold index, incremental index of a one-file child commit, and `pack` as a
# whole process, with peak memory. Works on a scratch clone, never on REPO itself.
#
#   cargo build --release
#   scripts/bench_snapshot.sh /path/to/repo ["goal"] [pack runs]
#
# Prints one line per measurement. Wall-clock figures are noisy on shared machines: run it
# twice and compare.
set -euo pipefail

repo=${1:?usage: bench_snapshot.sh REPO [GOAL] [RUNS]}
goal=${2:-"how is the configuration loaded"}
runs=${3:-21}
bin=${CTXPACK:-$(cd "$(dirname "$0")/.." && pwd)/target/release/ctxpack}
[ -x "$bin" ] || { echo "build first: cargo build --release ($bin missing)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q --no-local "$repo" "$work/repo"
cd "$work/repo"
git config user.name bench && git config user.email bench@example.invalid
files=$(git ls-files | wc -l)
bytes=$(git ls-files -z | xargs -0 cat 2>/dev/null | wc -c)
echo "repository: $(basename "$repo") at $(git rev-parse --short HEAD), $files files, $((bytes / 1000000)) MB"

measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  read -r secs kb <<<"$(tail -n 1 "$work/err")"
  printf '%-34s %8.2f s   peak RSS %6d MB\n' "$label" "$secs" $((kb / 1024))
}

measure "index (cold)" "$bin" index
echo "// benchmark edit" >> "$(git ls-files '*.rs' '*.py' '*.go' '*.ts' '*.js' | head -n 1)"
git commit -qam "one-file change"
measure "index (child, one file changed)" "$bin" index

times=()
for _ in $(seq "$runs"); do
  start=$EPOCHREALTIME
  "$bin" pack "$goal" >/dev/null
  end=$EPOCHREALTIME
  times+=("$(echo "($end - $start) * 1000" | bc -l)")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf '%-34s %8.1f ms (median of %d)\n' "pack (whole process)" "$median" "$runs"
measure "pack (peak memory)" "$bin" pack "$goal"
measure "pack --meter o200k --budget 8000" "$bin" pack "$goal" --meter o200k --budget 8000
