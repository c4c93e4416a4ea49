#!/usr/bin/env python3
"""A sequence of related goals packed with and without a session: what an agent is sent.

For each goal, in order, runs `ctxpack pack GOAL --format json` once without a session and
once in a session of its own, and reports the tokens of the rendering an agent receives
(`renderedTokens`: the Markdown the MCP tool sends), the lines of evidence shown, how many of
them an earlier pack of the sequence had already shown, and the references sent instead.

    scripts/session_sequence.py --bin target/release/ctxpack --repo ../click --at PARENT \
        --budget 4000 --goal "first goal" --goal "second goal" ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import uuid


def pack(binary: str, repo: str, at: str, budget: int, goal: str, session: str | None) -> dict:
    args = [binary, "pack", goal, "--at", at, "--budget", str(budget), "--format", "json",
            "--cwd", repo, "--quiet"]
    if session:
        args += ["--session", session]
    else:
        args += ["--no-ledger"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def lines(hit: dict) -> set[tuple[str, int]]:
    if "path" not in hit or hit.get("shownBefore", {}).get("whole"):
        return set()
    return {(hit["path"], n) for n in range(hit["startLine"], hit["endLine"] + 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--at", required=True)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--goal", action="append", required=True)
    a = parser.parse_args()
    session = f"sequence-{uuid.uuid4().hex[:8]}"
    seen = {"without": set(), "with": set()}
    totals = {"without": [0, 0, 0], "with": [0, 0, 0]}
    refs_total = 0
    print("| goal | tokens sent, no session | tokens sent, session | lines shown, no session (already shown) | lines shown, session (already shown) | references |")
    print("| --- | --- | --- | --- | --- | --- |")
    for goal in a.goal:
        row = [goal]
        cells = {}
        refs = 0
        for mode, sid in [("without", None), ("with", session)]:
            p = pack(a.bin, a.repo, a.at, a.budget, goal, sid)
            shown = set().union(*(lines(h) for h in p["hits"])) if p["hits"] else set()
            repeated = len(shown & seen[mode])
            seen[mode] |= shown
            tokens = p.get("renderedTokens", p["usedTokens"])
            totals[mode][0] += tokens
            totals[mode][1] += len(shown)
            totals[mode][2] += repeated
            cells[mode] = (tokens, len(shown), repeated)
            if sid:
                refs = p.get("session", {}).get("references", 0)
        refs_total += refs
        row += [str(cells["without"][0]), str(cells["with"][0]),
                f"{cells['without'][1]} ({cells['without'][2]})",
                f"{cells['with'][1]} ({cells['with'][2]})", str(refs)]
        print("| " + " | ".join(row) + " |")
    w, s = totals["without"], totals["with"]
    print(f"| **all** | **{w[0]}** | **{s[0]}** | **{w[1]} ({w[2]})** | **{s[1]} ({s[2]})** | **{refs_total}** |")
    print(f"\ndistinct lines of evidence: {len(seen['without'])} without a session, {len(seen['with'])} with one")


if __name__ == "__main__":
    main()
