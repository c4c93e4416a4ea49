#!/usr/bin/env python3
"""Scores ctxpack's masker, detect-secrets and secretlint on the same secret corpus.

Not part of the test suite. It installs the two scanners (pinned versions) under
/tmp/ctxpack-secret-scanners, writes every corpus entry to its own file (named by the entry's
`file` field, so file-name heuristics apply as they would in a repository), runs each scanner
over those files, and prints a Markdown table for docs/security.md.

A positive counts as caught by a scanner when the scanner reports a finding on a line that
holds part of the entry's `secret`; ctxpack catches it when the secret no longer occurs in the
masked text. A negative counts as flagged when the scanner reports anything in its file
(ctxpack: when masking changes the text).

Both corpus files are scored, each on its own: `corpus.jsonl` (written together with the rules)
and `heldout.jsonl` (entries set aside before the rules for their shapes were written). Pass
paths to score other files instead. ctxpack runs as a debug build of the `mask_corpus` example,
so the script shares the build the test suite already made.

Usage (from the repository root):  python3 scripts/score_secret_scanners.py [CORPUS.jsonl ...]
"""

import json
import os
import shutil
import subprocess
import sys
import venv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPORA = [
    os.path.join(ROOT, "crates/ctxpack-core/tests/secrets/corpus.jsonl"),
    os.path.join(ROOT, "crates/ctxpack-core/tests/secrets/heldout.jsonl"),
    os.path.join(ROOT, "crates/ctxpack-core/tests/secrets/unseen.jsonl"),
]
WORK = "/tmp/ctxpack-secret-scanners"
DETECT_SECRETS = "detect-secrets==1.5.0"
SECRETLINT = ["secretlint@12.0.0", "@secretlint/secretlint-rule-preset-recommend@12.0.0"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=False, capture_output=True, text=True, **kw)


def install():
    env_dir = os.path.join(WORK, "venv")
    ds = os.path.join(env_dir, "bin", "detect-secrets")
    if not os.path.exists(ds):
        venv.create(env_dir, with_pip=True)
        subprocess.run([os.path.join(env_dir, "bin", "pip"), "install", "-q", DETECT_SECRETS], check=True)
    node_dir = os.path.join(WORK, "node")
    sl = os.path.join(node_dir, "node_modules", ".bin", "secretlint")
    if not os.path.exists(sl):
        os.makedirs(node_dir, exist_ok=True)
        subprocess.run(["npm", "init", "-y"], cwd=node_dir, check=True, capture_output=True)
        subprocess.run(["npm", "install", "--silent", *SECRETLINT], cwd=node_dir, check=True)
    with open(os.path.join(node_dir, ".secretlintrc.json"), "w") as f:
        json.dump({"rules": [{"id": "@secretlint/secretlint-rule-preset-recommend"}]}, f)
    return ds, sl, node_dir


def load_corpus(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_files(entries):
    files_dir = os.path.join(WORK, "files")
    shutil.rmtree(files_dir, ignore_errors=True)
    paths = {}
    for e in entries:
        d = os.path.join(files_dir, e["id"])
        path = os.path.join(d, e.get("file") or "sample.txt")
        # A file name may carry its directory (`config/database.yml`).
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(e["text"])
        paths[e["id"]] = path
    return files_dir, paths


def secret_lines(e):
    """1-based numbers of the lines that hold part of the entry's secret."""
    start = e["text"].index(e["secret"])
    first = e["text"].count("\n", 0, start) + 1
    return set(range(first, first + e["secret"].count("\n") + 1))


def score(entries, findings):
    """findings: id -> set of 1-based line numbers reported."""
    caught = flagged = 0
    missed, false_alarms = [], []
    for e in entries:
        lines = findings.get(e["id"], set())
        if e["kind"]:
            if lines & secret_lines(e):
                caught += 1
            else:
                missed.append(e["id"])
        elif lines:
            flagged += 1
            false_alarms.append(e["id"])
    return caught, flagged, missed, false_alarms


def detect_secrets(ds, files_dir, entries):
    out = run([ds, "scan", "--all-files", "."], cwd=files_dir)
    results = json.loads(out.stdout)["results"]
    findings = {}
    for name, items in results.items():
        entry_id = name.split("/", 1)[0]
        findings.setdefault(entry_id, set()).update(i["line_number"] for i in items)
    version = run([ds, "--version"]).stdout.strip()
    return findings, f"detect-secrets {version}"


def secretlint(sl, node_dir, files_dir):
    # Through a file: node cuts a large report short when it exits while stdout is a pipe.
    report = os.path.join(WORK, "secretlint.json")
    run([sl, os.path.join(files_dir, "**", "*"), "--format", "json", "--output", report,
         "--secretlintrc", os.path.join(node_dir, ".secretlintrc.json")], cwd=node_dir)
    with open(report) as f:
        results = json.load(f)
    findings = {}
    for result in results:
        rel = os.path.relpath(result["filePath"], files_dir)
        entry_id = rel.split(os.sep, 1)[0]
        for m in result["messages"]:
            lines = range(m["loc"]["start"]["line"], m["loc"]["end"]["line"] + 1)
            findings.setdefault(entry_id, set()).update(lines)
    version = run([sl, "--version"]).stdout.strip()
    return findings, f"secretlint {version} (preset-recommend)"


def ctxpack(entries, corpus):
    out = subprocess.run(
        ["cargo", "run", "-q", "-p", "ctxpack-core", "--example", "mask_corpus", "--", corpus],
        cwd=ROOT, check=True, capture_output=True, text=True)
    findings = {}
    by_id = {e["id"]: e for e in entries}
    for line in out.stdout.splitlines():
        entry_id, _, outcome = line.split("\t")
        if outcome == "masked":
            e = by_id[entry_id]
            # A masked positive is credited on its secret's lines; a changed negative anywhere.
            findings[entry_id] = secret_lines(e) if e["kind"] else {1}
    return findings, "ctxpack (this tree)"


def main():
    ds, sl, node_dir = install()
    for corpus in sys.argv[1:] or CORPORA:
        score_corpus(corpus, ds, sl, node_dir)
    return 0


def score_corpus(corpus, ds, sl, node_dir):
    entries = load_corpus(corpus)
    positives = sum(1 for e in entries if e["kind"])
    negatives = len(entries) - positives
    files_dir, _ = write_files(entries)
    rows = [ctxpack(entries, corpus), detect_secrets(ds, files_dir, entries),
            secretlint(sl, node_dir, files_dir)]
    print(f"\n## {os.path.relpath(corpus, ROOT)}: {positives} positives, {negatives} negatives\n")
    print("| scanner | positives caught | negatives flagged |")
    print("|---|---|---|")
    details = []
    for findings, name in rows:
        caught, flagged, missed, false_alarms = score(entries, findings)
        print(f"| {name} | {caught} / {positives} ({100 * caught / positives:.0f} %) "
              f"| {flagged} / {negatives} |")
        details.append((name, missed, false_alarms))
    for name, missed, false_alarms in details:
        print(f"\n{name}\n  missed ({len(missed)}): {' '.join(missed)}"
              f"\n  flagged negatives ({len(false_alarms)}): {' '.join(false_alarms)}")


if __name__ == "__main__":
    sys.exit(main())
