//! `ctxpack mcp`: every tool handler called directly, confinement, panics, raw JSON-RPC over
//! the binary's stdio, and the official MCP Python SDK driving the binary
//! (`tests/mcp/client_test.py`, run when `CTXPACK_MCP_PYTHON` names a Python with `mcp`
//! installed; `.ci/run` sets it up, and under `CI=true` its absence fails the test).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ctxpack::args::Location;
use ctxpack::mcp::{Scope, Server, guarded};
use ctxpack_api::{Control, Error};
use serde_json::{Value, json};

use crate::ctxpack;

const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
const RETRY_RS: &str = "//! The HTTP client.\n\n/// Retries a request with exponential backoff.\npub fn retry_with_backoff(attempts: u32) -> u32 {\n    attempts * 2\n}\n";

/// A git repository with one commit and a document store holding seed 001's example, plus a
/// directory outside the repository.
struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    outside: PathBuf,
    head: String,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical temp dir");
        let repo = base.join("repo");
        let outside = base.join("outside");
        std::fs::create_dir_all(repo.join("src")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        let git = |args: &[&str]| -> String {
            let out = Command::new("git")
                .args(args)
                .current_dir(&repo)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8(out.stdout)
                .expect("UTF-8")
                .trim()
                .to_owned()
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.name", "Test"]);
        git(&["config", "user.email", "test@example.invalid"]);
        git(&["config", "commit.gpgsign", "false"]);
        std::fs::write(repo.join("src/budget.rs"), BUDGET_RS).expect("write");
        std::fs::write(repo.join("src/retry.rs"), RETRY_RS).expect("write");
        std::fs::write(repo.join(".gitignore"), "/app.ctxpack\n/link\n").expect("write");
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "init"]);
        let head = git(&["rev-parse", "HEAD"]);
        let fixture = Fixture {
            _dir: dir,
            repo,
            outside,
            head,
        };
        let store = fixture.repo.join("app.ctxpack");
        let store = store.to_str().expect("UTF-8 temp path");
        for args in [
            vec!["docs", "create", store],
            vec![
                "docs",
                "insert",
                store,
                "docs",
                r#"{"text":"database search and indexing"}"#,
            ],
            vec![
                "docs",
                "insert",
                store,
                "docs",
                r#"{"text":"chocolate cake recipe"}"#,
            ],
        ] {
            let run = ctxpack(&args, b"");
            assert_eq!(run.code, 0, "{}", run.transcript());
        }
        fixture
    }

    fn location(&self) -> Location {
        Location {
            cwd: self.repo.clone(),
            store: None,
        }
    }

    fn server(&self, scope: Scope) -> Server {
        Server::new(scope, &self.location()).expect("the server starts")
    }

    /// Runs `ctxpack ARGS --cwd REPO` from anywhere, expecting success.
    fn cli(&self, args: &[&str]) -> String {
        let mut all = args.to_vec();
        let cwd = self.repo.to_str().expect("UTF-8 temp path");
        all.extend(["--cwd", cwd]);
        let run = ctxpack(&all, b"");
        assert_eq!(run.code, 0, "{}", run.transcript());
        run.stdout
    }

    fn store_arg(&self) -> String {
        self.repo
            .join("app.ctxpack")
            .to_str()
            .expect("UTF-8 temp path")
            .to_owned()
    }
}

/// What a call gave: the text of a successful result, or the envelope of a tool error.
#[derive(Debug)]
enum Outcome {
    Ok(String),
    Failed(Value),
}

impl Outcome {
    fn text(self) -> String {
        match self {
            Outcome::Ok(text) => text,
            Outcome::Failed(e) => panic!("expected success, got {e}"),
        }
    }

    fn json(self) -> Value {
        serde_json::from_str(&self.text()).expect("a tool returns JSON")
    }

    /// The `exitCode` of a failure.
    fn exit_code(&self) -> u64 {
        match self {
            Outcome::Failed(e) => e["error"]["exitCode"].as_u64().expect("an exit code"),
            Outcome::Ok(text) => panic!("expected a failure, got {text}"),
        }
    }

