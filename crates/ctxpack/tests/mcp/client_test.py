#!/usr/bin/env python3
"""Drives `ctxpack mcp` with the official MCP Python SDK (its stdio client), as an agent would.

Usage: client_test.py PATH/TO/ctxpack

It builds its own fixtures in a temporary directory (a git repository made with `git`, a
document store made with `ctxpack docs create/insert`, a directory outside the repository and
a symlink into it), then checks: initialize and capability negotiation, tools/list at both
scopes, a successful call of every tool, seed 001's worked example through `context_pack`,
typed failures, refused writes at read scope, path escapes, malformed requests, 200
sequential calls on one server with stable memory, and the configuration `ctxpack mcp config`
prints packing each new commit. It prints one line per check and ends
with `N passed, N failed`; the exit code is 1 when anything failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

READ_TOOLS = ["repo_context_pack", "query", "status", "context_pack", "vsearch"]
WRITE_TOOLS = ["artifact_add", "index", "docs_insert", "docs_import", "vsync"]
INVALID_PARAMS = -32602
SOAK_CALLS = 200
SOAK_RSS_GROWTH_LIMIT_KB = 20 * 1024

BUDGET_RS = """//! Budget enforcement.

/// Admits a hit only if it fits the remaining budget.
pub fn enforce_budget(remaining: u64, cost: u64) -> bool {
    cost <= remaining
}
"""
RETRY_RS = """//! The HTTP client.

/// Retries a request with exponential backoff.
pub fn retry_with_backoff(attempts: u32) -> u32 {
    attempts * 2
}
"""
README = "# Demo\n\nA tiny project about budgets and retries.\n"


class Checks:
    """Counts checks and prints one line each."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: object = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}", flush=True)
        return ok


CHECKS = Checks()
check = CHECKS.check


def run(args: list[str], cwd: Path | None = None) -> str:
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=git_env())
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed ({out.returncode}): {out.stderr}")
    return out.stdout


def git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", NO_COLOR="1")
    return env


class Fixture:
    """A git repository with a document store inside, and a directory outside it."""

    def __init__(self, binary: str, base: Path) -> None:
        self.binary = binary
        self.repo = base / "repo"
        self.outside = base / "outside"
        self.repo.mkdir()
        self.outside.mkdir()
        git = lambda *a: run(["git", *a], cwd=self.repo)  # noqa: E731
        git("init", "-q", "-b", "main")
        git("config", "user.name", "Test")
        git("config", "user.email", "test@example.invalid")
        git("config", "commit.gpgsign", "false")
        (self.repo / "src").mkdir()
        (self.repo / "src/budget.rs").write_text(BUDGET_RS)
        (self.repo / "src/retry.rs").write_text(RETRY_RS)
        (self.repo / "README.md").write_text(README)
        # The document store and the files below are ignored, so the worktree stays clean.
        (self.repo / ".gitignore").write_text("/app.ctxpack\n/link\n/more.jsonl\n")
        git("add", "-A")
        git("commit", "-q", "-m", "init")
        self.head = git("rev-parse", "HEAD").strip()
        # Seed 001's worked example.
        self.ctxpack("docs", "create", "app.ctxpack")
        self.ctxpack("docs", "insert", "app.ctxpack", "docs", '{"text":"database search and indexing"}')
        self.ctxpack("docs", "insert", "app.ctxpack", "docs", '{"text":"chocolate cake recipe"}')
        # A store outside the repository, and a symlink inside that leads to it.
        run([binary, "docs", "create", str(self.outside / "outside.ctxpack")])
        os.symlink(self.outside, self.repo / "link")
        (self.repo / "more.jsonl").write_text('{"text":"file imported note"}\n')

    def ctxpack(self, *args: str) -> str:
        return run([self.binary, *args], cwd=self.repo)

    def params(self, scope: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=self.binary,
            args=["mcp", "--scope", scope, "--cwd", str(self.repo)],
            env={"NO_COLOR": "1"},
        )


def envelope(result) -> dict:
    """The failure envelope of a tool error."""
    return json.loads(result.content[0].text)["error"]


def text(result) -> str:
    return result.content[0].text


async def expect_protocol_error(session: ClientSession, name: str, arguments: dict, code: int) -> tuple[bool, str]:
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as e:
        return e.code == code, f"code {e.code}: {e.message}"
    return False, f"no protocol error, got {result}"


