#!/usr/bin/env python3
"""Where `ctxpack pack` loses the lines a task changes.

For every task of a task file (as `scripts/pack_recall.py` mines them) and every budget, packs
the goal at the task's parent and classes the result: a changed line shown; no gold file cited;
or the chunk that holds a changed hunk (the first such among `ctxpack query --top-k 400`'s hits)
in the pack but cut to other lines, or left out, by its rank.

Usage: scripts/edit_misses.py BINARY TASKS.jsonl REPO 2000,8000
"""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pack_recall as pr  # noqa: E402

def query(binary, repo, task, k=400):
    p = subprocess.run([binary, 'query', task['goal'], '--at', task['at'], '--top-k', str(k), '--format', 'json'],
                       cwd=repo, capture_output=True, text=True)
    if p.returncode: return []
    doc = json.loads(p.stdout)
    hits = doc['hits'] if isinstance(doc, dict) else doc
    out = []
    for h in hits:
        path = pr.hit_path(h)
        m = re.search(r'#L(\d+)-L(\d+)', h.get('citation', ''))
        if not m: continue
        s, e = int(m.group(1)), int(m.group(2))
        out.append((path, s, e))
    return out

def main():
    binary, tasks_file, repo = sys.argv[1:4]
    budgets = [int(b) for b in sys.argv[4].split(',')]
    tasks = pr.load_tasks(tasks_file)
    counts = {b: collections.Counter() for b in budgets}
    for t in tasks:
        hs = pr.hunks(repo, t)
        if not hs: continue
        q = query(binary, repo, t)
        first = next((i for i, (p, s, e) in enumerate(q) if any(hp == p and s <= hl and hf <= e for hp, hf, hl in hs)), None)
        for b in budgets:
            paths, doc, _, code = pr.pack(binary, repo, t, b)
            if paths is None: counts[b]['error'] += 1; continue
            if pr.edits_shown(hs, doc): counts[b]['hit'] += 1; continue
            if not (paths & set(t['gold'])): counts[b]['no gold file'] += 1; continue
            if first is None: counts[b]['gold file, hunk chunk not in top 400'] += 1; continue
            p, s, e = q[first]
            overl = any(pr.hit_path(h) == p and h.get('startLine', 0) <= e and s <= h.get('endLine', 0) for h in doc['hits'])
            bucket = 'rank<5' if first < 5 else 'rank<15' if first < 15 else 'rank<50' if first < 50 else 'rank>=50'
            counts[b][('gold file, chunk in pack but cut elsewhere ' if overl else 'gold file, chunk not in pack ') + bucket] += 1
    for b in budgets:
        n = sum(counts[b].values())
        print(f'{repo} budget {b} tasks {n}')
        for k, v in sorted(counts[b].items(), key=lambda kv: -kv[1]): print(f'   {v:3d} {k}')
if __name__ == "__main__": main()
