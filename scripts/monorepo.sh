#!/usr/bin/env bash
# Builds a benchmark monorepo from real public repositories placed side by side, one
# directory each, in one commit; then replays the last REPLAY first-parent commits of one of
# them as further monorepo commits (the others unchanged), so indexing a child commit and the
# store's growth per commit can be measured on a real history.
#
#   scripts/monorepo.sh SRC OUT [MAX_FILES]
#
# SRC holds one git repository per part listed below, named owner+name (a bare clone, or a
# directory with the git directory at owner+name/repo), for instance
#   git clone --bare https://github.com/rust-lang/cargo SRC/rust-lang+cargo
# Parts are taken in the order below until MAX_FILES files (default: all of them). OUT becomes
# a bare repository whose objects are borrowed from the parts (git alternates), so building it
# copies nothing; the parts must stay where they are while OUT is used. Blobs a part lacks (a
# clone that filtered them out) are left out of the tree, so every commit of OUT is whole.
# Prints each part with its commit, the totals, and the replayed commits, oldest first, to
# OUT/replayed. With OWN_PACK=1, OUT is then cloned into a repository of its own, as a real
# monorepo is: every object its commits reach in one pack (about 300 MB; 30 s), no alternates.
# Borrowed objects are spread over the parts' 23 packs, so each object read searches the
# pack indexes of the parts one after another.
set -euo pipefail
shopt -s inherit_errexit

src=${1:?usage: monorepo.sh SRC OUT [MAX_FILES]}
out=${2:?usage: monorepo.sh SRC OUT [MAX_FILES]}
max_files=${3:-0}
replay=${REPLAY:-100}
# The component whose history is replayed (it goes first, so every size includes it).
component=${COMPONENT:-rust-lang/cargo}
parts=(
  "$component"
  rust-lang/rust-analyzer
  vitejs/vite
  hashicorp/terraform
  denoland/deno
  biomejs/biome
  astral-sh/ruff
  moby/moby
  symfony/symfony
  spring-projects/spring-framework
  duckdb/duckdb
  apache/kafka
  istio/istio
  git/git
  ansible/ansible
  rails/rails
  bevyengine/bevy
  sympy/sympy
  tokio-rs/tracing
  encode/httpx
  pallets/click
  gin-gonic/gin
  sharkdp/fd
)

gitdir() { # owner/name -> its git directory under SRC
  local d="$src/${1/\//+}"
  if [ -d "$d/repo" ]; then echo "$d/repo"; else echo "$d"; fi
}

rm -rf "$out"
git init -q --bare "$out"
export GIT_DIR=$out
for part in "${parts[@]}"; do
  d=$(gitdir "$part")
  [ -d "$d" ] || { echo "missing part $part: expected a git repository at $d" >&2; exit 2; }
  echo "$(cd "$d" && pwd -P)/objects"
done | awk '!seen[$0]++' >"$out/objects/info/alternates"

# The tree of one part at one commit, without the blobs its clone lacks.
whole_tree() { # commit -> tree id
  local tree missing
  tree=$(git rev-parse "$1^{tree}")
  missing=$(git ls-tree -r "$tree" | awk '$2 == "blob" { print $3 }' |
    git cat-file --batch-check 2>/dev/null | awk '$2 == "missing" { print $1 }')
  if [ -z "$missing" ]; then
    echo "$tree"
    return
  fi
  local index empty
  index=$(mktemp -u) empty=$(mktemp -d)
  # A bare repository has no index of its own: a scratch one, and an empty work tree.
  export GIT_WORK_TREE=$empty
  GIT_INDEX_FILE=$index git read-tree "$tree"
  git ls-tree -r "$tree" | awk -v m="$missing" 'BEGIN { split(m, a, " "); for (i in a) miss[a[i]] = 1 }
    $2 == "blob" && ($3 in miss) { sub(/^[^\t]*\t/, ""); print }' |
    GIT_INDEX_FILE=$index git update-index --force-remove --stdin
  GIT_INDEX_FILE=$index git write-tree
  unset GIT_WORK_TREE
  rm -rf "$index" "$empty"
}

files_of() { git ls-tree -r "$1" | wc -l; }
bytes_of() { git ls-tree -r -l "$1" | awk '$4 != "-" { s += $4 } END { print s + 0 }'; }

# The component's history: REPLAY + 1 first-parent commits ending at its HEAD, oldest first.
comp_dir=$(gitdir "$component")
mapfile -t history < <(git --git-dir="$comp_dir" rev-list --first-parent -n $((replay + 1)) HEAD | tac)

declare -A trees
names=()
total_files=0 total_bytes=0
for part in "${parts[@]}"; do
  d=$(gitdir "$part")
  if [ "$part" = "$component" ]; then commit=${history[0]}; else commit=$(git --git-dir="$d" rev-parse HEAD); fi
  tree=$(whole_tree "$commit")
  n=$(files_of "$tree")
  if [ "$max_files" -gt 0 ] && [ "$total_files" -gt 0 ] && [ $((total_files + n)) -gt "$max_files" ]; then
    continue
  fi
  b=$(bytes_of "$tree")
  name=${part/\//+}
  trees[$name]=$tree
  names+=("$name")
  total_files=$((total_files + n)) total_bytes=$((total_bytes + b))
  printf '%-36s %s %7d files %6.1f MB\n' "$part" "$(git rev-parse --short=12 "$commit")" "$n" "$(echo "$b / 1000000" | bc -l)"
done
printf 'total: %d files, %.1f MB in %d parts\n' "$total_files" "$(echo "$total_bytes / 1000000" | bc -l)" "${#names[@]}"

root_tree() {
  for name in "${names[@]}"; do printf '040000 tree %s\t%s\n' "${trees[$name]}" "$name"; done | git mktree
}
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
head=$(echo "monorepo of ${#names[@]} parts" | git commit-tree "$(root_tree)")
echo "$head" >"$out/base"
: >"$out/replayed"
comp_name=${component/\//+}
for commit in "${history[@]:1}"; do
  trees[$comp_name]=$(whole_tree "$commit")
  subject=$(git log -1 --format=%s "$commit")
  head=$(printf '%s\n\n%s %s\n' "$subject" "$component" "$commit" | git commit-tree "$(root_tree)" -p "$head")
  echo "$head" >>"$out/replayed"
done
git update-ref refs/heads/main "$head"
git symbolic-ref HEAD refs/heads/main
echo "base commit $(cat "$out/base"); $(wc -l <"$out/replayed") replayed commits of $component; HEAD $head"
if [ "${OWN_PACK:-0}" = 1 ]; then
  unset GIT_DIR
  rm -rf "$out.borrowed"
  mv "$out" "$out.borrowed"
  git clone -q --bare --no-local "$out.borrowed" "$out"
  cp "$out.borrowed/base" "$out.borrowed/replayed" "$out/"
  rm -rf "$out.borrowed"
  echo "own pack: $(du -sh "$out/objects/pack" | cut -f1) in $out"
fi