async def read_scope(fx: Fixture) -> None:
    async with stdio_client(fx.params("read")) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(
                "initialize negotiates 2025-11-25 with ctxpack",
                init.protocol_version == "2025-11-25"
                and init.server_info.name == "ctxpack"
                and bool(init.server_info.version),
                init,
            )
            check("the server declares the tools capability", init.capabilities.tools is not None, init.capabilities)
            check("the server sends instructions", "repo_context_pack" in (init.instructions or ""), init.instructions)

            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            check("read scope lists exactly the read tools", names == READ_TOOLS, names)
            check(
                "read tools are annotated read-only, idempotent, not destructive",
                all(
                    t.annotations
                    and t.annotations.read_only_hint is True
                    and t.annotations.idempotent_hint is True
                    and t.annotations.destructive_hint is False
                    for t in tools
                ),
                [t.annotations for t in tools],
            )
            check(
                "every tool has an object input schema and a description",
                all(t.input_schema.get("type") == "object" and t.description for t in tools),
                tools,
            )
            context_schema = next(t for t in tools if t.name == "context_pack").input_schema
            properties = context_schema["properties"]
            # Every argument is required, as OpenAI's strict mode asks; an optional one is nullable.
            nullable = {n for n, p in properties.items() if {"type": "null"} in p.get("anyOf", [])}
            check(
                "context_pack takes seed 001's arguments (and the options of `ctxpack docs context`)",
                {"budget", "collection", "field", "filter", "path", "query"} <= set(properties)
                and sorted(context_schema["required"]) == sorted(properties)
                and sorted(set(properties) - nullable) == ["collection", "field", "path", "query"]
                and properties["budget"]["description"].endswith("Null: 1000."),
                context_schema,
            )

            # A typed failure: HEAD is not indexed, and the call asks not to index it.
            result = await session.call_tool("repo_context_pack", {"goal": "how are budgets enforced", "index": False})
            err = envelope(result) if result.is_error else {}
            check(
                "repo_context_pack with index false on an unindexed HEAD is a not_found tool error (exitCode 3) with guidance",
                result.is_error
                and err.get("code") == "not_found"
                and err.get("exitCode") == 3
                and fx.head in err.get("message", "")
                and "index" in (err.get("hint") or ""),
                result,
            )
            check(
                "the failure envelope is also structured content",
                result.structured_content == {"error": err},
                result.structured_content,
            )

            # Seed 001's worked example, exactly as `ctxpack docs context` prints it.
            result = await session.call_tool(
                "context_pack",
                {"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "database search", "budget": 500},
            )
            cli = fx.ctxpack("docs", "context", "app.ctxpack", "docs", "text", "database search", "--budget", "500")
            check("context_pack succeeds at read scope", not result.is_error, result)
            check("context_pack returns the same bytes as `ctxpack docs context`", text(result) + "\n" == cli, (text(result), cli))
            pack = json.loads(text(result))
            check(
                "context_pack gives seed 001's output",
                pack["query"] == "database search"
                and pack["budgetTokens"] == 500
                and pack["usedTokens"] == 13
                and pack["truncated"] is False
                and [c["score"] for c in pack["chunks"]] == [0.7071, 0.0]
                and [c["tokens"] for c in pack["chunks"]] == [7, 6]
                and [c["text"] for c in pack["chunks"]] == ["database search and indexing", "chocolate cake recipe"]
                and pack["citations"] == [c["id"] for c in pack["chunks"]]
                and all(set(c["id"]) == {"$oid"} for c in pack["chunks"]),
                pack,
            )
            check('scores keep seed 001\'s "0.0"', '"score":0.0,' in text(result), text(result))
            result = await session.call_tool(
                "context_pack",
                {"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "database search", "filter": {"text": "chocolate cake recipe"}},
            )
            check(
                "context_pack applies a filter object, default budget 1000",
                not result.is_error
                and json.loads(text(result))["budgetTokens"] == 1000
                and [c["text"] for c in json.loads(text(result))["chunks"]] == ["chocolate cake recipe"],
                result,
            )

            result = await session.call_tool(
                "vsearch", {"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "database search", "k": 1}
            )
            hits = json.loads(text(result))["hits"] if not result.is_error else []
            check(
                "vsearch returns the nearest document whole",
                len(hits) == 1 and hits[0]["score"] == 0.7071 and hits[0]["document"]["text"] == "database search and indexing",
                result,
            )

            result = await session.call_tool("status", {})
            status = json.loads(text(result)) if not result.is_error else {}
            check(
                "status reports HEAD not indexed and no store",
                status.get("head") == fx.head and status.get("headIndexed") is False and status.get("storeExists") is False,
                result,
            )
            check("read scope created nothing (no .ctxpack)", not (fx.repo / ".ctxpack").exists(), list(fx.repo.iterdir()))

            # Refused writes and unknown tools: protocol errors, not tool results.
            for name, arguments in [
                ("index", {}),
                ("docs_insert", {"path": "app.ctxpack", "collection": "docs", "document": {"text": "x"}}),
                ("docs_import", {"path": "app.ctxpack", "collection": "docs", "jsonl": '{"text":"x"}'}),
                ("vsync", {"path": "app.ctxpack", "collection": "docs", "field": "text"}),
            ]:
                ok, detail = await expect_protocol_error(session, name, arguments, INVALID_PARAMS)
                check(f"{name} at read scope is refused with invalid params", ok, detail)
            ok, detail = await expect_protocol_error(session, "no_such_tool", {}, INVALID_PARAMS)
            check("an unknown tool is refused with invalid params", ok, detail)
            count = int(fx.ctxpack("docs", "collections", "app.ctxpack", "--format", "json").count('"documents":2'))
            check("the refused writes wrote nothing", count == 1, count)

            # Path escapes.
            for label, path in [
                ("`..`", "../outside/outside.ctxpack"),
                ("an absolute path elsewhere", str(fx.outside / "outside.ctxpack")),
                ("a symlink out", "link/outside.ctxpack"),
                ("a `..` that comes back", "src/../app.ctxpack"),
            ]:
                result = await session.call_tool(
                    "context_pack", {"path": path, "collection": "docs", "field": "text", "query": "x"}
                )
                err = envelope(result) if result.is_error else {}
                check(
                    f"a path escape through {label} is an invalid_input tool error (exitCode 2)",
                    result.is_error and err.get("code") == "invalid_input" and err.get("exitCode") == 2 and "escapes" in err.get("message", ""),
                    result,
                )

            # Bad arguments are tool errors the model can correct.
            for label, arguments in [
                ("a zero budget", {"goal": "budget", "budget": 0}),
                ("an unknown meter", {"goal": "budget", "meter": "bytes"}),
                ("an unknown argument", {"goal": "budget", "colour": "red"}),
                ("a missing goal", {}),
                ("a branch name for at", {"goal": "budget", "at": "main"}),
            ]:
                result = await session.call_tool("repo_context_pack", arguments)
                err = envelope(result) if result.is_error else {}
                check(f"{label} is an invalid_input tool error", result.is_error and err.get("exitCode") == 2, result)
            result = await session.call_tool(
                "context_pack", {"path": "app.ctxpack", "collection": "nope", "field": "text", "query": "x"}
            )
            check(
                "an unknown collection is a not_found tool error",
                result.is_error and envelope(result).get("exitCode") == 3,
                result,
            )


async def write_scope(fx: Fixture) -> None:
    async with stdio_client(fx.params("write")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            check("write scope lists every tool", sorted(names) == sorted(READ_TOOLS + WRITE_TOOLS), names)
            annotations = {t.name: t.annotations for t in tools}
            check(
                "write tools are annotated as writes",
                all(annotations[n].read_only_hint is False for n in WRITE_TOOLS)
                and annotations["index"].idempotent_hint is True
                and annotations["vsync"].idempotent_hint is True
                and annotations["docs_import"].idempotent_hint is False
                and annotations["docs_insert"].destructive_hint is True,
                annotations,
            )

            result = await session.call_tool("index", {})
            report = json.loads(text(result)) if not result.is_error else {}
            check(
                "index indexes HEAD",
                report.get("sha") == fx.head and report.get("alreadyIndexed") is False and report.get("files", 0) >= 4,
                result,
            )
            result = await session.call_tool("index", {"at": fx.head[:10]})
            check("index again is a no-op", not result.is_error and json.loads(text(result))["alreadyIndexed"] is True, result)

            goal = "how are budgets enforced"
            result = await session.call_tool("repo_context_pack", {"goal": goal, "budget": 300, "view": "minimal"})
            cli = fx.ctxpack("pack", goal, "--budget", "300", "--view", "minimal", "--format", "json")
            cli_markdown = fx.ctxpack("pack", goal, "--budget", "300", "--view", "minimal", "--format", "markdown")
            check("repo_context_pack succeeds once indexed", not result.is_error, result)
            check(
                "its text is the markdown of `ctxpack pack --format markdown`",
                text(result).rstrip("\n") == cli_markdown.rstrip("\n"),
                (text(result), cli_markdown),
            )
            pack = json.loads(cli)
            check(
                "a pack carries its text alone, no structured content beside it",
                result.structured_content is None,
                result.structured_content,
            )
            check(
                "the pack cites the budget code first and stays in budget",
                pack["hits"][0]["citation"].startswith("src/budget.rs#")
                and pack["usedTokens"] <= 300
                and f"`{pack['hits'][0]['citation']}`" in text(result),
                pack,
            )
            # The same goal again in this MCP session: a reference to what it was shown, not
            # the text again; `recall` gives the text back, `fresh` the whole pack.
            result = await session.call_tool(
                "repo_context_pack", {"goal": goal, "budget": 300, "view": "minimal", "format": "xml"}
            )
            again = text(result)
            check(
                "the same pack again in this session is a reference to the first, without its text",
                '<shown_before citation="src/budget.rs#' in again and "enforce_budget" not in again,
                again,
            )
            first_id = again.split(' pack="', 1)[-1].split('"', 1)[0]
            result = await session.call_tool(
                "repo_context_pack", {"goal": goal, "recall": [first_id], "format": "xml"}
            )
            check("recalling the pack by id gives its text again", "fn enforce_budget" in text(result), text(result))
            result = await session.call_tool(
                "repo_context_pack", {"goal": goal, "budget": 300, "view": "minimal", "format": "xml", "fresh": True}
            )
            check(
                "with format xml and fresh its text is the same bytes as `ctxpack pack --format xml`",
                text(result) + "\n" == fx.ctxpack("pack", goal, "--budget", "300", "--view", "minimal", "--format", "xml"),
                text(result),
            )

            result = await session.call_tool("query", {"goal": "retry backoff", "top_k": 3})
            hits = json.loads(text(result))["hits"] if not result.is_error else []
            check(
                "query returns hits with a score breakdown",
                bool(hits) and hits[0]["path"] == "src/retry.rs" and set(hits[0]["scoreBreakdown"]) >= {"text", "path", "symbol", "file"},
                result,
            )
            result = await session.call_tool("status", {})
            check("status reports HEAD indexed", json.loads(text(result)).get("headIndexed") is True, result)

            result = await session.call_tool(
                "docs_insert", {"path": "app.ctxpack", "collection": "notes", "document": {"_id": 1, "text": "budget notes"}}
            )
            check("docs_insert inserts", not result.is_error and json.loads(text(result))["id"] == 1, result)
            result = await session.call_tool(
                "docs_insert", {"path": "app.ctxpack", "collection": "notes", "document": {"_id": 1, "text": "again"}}
            )
            check("a duplicate _id is a conflict tool error (exitCode 5)", result.is_error and envelope(result)["exitCode"] == 5, result)
            result = await session.call_tool(
                "docs_insert",
                {"path": "app.ctxpack", "collection": "notes", "document": '{"_id": 1, "text": "budget notes, revised"}', "replace": True},
            )
            check("docs_insert replaces when asked", not result.is_error and json.loads(text(result))["replaced"] is True, result)
            result = await session.call_tool(
                "docs_import",
                {"path": "app.ctxpack", "collection": "notes", "documents": [{"text": "retry notes"}, {"text": "cake notes"}]},
            )
            check("docs_import imports an array", not result.is_error and json.loads(text(result))["imported"] == 2, result)
            result = await session.call_tool(
                "docs_import", {"path": "app.ctxpack", "collection": "notes", "jsonl": '{"text":"one"}\n\n{"text":"two"}\n'}
            )
            check("docs_import imports JSON Lines text", not result.is_error and json.loads(text(result))["imported"] == 2, result)
            result = await session.call_tool("docs_import", {"path": "app.ctxpack", "collection": "notes", "file": "more.jsonl"})
            check("docs_import imports a file inside the repository", not result.is_error and json.loads(text(result))["imported"] == 1, result)
            result = await session.call_tool("docs_import", {"path": "app.ctxpack", "collection": "notes", "file": "/etc/hostname"})
            check("docs_import refuses a file outside the repository", result.is_error and envelope(result)["exitCode"] == 2, result)
            result = await session.call_tool("docs_import", {"path": "app.ctxpack", "collection": "notes", "jsonl": '{"text":"ok"}\nnot json\n'})
            check(
                "a bad JSON line is an invalid_input tool error naming the line",
                result.is_error and envelope(result)["exitCode"] == 2 and ":2:" in envelope(result)["message"],
                result,
            )
            result = await session.call_tool("vsync", {"path": "app.ctxpack", "collection": "notes", "field": "text"})
            sync = json.loads(text(result)) if not result.is_error else {}
            check("vsync stores the missing embeddings", sync.get("embedded") == 6 and sync.get("missing") == 6, result)
            result = await session.call_tool(
                "artifact_add", {"scope": "evidence", "id": "ci-log", "content": "test retry ... FAILED\n", "title": "CI"}
            )
            check("artifact_add stores evidence", not result.is_error and json.loads(text(result)) == {"id": "ci-log", "scope": "evidence"}, result)
            result = await session.call_tool("vsync", {"path": "app.ctxpack", "collection": "notes", "field": "text"})
            check("vsync again embeds nothing", not result.is_error and json.loads(text(result))["embedded"] == 0, result)
            result = await session.call_tool(
                "context_pack", {"path": "app.ctxpack", "collection": "notes", "field": "text", "query": "retry notes", "budget": 4}
            )
            pack = json.loads(text(result)) if not result.is_error else {}
            check(
                "context_pack reads the written collection",
                pack.get("chunks", [{}])[0].get("text") == "retry notes" and pack.get("truncated") is True,
                result,
            )
            result = await session.call_tool(
                "docs_insert", {"path": "link/outside.ctxpack", "collection": "x", "document": {"a": 1}}
            )
            check("a write through a symlink out is refused", result.is_error and envelope(result)["exitCode"] == 2, result)
            check(
                "nothing was written outside",
                run([fx.binary, "docs", "collections", str(fx.outside / "outside.ctxpack")]) == "",
                "outside store has collections",
            )


async def modern_negotiation(fx: Fixture) -> None:
    """The 2026-07-28 revision: `server/discover` and per-request metadata, no handshake."""
    async with stdio_client(fx.params("read")) as (read, write):
        async with ClientSession(read, write) as session:
            found = await session.discover()
            check("server/discover offers 2026-07-28", "2026-07-28" in found.supported_versions, found)
            result = await session.call_tool("status", {})
            check("a tool call works after discover", not result.is_error, result)


def children_named(name: str) -> list[int]:
    """Pids of this process's children whose command is `name`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == os.getpid() and comm == name:
            pids.append(int(entry))
    return pids


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


async def soak(fx: Fixture) -> None:
    calls = [
        ("repo_context_pack", {"goal": "how are budgets enforced", "budget": 400}),
        ("context_pack", {"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "database search", "budget": 500}),
        ("query", {"goal": "retry backoff"}),
        ("status", {}),
        ("vsearch", {"path": "app.ctxpack", "collection": "notes", "field": "text", "query": "notes"}),
        ("repo_context_pack", {"goal": "budget", "budget": 0}),  # a failure on every cycle too
    ]
    async with stdio_client(fx.params("read")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            pids = children_named(Path(fx.binary).name[:15])
            if not check("the server process is found", len(pids) == 1, pids):
                return
            pid = pids[0]
            for name, arguments in calls * 2:  # warm up allocator pools and caches
                await session.call_tool(name, arguments)
            before = rss_kb(pid)
            started = time.monotonic()
            unexpected = []
            for i in range(SOAK_CALLS):
                name, arguments = calls[i % len(calls)]
                result = await session.call_tool(name, arguments)
                if result.is_error != (arguments.get("budget") == 0):
                    unexpected.append((i, name, result))
            seconds = time.monotonic() - started
            after = rss_kb(pid)
            check(f"{SOAK_CALLS} sequential calls all answered as expected ({seconds:.1f} s)", not unexpected, unexpected[:3])
            check(
                f"memory is stable over {SOAK_CALLS} calls (RSS {before} kB -> {after} kB)",
                after - before < SOAK_RSS_GROWTH_LIMIT_KB,
                after - before,
            )


def malformed(fx: Fixture) -> None:
    """Raw JSON-RPC lines the SDK would never send: the server answers or ignores them and
    keeps serving; stdout carries nothing but JSON-RPC."""
    proc = subprocess.Popen(
        [fx.binary, "mcp", "--cwd", str(fx.repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "{this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 42}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": "not an object"}},
        {"jsonrpc": "2.0", "id": 4, "method": "no/such/method", "params": {}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
    ]
    payload = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    try:
        stdout, _stderr = proc.communicate(payload, timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        check("the server ends when stdin closes", False, "timed out")
        return
    check("the server exits 0 when stdin closes", proc.returncode == 0, proc.returncode)
    try:
        replies = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    except json.JSONDecodeError as e:
        check("stdout is nothing but JSON-RPC", False, f"{e}: {stdout!r}")
        return
    check("stdout is nothing but JSON-RPC", all(r.get("jsonrpc") == "2.0" for r in replies), stdout)
    by_id = {r.get("id"): r for r in replies}
    for rid, label in [(2, "a tools/call with a numeric name"), (3, "tools/call arguments that are not an object"), (4, "an unknown method")]:
        check(f"{label} gets a JSON-RPC error", "error" in by_id.get(rid, {}), by_id.get(rid))
    check(
        "unparsable JSON is ignored and the server keeps serving",
        by_id.get(5, {}).get("result", {}).get("isError") is False,
        by_id.get(5),
    )


async def printed_configuration_follows_commits(fx: Fixture) -> None:
    """The server `ctxpack mcp config --client claude-code` configures, started the way Claude
    Code starts it (in the project, with the printed arguments), packs each new commit with no
    manual step, and writes nothing but the index of what it packs."""
    config = json.loads(fx.ctxpack("mcp", "config", "--client", "claude-code"))
    entry = config["mcpServers"]["ctxpack"]
    params = StdioServerParameters(command=fx.binary, args=entry["args"], cwd=str(fx.repo), env={"NO_COLOR": "1"})
    git = lambda *a: run(["git", *a], cwd=fx.repo)  # noqa: E731
    log_before = fx.ctxpack("log", "--format", "json")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for round in range(2):
                name = f"quota_{round}"
                (fx.repo / f"src/{name}.rs").write_text(f"/// Enforces the {name} limit.\npub fn {name}_limit() -> u32 {{ {round} }}\n")
                git("add", f"src/{name}.rs")
                git("commit", "-q", "-m", f"add {name}")
                head = git("rev-parse", "HEAD").strip()
                result = await session.call_tool("repo_context_pack", {"goal": f"{name} limit"})
                check(
                    f"the printed configuration packs new commit {round + 1} with no manual step",
                    not result.is_error
                    and f"`src/{name}.rs#L1-L2@{head[:7]}`" in text(result),
                    result,
                )
    check(
        "packs at read scope are not recorded",
        fx.ctxpack("log", "--format", "json") == log_before,
        fx.ctxpack("log", "--format", "json"),
    )


async def main_async(binary: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxpack-mcp-") as base:
        fx = Fixture(binary, Path(base).resolve())
        await read_scope(fx)
        await write_scope(fx)
        await modern_negotiation(fx)
        await soak(fx)
        malformed(fx)
        await printed_configuration_follows_commits(fx)


def run_main(main_async, doc: str) -> int:
    """Runs `main_async(binary)` with the binary named on the command line, counting a crash as
    one more failed check, and prints the totals. `doc` is the usage shown on bad arguments."""
    if len(sys.argv) != 2:
        print(doc, file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        anyio.run(main_async, sys.argv[1])
    except Exception as e:  # noqa: BLE001 - a crash is one more failed check
        import traceback

        traceback.print_exc()
        check("the client test ran to the end", False, repr(e))
    print(f"({time.monotonic() - started:.1f} s)")
    print(f"{CHECKS.passed} passed, {CHECKS.failed} failed")
    return 1 if CHECKS.failed else 0


def main() -> int:
    return run_main(main_async, __doc__)


if __name__ == "__main__":
    sys.exit(main())
