#!/usr/bin/env python3
"""Drives `ctxpack serve`'s `/mcp` with the official MCP Python SDK's streamable HTTP client.

Usage: http_client_test.py PATH/TO/ctxpack

It builds a git repository of two commits in a temporary directory, registers it with a server
state, creates a read and a write token, starts `ctxpack serve` on a free loopback port and
then checks, through the SDK as an agent would: the handshake, the tools each token's scope
lists, indexing with progress notifications (write), a pack (read) and its structured content,
a write tool refused at read scope, a typed tool error, a refused token, and that the pack is
in the server's ledger under the token's name. It prints one line per check and ends with
`N passed, N failed`; the exit code is 1 when anything failed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2
from client_test import check, run, run_main
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

READ_TOOLS = {"repo_context_pack", "query", "status", "context_pack", "vsearch"}
WRITE_TOOLS = READ_TOOLS | {"artifact_add", "index", "docs_insert", "docs_import", "vsync"}
INVALID_PARAMS = -32602

BUDGET_RS = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n"
RETRY_RS = "//! The HTTP client.\n\n/// Retries a request with exponential backoff.\npub fn retry_with_backoff(attempts: u32) -> u32 {\n    attempts * 2\n}\n"

class Fixture:
    """A repository, a server state with two tokens, and a running server."""

    def __init__(self, binary: str, base: Path) -> None:
        self.repo = base / "repo"
        (self.repo / "src").mkdir(parents=True)
        git = lambda *a: run(["git", *a], cwd=self.repo).strip()  # noqa: E731
        git("init", "-q", "-b", "main")
        git("config", "user.name", "Test")
        git("config", "user.email", "test@example.invalid")
        (self.repo / "src/budget.rs").write_text(BUDGET_RS)
        git("add", "-A")
        git("commit", "-q", "-m", "budget")
        (self.repo / "src/retry.rs").write_text(RETRY_RS)
        git("add", "-A")
        git("commit", "-q", "-m", "retry")
        self.head = git("rev-parse", "HEAD")
        state = str(base / "state")
        run([binary, "serve", "repo", "add", "app", str(self.repo), "--state", state])
        self.read = run([binary, "serve", "token", "create", "--repo", "app", "--name", "agent", "--state", state]).strip()
        self.write = run(
            [binary, "serve", "token", "create", "--repo", "app", "--scope", "write", "--name", "ci", "--state", state]
        ).strip()
        self.server = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--root", str(base), "--state", state],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.server.stderr is not None
        line = self.server.stderr.readline()
        self.base_url = "http://" + line.strip().rsplit("http://", 1)[-1]
        self.url = self.base_url + "/mcp"

    def client(self, token: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def stop(self) -> int:
        self.server.send_signal(signal.SIGTERM)
        return self.server.wait(timeout=30)


async def session_checks(fx: Fixture) -> None:
    async with fx.client(fx.write) as http, streamable_http_client(fx.url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("initialize names the server", init.server_info.name == "ctxpack", init.server_info)
            tools = {t.name for t in (await session.list_tools()).tools}
            check("a write token lists the read and write tools", tools == WRITE_TOOLS, sorted(tools))
            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, total, message))

            indexed = await session.call_tool("index", {"at": fx.head}, progress_callback=on_progress)
            summary = json.loads(indexed.content[0].text) if not indexed.is_error else {}
            check("index (write) indexes the commit", not indexed.is_error and summary.get("sha") == fx.head, indexed)
            check("index reports progress over HTTP", len(progress) > 0, progress)

    async with fx.client(fx.read) as http, streamable_http_client(fx.url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            check("a read token lists the read tools only", tools == READ_TOOLS, sorted(tools))
            packed = await session.call_tool("repo_context_pack", {"goal": "retry with exponential backoff", "budget": 2000})
            text = packed.content[0].text if packed.content else ""
            check(
                "repo_context_pack (read) returns Markdown citing the code",
                not packed.is_error and text.startswith("# Context pack") and "`src/retry.rs#L" in text,
                text[:300],
            )
            check("its text is the whole result", packed.structured_content is None, packed.structured_content)
            try:
                result = await session.call_tool("index", {})
                check("index at read scope is refused", False, result)
            except MCPError as e:
                check("index at read scope is refused", e.code == INVALID_PARAMS, f"{e.code} {e.message}")
            bad = await session.call_tool("repo_context_pack", {"goal": "x", "at": "not-a-commit"})
            envelope = json.loads(bad.content[0].text).get("error", {}) if bad.is_error else {}
            check("a bad commit is a typed tool error", envelope.get("exitCode") == 2, bad)

    async with fx.client(fx.read) as http:
        ledger = await http.get(f"{fx.base_url}/v1/repos/app/ledger")
        entries = ledger.json() if ledger.status_code == 200 else []
        check(
            "the pack is in the server's ledger under the token's name",
            any(e.get("surface") == "serve:agent" and e.get("goal") == "retry with exponential backoff" for e in entries),
            entries,
        )

    refused = None
    try:
        async with fx.client("ctxp_000000000000_" + "0" * 64) as http, streamable_http_client(
            fx.url, http_client=http
        ) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(20):
                    await session.initialize()
    except BaseException as e:  # noqa: BLE001 - any failure to connect is the refusal
        refused = e
    check("an unknown token cannot connect", refused is not None, "connected")


async def main_async(binary: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxpack-mcp-http-") as base:
        fx = Fixture(binary, Path(base).resolve())
        try:
            await session_checks(fx)
        finally:
            code = fx.stop()
        check("the server exits 0 on SIGTERM", code == 0, code)


def main() -> int:
    return run_main(main_async, __doc__)


if __name__ == "__main__":
    sys.exit(main())
