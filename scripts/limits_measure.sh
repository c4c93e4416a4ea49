#!/usr/bin/env bash
# Measures the bounded inputs of docs/limits.md for one ctxpack binary: the exit status, the
# wall-clock seconds and the peak RSS of each command, from GNU time (`/usr/bin/time -v`).
#
#   scripts/limits_measure.sh BINARY WORKDIR [CAP_KIB] [ONLY]
#
# BINARY is a release build of ctxpack; WORKDIR is created and filled with the inputs (the
# 2 GiB JSON Lines file is made once and reused). Commands that may not be bounded (the binary
# before the limits) run under `ulimit -v CAP_KIB` (default 8 GiB) and a `timeout`, so they
# cannot exhaust the machine; the table says when one was cut. ONLY, a case name, runs just
# that case. Prints one tab-separated line per case: name, exit, seconds, peak RSS in KiB and
# the start of its standard error.
set -u
bin=$(realpath "$1")
work=$2
cap=${3:-8388608}
only=${4:-}
inputs=$(realpath "$(dirname "$0")/limits_inputs.py")
mkdir -p "$work"
cd "$work" || exit 1

# A small indexed repository (its own store, made by this binary).
if [ ! -d repo ]; then
    mkdir repo
    (
        cd repo && git init -q && mkdir src
        for i in $(seq 1 20); do
            printf 'pub fn budget_%s(x: u64) -> u64 {\n    // budget check %s\n    x + %s\n}\n' "$i" "$i" "$i" > "src/f$i.rs"
        done
        echo "# demo" > README.md
        git add . && git -c user.email=l@l -c user.name=l commit -qm init
        "$bin" index > /dev/null 2>&1
    )
fi
[ -f big.jsonl ] || python3 "$inputs" docs-stream $((2 * 1024 * 1024 * 1024)) > big.jsonl
[ -f plus4000.ctx ] || python3 "$inputs" plus-plan 4000 > plus4000.ctx
[ -f plus600.ctx ] || python3 "$inputs" plus-plan 600 > plus600.ctx
[ -f chain4000.ctx ] || python3 "$inputs" ctx-chain 4000 > chain4000.ctx
for n in 5000 20000 50000; do
    [ -f "cands$n.json" ] || python3 "$inputs" candidates "$n" > "cands$n.json"
done
printf 'flow f\n  x = run("true")\n  ctx d\n    purpose "p"\n    budget 100\n    include x\n  emit d\n' > small.ctx

# once NAME SECONDS COMMAND...: runs COMMAND in repo/ under the cap and a timeout (in the
# foreground, so GNU time sees the command's own peak RSS); sets status, seconds and rss.
once() {
    local limit=$1
    shift
    (
        cd repo || exit 1
        ulimit -v "$cap"
        /usr/bin/time -v -o ../time.txt timeout --foreground -s KILL "$limit" "$@" \
            > ../out.txt 2> ../err.txt < "${STDIN:-/dev/null}"
    )
    status=$(sed -n 's/^\tExit status: //p' time.txt)
    if grep -q 'Command terminated by signal' time.txt; then
        status="signal $(sed -n 's/.*Command terminated by signal //p' time.txt)"
    fi
    [ "$status" = "137" ] && status="killed at ${limit} s"
    seconds=$(sed -n 's/^\tElapsed (wall clock) time (h:mm:ss or m:ss): //p' time.txt |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    rss=$(sed -n 's/^\tMaximum resident set size (kbytes): //p' time.txt)
}

# measure NAME SECONDS COMMAND...: one line for the case. A run under 5 s is repeated twice
# more and the median seconds and peak RSS are shown (the machine is shared and small).
measure() {
    local name=$1 limit=$2
    shift 2
    [ -n "$only" ] && [ "$only" != "$name" ] && return
    once "$limit" "$@"
    if awk -v s="$seconds" 'BEGIN { exit !(s < 5) }'; then
        local all_s=$seconds all_r=$rss
        for _ in 1 2; do
            once "$limit" "$@"
            all_s="$all_s $seconds"
            all_r="$all_r $rss"
        done
        seconds=$(echo "$all_s" | tr ' ' '\n' | sort -g | sed -n 2p)
        rss=$(echo "$all_r" | tr ' ' '\n' | sort -g | sed -n 2p)
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$seconds" "$rss" "$(head -c 160 err.txt | tr '\n\t' '  ')"
}

measure artifact-dev-zero 120 "$bin" artifact add /dev/zero --scope session
rm -rf docs.ctxpack && "$bin" docs create docs.ctxpack > /dev/null 2>&1
STDIN=../big.jsonl measure docs-import-2gib 900 "$bin" docs import ../docs.ctxpack c -
measure goal-70000 120 "$bin" pack "$(python3 -c 'print("x" * 70000)')"
measure plus-check 300 "$bin" plan check ../plus4000.ctx
measure plus-run 600 "$bin" plan run ../plus4000.ctx
measure plus-run-no-ledger 600 "$bin" plan run --no-ledger ../plus4000.ctx
measure plus600-run 600 "$bin" plan run ../plus600.ctx
measure chain-check 300 "$bin" plan check ../chain4000.ctx
measure chain-run 300 "$bin" plan run --no-ledger ../chain4000.ctx
for n in 5000 20000 50000; do
    # A budget everything fits in: the selector weighs every candidate to the end.
    measure "coverage-$n" 900 "$bin" select --selector coverage --budget 100000000 -i "../cands$n.json"
done
measure run-timeout-max 60 "$bin" plan run --allow-run --run-timeout 18446744073709551615 ../small.ctx
# Last: the ledger becomes a FIFO nobody writes to.
if [ -z "$only" ] || [ "$only" = log-fifo ]; then
    rm -rf repo/.ctxpack/ledger
    mkdir -p repo/.ctxpack/ledger
    mkfifo repo/.ctxpack/ledger/packs.jsonl
    measure log-fifo 5 "$bin" log
    rm -rf repo/.ctxpack/ledger
fi
