#!/usr/bin/env python3
"""How high `ctxpack query` ranks the code a task changes.

For every task of the task files (as `scripts/pack_recall.py --tasks-dir` keeps them, one
NAME.jsonl per repository), runs `ctxpack query GOAL --at PARENT --top-k 400` and finds the
first hit whose line range touches a hunk of the task's commit in a gold file (as
`ctxpack eval` places hunks) and the first hit in a gold file at all. Prints, over all the
tasks, how many have each within the first 1, 3, 10, 30 and 100 hits: the ranking a pack
selects from, without selection or cutting.

Usage: scripts/edit_ranks.py BINARY TASKS_DIR REPO...
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pack_recall as pr  # noqa: E402
from edit_misses import query as ranked  # noqa: E402

CUTS = (1, 3, 10, 30, 100)


def first(hits, keep):
    return next((i for i, h in enumerate(hits) if keep(*h)), None)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, tasks_dir, repos = sys.argv[1], sys.argv[2], sys.argv[3:]
    changed = {k: 0 for k in CUTS}
    gold_file = {k: 0 for k in CUTS}
    tasks = 0
    for repo in repos:
        name = os.path.basename(os.path.normpath(repo))
        for task in pr.load_tasks(os.path.join(tasks_dir, name + ".jsonl")):
            task_hunks = pr.hunks(repo, task)
            if not task_hunks:
                continue
            tasks += 1
            hits = ranked(binary, repo, task)
            gold = set(task["gold"])
            at = first(hits, lambda p, s, e: any(
                p == hp and s <= last and hf <= e for hp, hf, last in task_hunks))
            at_gold = first(hits, lambda p, s, e: p in gold)
            for k in CUTS:
                changed[k] += at is not None and at < k
                gold_file[k] += at_gold is not None and at_gold < k
    print(f"{tasks} tasks")
    print("within the first    " + "".join(f"{k:>7}" for k in CUTS))
    print("a changed hunk      " + "".join(f"{changed[k] / tasks:7.3f}" for k in CUTS))
    print("a gold file         " + "".join(f"{gold_file[k] / tasks:7.3f}" for k in CUTS))


if __name__ == "__main__":
    main()
