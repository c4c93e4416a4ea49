#!/usr/bin/env bash
# Times each page of the web view (`ctxpack serve`'s /ui) with a ledger of PACKS real packs.
#
# Usage: scripts/bench_ui.sh REPO [PACKS] [REQUESTS]
#   REPO      a git repository (its HEAD is indexed; packs ask for its commit subjects)
#   PACKS     packs to record first (default 10000)
#   REQUESTS  requests per page (default 100)
# Environment: CTXPACK (the binary; default target/release/ctxpack), REPORT (an evaluation
# report for the quality page), CTXPACK_DATABASE (a PostgreSQL URL: the ledger goes there).
set -euo pipefail
repo=$(cd "$1" && pwd)
packs=${2:-10000}
requests=${3:-100}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${CTXPACK:-$here/target/release/ctxpack}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
state=$work/state

"$bin" serve repo add bench "$repo" --state "$state" >/dev/null
"$bin" -q serve token create --repo bench --scope write --name bench --state "$state" >"$work/token"
git -C "$repo" log --format=%s -n 200 >"$work/goals"
report=()
[ -n "${REPORT:-}" ] && report=(--eval-report "$REPORT")
"$bin" serve --listen 127.0.0.1:0 --state "$state" --root "$repo" --rate-limit 100000 \
  "${report[@]}" 2>"$work/serve.log" &
for _ in $(seq 1 100); do
  grep -q listening "$work/serve.log" 2>/dev/null && break
  sleep 0.1
done
url=$(sed -n 's/.*listening on //p' "$work/serve.log" | head -1)
token=$(cat "$work/token")
curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" \
  -d "{\"at\": \"$(git -C "$repo" rev-parse HEAD)\"}" "$url/v1/repos/bench/index"
python3 "$here/scripts/bench_ui.py" "$url" bench "$token" "$work/goals" "$packs" "$requests"