    fn envelope(&self) -> &Value {
        match self {
            Outcome::Failed(e) => &e["error"],
            Outcome::Ok(text) => panic!("expected a failure, got {text}"),
        }
    }
}

/// Calls a listed tool and checks the result's shape: one text block, the same JSON as
/// structured content, and `isError` set exactly on failures.
fn call(server: &Server, name: &str, arguments: Value) -> Outcome {
    let arguments = arguments.as_object().cloned();
    let result = server
        .call(name, arguments, &Control::new())
        .unwrap_or_else(|e| panic!("{name} is not refused: {e:?}"));
    assert_eq!(result.content.len(), 1, "{result:?}");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    let value: Value = serde_json::from_str(&text).expect("the text is JSON");
    assert_eq!(result.structured_content.as_ref(), Some(&value));
    if result.is_error == Some(true) {
        assert_eq!(
            value["error"]
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec![
                "code".to_owned(),
                "exitCode".to_owned(),
                "message".to_owned(),
                "hint".to_owned()
            ]),
            "{value}"
        );
        Outcome::Failed(value)
    } else {
        assert_eq!(result.is_error, Some(false));
        Outcome::Ok(text)
    }
}

const READ_TOOLS: [&str; 5] = [
    "repo_context_pack",
    "query",
    "status",
    "context_pack",
    "vsearch",
];
const WRITE_TOOLS: [&str; 5] = [
    "artifact_add",
    "index",
    "docs_insert",
    "docs_import",
    "vsync",
];

#[test]
fn tools_listed_per_scope_with_schemas_and_annotations() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    let names: Vec<String> = read.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, READ_TOOLS);
    let write = f.server(Scope::Write);
    let names: Vec<String> = write.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "repo_context_pack",
            "query",
            "status",
            "artifact_add",
            "index",
            "context_pack",
            "vsearch",
            "docs_insert",
            "docs_import",
            "vsync"
        ]
    );
    for tool in write.tools() {
        let annotations = tool.annotations.as_ref().expect("annotated");
        let writes = WRITE_TOOLS.contains(&tool.name.as_ref());
        assert_eq!(annotations.read_only_hint, Some(!writes), "{}", tool.name);
        assert!(annotations.idempotent_hint.is_some(), "{}", tool.name);
        assert!(annotations.destructive_hint.is_some(), "{}", tool.name);
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert_eq!(tool.input_schema["additionalProperties"], false);
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(description.len() > 100, "{} needs a description", tool.name);
    }
    let context = write
        .tools()
        .into_iter()
        .find(|t| t.name == "context_pack")
        .expect("listed");
    let mut required: Vec<&str> = context.input_schema["required"]
        .as_array()
        .expect("required arguments")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["collection", "field", "path", "query"]);
    assert_eq!(
        context.input_schema["properties"]["budget"]["default"],
        1000
    );

    let info = read.info();
    assert_eq!(info.server_info.name, "ctxpack");
    assert_eq!(info.server_info.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    let instructions = info.instructions.expect("instructions");
    assert!(instructions.contains("repo_context_pack"), "{instructions}");
    assert!(instructions.contains("scope `read`"), "{instructions}");
}

#[test]
fn write_tools_and_unknown_tools_are_refused_at_read_scope() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    for name in WRITE_TOOLS.iter().chain(&["no_such_tool"]) {
        let error = read
            .call(name, Some(serde_json::Map::new()), &Control::new())
            .expect_err("refused");
        assert_eq!(error.code.0, -32602, "{name}: {error:?}");
    }
    assert!(
        !f.repo.join(".ctxpack").exists(),
        "read scope wrote a store"
    );
    let write = f.server(Scope::Write);
    let error = write
        .call("no_such_tool", None, &Control::new())
        .expect_err("refused");
    assert_eq!(error.code.0, -32602);
}

