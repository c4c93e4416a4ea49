#!/usr/bin/env python3
"""Scores secret masking on a corpus through the command line, on both paths a secret can take
to an agent: a repository (`ctxpack index`, then `ctxpack pack`) and documents (`ctxpack docs
import`, then `ctxpack docs context`).

Not part of the test suite (the suite runs the corpora through the library:
`the_secrets_corpus_is_masked_in_repositories_and_documents`). Each entry of a corpus (JSON
Lines: `id`, `kind` — null for a near miss —, `text`, `secret`, `file`) becomes the file
`corpus/ID/FILE` of one git repository and the document `{"entry": ID, "text": TEXT}` of one
collection. Each entry is then packed alone (`--include corpus/ID/**`, or a filter on `entry`)
with a budget large enough to show it whole, and the texts of the pack's hits are read:

- a positive is masked when its secret does not occur in them;
- a near miss is flagged when they hold a `[REDACTED:` marker;
- an entry the pack shows nothing of (a lockfile the index leaves out, say) is counted apart.

Usage: python3 scripts/secrets_through_cli.py PATH/TO/ctxpack CORPUS.jsonl [CORPUS.jsonl ...]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

MARKER = "[REDACTED:"
BUDGET = "20000"


def run(args: list[str], cwd: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def goal_of(entry: dict) -> str:
    """Words of the entry without its secret: what someone asking about the file might type."""
    text = entry["text"]
    if entry.get("secret"):
        text = text.replace(entry["secret"], " ")
    words = re.findall(r"[A-Za-z][A-Za-z0-9_]{2,}", text)
    return " ".join(words[:40]) or entry.get("file") or "the file"


def hits_text(stdout: str) -> str | None:
    """The hits' texts of a JSON pack; None when it shows nothing."""
    pack = json.loads(stdout)
    # A snapshot pack lists `hits`, a document pack `chunks`.
    texts = [hit.get("text", "") for hit in pack.get("hits", pack.get("chunks", []))]
    return "\n".join(texts) if texts else None


def repository_path(binary: str, entries: list[dict], work: str) -> dict[str, str | None]:
    repo = os.path.join(work, "repo")
    os.makedirs(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="c", GIT_AUTHOR_EMAIL="c@example.invalid",
               GIT_COMMITTER_NAME="c", GIT_COMMITTER_EMAIL="c@example.invalid")
    run(["git", "init", "-q"], cwd=repo)
    for e in entries:
        path = os.path.join(repo, "corpus", e["id"], e.get("file") or "sample.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(e["text"])
    run(["git", "add", "-A"], cwd=repo)
    done = run(["git", "commit", "-q", "-m", "the corpus"], cwd=repo, env=env)
    if done.returncode != 0:
        sys.exit(f"git commit failed: {done.stderr}")
    indexed = run([binary, "index"], cwd=repo)
    if indexed.returncode != 0:
        sys.exit(f"ctxpack index failed: {indexed.stderr}")
    shown = {}
    for e in entries:
        out = run([binary, "pack", goal_of(e), "--include", f"corpus/{e['id']}/**", "--budget", BUDGET,
                   "--format", "json", "--no-ledger"], cwd=repo)
        shown[e["id"]] = hits_text(out.stdout) if out.returncode == 0 else None
    return shown


def documents_path(binary: str, entries: list[dict], work: str) -> dict[str, str | None]:
    os.makedirs(work)
    store = os.path.join(work, "docs.ctxpack")
    lines = os.path.join(work, "corpus.jsonl")
    with open(lines, "w") as f:
        for e in entries:
            f.write(json.dumps({"_id": e["id"], "entry": e["id"], "text": e["text"]}) + "\n")
    created = run([binary, "docs", "create", store])
    if created.returncode != 0:
        sys.exit(f"ctxpack docs create failed: {created.stderr}")
    imported = run([binary, "docs", "import", store, "corpus", lines, "--embed", "text"])
    if imported.returncode != 0:
        sys.exit(f"ctxpack docs import failed: {imported.stderr}")
    shown = {}
    for e in entries:
        out = run([binary, "docs", "context", store, "corpus", "text", goal_of(e), "--filter",
                   json.dumps({"entry": e["id"]}), "--budget", BUDGET, "--format", "json"])
        shown[e["id"]] = hits_text(out.stdout) if out.returncode == 0 else None
    return shown


def score(entries: list[dict], shown: dict[str, str | None]) -> tuple[str, list[str]]:
    positives = [e for e in entries if e["kind"]]
    negatives = [e for e in entries if not e["kind"]]
    masked = [e for e in positives if shown[e["id"]] is not None and e["secret"] not in shown[e["id"]]]
    leaked = [e["id"] for e in positives if shown[e["id"]] is not None and e["secret"] in shown[e["id"]]]
    unshown = [e["id"] for e in entries if shown[e["id"]] is None]
    flagged = [e["id"] for e in negatives if shown[e["id"]] is not None and MARKER in shown[e["id"]]]
    line = (f"{len(masked)} of {len(positives)} masked ({len(leaked)} shown unmasked), "
            f"{len(flagged)} of {len(negatives)} near misses flagged, {len(unshown)} entries not shown")
    return line, [f"leaked: {i}" for i in leaked] + [f"flagged: {i}" for i in flagged] + [f"not shown: {i}" for i in unshown]


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    for corpus in sys.argv[2:]:
        with open(corpus) as f:
            entries = [json.loads(line) for line in f if line.strip()]
        with tempfile.TemporaryDirectory() as work:
            for name, path in [("repository (`pack`)", repository_path),
                               ("documents (`docs context`)", documents_path)]:
                line, details = score(entries, path(binary, entries, os.path.join(work, name.split()[0])))
                print(f"{os.path.basename(corpus)}, {name}: {line}")
                for d in details:
                    print(f"  {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
