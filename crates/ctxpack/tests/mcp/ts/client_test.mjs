#!/usr/bin/env node
// Drives `ctxpack mcp` with the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`,
// pinned in package.json and package-lock.json), as an agent built on it would: a second real
// client beside client_test.py (the Python SDK), written as a plain ES module so that no
// compiler is needed.
//
// Usage: node client_test.mjs PATH/TO/ctxpack
//
// It builds its own fixtures in a temporary directory (a git repository made with `git`, a
// document store made with `ctxpack docs create/insert`, a directory outside the repository
// and a symlink into it, and a second repository large enough to cancel an index of), then
// checks: initialize, tools/list at both scopes, a successful call of every tool, seed 001's
// worked example through `context_pack`, arguments in the strict form the schemas publish
// (`null` for an optional argument, JSON text for a filter or a document), typed failures,
// refused writes at read scope, path escapes, cancelling a running `index` with an
// AbortSignal, and the configuration `ctxpack mcp config` prints packing each new commit. It prints one line per check and ends with `N passed, N failed`; the exit code
// is 1 when anything failed.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const READ_TOOLS = ["repo_context_pack", "query", "status", "context_pack", "vsearch"];
const WRITE_TOOLS = ["artifact_add", "index", "docs_insert", "docs_import", "vsync"];
// Enough files that an index is still running when the cancellation arrives.
const CANCEL_FILES = 2000;

const BUDGET_RS = `//! Budget enforcement.

/// Admits a hit only if it fits the remaining budget.
pub fn enforce_budget(remaining: u64, cost: u64) -> bool {
    cost <= remaining
}
`;
const RETRY_RS = `//! The HTTP client.

/// Retries a request with exponential backoff.
pub fn retry_with_backoff(attempts: u32) -> u32 {
    attempts * 2
}
`;

let passed = 0;
let failed = 0;

/** Counts one check and prints its line. */
function check(name, ok, detail = "") {
  if (ok) {
    passed += 1;
    console.log(`ok   ${name}`);
  } else {
    failed += 1;
    const shown = typeof detail === "string" ? detail : JSON.stringify(detail);
    console.log(`FAIL ${name}: ${shown}`);
  }
  return ok;
}

