#!/usr/bin/env bash
# Builds the repository the committed store fixtures were indexed from, deterministically (fixed
# names and dates, so the commits have the same ids everywhere), and with --store DIR also
# writes a store of the format the given ctxpack binary writes.
#
#   scripts/make_store_fixture.sh REPO_DIR [CTXPACK_BINARY STORE_DIR]
#
# crates/ctxpack/tests/fixtures/store-v1 was written by the release of store format 1.
set -euo pipefail
repo=$1
bin=${2:-}
store=${3:-}
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=Fixture GIT_AUTHOR_EMAIL=fixture@example.invalid
export GIT_COMMITTER_NAME=Fixture GIT_COMMITTER_EMAIL=fixture@example.invalid
mkdir -p "$repo/src"
cd "$repo"
git init -q -b main
cat > src/budget.rs <<'RS'
//! Budget enforcement.

/// Admits a hit only if it fits the remaining budget.
pub fn enforce_budget(remaining: u64, cost: u64) -> bool {
    cost <= remaining
}
RS
cat > README.md <<'MD'
# Fixture

A repository about budgets, retries and secrets.
MD
printf 'AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n' > config.env
git add -A
GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' git commit -q -m "first"
cat > src/retry.rs <<'RS'
//! The HTTP client.

/// Retries a request with exponential backoff.
pub fn retry_with_backoff(attempts: u32) -> u32 {
    attempts * 2
}
RS
git add -A
GIT_AUTHOR_DATE='2026-01-02T00:00:00Z' GIT_COMMITTER_DATE='2026-01-02T00:00:00Z' git commit -q -m "second: retries"
if [[ -z "$bin" ]]; then
    exit 0
fi
"$bin" index --at "$(git rev-parse HEAD~1)" --store "$store" > /dev/null
"$bin" index --store "$store" > /dev/null
printf 'test budget::enforce ... FAILED\nremaining budget went negative\n' \
    | "$bin" artifact add - --scope evidence --id ci-17 --store "$store" > /dev/null
"$bin" pack "how are budgets enforced" --store "$store" > /dev/null
"$bin" pack "retry with backoff" --scope all --format json --store "$store" > /dev/null
"$bin" docs insert "$store" notes '{"_id":1,"text":"database search and indexing"}' > /dev/null
"$bin" docs insert "$store" notes '{"_id":2,"text":"chocolate cake recipe"}' > /dev/null
"$bin" docs vsync "$store" notes text > /dev/null
"$bin" docs context "$store" notes text "database search" > /dev/null
rm -f "$store/writer.lock"