#[test]
fn snapshot_tools_match_the_cli() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    let goal = "how are budgets enforced";

    // Not indexed: the typed failure with the CLI's guidance, plus the MCP way out.
    let outcome = call(&read, "repo_context_pack", json!({"goal": goal}));
    assert_eq!(outcome.exit_code(), 3);
    let error = outcome.envelope();
    assert_eq!(error["code"], "not_found");
    assert_eq!(
        error["message"],
        format!(
            "snapshot {} is not indexed: no store at {}",
            f.head,
            f.repo.join(".ctxpack").display()
        )
    );
    let hint = error["hint"].as_str().expect("a hint");
    assert!(
        hint.contains("ctxpack index") && hint.contains("`index` tool"),
        "{hint}"
    );
    assert_eq!(call(&read, "query", json!({"goal": goal})).exit_code(), 3);
    let status = call(&read, "status", json!({})).json();
    assert_eq!(status["headIndexed"], false);
    assert_eq!(status["storeExists"], false);
    assert!(
        !f.repo.join(".ctxpack").exists(),
        "read scope wrote a store"
    );

    let write = f.server(Scope::Write);
    let report = call(&write, "index", json!({})).json();
    assert_eq!(report["sha"], f.head.as_str());
    assert_eq!(report["alreadyIndexed"], false);
    let again = call(&write, "index", json!({"at": &f.head[..8]})).json();
    assert_eq!(again["alreadyIndexed"], true);

    // An evidence artifact stored over MCP is merged by an evidence-scoped pack.
    let added = call(
        &write,
        "artifact_add",
        json!({"scope": "evidence", "id": "ci-7", "content": format!("{goal}: the test failed\n")}),
    )
    .json();
    assert_eq!(added, json!({"id": "ci-7", "scope": "evidence"}));
    let evidence = call(
        &read,
        "repo_context_pack",
        json!({"goal": goal, "scope": "evidence"}),
    )
    .json();
    assert_eq!(evidence["artifacts"], json!(["ci-7"]), "{evidence}");
    let conflict = call(
        &write,
        "artifact_add",
        json!({"scope": "evidence", "id": "ci-7", "content": "other text"}),
    );
    assert_eq!(conflict.exit_code(), 5);

    // Exactly what the CLI prints with --format json, for defaults and for every option.
    let text = call(&read, "repo_context_pack", json!({"goal": goal})).text();
    assert_eq!(
        format!("{text}\n"),
        f.cli(&["pack", goal, "--format", "json"])
    );
    let text = call(
        &read,
        "repo_context_pack",
        json!({"goal": goal, "budget": 20, "at": &f.head[..10], "scope": "durable", "view": "full",
               "meter": "chars", "selector": "skip", "top_k": 1}),
    )
    .text();
    let cli = f.cli(&[
        "pack",
        goal,
        "--budget",
        "20",
        "--at",
        &f.head[..10],
        "--view",
        "full",
        "--meter",
        "chars",
        "--selector",
        "skip",
        "--top-k",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(format!("{text}\n"), cli);

    let text = call(&read, "query", json!({"goal": "retry backoff", "top_k": 2})).text();
    assert_eq!(
        format!("{text}\n"),
        f.cli(&["query", "retry backoff", "--top-k", "2", "--format", "json"])
    );
    let text = call(&read, "status", json!({})).text();
    assert_eq!(format!("{text}\n"), f.cli(&["status", "--format", "json"]));
}

#[test]
fn snapshot_tool_arguments_are_checked() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    for arguments in [
        json!({}),
        json!({"goal": "  "}),
        json!({"goal": 7}),
        json!({"goal": "x", "budget": 0}),
        json!({"goal": "x", "budget": 1.5}),
        json!({"goal": "x", "budget": 9_007_199_254_740_992u64}),
        json!({"goal": "x", "meter": "bytes"}),
        json!({"goal": "x", "selector": "random"}),
        json!({"goal": "x", "view": "huge"}),
        json!({"goal": "x", "scope": "galaxy"}),
        json!({"goal": "x", "top_k": 0}),
        json!({"goal": "x", "at": "main"}),
        json!({"goal": "x", "at": "HEAD~1"}),
        json!({"goal": "x", "colour": "red"}),
    ] {
        let outcome = call(&read, "repo_context_pack", arguments.clone());
        assert_eq!(outcome.exit_code(), 2, "{arguments}: {outcome:?}");
    }
    assert_eq!(call(&read, "status", json!({"x": 1})).exit_code(), 2);
    assert_eq!(
        call(&read, "query", json!({"goal": "x", "top_k": -1})).exit_code(),
        2
    );
}