/** The environment of every child: git and ctxpack configured only by the test. */
const ENV = { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1", NO_COLOR: "1" };

function run(command, args, cwd) {
  return execFileSync(command, args, { cwd, env: ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** A git repository with one commit of `files` (path to text). */
function repository(dir, files) {
  mkdirSync(dir, { recursive: true });
  const git = (...args) => run("git", args, dir);
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Test");
  git("config", "user.email", "test@example.invalid");
  git("config", "commit.gpgsign", "false");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  git("add", "-A");
  git("commit", "-q", "-m", "init");
  return git("rev-parse", "HEAD").trim();
}

class Fixture {
  constructor(binary, base) {
    this.binary = binary;
    this.repo = join(base, "repo");
    this.outside = join(base, "outside");
    this.big = join(base, "big");
    mkdirSync(this.outside);
    // The document store and the files below are ignored, so the worktree stays clean.
    this.head = repository(this.repo, {
      "src/budget.rs": BUDGET_RS,
      "src/retry.rs": RETRY_RS,
      "README.md": "# Demo\n\nA tiny project about budgets and retries.\n",
      ".gitignore": "/app.ctxpack\n/link\n/more.jsonl\n",
    });
    // Seed 001's worked example.
    this.ctxpack("docs", "create", "app.ctxpack");
    this.ctxpack("docs", "insert", "app.ctxpack", "docs", '{"text":"database search and indexing"}');
    this.ctxpack("docs", "insert", "app.ctxpack", "docs", '{"text":"chocolate cake recipe"}');
    // A store outside the repository, and a symlink inside that leads to it.
    run(binary, ["docs", "create", join(this.outside, "outside.ctxpack")]);
    symlinkSync(this.outside, join(this.repo, "link"));
    writeFileSync(join(this.repo, "more.jsonl"), '{"text":"file imported note"}\n');
    const many = {};
    for (let i = 0; i < CANCEL_FILES; i += 1) {
      many[`src/m${i}.rs`] = `//! Module ${i}.\n\n/// Adds ${i}.\npub fn add_${i}(x: u64) -> u64 {\n    x + ${i}\n}\n`;
    }
    repository(this.big, many);
  }

  ctxpack(...args) {
    return run(this.binary, args, this.repo);
  }

  /** A connected client of `ctxpack mcp` at `scope` for `repo`, and the negotiated version. */
  async connect(scope, repo = this.repo) {
    const transport = new StdioClientTransport({
      command: this.binary,
      args: ["mcp", "--scope", scope, "--cwd", repo],
      env: { NO_COLOR: "1" },
      stderr: "inherit",
    });
    // The SDK hands the negotiated revision to a transport that asks for it.
    const session = { version: undefined };
    transport.setProtocolVersion = (version) => {
      session.version = version;
    };
    const client = new Client({ name: "ctxpack-ts-client-test", version: "0" }, { capabilities: {} });
    await client.connect(transport);
    session.client = client;
    return session;
  }
}

const text = (result) => result.content[0].text;
const envelope = (result) => JSON.parse(text(result)).error;
const parsed = (result) => (result.isError ? {} : JSON.parse(text(result)));

/** The JSON-RPC error a call is refused with, or a description of what came instead. */
async function refusal(client, name, args) {
  try {
    const result = await client.callTool({ name, arguments: args });
    return { code: undefined, detail: result };
  } catch (e) {
    return { code: e instanceof McpError ? e.code : undefined, detail: String(e) };
  }
}

async function readScope(fx) {
  const { client, version } = await fx.connect("read");
  try {
    const info = client.getServerVersion();
    check(
      "initialize negotiates 2025-11-25 with ctxpack",
      version === "2025-11-25" && info?.name === "ctxpack" && Boolean(info?.version),
      { version, info },
    );
    check("the server declares the tools capability", client.getServerCapabilities()?.tools !== undefined);
    check("the server sends instructions", (client.getInstructions() ?? "").includes("repo_context_pack"));

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    check("read scope lists exactly the read tools", JSON.stringify(names) === JSON.stringify(READ_TOOLS), names);
    check(
      "read tools are annotated read-only, idempotent, not destructive",
      tools.every(
        (t) =>
          t.annotations?.readOnlyHint === true &&
          t.annotations?.idempotentHint === true &&
          t.annotations?.destructiveHint === false,
      ),
      tools.map((t) => t.annotations),
    );
    check(
      "every schema is closed and lists every argument as required (OpenAI's strict mode)",
      tools.every((t) => {
        const properties = Object.keys(t.inputSchema.properties ?? {});
        const required = t.inputSchema.required ?? [];
        return (
          t.inputSchema.type === "object" &&
          t.inputSchema.additionalProperties === false &&
          properties.length === required.length &&
          properties.every((p) => required.includes(p)) &&
          !JSON.stringify(t.inputSchema).includes('"type":[')
        );
      }),
      tools.map((t) => t.inputSchema),
    );

    // A typed failure: HEAD is not indexed, and the call asks not to index it.
    let result = await client.callTool({ name: "repo_context_pack", arguments: { goal: "how are budgets enforced", index: false } });
    const err = result.isError ? envelope(result) : {};
    check(
      "repo_context_pack with index false on an unindexed HEAD is a not_found tool error (exitCode 3) with guidance",
      result.isError === true &&
        err.code === "not_found" &&
        err.exitCode === 3 &&
        err.message.includes(fx.head) &&
        (err.hint ?? "").includes("index"),
      result,
    );
    check(
      "the failure envelope is also structured content",
      JSON.stringify(result.structuredContent) === JSON.stringify({ error: err }),
      result.structuredContent,
    );

    // Seed 001's worked example, exactly as `ctxpack docs context` prints it.
    const example = { path: "app.ctxpack", collection: "docs", field: "text", query: "database search", budget: 500 };
    result = await client.callTool({ name: "context_pack", arguments: example });
    const cli = fx.ctxpack("docs", "context", "app.ctxpack", "docs", "text", "database search", "--budget", "500");
    check("context_pack succeeds at read scope", result.isError === false, result);
    check("context_pack returns the same bytes as `ctxpack docs context`", `${text(result)}\n` === cli, [text(result), cli]);
    const pack = parsed(result);
    check(
      "context_pack gives seed 001's output",
      pack.query === "database search" &&
        pack.budgetTokens === 500 &&
        pack.usedTokens === 13 &&
        pack.truncated === false &&
        JSON.stringify(pack.chunks.map((c) => c.score)) === "[0.7071,0]" &&
        JSON.stringify(pack.chunks.map((c) => c.text)) ===
          JSON.stringify(["database search and indexing", "chocolate cake recipe"]) &&
        JSON.stringify(pack.citations) === JSON.stringify(pack.chunks.map((c) => c.id)),
      pack,
    );
    check('scores keep seed 001\'s "0.0"', text(result).includes('"score":0.0,'), text(result));

    // What a client in strict mode sends: every argument, null for the defaults.
    const strict = { ...example, budget: null, filter: null };
    result = await client.callTool({ name: "context_pack", arguments: { ...strict, budget: 500 } });
    check("null for every optional argument is the default", !result.isError && `${text(result)}\n` === cli, result);
    for (const [label, filter] of [
      ["its JSON text (as the schema publishes it)", '{"text": "chocolate cake recipe"}'],
      ["an object", { text: "chocolate cake recipe" }],
    ]) {
      result = await client.callTool({ name: "context_pack", arguments: { ...strict, filter } });
      const filtered = parsed(result);
      check(
        `context_pack applies a filter given as ${label}, default budget 1000`,
        filtered.budgetTokens === 1000 &&
          JSON.stringify(filtered.chunks?.map((c) => c.text)) === JSON.stringify(["chocolate cake recipe"]),
        result,
      );
    }

    result = await client.callTool({
      name: "vsearch",
      arguments: { path: "app.ctxpack", collection: "docs", field: "text", query: "database search", k: 1, filter: null },
    });
    const hits = parsed(result).hits ?? [];
    check(
      "vsearch returns the nearest document whole",
      hits.length === 1 && hits[0].score === 0.7071 && hits[0].document.text === "database search and indexing",
      result,
    );

    result = await client.callTool({ name: "status", arguments: {} });
    const status = parsed(result);
    check(
      "status reports HEAD not indexed and no store",
      status.head === fx.head && status.headIndexed === false && status.storeExists === false,
      result,
    );
    check("read scope created nothing (no .ctxpack)", !existsSync(join(fx.repo, ".ctxpack")));

    // Refused writes and unknown tools: protocol errors, not tool results.
    for (const [name, args] of [
      ["index", {}],
      ["docs_insert", { path: "app.ctxpack", collection: "docs", document: '{"text": "x"}' }],
      ["docs_import", { path: "app.ctxpack", collection: "docs", jsonl: '{"text":"x"}' }],
      ["vsync", { path: "app.ctxpack", collection: "docs", field: "text" }],
      ["artifact_add", { scope: "evidence", content: "x" }],
    ]) {
      const { code, detail } = await refusal(client, name, args);
      check(`${name} at read scope is refused with invalid params`, code === ErrorCode.InvalidParams, detail);
    }
    const unknown = await refusal(client, "no_such_tool", {});
    check("an unknown tool is refused with invalid params", unknown.code === ErrorCode.InvalidParams, unknown.detail);
    const collections = fx.ctxpack("docs", "collections", "app.ctxpack", "--format", "json");
    check("the refused writes wrote nothing", collections.split('"documents":2').length === 2, collections);

    // Path escapes.
    for (const [label, path] of [
      ["`..`", "../outside/outside.ctxpack"],
      ["an absolute path elsewhere", join(fx.outside, "outside.ctxpack")],
      ["a symlink out", "link/outside.ctxpack"],
      ["a `..` that comes back", "src/../app.ctxpack"],
    ]) {
      result = await client.callTool({
        name: "context_pack",
        arguments: { path, collection: "docs", field: "text", query: "x" },
      });
      const escape = result.isError ? envelope(result) : {};
      check(
        `a path escape through ${label} is an invalid_input tool error (exitCode 2)`,
        escape.code === "invalid_input" && escape.exitCode === 2 && escape.message.includes("escapes"),
        result,
      );
    }

    // Bad arguments are tool errors the model can correct.
    for (const [label, args] of [
      ["a zero budget", { goal: "budget", budget: 0 }],
      ["an unknown format", { goal: "budget", format: "pdf" }],
      ["a withheld option", { goal: "budget", meter: "chars" }],
      ["an unknown argument", { goal: "budget", colour: "red" }],
      ["a missing goal", {}],
      ["a null goal", { goal: null }],
      ["a branch name for at", { goal: "budget", at: "main" }],
    ]) {
      result = await client.callTool({ name: "repo_context_pack", arguments: args });
      check(`${label} is an invalid_input tool error`, result.isError === true && envelope(result).exitCode === 2, result);
    }
  } finally {
    await client.close();
  }
}

async function writeScope(fx) {
  const { client } = await fx.connect("write");
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    check(
      "write scope lists every tool",
      JSON.stringify(names) === JSON.stringify([...READ_TOOLS, ...WRITE_TOOLS].sort()),
      names,
    );
    const annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    check(
      "write tools are annotated as writes",
      WRITE_TOOLS.every((n) => annotations[n].readOnlyHint === false) &&
        annotations.index.idempotentHint === true &&
        annotations.docs_import.idempotentHint === false &&
        annotations.docs_insert.destructiveHint === true,
      annotations,
    );

    let result = await client.callTool({ name: "index", arguments: { at: null, rebuild: null, max_file_bytes: null } });
    const report = parsed(result);
    check("index indexes HEAD", report.sha === fx.head && report.alreadyIndexed === false && report.files >= 4, result);
    result = await client.callTool({ name: "index", arguments: { at: fx.head.slice(0, 10) } });
    check("index again is a no-op", parsed(result).alreadyIndexed === true, result);

    const goal = "how are budgets enforced";
    result = await client.callTool({ name: "repo_context_pack", arguments: { goal, budget: 300, view: "minimal" } });
    const cli = fx.ctxpack("pack", goal, "--budget", "300", "--view", "minimal", "--format", "json");
    const cliMarkdown = fx.ctxpack("pack", goal, "--budget", "300", "--view", "minimal", "--format", "markdown");
    check("its text is the markdown of `ctxpack pack --format markdown`", text(result).trimEnd() === cliMarkdown.trimEnd(), [
      text(result),
      cliMarkdown,
    ]);
    const pack = JSON.parse(cli);
    check("a pack carries its text alone, no structured content beside it", result.structuredContent === undefined, result);
    check(
      "the pack cites the budget code first and stays in budget",
      pack.hits?.[0]?.citation.startsWith("src/budget.rs#") &&
        pack.usedTokens <= 300 &&
        text(result).includes(`\`${pack.hits[0].citation}\``),
      pack,
    );
    result = await client.callTool({
      name: "repo_context_pack",
      arguments: { goal, budget: 300, view: "minimal", format: "xml" },
    });
    // The same goal again in this MCP session: a reference, not the text again.
    check(
      "the same pack again in this session is a reference to the first, without its text",
      text(result).includes('<shown_before citation="src/budget.rs#') && !text(result).includes("enforce_budget"),
      text(result),
    );
    result = await client.callTool({
      name: "repo_context_pack",
      arguments: { goal, budget: 300, view: "minimal", format: "xml", fresh: true },
    });
    const cliXml = fx.ctxpack("pack", goal, "--budget", "300", "--view", "minimal", "--format", "xml");
    check("with format xml and fresh its text is the same bytes as `ctxpack pack --format xml`", `${text(result)}\n` === cliXml, [
      text(result),
      cliXml,
    ]);

    result = await client.callTool({ name: "query", arguments: { goal: "retry backoff", top_k: 3, at: null } });
    const hits = parsed(result).hits ?? [];
    check(
      "query returns hits with a score breakdown",
      hits[0]?.path === "src/retry.rs" && ["text", "path", "symbol", "file"].every((k) => k in hits[0].scoreBreakdown),
      result,
    );
    result = await client.callTool({ name: "status", arguments: {} });
    check("status reports HEAD indexed", parsed(result).headIndexed === true, result);

    const notes = { path: "app.ctxpack", collection: "notes" };
    result = await client.callTool({
      name: "docs_insert",
      arguments: { ...notes, document: '{"_id": 1, "text": "budget notes"}', replace: null },
    });
    check("docs_insert inserts a document given as JSON text", parsed(result).id === 1, result);
    result = await client.callTool({ name: "docs_insert", arguments: { ...notes, document: { _id: 1, text: "again" } } });
    check(
      "a duplicate _id is a conflict tool error (exitCode 5)",
      result.isError === true && envelope(result).exitCode === 5,
      result,
    );
    result = await client.callTool({
      name: "docs_insert",
      arguments: { ...notes, document: { _id: 1, text: "budget notes, revised" }, replace: true },
    });
    check("docs_insert replaces when asked", parsed(result).replaced === true, result);
    result = await client.callTool({
      name: "docs_import",
      arguments: {
        ...notes,
        documents: ['{"text": "retry notes"}', '{\n  "text": "cake notes"\n}'],
        jsonl: null,
        file: null,
        batch_size: null,
      },
    });
    check("docs_import imports documents given as JSON text, pretty-printed too", parsed(result).imported === 2, result);
    result = await client.callTool({ name: "docs_import", arguments: { ...notes, documents: [{ text: "one" }] } });
    check("docs_import imports documents given as objects", parsed(result).imported === 1, result);
    result = await client.callTool({ name: "docs_import", arguments: { ...notes, jsonl: '{"text":"two"}\n' } });
    check("docs_import imports JSON Lines text", parsed(result).imported === 1, result);
    result = await client.callTool({ name: "docs_import", arguments: { ...notes, file: "more.jsonl" } });
    check("docs_import imports a file inside the repository", parsed(result).imported === 1, result);
    result = await client.callTool({ name: "docs_import", arguments: { ...notes, file: "/etc/hostname" } });
    check(
      "docs_import refuses a file outside the repository",
      result.isError === true && envelope(result).exitCode === 2,
      result,
    );
    result = await client.callTool({ name: "vsync", arguments: { ...notes, field: "text" } });
    const sync = parsed(result);
    check("vsync stores the missing embeddings", sync.embedded === 6 && sync.missing === 6, result);
    result = await client.callTool({
      name: "artifact_add",
      arguments: { scope: "evidence", id: "ci-log", content: "test retry ... FAILED\n", title: "CI", source_id: null, name: null },
    });
    check(
      "artifact_add stores evidence",
      JSON.stringify(parsed(result)) === JSON.stringify({ id: "ci-log", scope: "evidence" }),
      result,
    );
    result = await client.callTool({ name: "vsync", arguments: { ...notes, field: "text" } });
    check("vsync again embeds nothing", parsed(result).embedded === 0, result);
    result = await client.callTool({
      name: "context_pack",
      arguments: { ...notes, field: "text", query: "retry notes", budget: 4 },
    });
    const written = parsed(result);
    check(
      "context_pack reads the written collection",
      written.chunks?.[0]?.text === "retry notes" && written.truncated === true,
      result,
    );
    result = await client.callTool({
      name: "docs_insert",
      arguments: { path: "link/outside.ctxpack", collection: "x", document: '{"a": 1}' },
    });
    check("a write through a symlink out is refused", result.isError === true && envelope(result).exitCode === 2, result);
    check(
      "nothing was written outside",
      run(fx.binary, ["docs", "collections", join(fx.outside, "outside.ctxpack")]) === "",
      "the outside store has collections",
    );
  } finally {
    await client.close();
  }
}

/** Aborting a running `index` cancels the work: the store gets no snapshot. */
async function cancellation(fx) {
  const { client } = await fx.connect("write", fx.big);
  try {
    const controller = new AbortController();
    let progress = 0;
    const started = Date.now();
    let outcome;
    try {
      outcome = await client.callTool({ name: "index", arguments: {} }, undefined, {
        signal: controller.signal,
        onprogress: () => {
          progress += 1;
          controller.abort("the test cancels it");
        },
      });
    } catch (e) {
      outcome = e;
    }
    check(
      "an index aborted at its first progress notification is rejected at once",
      progress >= 1 && !(outcome?.content) && Date.now() - started < 10_000,
      { progress, outcome: String(outcome) },
    );
    // The cancelled run may still be stopping: until it lets go of the writer lock, another
    // index is refused as busy (not_found, exitCode 3).
    let result;
    for (let attempt = 0; attempt < 100; attempt += 1) {
      result = await client.callTool({ name: "index", arguments: {} });
      if (!(result.isError && envelope(result).exitCode === 3)) {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const report = parsed(result);
    check(
      "the cancelled index committed no snapshot (the next one indexes from scratch)",
      report.alreadyIndexed === false && report.files === CANCEL_FILES,
      result,
    );
    result = await client.callTool({ name: "status", arguments: {} });
    check("the server keeps serving after a cancellation", parsed(result).headIndexed === true, result);
  } finally {
    await client.close();
  }
}

/**
 * The server `ctxpack mcp config --client claude-code` configures, started the way Claude Code
 * starts it (in the project, with the printed arguments), packs each new commit with no manual
 * step, and records nothing.
 */
async function printedConfigurationFollowsCommits(fx) {
  const entry = JSON.parse(fx.ctxpack("mcp", "config", "--client", "claude-code")).mcpServers.ctxpack;
  const transport = new StdioClientTransport({
    command: fx.binary,
    args: entry.args,
    cwd: fx.repo,
    env: { NO_COLOR: "1" },
    stderr: "inherit",
  });
  const client = new Client({ name: "ctxpack-ts-client-test", version: "0" }, { capabilities: {} });
  await client.connect(transport);
  const git = (...args) => run("git", args, fx.repo);
  const logBefore = fx.ctxpack("log", "--format", "json");
  try {
    for (const round of [0, 1]) {
      const name = `quota_${round}`;
      writeFileSync(join(fx.repo, `src/${name}.rs`), `/// Enforces the ${name} limit.\npub fn ${name}_limit() -> u32 { ${round} }\n`);
      git("add", `src/${name}.rs`);
      git("commit", "-q", "-m", `add ${name}`);
      const head = git("rev-parse", "HEAD").trim();
      const result = await client.callTool({ name: "repo_context_pack", arguments: { goal: `${name} limit` } });
      check(
        `the printed configuration packs new commit ${round + 1} with no manual step`,
        !result.isError && text(result).includes(`\`src/${name}.rs#L1-L2@${head.slice(0, 7)}\``),
        result,
      );
    }
  } finally {
    await client.close();
  }
  check("packs at read scope are not recorded", fx.ctxpack("log", "--format", "json") === logBefore);
}

async function main() {
  if (process.argv.length !== 3) {
    console.error("usage: node client_test.mjs PATH/TO/ctxpack");
    return 2;
  }
  const started = Date.now();
  const base = realpathSync(mkdtempSync(join(tmpdir(), "ctxpack-mcp-ts-")));
  try {
    const fx = new Fixture(process.argv[2], base);
    await readScope(fx);
    await writeScope(fx);
    await cancellation(fx);
    await printedConfigurationFollowsCommits(fx);
  } catch (e) {
    // A crash is one more failed check.
    console.error(e);
    check("the client test ran to the end", false, String(e));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = await main();
