#!/usr/bin/env python3
"""File recall of `ctxpack pack` as a user runs it: the pack command with its defaults.

`ctxpack eval history` measures the pipeline through the library; this script measures the
command itself. For every task it runs, with the repository as the working directory, exactly

    ctxpack pack GOAL --at PARENT --budget B --format json

(no other flag, so the meter, selector, candidate pool and indexing are the binary's defaults),
parses the JSON pack and scores the cited files against the task's gold files:

    file recall = |cited paths ∩ gold| / |gold|      (mean over tasks)
    body recall = share of gold files with at least min(10, the file's lines) of their lines
                  in the pack (the hits' line ranges, as far as their text goes)
    hit rate    = share of tasks with at least one gold file cited
    edit-location recall = share of the task commit's hunks in gold files (`git diff -U0`,
                  Myers, old side) that a hit's line range touches; a pure insertion counts
                  when the range touches the line it follows or the line after it (mean over
                  tasks whose commit is known)
    edit hit    = share of those tasks where at least one hunk is touched
    gold share  = share of the pack's hit tokens from gold files (mean over tasks)

A hit's path is its `path` field (else `location`, else the part of its citation
`path#Lx-Ly@sha` before `#L`). A pack that fails (non-zero exit) scores 0 and is counted as an
error.

Tasks: 40 per repository (`--commits`), mined by the binary's own miner,
`ctxpack eval history --cwd REPO --commits N --write-tasks FILE` (JSON Lines
{"goal", "at", "gold"}; the miner's own small evaluation run is discarded, but it indexes the
tasks' parents in the repository's store). With `--tasks-dir DIR` the task files are kept as
DIR/NAME.jsonl and reused when present, so two binaries can be measured on the same tasks.

Binaries that do not index on their own (before `pack` indexed an unindexed commit, it exited 3)
need `--prepare`: it runs `ctxpack index --at PARENT` once per task before packing. Give each
binary its own copy of the repositories so their default `.ctxpack` stores never mix.

Usage:

    scripts/pack_recall.py run --bin OLD --label old --tasks-dir T --prepare \\
        --json old.json /tmp/old/fd /tmp/old/click
    scripts/pack_recall.py run --bin NEW --label new --tasks-dir T \\
        --json new.json /tmp/new/fd /tmp/new/click
    scripts/pack_recall.py table old.json        # one label: repository x budget
    scripts/pack_recall.py compare old.json new.json   # before/after, one table per budget
    scripts/pack_recall.py compare --large cargo,terraform,mypy old.json new.json

`run` prints the Markdown table when done; `--budgets` defaults to 2000,8000,32000. Packs run
one at a time. Python 3 standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def mine(binary, repo, commits, path):
    """Writes `commits` tasks mined from `repo`'s history to `path` with the binary's miner."""
    cmd = [binary, "eval", "history", "--cwd", repo, "--commits", str(commits),
           "--write-tasks", path, "--budgets", "100", "--baseline", "none", "--format", "json"]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if not os.path.exists(path):
        sys.exit("mining failed in %s (exit %d): %s" % (repo, proc.returncode, proc.stderr[-2000:]))


def load_tasks(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def hit_path(hit):
    for key in ("path", "location"):
        value = hit.get(key)
        if isinstance(value, str) and value:
            return value.split("#L")[0]
        if isinstance(value, dict) and value.get("path"):
            return value["path"]
    citation = hit.get("citation", "")
    return citation.rsplit("#L", 1)[0] if "#L" in citation else None


def file_lines(repo, at, path, cache={}):
    """Lines of `path` at commit `at` (0 when it cannot be read)."""
    key = (repo, at, path)
    if key not in cache:
        proc = subprocess.run(["git", "cat-file", "-p", "%s:%s" % (at, path)], cwd=repo,
                              capture_output=True)
        text = proc.stdout if proc.returncode == 0 else b""
        cache[key] = text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)
    return cache[key]


def lines_shown(doc):
    """Path -> set of line numbers whose text the pack shows."""
    shown = {}
    for hit in doc.get("hits", []):
        path, start, end = hit_path(hit), hit.get("startLine"), hit.get("endLine")
        if not path or not isinstance(start, int) or not isinstance(end, int):
            continue
        text = hit.get("text") or ""
        end = min(end, start + text.count("\n") - (1 if text.endswith("\n") else 0))
        shown.setdefault(path, set()).update(range(start, end + 1))
    return shown


def body_found(repo, task, doc):
    """Gold files with at least min(10, their lines) lines in the pack."""
    shown = lines_shown(doc)
    return sum(1 for g in task["gold"]
               if len(shown.get(g, ())) >= max(1, min(10, file_lines(repo, task["at"], g))))


def hunks(repo, task, cache={}):
    """The task commit's hunks in its gold files as (path, first, last) lines of the parent's
    file a range must touch, as `ctxpack eval` places them; None without a commit."""
    commit = task.get("commit")
    if not commit:
        return None
    key = (repo, task["at"], commit)
    if key not in cache:
        proc = subprocess.run(["git", "-c", "diff.noprefix=false", "diff", "-U0", "--no-color",
                               "--no-ext-diff", "--no-renames", "--no-indent-heuristic",
                               "--diff-algorithm=myers", task["at"], commit, "--"] + task["gold"],
                              cwd=repo, capture_output=True, text=True, errors="replace")
        out, path = [], None
        for line in proc.stdout.splitlines():
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else None
            elif line.startswith("@@ ") and path:
                old = line.split()[1][1:]
                start, _, count = old.partition(",")
                start, count = int(start), int(count) if count else 1
                if count == 0:
                    out.append((path, max(start, 1), start + 1))
                else:
                    out.append((path, start, start + count - 1))
        cache[key] = out
    return cache[key]


def edits_shown(task_hunks, doc):
    """How many of the hunks a hit's line range touches."""
    ranges = {}
    for hit in doc.get("hits", []):
        path, start, end = hit_path(hit), hit.get("startLine"), hit.get("endLine")
        if path and isinstance(start, int) and isinstance(end, int):
            ranges.setdefault(path, []).append((start, end))
    return sum(1 for path, first, last in task_hunks
               if any(a <= last and first <= b for a, b in ranges.get(path, ())))


