#!/usr/bin/env python3
"""What `ctxpack mcp` costs a model, in o200k tokens: the `tools/list` result at each scope, and
whole `repo_context_pack` results (text plus any structured content) at 2,000 and 8,000.

Usage: mcp_cost.py PATH/TO/ctxpack REPOSITORY GOAL

The repository's HEAD must be indexed when the binary's read scope does not index by itself.
Tokens are counted by the binary (`ctxpack select --format json` reports each candidate's o200k
cost), so nothing else need be installed.
"""

from __future__ import annotations

import json
import subprocess
import sys


def session(binary: str, repo: str, scope: str, calls: list[tuple[str, dict]]) -> list[dict]:
    """The replies to `calls`, made after the initialize handshake, in order."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp_cost", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    messages += [{"jsonrpc": "2.0", "id": 10 + i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
    out = subprocess.run(
        [binary, "mcp", "--scope", scope, "--cwd", repo],
        input="\n".join(json.dumps(m) for m in messages) + "\n",
        capture_output=True, text=True, check=True,
    ).stdout
    replies = {r.get("id"): r for r in map(json.loads, out.splitlines()) if "id" in r}
    return [replies[10 + i] for i in range(len(calls))]


def tokens(binary: str, texts: list[str]) -> list[int]:
    """The o200k tokens of each text, in order."""
    candidates = [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)]
    out = subprocess.run(
        [binary, "select", "--budget", "100000000", "--format", "json"],
        input=json.dumps(candidates), capture_output=True, text=True, check=True,
    ).stdout
    costs = {h["citation"]: h["tokens"] for h in json.loads(out)["hits"]}
    return [costs.get(f"t{i}", 0) for i in range(len(texts))]


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, repo, goal = sys.argv[1:]
    for scope in ["read", "write"]:
        [listed] = session(binary, repo, scope, [("tools/list", {})])
        [cost] = tokens(binary, [compact(listed["result"])])
        print(f"tools/list at {scope} scope: {cost} o200k tokens")
    for budget in [2000, 8000]:
        call = {"name": "repo_context_pack", "arguments": {"goal": goal, "budget": budget}}
        [reply] = session(binary, repo, "read", [("tools/call", call)])
        result = reply["result"]
        text = "".join(block.get("text", "") for block in result["content"])
        structured = compact(result["structuredContent"]) if "structuredContent" in result else ""
        text_cost, structured_cost = tokens(binary, [text, structured])
        whole = text_cost + structured_cost
        print(f"repo_context_pack at {budget}: text {text_cost} + structured content {structured_cost} = {whole} o200k tokens ({whole / budget:.2f} x the budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
