#!/usr/bin/env python3
"""Times two commands as whole processes, alternating them (A B A B …), and reports each one's
median wall and CPU time, its largest peak memory, and the median of the pairs' wall ratios
A/B: pairing keeps the ratio meaningful when a noisy machine's speed drifts.

    scripts/paired.py [-n RUNS] [--warmup N] 'COMMAND A' 'COMMAND B'

Each command is one string split as a shell splits words (no shell runs it); its output is
discarded. Python 3 standard library only; Linux or macOS (CPU and memory come from wait4).
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(argv):
    """Wall seconds, CPU seconds and peak memory (KiB) of one whole run; exits on failure."""
    start = time.monotonic()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"{shlex.join(argv)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=11, help="pairs to time (default 11)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed pairs first (default 1)")
    parser.add_argument("a")
    parser.add_argument("b")
    args = parser.parse_args()
    commands = {"A": shlex.split(args.a), "B": shlex.split(args.b)}
    for _ in range(args.warmup):
        for argv in commands.values():
            run(argv)
    times = {"A": [], "B": []}
    for _ in range(args.n):
        for name, argv in commands.items():
            times[name].append(run(argv))
    for name, runs in times.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        peak = max(r[2] for r in runs)
        print(f"{name}: wall {wall:.3f} s, cpu {cpu:.3f} s (medians of {args.n}), peak {peak} KiB")
    ratios = [a[0] / b[0] for a, b in zip(times["A"], times["B"])]
    print(f"A/B wall: median of the pairs {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