def gold_share(task, doc):
    """Share of the pack's hit tokens from gold files."""
    gold = set(task["gold"])
    total = in_gold = 0
    for hit in doc.get("hits", []):
        tokens = hit.get("tokens") or 0
        total += tokens
        if hit_path(hit) in gold:
            in_gold += tokens
    return in_gold / total if total else 0.0


def pack(binary, repo, task, budget):
    """Runs one pack; returns (cited paths or None on failure, JSON pack, seconds, exit code)."""
    cmd = [binary, "pack", task["goal"], "--at", task["at"], "--budget", str(budget),
           "--format", "json"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        return None, {}, seconds, proc.returncode
    doc = json.loads(proc.stdout)
    paths = {p for p in (hit_path(h) for h in doc.get("hits", [])) if p}
    return paths, doc, seconds, 0


def run_repo(args, repo):
    name = os.path.basename(os.path.normpath(repo))
    if args.tasks_dir:
        os.makedirs(args.tasks_dir, exist_ok=True)
        task_file = os.path.join(args.tasks_dir, name + ".jsonl")
    else:
        task_file = os.path.join(repo, ".ctxpack-recall-tasks.jsonl")
    if not os.path.exists(task_file):
        mine(args.bin, os.path.abspath(repo), args.commits, task_file)
    tasks = load_tasks(task_file)
    per = {b: {"recall": [], "body": [], "hit": [], "edits": [], "editHit": [], "goldShare": [],
               "used": [], "rendered": [], "seconds": [], "errors": 0} for b in args.budgets}
    per_task = []
    for i, task in enumerate(tasks):
        gold = set(task["gold"])
        per_task.append({"at": task["at"], "gold": sorted(gold), "recall": {}, "body": {},
                         "edits": {}, "cited": {}})
        task_hunks = hunks(repo, task)
        if args.prepare:
            subprocess.run([args.bin, "index", "--at", task["at"]], cwd=repo,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for b in args.budgets:
            paths, doc, seconds, code = pack(args.bin, repo, task, b)
            r = per[b]
            if paths is None:
                r["errors"] += 1
                paths = set()
                print("  %s task %d budget %d: exit %d" % (name, i, b, code), file=sys.stderr)
            found = len(gold & paths)
            r["recall"].append(found / len(gold) if gold else 0.0)
            per_task[-1]["recall"][str(b)] = r["recall"][-1]
            r["body"].append(body_found(repo, task, doc) / len(gold) if gold else 0.0)
            per_task[-1]["body"][str(b)] = r["body"][-1]
            per_task[-1]["cited"][str(b)] = sorted(paths)
            r["hit"].append(1.0 if found else 0.0)
            r["goldShare"].append(gold_share(task, doc))
            if task_hunks:
                shown = edits_shown(task_hunks, doc)
                r["edits"].append(shown / len(task_hunks))
                r["editHit"].append(1.0 if shown else 0.0)
                per_task[-1]["edits"][str(b)] = r["edits"][-1]
            r["used"].append(doc.get("usedTokens", 0))
            r["rendered"].append(doc.get("renderedTokens", doc.get("usedTokens", 0)))
            r["meter"] = doc.get("meter", r.get("meter"))
            r["seconds"].append(seconds)
        print("  %s: %d/%d tasks" % (name, i + 1, len(tasks)), file=sys.stderr)
    results = {}
    for b, r in per.items():
        results[str(b)] = {
            "recall": statistics.fmean(r["recall"]) if r["recall"] else 0.0,
            "bodyRecall": statistics.fmean(r["body"]) if r["body"] else 0.0,
            "hitRate": statistics.fmean(r["hit"]) if r["hit"] else 0.0,
            "editRecall": statistics.fmean(r["edits"]) if r["edits"] else 0.0,
            "editHit": statistics.fmean(r["editHit"]) if r["editHit"] else 0.0,
            "goldShare": statistics.fmean(r["goldShare"]) if r["goldShare"] else 0.0,
            "meanUsedTokens": statistics.fmean(r["used"]) if r["used"] else 0.0,
            # the whole printed pack where the binary reports it, else the content
            "meanRenderedTokens": statistics.fmean(r["rendered"]) if r["rendered"] else 0.0,
            "medianSeconds": statistics.median(r["seconds"]) if r["seconds"] else 0.0,
            "errors": r["errors"],
            "meter": r.get("meter"),
        }
    return name, {"tasks": len(tasks), "results": results, "perTask": per_task}


def table(doc):
    budgets = doc["budgets"]
    repos = list(doc["repos"])
    columns = (("recall", "recall"), ("bodyRecall", "body recall"), ("editRecall", "edit-location recall"),
               ("editHit", "edit hit"), ("goldShare", "gold share"), ("hitRate", "hit rate"))
    head = ["repository"] + ["%s @ %d" % (title, b) for _, title in columns for b in budgets]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in repos + ["mean"]:
        cells = [name if name != "mean" else "**mean**"]
        for key, _ in columns:
            for b in budgets:
                xs = [doc["repos"][r]["results"][str(b)].get(key, 0.0) for r in (repos if name == "mean" else [name])]
                cell = "%.3f" % statistics.fmean(xs)
                cells.append("**%s**" % cell if name == "mean" else cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "%s (%s)\n\n%s" % (doc["label"], doc["bin"], "\n".join(lines))


def compare(old, new, large=()):
    """Before/after tables, one per budget; `large` names repositories that get a mean of
    their own beside the mean of the others and of all."""
    repos = [r for r in old["repos"] if r in new["repos"]]
    groups = [("mean", repos)]
    if set(large) & set(repos):
        groups = [("mean of the others", [r for r in repos if r not in large]),
                  ("mean of " + ", ".join(r for r in repos if r in large),
                   [r for r in repos if r in large]),
                  ("mean of all", repos)]
    keys = (("recall", "recall"), ("bodyRecall", "body recall"), ("editRecall", "edit-location recall"),
            ("editHit", "edit hit"), ("goldShare", "gold share"), ("hitRate", "hit rate"))
    out = []
    for b in old["budgets"]:
        if b not in new["budgets"]:
            continue
        out.append("#### Budget %d\n" % b)
        head = ["repository"] + ["%s %s" % (label, title) for _, title in keys
                                 for label in (old["label"], new["label"])]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + " --- |" * len(head))
        rows = {}
        for r in repos:
            o, n = old["repos"][r]["results"][str(b)], new["repos"][r]["results"][str(b)]
            rows[r] = [(o.get(k, 0.0), n.get(k, 0.0)) for k, _ in keys]
        def line(name, cells, bold=False):
            fmt = "**%.3f**" if bold else "%.3f"
            text = [fmt % v for pair in cells for v in pair]
            out.append("| %s | %s |" % ("**%s**" % name if bold else name, " | ".join(text)))
        for r in repos:
            line(r, rows[r])
        for name, members in groups:
            cells = [tuple(statistics.fmean(rows[r][i][j] for r in members) for j in (0, 1))
                     for i in range(len(keys))]
            line(name, cells, bold=True)
        out.append("")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure one binary on some repositories")
    r.add_argument("--bin", required=True, help="the ctxpack binary")
    r.add_argument("--label", required=True, help="a name for this binary in tables")
    r.add_argument("--budgets", default="2000,8000,32000")
    r.add_argument("--commits", type=int, default=40, help="tasks per repository")
    r.add_argument("--tasks-dir", help="keep and reuse task files here (NAME.jsonl)")
    r.add_argument("--prepare", action="store_true", help="run `index --at PARENT` before packing")
    r.add_argument("--json", help="write the results here (updated after every repository)")
    r.add_argument("repos", nargs="+")
    t = sub.add_parser("table", help="print the table of a results file")
    t.add_argument("file")
    c = sub.add_parser("compare", help="before/after tables of two results files")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--large", default="", help="repositories with a mean of their own, comma-separated")
    args = parser.parse_args()

    if args.cmd == "table":
        print(table(json.load(open(args.file, encoding="utf-8"))))
        return
    if args.cmd == "compare":
        old = json.load(open(args.old, encoding="utf-8"))
        new = json.load(open(args.new, encoding="utf-8"))
        print(compare(old, new, [r for r in args.large.split(",") if r]))
        return
    args.bin = os.path.abspath(args.bin)
    args.budgets = [int(b) for b in args.budgets.split(",")]
    doc = {"label": args.label, "bin": args.bin, "budgets": args.budgets, "repos": {}}
    if args.json and os.path.exists(args.json):
        previous = json.load(open(args.json, encoding="utf-8"))
        if previous.get("budgets") == args.budgets:
            doc["repos"] = previous["repos"]
    for repo in args.repos:
        name, result = run_repo(args, repo)
        doc["repos"][name] = result
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
    print(table(doc))


if __name__ == "__main__":
    main()
