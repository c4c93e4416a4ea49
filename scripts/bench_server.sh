#!/usr/bin/env bash
# Load test of `ctxpack serve`: two server processes on one state directory, CLIENTS agents
# (one read token each) packing for SECONDS, while the first process indexes the repository's
# previous commits one by one (a writer at work beside the readers).
#
# Usage: scripts/bench_server.sh REPO [CLIENTS] [SECONDS]
#   REPO      a git repository (its HEAD is indexed first; packs ask for its commit subjects)
#   CLIENTS   concurrent clients (default 32)
#   SECONDS   how long (default 60)
# Environment: CTXPACK (the binary; default target/release/ctxpack), INDEX_BEHIND (how many
# earlier commits the first process indexes during the run; default 10), CTXPACK_DATABASE (a
# PostgreSQL URL: the registry, ledger and snapshots go there, and each process gets a state
# directory of its own, so the second one packs from snapshots it copies from the database).
set -euo pipefail
repo=$(cd "$1" && pwd)
clients=${2:-32}
seconds=${3:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${CTXPACK:-$here/target/release/ctxpack}
behind=${INDEX_BEHIND:-10}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
state=$work/state

"$bin" serve repo add bench "$repo" --state "$state" >/dev/null
"$bin" -q serve token create --repo bench --scope write --name indexer --state "$state" >"$work/write"
for i in $(seq 1 "$clients"); do
  "$bin" -q serve token create --repo bench --name "agent-$i" --state "$state"
done >"$work/tokens"
git -C "$repo" log --format=%s -n 50 >"$work/goals"

pids=()
for s in a b; do
  dir=$state
  [ -n "${CTXPACK_DATABASE:-}" ] && dir=$work/state-$s
  "$bin" serve --listen 127.0.0.1:0 --state "$dir" --root "$repo" 2>"$work/$s.log" &
  pids+=($!)
done
url() {
  for _ in $(seq 1 100); do
    grep -q listening "$work/$1.log" 2>/dev/null && break
    sleep 0.1
  done
  sed -n 's/.*listening on //p' "$work/$1.log" | head -1
}
a=$(url a)
b=$(url b)
write=$(cat "$work/write")
index() {
  curl -sf -X POST -H "Authorization: Bearer $write" -d "{\"at\": \"$2\"}" "$1/v1/repos/bench/index"
}
echo "index HEAD on $a:"
started=$(date +%s.%N)
index "$a" "$(git -C "$repo" rev-parse HEAD)"
printf '\nwhole request (with publishing, on a database): %.2f s\n' "$(echo "$(date +%s.%N) - $started" | bc)"
# The first pack on the second process (on a database: it copies the snapshot into its cache).
started=$(date +%s.%N)
curl -sf -o /dev/null -X POST -H "Authorization: Bearer $(head -1 "$work/tokens")" \
  -d '{"goal": "first pack", "index": false}' "$b/v1/repos/bench/pack"
printf 'first pack on the second process: %.2f s\n' "$(echo "$(date +%s.%N) - $started" | bc)"

# The first process indexes earlier commits while both answer packs.
(
  for sha in $(git -C "$repo" rev-list --first-parent -n "$behind" HEAD~1); do
    index "$a" "$sha" | sed -n 's/.*"processed":\([0-9]*\).*"seconds":\([0-9.]*\).*/indexed: \1 files in \2 s/p'
  done
) &
python3 "$here/scripts/load_server.py" --urls "$a,$b" --repo bench --tokens "$work/tokens" \
  --goals "$work/goals" --clients "$clients" --seconds "$seconds"
wait %% 2>/dev/null || true
for i in 0 1; do
  printf 'server %s peak RSS: %s MB\n' "$i" \
    "$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' /proc/"${pids[$i]}"/status)"
done
