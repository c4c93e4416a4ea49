#!/usr/bin/env bash
# Document-pack benchmark: import N documents of ~200 words with their embeddings (one pass;
# TWO_STEP=1 times import then vsync instead), declare an index of
# `status`, then time `docs vsearch` (top 10, with and without a filter) and `docs context` as
# whole processes. Short queries read only their columns of the vector file `vsync` writes
# beside the database; a long query reads all of it; the last line times the table scan
# searches fall back to when that file is missing or stale.
#
# Usage: scripts/bench_docs.sh [N] [WORKDIR]     (defaults: 100000, a temporary directory)
# Medians also go to WORKDIR/latency-N.tsv (scripts/bench_docs_scaling.sh plots them).
# Needs python3 (to generate the corpus) and a release build (built here). Peak RSS comes from
# /usr/bin/time -v when it exists; it counts the pages of the store that SQLite memory-maps.
set -euo pipefail

N=${1:-100000}
WORK=${2:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -p ctxpack --manifest-path "$ROOT/Cargo.toml" >&2
BIN="$ROOT/target/release/ctxpack"
STORE="$WORK/bench.ctxpack"
DOCS="$WORK/docs-$N.jsonl"

if [ ! -s "$DOCS" ]; then
    python3 "$ROOT/scripts/bench_docs_gen.py" "$N" > "$DOCS"
fi
rm -rf "$STORE"
LAT_TSV="$WORK/latency-$N.tsv"
printf 'label\tmedian_ms\tbest_ms\n' > "$LAT_TSV"
"$BIN" docs create "$STORE" >/dev/null

# Runs a command, printing its wall time and peak RSS.
measure() {
    local label=$1; shift
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "$label: %e s wall, %M KB peak RSS" "$@" >/dev/null
    else
        local start end
        start=$(date +%s.%N); "$@" >/dev/null; end=$(date +%s.%N)
        echo "$label: $(echo "$end - $start" | bc) s wall"
    fi
}

echo "corpus: $N documents, $(du -h "$DOCS" | cut -f1) of JSON Lines"
if [ "${TWO_STEP:-0}" = 1 ]; then
    # The two commands one after the other: import, then compute the embeddings.
    start=$(date +%s.%N)
    measure "import" "$BIN" docs import "$STORE" docs "$DOCS"
    measure "vsync" "$BIN" docs vsync "$STORE" docs text
    end=$(date +%s.%N)
    echo "import + vsync: $(python3 -c "print(round($end - $start, 2))") s"
else
    # One streaming pass: documents, embeddings and the vector file.
    measure "import --embed text" "$BIN" docs import "$STORE" docs "$DOCS" --embed text
fi
echo "store size: $(du -sh "$STORE" | cut -f1) (vector files: $(du -sh "$STORE/vectors" | cut -f1)); input $(du -h "$DOCS" | cut -f1)"
measure "index create (status)" "$BIN" docs index create "$STORE" docs status

# Whole-process latency: the mean and best of 20 runs each, after one warm-up.
latency() {
    local label=$1; shift
    "$@" >/dev/null
    python3 - "$LAT_TSV" "$label" "$@" <<'PY'
import subprocess, sys, time
tsv, label, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
times = []
for _ in range(20):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print(f"{label}: mean {sum(times) / len(times):.1f} ms, median {times[len(times) // 2]:.1f} ms, best {times[0]:.1f} ms (20 runs)")
with open(tsv, "a") as f:
    f.write(f"{label}\t{times[len(times) // 2]:.1f}\t{times[0]:.1f}\n")
PY
}

QUERY="basecake search budstore index"
# 120 distinct words: more non-zero components than a sparse scan reads.
LONG=$(python3 -c "print(' '.join(f'w{i}' for i in range(120)))")
latency "vsearch top-10" "$BIN" docs vsearch "$STORE" docs text "$QUERY"
latency "vsearch top-10 (long query: full scan)" "$BIN" docs vsearch "$STORE" docs text "$LONG"
latency "vsearch top-10 --filter status=published" "$BIN" docs vsearch "$STORE" docs text "$QUERY" --filter '{"status":"published"}'
latency "context (budget 1000, approx, prefix)" "$BIN" docs context "$STORE" docs text "$QUERY"
latency "context --selector skip --top-k 100" "$BIN" docs context "$STORE" docs text "$QUERY" --selector skip --top-k 100
measure "vsearch top-10 (RSS)" "$BIN" docs vsearch "$STORE" docs text "$QUERY"
measure "context (RSS)" "$BIN" docs context "$STORE" docs text "$QUERY"

# The fallback: the same search with the vector files moved aside (read from SQLite BLOBs).
mv "$STORE/vectors" "$WORK/vectors.aside"
latency "vsearch top-10 (table scan, no vector file)" "$BIN" docs vsearch "$STORE" docs text "$QUERY"
mv "$WORK/vectors.aside" "$STORE/vectors"