#[test]
fn document_tools_match_the_cli_and_seed_001() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    let store = f.store_arg();

    // Seed 001's worked example, relative to the repository root and absolute.
    for path in ["app.ctxpack", store.as_str()] {
        let text = call(
            &read,
            "context_pack",
            json!({"path": path, "collection": "docs", "field": "text", "query": "database search", "budget": 500}),
        )
        .text();
        let cli = ctxpack(
            &[
                "docs",
                "context",
                &store,
                "docs",
                "text",
                "database search",
                "--budget",
                "500",
            ],
            b"",
        );
        assert_eq!(format!("{text}\n"), cli.stdout);
        let pack: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(pack["usedTokens"], 13);
        assert_eq!(pack["truncated"], false);
        assert_eq!(pack["budgetTokens"], 500);
        // Seed 001's scores, as written (0.7071 is the cosine of the two texts, rounded).
        let scores: Vec<String> = pack["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| c["score"].to_string())
            .collect();
        assert_eq!(scores, ["0.7071", "0.0"]);
        assert!(text.contains(r#""score":0.0,"#), "{text}");
    }
    let pack = call(
        &read,
        "context_pack",
        json!({"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "cake",
               "filter": "{\"text\": {\"$ne\": \"database search and indexing\"}}"}),
    )
    .json();
    assert_eq!(pack["budgetTokens"], 1000);
    assert_eq!(pack["chunks"].as_array().map(Vec::len), Some(1));

    let hits = call(
        &read,
        "vsearch",
        json!({"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "database search", "k": 1}),
    )
    .json();
    let cli = ctxpack(
        &[
            "docs",
            "vsearch",
            &store,
            "docs",
            "text",
            "database search",
            "--k",
            "1",
        ],
        b"",
    );
    let line: Value = serde_json::from_str(cli.stdout.trim()).expect("JSON line");
    assert_eq!(hits["hits"], json!([line]));
    assert_eq!(hits["embeddedOnTheFly"], 2);

    for (arguments, code) in [
        (
            json!({"path": "app.ctxpack", "collection": "nope", "field": "text", "query": "x"}),
            3,
        ),
        (
            json!({"path": "none.ctxpack", "collection": "docs", "field": "text", "query": "x"}),
            3,
        ),
        (
            json!({"path": "app.ctxpack", "collection": "docs", "field": "", "query": "x"}),
            2,
        ),
        (
            json!({"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "x", "filter": "{"}),
            2,
        ),
        (
            json!({"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "x", "filter": 3}),
            2,
        ),
        (
            json!({"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "x", "budget": 0}),
            2,
        ),
        (
            json!({"path": "app.ctxpack", "collection": "docs", "field": "text", "query": "x", "k": 3}),
            2,
        ),
    ] {
        let outcome = call(&read, "context_pack", arguments.clone());
        assert_eq!(outcome.exit_code(), code, "{arguments}");
    }
    assert!(
        !f.repo.join("none.ctxpack").exists(),
        "read scope created a store"
    );

    let write = f.server(Scope::Write);
    let inserted = call(
        &write,
        "docs_insert",
        json!({"path": "app.ctxpack", "collection": "notes", "document": {"_id": "a", "text": "budget notes"}}),
    )
    .json();
    assert_eq!(
        inserted,
        json!({"collection": "notes", "id": "a", "replaced": false})
    );
    let duplicate = call(
        &write,
        "docs_insert",
        json!({"path": "app.ctxpack", "collection": "notes", "document": "{\"_id\": \"a\"}"}),
    );
    assert_eq!(duplicate.exit_code(), 5);
    let replaced = call(
        &write,
        "docs_insert",
        json!({"path": "app.ctxpack", "collection": "notes", "document": {"_id": "a", "text": "retry notes"}, "replace": true}),
    )
    .json();
    assert_eq!(replaced["replaced"], true);
    let generated = call(
        &write,
        "docs_insert",
        json!({"path": "app.ctxpack", "collection": "notes", "document": {"text": "cake notes"}}),
    )
    .json();
    assert!(generated["id"]["$oid"].is_string(), "{generated}");

    std::fs::write(f.repo.join("more.jsonl"), "{\"text\":\"file note\"}\n").expect("write");
    for (source, imported) in [
        (json!({"documents": [{"text": "one"}, {"text": "two"}]}), 2),
        (
            json!({"jsonl": "{\"text\":\"three\"}\n\n{\"text\":\"four\"}\n"}),
            2,
        ),
        (json!({"file": "more.jsonl"}), 1),
    ] {
        let mut arguments = json!({"path": "app.ctxpack", "collection": "notes"});
        for (k, v) in source.as_object().expect("object") {
            arguments[k] = v.clone();
        }
        let report = call(&write, "docs_import", arguments).json();
        assert_eq!(report["imported"], imported, "{report}");
    }
    for source in [
        json!({}),
        json!({"jsonl": "{}", "file": "more.jsonl"}),
        json!({"documents": "nope"}),
        json!({"jsonl": "{\"text\":\"ok\"}\nnot json\n"}),
    ] {
        let mut arguments = json!({"path": "app.ctxpack", "collection": "notes"});
        for (k, v) in source.as_object().expect("object") {
            arguments[k] = v.clone();
        }
        assert_eq!(
            call(&write, "docs_import", arguments.clone()).exit_code(),
            2,
            "{arguments}"
        );
    }

    let sync = call(
        &write,
        "vsync",
        json!({"path": "app.ctxpack", "collection": "notes", "field": "text"}),
    )
    .json();
    assert_eq!(sync["embedded"], 7, "{sync}");
    let sync = call(
        &write,
        "vsync",
        json!({"path": "app.ctxpack", "collection": "notes", "field": "text"}),
    )
    .json();
    assert_eq!(sync["embedded"], 0, "{sync}");
    let pack = call(
        &read,
        "context_pack",
        json!({"path": "app.ctxpack", "collection": "notes", "field": "text", "query": "retry notes", "budget": 3}),
    )
    .json();
    assert_eq!(pack["chunks"][0]["id"], "a");
    assert_eq!(pack["truncated"], true);
}

#[test]
fn paths_outside_the_repository_and_store_are_refused() {
    let f = Fixture::new();
    let outside_store = f.outside.join("outside.ctxpack");
    let run = ctxpack(
        &["docs", "create", outside_store.to_str().expect("UTF-8")],
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    std::os::unix::fs::symlink(&f.outside, f.repo.join("link")).expect("symlink");
    let read = f.server(Scope::Read);
    let write = f.server(Scope::Write);
    for path in [
        "../outside/outside.ctxpack".to_owned(),
        outside_store.to_str().expect("UTF-8").to_owned(),
        "link/outside.ctxpack".to_owned(),
        "app.ctxpack/../app.ctxpack".to_owned(),
        "/".to_owned(),
    ] {
        let outcome = call(
            &read,
            "context_pack",
            json!({"path": path, "collection": "docs", "field": "text", "query": "x"}),
        );
        assert_eq!(outcome.exit_code(), 2, "{path}");
        let message = outcome.envelope()["message"].as_str().expect("message");
        assert!(message.contains("escapes the repository"), "{message}");
        let outcome = call(
            &write,
            "docs_insert",
            json!({"path": path, "collection": "docs", "document": {"a": 1}}),
        );
        assert_eq!(outcome.exit_code(), 2, "{path}");
    }
    let outcome = call(
        &write,
        "docs_import",
        json!({"path": "app.ctxpack", "collection": "docs", "file": "/etc/hostname"}),
    );
    assert_eq!(outcome.exit_code(), 2);
    let outcome = call(
        &write,
        "docs_import",
        json!({"path": "app.ctxpack", "collection": "docs", "file": "link/x.jsonl"}),
    );
    assert_eq!(outcome.exit_code(), 2);
    let collections = ctxpack(
        &[
            "docs",
            "collections",
            outside_store.to_str().expect("UTF-8"),
        ],
        b"",
    );
    assert_eq!(collections.stdout, "", "something was written outside");

    // The server's own store may live outside the repository: it is allowed explicitly.
    let elsewhere = f.outside.join("snapshots");
    let server = Server::new(
        Scope::Write,
        &Location {
            cwd: f.repo.join("src"),
            store: Some(elsewhere.clone()),
        },
    )
    .expect("starts");
    assert_eq!(server.workspace().repo_root(), Some(f.repo.as_path()));
    assert_eq!(
        server.workspace().store_dir().ok(),
        Some(elsewhere.as_path())
    );
    let report = call(&server, "index", json!({})).json();
    assert_eq!(report["sha"], f.head.as_str());
    assert!(elsewhere.join("ctxpack.sqlite").is_file());
    let run = ctxpack(
        &[
            "docs",
            "create",
            elsewhere.join("docs.ctxpack").to_str().expect("UTF-8"),
        ],
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let outcome = call(
        &server,
        "docs_insert",
        json!({"path": elsewhere.join("docs.ctxpack"), "collection": "c", "document": {"a": 1}}),
    );
    assert!(matches!(outcome, Outcome::Ok(_)), "{outcome:?}");
}

#[test]
fn a_directory_that_is_no_repository_still_serves_documents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let store = root.join("app.ctxpack");
    let run = ctxpack(&["docs", "create", store.to_str().expect("UTF-8")], b"");
    assert_eq!(run.code, 0, "{}", run.transcript());
    let server = Server::new(
        Scope::Read,
        &Location {
            cwd: root.clone(),
            store: None,
        },
    )
    .expect("starts");
    assert_eq!(server.workspace().repo_root(), None);
    assert_eq!(call(&server, "status", json!({})).exit_code(), 2);
    let outcome = call(
        &server,
        "vsearch",
        json!({"path": "app.ctxpack", "collection": "none", "field": "text", "query": "x"}),
    );
    assert_eq!(outcome.exit_code(), 3);

    let missing = Server::new(
        Scope::Read,
        &Location {
            cwd: root.join("no/such/dir"),
            store: None,
        },
    );
    let error: Error = missing.expect_err("refused");
    assert_eq!(ctxpack::exit::exit_code(error.kind()), 2);
}

#[test]
fn a_panic_is_an_internal_tool_error() {
    let result = guarded("boom", || panic!("deliberate test panic"));
    assert_eq!(result.is_error, Some(true));
    let envelope = result.structured_content.expect("structured");
    assert_eq!(envelope["error"]["code"], "internal");
    assert_eq!(envelope["error"]["exitCode"], 1);
    let message = envelope["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("`boom`") && message.contains("deliberate test panic"),
        "{message}"
    );
    let result = guarded("fine", || Ok("{\"a\":1}".to_owned()));
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(json!({"a": 1})));
}

/// A `ctxpack mcp` process driven with raw JSON-RPC lines.
pub(crate) struct Raw {
    pub(crate) child: std::process::Child,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Raw {
    pub(crate) fn start(args: &[&str]) -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Raw { child, stdout }
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("piped");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    pub(crate) fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {line:?}: {e}"))
    }

    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let reply = self.receive();
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    pub(crate) fn initialize(&mut self) -> Value {
        let reply = self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        reply
    }

    /// Closes stdin and waits; returns whether the server exited 0 and whatever else it
    /// wrote to stdout.
    pub(crate) fn finish(mut self) -> (bool, String) {
        drop(self.child.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).expect("read");
        let status = self.child.wait().expect("exits");
        (status.success(), rest)
    }
}

#[test]
fn raw_json_rpc_over_stdio() {
    let f = Fixture::new();
    let repo = f.repo.to_str().expect("UTF-8");
    let mut server = Raw::start(&["--cwd", repo]);
    let init = server.initialize();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "ctxpack");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    let list = server.request(1, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, READ_TOOLS);

    // Garbage is a parse error; a well-formed but invalid request is invalid params.
    server.send("{not json");
    let reply = server.receive();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null, "{reply}");
    let reply = server.request(2, "tools/call", json!({"name": 42}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let reply = server.request(3, "tools/call", json!({"name": "index", "arguments": {}}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");

    let reply = server.request(
        4,
        "tools/call",
        json!({"name": "context_pack", "arguments": {"path": "app.ctxpack", "collection": "docs",
               "field": "text", "query": "database search", "budget": 500}}),
    );
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let pack: Value = serde_json::from_str(
        reply["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("JSON");
    assert_eq!(pack["usedTokens"], 13);
    let reply = server.request(
        5,
        "tools/call",
        json!({"name": "repo_context_pack", "arguments": {"goal": "x"}}),
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["error"]["exitCode"], 3);

    let (ok, rest) = server.finish();
    assert!(ok, "the server exits 0 when stdin closes");
    assert_eq!(rest, "", "nothing but replies on stdout");
    assert!(
        !f.repo.join(".ctxpack").exists(),
        "read scope wrote a store"
    );
}

/// Every probe of a malformed message, in one session: each gets its JSON-RPC error (with
/// `"id": null` when the id cannot be read) and the server answers the next request.
#[test]
fn malformed_messages_are_answered_and_the_server_keeps_serving() {
    let f = Fixture::new();
    let repo = f.repo.to_str().expect("UTF-8");
    let mut server = Raw::start(&["--cwd", repo]);
    // Before initialize: a notification is ignored (not fatal), a request is refused.
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let early = server.request(1, "tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("initialize")),
        "{early}"
    );
    server.initialize();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let long = format!("{{\"x\":\"{}\"}}", "a".repeat(17 * 1024 * 1024));
    let probes: Vec<(&str, Vec<u8>, i64)> = vec![
        ("text", b"hello there".to_vec(), -32700),
        (
            "truncated",
            br#"{"jsonrpc":"2.0","id":9,"method":"ping""#.to_vec(),
            -32700,
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"p\xffing\"}".to_vec(),
            -32700,
        ),
        (
            "a NUL byte",
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"p\0ing\"}".to_vec(),
            -32700,
        ),
        (
            "two messages on one line",
            br#"{"jsonrpc":"2.0","id":9,"method":"ping"}{"jsonrpc":"2.0","id":10,"method":"ping"}"#
                .to_vec(),
            -32700,
        ),
        ("nested 10,000 deep", deep.into_bytes(), -32700),
        (
            "a lone surrogate",
            br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"x":"\ud800"}}}"#
                .to_vec(),
            -32700,
        ),
        ("a line over 16 MiB", long.into_bytes(), -32700),
    ];
    for (n, (name, line, code)) in probes.into_iter().enumerate() {
        let stdin = server.child.stdin.as_mut().expect("piped");
        stdin.write_all(&line).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
        let reply = server.receive();
        assert_eq!(reply["error"]["code"], code, "{name}: {reply}");
        assert_eq!(reply["id"], Value::Null, "{name}: {reply}");
        // And the server still serves.
        let id = 100 + n as u64;
        let pong = server.request(id, "ping", json!({}));
        assert!(pong["result"].is_object(), "{name}: then {pong}");
    }
    let params: &[(&str, Value)] = &[
        (
            "arguments as text",
            json!({"name": "status", "arguments": "{}"}),
        ),
        (
            "arguments as an array",
            json!({"name": "status", "arguments": [1]}),
        ),
        ("no name", json!({"arguments": {}})),
    ];
    for (n, (name, params)) in params.iter().enumerate() {
        let reply = server.request(200 + n as u64, "tools/call", params.clone());
        assert_eq!(reply["error"]["code"], -32602, "{name}: {reply}");
    }
    let reply = server.request(300, "tools/list", json!({"cursor": "page-2"}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // `null` for an optional argument means absent.
    let reply = server.request(
        301,
        "tools/call",
        json!({"name": "query", "arguments": {"goal": "budget", "at": null, "top_k": null}}),
    );
    assert_eq!(
        reply["result"]["structuredContent"]["error"]["exitCode"], 3,
        "{reply}"
    );
    let (ok, rest) = server.finish();
    assert!(ok && rest.is_empty(), "{rest}");
}

#[test]
fn index_reports_progress_when_the_call_carries_a_token() {
    let f = Fixture::new();
    let repo = f.repo.to_str().expect("UTF-8");
    let mut server = Raw::start(&["--cwd", repo, "--scope", "write"]);
    server.initialize();
    server.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "index", "arguments": {}, "_meta": {"progressToken": "p-7"}}})
        .to_string(),
    );
    let mut progress = Vec::new();
    let reply = loop {
        let message = server.receive();
        if message["method"] == "notifications/progress" {
            progress.push(message["params"].clone());
        } else {
            break message;
        }
    };
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(
        !progress.is_empty(),
        "no progress notification before the result"
    );
    assert!(
        progress.iter().all(|p| p["progressToken"] == "p-7"),
        "{progress:?}"
    );
    let phases: Vec<&str> = progress
        .iter()
        .filter_map(|p| p["message"].as_str())
        .collect();
    for phase in ["reading", "writing"] {
        assert!(phases.contains(&phase), "no {phase} progress in {phases:?}");
    }
    // Without a token, no notification: the next message is the result.
    let reply = server.request(8, "tools/call", json!({"name": "status", "arguments": {}}));
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let (ok, _) = server.finish();
    assert!(ok);
}

#[test]
fn a_cancelled_index_writes_no_snapshot() {
    let f = Fixture::new();
    let write = f.server(Scope::Write);
    let control = Control::new();
    control.canceller().cancel();
    let result = write
        .call("index", Some(serde_json::Map::new()), &control)
        .expect("listed");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let envelope = result.structured_content.expect("structured");
    let message = envelope["error"]["message"].as_str().expect("message");
    assert!(message.contains("cancelled"), "{message}");
    let status = call(&write, "status", json!({})).json();
    assert_eq!(status["headIndexed"], false, "{status}");
    // Not cancelled, the same call indexes.
    assert_eq!(
        call(&write, "index", json!({})).json()["sha"],
        f.head.as_str()
    );
}

/// The official MCP Python SDK drives the binary through every tool (see the script's
/// docstring). Skipped with a note when no Python is configured, except under CI.
#[test]
fn python_sdk_client() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client_test.py");
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let python = match std::env::var("CTXPACK_MCP_PYTHON") {
        Ok(python) if !python.is_empty() => python,
        _ => {
            assert!(
                !in_ci,
                "CI=true but CTXPACK_MCP_PYTHON is not set: .ci/run must install the MCP Python SDK"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "note: skipping the MCP Python SDK client test: set CTXPACK_MCP_PYTHON to a Python \
                     with `pip install -r {}` (as .ci/run does)",
                    script.with_file_name("requirements.txt").display()
                );
            }
            return;
        }
    };
    let out = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_ctxpack"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP Python client test failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn write_scope_packs_are_recorded_and_read_scope_packs_are_not() {
    let f = Fixture::new();
    f.cli(&["index"]);
    let read = f.server(Scope::Read);
    call(&read, "repo_context_pack", json!({"goal": "budget"})).json();
    assert_eq!(f.cli(&["log", "--format", "json"]), "[]\n");
    let write = f.server(Scope::Write);
    let text = call(
        &write,
        "repo_context_pack",
        json!({"goal": "budget", "view": "minimal"}),
    )
    .text();
    let log: serde_json::Value =
        serde_json::from_str(&f.cli(&["log", "--format", "json"])).expect("log is JSON");
    assert_eq!(log[0]["surface"], "mcp");
    let id = log[0]["id"].as_str().expect("an id").to_owned();
    // `show` replays what the agent received.
    assert_eq!(f.cli(&["show", &id]), format!("{text}\n"));
}
