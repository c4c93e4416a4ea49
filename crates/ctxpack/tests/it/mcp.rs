//! `ctxpack mcp`: every tool handler called directly, confinement, panics, the pack's formats
//! and output schema, raw JSON-RPC over the binary's stdio (roots included), `ctxpack mcp
//! config`, and the official MCP Python and TypeScript SDKs driving the binary
//! (`tests/mcp/client_test.py` and `tests/mcp/ts/client_test.mjs` over stdio,
//! `tests/mcp/http_client_test.py` over `ctxpack serve`'s streamable HTTP; run when
//! `CTXPACK_MCP_PYTHON` and `CTXPACK_MCP_NODE_DIR` are set; `.ci/run` sets them up, and under
//! `CI=true` their absence fails the tests).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ctxpack::args::Location;
use ctxpack::mcp::{Reply, Scope, Server, file_uri_path, guarded};
use ctxpack_api::{Control, Error, ErrorKind};
use serde_json::{Value, json};

use crate::{ctxpack, ctxpack_in};

const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
const RETRY_RS: &str = "//! The HTTP client.\n\n/// Retries a request with exponential backoff.\npub fn retry_with_backoff(attempts: u32) -> u32 {\n    attempts * 2\n}\n";

/// Makes a git repository at `repo` with one commit of `files` (path, text); returns its SHA.
fn repository(repo: &Path, files: &[(&str, &str)]) -> String {
    let mut script = ctxpack_testkit::Script::new();
    for (path, text) in files {
        script.write(path, text);
    }
    let built = script.commit("init").build();
    built.checkout_at(repo);
    built.head().to_owned()
}

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
        std::fs::create_dir_all(&outside).expect("mkdir");
        let head = repository(
            &repo,
            &[
                ("src/budget.rs", BUDGET_RS),
                ("src/retry.rs", RETRY_RS),
                (".gitignore", "/app.ctxpack\n/link\n"),
            ],
        );
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

/// What a call gave: the text of a successful result (and its JSON, `null` for a pack rendered
/// in another format), or the envelope of a tool error.
#[derive(Debug)]
enum Outcome {
    Ok { text: String, structured: Value },
    Failed(Value),
}

impl Outcome {
    fn text(self) -> String {
        match self {
            Outcome::Ok { text, .. } => text,
            Outcome::Failed(e) => panic!("expected success, got {e}"),
        }
    }

    /// The canonical JSON the text is (a pack's with `"format": "json"`).
    fn json(self) -> Value {
        match self {
            Outcome::Ok { structured, .. } => {
                assert!(!structured.is_null(), "the text is no JSON");
                structured
            }
            Outcome::Failed(e) => panic!("expected success, got {e}"),
        }
    }

    /// The `exitCode` of a failure.
    fn exit_code(&self) -> u64 {
        match self {
            Outcome::Failed(e) => e["error"]["exitCode"].as_u64().expect("an exit code"),
            Outcome::Ok { text, .. } => panic!("expected a failure, got {text}"),
        }
    }

    fn envelope(&self) -> &Value {
        match self {
            Outcome::Failed(e) => &e["error"],
            Outcome::Ok { text, .. } => panic!("expected a failure, got {text}"),
        }
    }
}

/// Checks a failure envelope: `code`, `kind`, `exitCode`, `message`, then `hint`, `field` and
/// `next` each only when there is one (never `null`): `hint` and `field` as strings, `next` as
/// the hint's data.
fn check_envelope(value: &Value) {
    let error = value["error"].as_object().expect("an error object");
    let keys: Vec<&str> = error.keys().map(String::as_str).collect();
    for required in ["code", "exitCode", "kind", "message"] {
        assert!(keys.contains(&required), "{value}");
    }
    for key in keys {
        assert!(
            [
                "code", "exitCode", "kind", "message", "hint", "field", "next"
            ]
            .contains(&key),
            "{value}"
        );
    }
    for optional in ["hint", "field"] {
        assert!(error.get(optional).is_none_or(Value::is_string), "{value}");
    }
    if let Some(next) = error.get("next") {
        assert!(next["action"].is_string(), "{value}");
        assert!(
            serde_json::from_value::<ctxpack_api::Hint>(next.clone()).is_ok(),
            "{value}"
        );
    }
    let kind = error["kind"].as_str().expect("a kind");
    assert!(ErrorKind::from_name(kind).is_some(), "{value}");
    assert!(
        error.get("hint").is_none_or(Value::is_string),
        "a hint is text or absent: {value}"
    );
}

/// Calls a listed tool and checks the result's shape: one text block, and `isError` set
/// exactly on failures. A success carries no structured content (a client may forward it to
/// the model beside the text); its text is JSON, except for a pack rendered in another
/// `format`. A failure's envelope is its text and its structured content.
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
    if result.is_error == Some(true) {
        let value: Value = serde_json::from_str(&text).expect("the text is JSON");
        assert_eq!(result.structured_content, Some(value.clone()));
        check_envelope(&value);
        Outcome::Failed(value)
    } else {
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, None, "{name}");
        let structured = match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(_) => {
                assert_eq!(name, "repo_context_pack", "only a pack is rendered: {text}");
                Value::Null
            }
        };
        Outcome::Ok { text, structured }
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
    // Every argument is listed as required (strict mode); the optional ones are nullable.
    let mut required: Vec<&str> = context.input_schema["required"]
        .as_array()
        .expect("required arguments")
        .iter()
        .filter_map(Value::as_str)
        .filter(|name| !nullable(&context.input_schema["properties"][*name]))
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["collection", "field", "path", "query"]);
    let budget = &context.input_schema["properties"]["budget"]["description"];
    assert!(
        budget.as_str().is_some_and(|d| d.ends_with("Null: 1000.")),
        "{budget}"
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
    let outcome = call(
        &read,
        "repo_context_pack",
        json!({"goal": goal, "index": false}),
    );
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
    .text();
    assert!(evidence.contains("`evidence:ci-7#L1-L1`"), "{evidence}");
    let conflict = call(
        &write,
        "artifact_add",
        json!({"scope": "evidence", "id": "ci-7", "content": "other text"}),
    );
    assert_eq!(conflict.exit_code(), 5);

    // Exactly what the CLI prints: Markdown by default, --format json with `format`, for
    // defaults and for every option the tool offers.
    let text = call(
        &read,
        "repo_context_pack",
        json!({"goal": goal, "fresh": true}),
    )
    .text();
    assert_eq!(
        format!("{text}\n"),
        f.cli(&["pack", goal, "--format", "markdown"])
    );
    for format in ["text", "xml"] {
        let text = call(
            &read,
            "repo_context_pack",
            json!({"goal": goal, "format": format, "fresh": true}),
        )
        .text();
        assert_eq!(
            format!("{text}\n"),
            f.cli(&["pack", goal, "--format", format])
        );
    }
    let text = call(
        &read,
        "repo_context_pack",
        json!({"goal": goal, "budget": 700, "at": &f.head[..10], "scope": "durable", "view": "full",
               "include": ["src/**"], "exclude": ["src/retry.rs"], "format": "xml", "fresh": true}),
    )
    .text();
    let cli = f.cli(&[
        "pack",
        goal,
        "--budget",
        "700",
        "--at",
        &f.head[..10],
        "--view",
        "full",
        "--include",
        "src/**",
        "--exclude",
        "src/retry.rs",
        "--format",
        "xml",
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
        json!({"goal": "x", "format": "pdf"}),
        json!({"goal": "x", "view": "huge"}),
        json!({"goal": "x", "scope": "galaxy"}),
        json!({"goal": "x", "include": "src/**"}),
        // Options the tool withholds are unknown arguments.
        json!({"goal": "x", "meter": "chars"}),
        json!({"goal": "x", "top_k": 3}),
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
    let workspace = server.workspace().expect("serves the repository");
    assert_eq!(workspace.repo_root(), Some(f.repo.as_path()));
    assert_eq!(workspace.store_dir().ok(), Some(elsewhere.as_path()));
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
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
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
    assert_eq!(
        server
            .workspace()
            .expect("serves the directory")
            .repo_root(),
        None
    );
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
    let result = guarded("fine", || Ok(Reply::json(json!({"a": 1}))));
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, None);
    assert_eq!(
        result.content[0].as_text().expect("a text block").text,
        r#"{"a":1}"#
    );
}

/// A `ctxpack mcp` process driven with raw JSON-RPC lines.
pub(crate) struct Raw {
    pub(crate) child: std::process::Child,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Raw {
    pub(crate) fn start(args: &[&str]) -> Raw {
        Raw::start_in(Path::new("."), args)
    }

    /// A server started in `dir` (what it serves when neither `--cwd` nor roots name a
    /// repository).
    pub(crate) fn start_in(dir: &Path, args: &[&str]) -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
            .arg("mcp")
            .args(args)
            .current_dir(dir)
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
        self.initialize_with(json!({}))
    }

    /// `initialize` declaring these client capabilities, then `notifications/initialized`.
    pub(crate) fn initialize_with(&mut self, capabilities: Value) -> Value {
        let reply = self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
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
        json!({"name": "repo_context_pack", "arguments": {"goal": "x", "index": false}}),
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
    for phase in ["reading", "chunking"] {
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

/// The official MCP Python SDK drives the binary through every tool over stdio (see the
/// script's docstring). Skipped with a note when no Python is configured, except under CI.
#[test]
fn python_sdk_client() {
    python_sdk("client_test.py");
}

/// The official MCP Python SDK's streamable HTTP client drives `ctxpack serve`'s `/mcp` with
/// a read and a write token (see the script's docstring).
#[test]
fn python_sdk_http_client() {
    python_sdk("http_client_test.py");
}

/// Runs `tests/mcp/SCRIPT` with `CTXPACK_MCP_PYTHON` against the binary.
fn python_sdk(script: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(script);
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
        "the MCP Python client test {} failed ({}):\n{stdout}\n{stderr}",
        script.display(),
        out.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// The official MCP TypeScript SDK drives the binary (see the header of
/// `tests/mcp/ts/client_test.mjs`): a second real client beside the Python one.
/// `CTXPACK_MCP_NODE_DIR` names the directory where `npm ci` installed the pinned
/// `tests/mcp/ts/package-lock.json` (`.ci/run` uses `target/mcp-node`). Skipped with a note when
/// it is not set, except under CI.
#[test]
fn typescript_sdk_client() {
    let ts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/ts");
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let installed = match std::env::var("CTXPACK_MCP_NODE_DIR") {
        Ok(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            assert!(
                !in_ci,
                "CI=true but CTXPACK_MCP_NODE_DIR is not set: .ci/run must install the MCP TypeScript SDK"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "note: skipping the MCP TypeScript SDK client test: set CTXPACK_MCP_NODE_DIR to a \
                     directory holding {} and {} after `npm ci` (as .ci/run does)",
                    ts.join("package.json").display(),
                    ts.join("package-lock.json").display()
                );
            }
            return;
        }
    };
    let lock = |dir: &Path| std::fs::read(dir.join("package-lock.json")).ok();
    assert_eq!(
        lock(&installed),
        lock(&ts),
        "{} holds another package-lock.json than {}: run `npm ci` there again (as .ci/run does)",
        installed.display(),
        ts.display()
    );
    // Node finds packages from the script's own directory: a copy of the script runs beside a
    // link to the installed node_modules, so the checkout stays clean.
    let run_dir = tempfile::tempdir().expect("tempdir");
    let script = run_dir.path().join("client_test.mjs");
    std::fs::copy(ts.join("client_test.mjs"), &script).expect("copy the script");
    std::os::unix::fs::symlink(
        installed.join("node_modules"),
        run_dir.path().join("node_modules"),
    )
    .expect("link node_modules");
    let out = Command::new("node")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_ctxpack"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP TypeScript client test failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// Everything below `dir` but the store (`.ctxpack/`): what a read-scope call must leave as it
/// was.
fn outside_the_store(dir: &Path) -> std::collections::BTreeMap<PathBuf, String> {
    let mut all = crate::hostile::contents(dir);
    all.retain(|path, _| !path.starts_with(".ctxpack"));
    all
}

/// At read scope a pack of a commit that is not indexed yet indexes it first: after a commit,
/// the next pack is of the new commit, with no manual step. Nothing but that index is written:
/// no file outside the store changes, no pack is recorded, no artifact or setting appears.
#[test]
fn read_scope_packs_each_new_commit_and_writes_nothing_but_its_index() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    let before = outside_the_store(&f.repo);
    let first = call(&read, "repo_context_pack", json!({"goal": "budget"})).text();
    assert!(first.contains(&format!("@{}`", &f.head[..7])), "{first}");
    assert_eq!(outside_the_store(&f.repo), before);
    // The same pack again in this MCP session is a reference to what it was shown, kept in
    // the server's memory: no session file is written, and `fresh` gives the text again.
    let again = call(&read, "repo_context_pack", json!({"goal": "budget"})).text();
    assert!(again.contains("Shown before in this session"), "{again}");
    assert!(!again.contains("cost <= remaining"), "{again}");
    assert!(!f.repo.join(".ctxpack/sessions").exists());
    // `recall` by the pack the reference names gives its text back.
    let pack = again
        .split("in pack `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("a pack id");
    let recalled = call(
        &read,
        "repo_context_pack",
        json!({"goal": "budget", "recall": [pack]}),
    )
    .text();
    assert!(recalled.contains("cost <= remaining"), "{recalled}");
    let fresh = call(
        &read,
        "repo_context_pack",
        json!({"goal": "budget", "fresh": true}),
    )
    .text();
    assert_eq!(fresh, first);

    std::fs::write(
        f.repo.join("src/ledger.rs"),
        "/// Keeps the ledger of every quota.\npub fn ledger_quota() -> u32 {\n    7\n}\n",
    )
    .expect("write");
    ctxpack_testkit::git::git(&f.repo, &["add", "src/ledger.rs"]);
    ctxpack_testkit::git::git(&f.repo, &["commit", "-q", "-m", "ledger quotas"]);
    let second_head = ctxpack_testkit::git::git(&f.repo, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    let before = outside_the_store(&f.repo);
    let second = call(&read, "repo_context_pack", json!({"goal": "ledger quota"})).text();
    assert!(
        second.contains(&format!("`src/ledger.rs#L1-L4@{}`", &second_head[..7])),
        "{second}"
    );
    assert_eq!(outside_the_store(&f.repo), before);

    // The store holds the two snapshots and nothing an agent wrote.
    let status: Value =
        serde_json::from_str(&f.cli(&["status", "--format", "json"])).expect("JSON");
    let mut shas: Vec<&str> = status["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| s["sha"].as_str().expect("a sha"))
        .collect();
    shas.sort_unstable();
    let mut expected = vec![f.head.as_str(), second_head.as_str()];
    expected.sort_unstable();
    assert_eq!(shas, expected);
    assert_eq!(f.cli(&["log", "--format", "json"]), "[]\n");
    assert_eq!(f.cli(&["artifact", "list", "--format", "json"]), "[]\n");
    // `index: false` still refuses to index, as at write scope.
    std::fs::write(f.repo.join("src/more.rs"), "pub fn more() {}\n").expect("write");
    ctxpack_testkit::git::git(&f.repo, &["add", "src/more.rs"]);
    ctxpack_testkit::git::git(&f.repo, &["commit", "-q", "-m", "more"]);
    let refused = call(
        &read,
        "repo_context_pack",
        json!({"goal": "more", "index": false}),
    );
    assert_eq!(refused.exit_code(), 3, "{refused:?}");
}

#[test]
fn write_scope_packs_are_recorded_and_read_scope_packs_are_not() {
    let f = Fixture::new();
    f.cli(&["index"]);
    let read = f.server(Scope::Read);
    call(&read, "repo_context_pack", json!({"goal": "budget"})).text();
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

/// Whether a property's schema admits `null`, the way an optional argument is published.
fn nullable(schema: &Value) -> bool {
    schema["anyOf"]
        .as_array()
        .is_some_and(|branches| branches.contains(&json!({"type": "null"})))
}

/// The JSON Schema keywords that OpenAI's strict mode and both of Gemini's function-declaration
/// forms accept; everything else is refused by one of them.
///
/// - OpenAI, Structured Outputs, "Supported schemas" (platform.openai.com/docs/guides/
///   structured-outputs#supported-schemas), which function calling with `strict: true` applies
///   to `parameters`: types string, number, boolean, integer, object, array, enum and anyOf;
///   the root an object, not an `anyOf`; every property listed in `required`, an optional one
///   written as a union with `null`; `additionalProperties: false` on every object; besides
///   those only `pattern`/`format` on strings, `minimum`/`maximum`/`multipleOf` on numbers and
///   `minItems`/`maxItems` on arrays; at most 5,000 properties, 10 levels of nesting, 1,000 enum
///   values and 120,000 characters of property names and enum values (the older limits were
///   100 properties, 5 levels and 15,000 characters: the checks below hold the older ones).
///   Refusals seen in practice: "In context=('properties', 'x'), 'default' is not permitted"
///   (github.com/567-labs/instructor/issues/1074, github.com/dotnet/extensions/issues/6196);
///   "object schema missing properties" (github.com/everruns/everruns/pull/984).
/// - Gemini `functionDeclarations[].parameters`: "a select subset of an OpenAPI 3.0 schema
///   object" (ai.google.dev/api/rest/v1beta/Schema; the fields of the v1beta `Schema` message:
///   type, format, title, description, nullable, enum, maxItems, minItems, properties,
///   required, minProperties, maxProperties, minLength, maxLength, pattern, example, anyOf,
///   propertyOrdering, default, items, minimum, maximum). `type` is one enum value (STRING,
///   NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL: googleapis.github.io/js-genai `Type`): a
///   list fails with "Proto field is not repeating, cannot start list"
///   (github.com/zed-industries/zed/issues/44875, github.com/n8n-io/n8n/issues/15553); an
///   unknown field such as `$schema` fails with "Unknown name ... Cannot find field"
///   (github.com/router-for-me/CLIProxyAPI/issues/97); an OBJECT with empty `properties`
///   was refused by older models ("should be non-empty for OBJECT type",
///   github.com/agno-agi/agno/issues/2112), which clients answer by omitting the parameters.
/// - Gemini `parametersJsonSchema` (and `responseJsonSchema`) take JSON Schema, of which "only
///   the following properties are supported": $id, $defs, $ref, $anchor, type, format, title,
///   description, enum (for strings and numbers), items, prefixItems, minItems, maxItems,
///   minimum, maximum, anyOf, oneOf, properties, additionalProperties, required
///   (googleapis aiplatform_v1 GenerationConfig.responseJsonSchema).
///
/// `additionalProperties` is the one keyword that OpenAI requires and Gemini's OpenAPI form
/// does not have ("Unknown name \"additionalProperties\"", github.com/promptfoo/promptfoo/
/// issues/6902): a client sends it through `parametersJsonSchema` or drops it, as it must for
/// every MCP server whose schemas come from the TypeScript SDK's zod conversion.
const SUBSET_KEYWORDS: [&str; 12] = [
    "type",
    "description",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
];
const SUBSET_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "array", "object", "null",
];

/// What a walk over one tool's schema counted, for the size limits.
#[derive(Default)]
struct Walk {
    problems: Vec<String>,
    properties: usize,
    enum_values: usize,
    characters: usize,
}

/// A property or tool name both APIs accept: a letter or `_`, then letters, digits and `_`
/// (OpenAI also allows `-` in tool names; Gemini parameter names allow only these), at most 64.
fn plain_name(name: &str, dash: bool) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (dash && c == '-'))
        && name.len() <= 64
}

/// Checks one schema (and what it contains) against the rules of both subsets.
fn check_subset(at: &str, schema: &Value, depth: usize, walk: &mut Walk) {
    // A macro, not a closure: the walk is also passed down to the subschemas.
    macro_rules! problem {
        ($what:expr) => {
            walk.problems.push(format!("{at}: {}", $what))
        };
    }
    let Some(map) = schema.as_object() else {
        return problem!(format!("{schema} is not an object schema"));
    };
    for key in map.keys() {
        if !SUBSET_KEYWORDS.contains(&key.as_str()) {
            problem!(format!("keyword `{key}` is outside the subset"));
        }
    }
    if let Some(description) = map.get("description")
        && !description.is_string()
    {
        problem!("`description` is not a string");
    }
    let kind = map.get("type").and_then(Value::as_str);
    match (map.get("type"), map.get("anyOf")) {
        (Some(Value::String(t)), None) if SUBSET_TYPES.contains(&t.as_str()) => {}
        (None, Some(Value::Array(branches))) if branches.len() >= 2 => {
            for (i, branch) in branches.iter().enumerate() {
                check_subset(&format!("{at}.anyOf[{i}]"), branch, depth, walk);
            }
            return;
        }
        (t, any) => problem!(format!(
            "needs one `type` string or an `anyOf` of two or more schemas, has type {t:?} and anyOf {any:?}"
        )),
    }
    if let Some(values) = map.get("enum") {
        let names: Vec<&str> = values
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
        if kind != Some("string")
            || names.is_empty()
            || Some(names.len()) != values.as_array().map(Vec::len)
            || unique.len() != names.len()
        {
            problem!(format!(
                "`enum` {values} is not a non-empty list of distinct strings on a string"
            ));
        }
        walk.enum_values += names.len();
        walk.characters += names.iter().map(|n| n.len()).sum::<usize>();
    }
    for bound in ["minimum", "maximum"] {
        if let Some(value) = map.get(bound)
            && (!matches!(kind, Some("integer" | "number")) || !value.is_number())
        {
            problem!(format!("`{bound}` {value} is not a number on a number"));
        }
    }
    for bound in ["minItems", "maxItems"] {
        if map.contains_key(bound) && kind != Some("array") {
            problem!(format!("`{bound}` is not on an array"));
        }
    }
    match (kind, map.get("items")) {
        (Some("array"), Some(items)) => check_subset(&format!("{at}[]"), items, depth, walk),
        (Some("array"), None) => problem!("an array without `items`"),
        (_, Some(_)) => problem!("`items` on a non-array"),
        _ => {}
    }
    if kind != Some("object") {
        for key in ["properties", "required", "additionalProperties"] {
            if map.contains_key(key) {
                problem!(format!("`{key}` on a non-object"));
            }
        }
        return;
    }
    if depth >= 5 {
        problem!("objects nest more than 5 levels deep");
    }
    if map.get("additionalProperties") != Some(&json!(false)) {
        problem!("an object without `additionalProperties: false`");
    }
    let Some(properties) = map.get("properties").and_then(Value::as_object) else {
        return problem!("an object without `properties`");
    };
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut sorted_required = required.clone();
    sorted_required.sort_unstable();
    sorted_required.dedup();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    if sorted_required != names || required.len() != names.len() {
        problem!(format!(
            "`required` {required:?} does not list every property {names:?} exactly once"
        ));
    }
    for (name, property) in properties {
        if !plain_name(name, false) {
            problem!(format!(
                "property name `{name}` is not [A-Za-z_][A-Za-z0-9_]{{0,63}}"
            ));
        }
        walk.properties += 1;
        walk.characters += name.len();
        check_subset(&format!("{at}.{name}"), property, depth + 1, walk);
    }
}

/// Every problem of a tool's input schema, as the root of a function's parameters.
fn subset_problems(name: &str, schema: &Value) -> Vec<String> {
    let mut walk = Walk::default();
    if !plain_name(name, true) {
        walk.problems.push(format!(
            "tool name `{name}` is not [A-Za-z_][A-Za-z0-9_-]{{0,63}}"
        ));
    }
    if schema.get("type") != Some(&json!("object")) {
        walk.problems
            .push(format!("{name}: the root is not `type: object`"));
    }
    check_subset(name, schema, 0, &mut walk);
    if walk.properties > 100 || walk.enum_values > 500 || walk.characters > 15_000 {
        walk.problems.push(format!(
            "{name}: {} properties, {} enum values, {} characters: over strict mode's limits",
            walk.properties, walk.enum_values, walk.characters
        ));
    }
    walk.problems
}

#[test]
fn tool_schemas_keep_to_openai_strict_and_gemini() {
    let f = Fixture::new();
    let tools = f.server(Scope::Write).tools();
    assert_eq!(tools.len(), READ_TOOLS.len() + WRITE_TOOLS.len());
    let mut problems = Vec::new();
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        problems.extend(subset_problems(&tool.name, &schema));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // The shapes the rules ask for, where they used to differ: a filter or a document (an
    // object or its JSON text) is published as text; an enum of documented variants is a
    // string enum; an optional argument is nullable and keeps its default in words.
    let schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect("listed");
        Value::Object((*tool.input_schema).clone())
    };
    for (tool, argument) in [("context_pack", "filter"), ("vsearch", "filter")] {
        assert_eq!(
            schema(tool)["properties"][argument]["anyOf"],
            json!([{"type": "string"}, {"type": "null"}]),
            "{tool}"
        );
    }
    let insert = schema("docs_insert");
    assert_eq!(
        insert["properties"]["document"]["type"], "string",
        "{insert}"
    );
    let import = schema("docs_import");
    assert_eq!(
        import["properties"]["documents"]["anyOf"][0],
        json!({"type": "array", "items": {"type": "string"}}),
        "{import}"
    );
    let pack = schema("repo_context_pack");
    assert_eq!(
        pack["properties"]["scope"]["anyOf"][0],
        json!({"type": "string", "enum": ["durable", "session", "harness", "evidence", "all"]})
    );
    assert_eq!(pack["properties"]["goal"]["type"], "string");
    assert!(!nullable(&pack["properties"]["goal"]));
    let at = pack["properties"]["at"]["description"]
        .as_str()
        .expect("described");
    assert!(at.ends_with("Null: HEAD."), "{at}");
    let artifact = schema("artifact_add");
    assert_eq!(
        artifact["properties"]["scope"],
        json!({"type": "string", "enum": ["session", "harness", "evidence"],
               "description": artifact["properties"]["scope"]["description"]})
    );
    assert_eq!(schema("status")["properties"], json!({}));

    // The checker itself refuses what either API refuses.
    for (why, bad) in [
        ("a type list", json!({"type": ["string", "null"]})),
        ("a reference", json!({"$ref": "#/$defs/Scope"})),
        ("a default", json!({"type": "integer", "default": 3})),
        ("a length", json!({"type": "string", "minLength": 1})),
        ("a format", json!({"type": "integer", "format": "uint64"})),
        (
            "constants",
            json!({"oneOf": [{"const": "a"}, {"const": "b"}]}),
        ),
        ("an open object", json!({"type": "object"})),
        (
            "an object that is not closed",
            json!({"type": "object", "properties": {}}),
        ),
        (
            "an optional property",
            json!({"type": "object", "properties": {"a": {"type": "string"}},
                   "required": [], "additionalProperties": false}),
        ),
        ("a lone anyOf", json!({"anyOf": [{"type": "string"}]})),
        (
            "an enum on an integer",
            json!({"type": "integer", "enum": ["1"]}),
        ),
        ("an array of anything", json!({"type": "array"})),
    ] {
        let root = json!({"type": "object", "properties": {"x": bad},
                          "required": ["x"], "additionalProperties": false});
        assert!(
            !subset_problems("probe", &root).is_empty(),
            "the checker let {why} pass"
        );
    }
    assert!(
        !subset_problems(
            "a.b",
            &json!({"type": "object", "properties": {},
        "required": [], "additionalProperties": false})
        )
        .is_empty()
    );
}

/// An outcome without what differs between two runs of the same call (index's `seconds`).
fn comparable(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Ok { text, structured } => {
            let mut value = structured.clone();
            if let Some(object) = value.as_object_mut() {
                object.remove("seconds");
            }
            // A rendered pack's text is compared too; JSON text is the structured content.
            match serde_json::from_str::<Value>(text) {
                Ok(_) => value,
                Err(_) => json!([value, text]),
            }
        }
        Outcome::Failed(envelope) => envelope.clone(),
    }
}

/// A client in strict mode sends every argument, `null` for those it leaves to the default:
/// for every tool that is exactly the call without them.
#[test]
fn null_for_every_optional_argument_is_the_default() {
    let f = Fixture::new();
    let write = f.server(Scope::Write);
    let store = "app.ctxpack";
    let calls = [
        ("index", json!({})),
        (
            "artifact_add",
            json!({"scope": "evidence", "content": "test retry: FAILED\n"}),
        ),
        (
            "repo_context_pack",
            json!({"goal": "how are budgets enforced"}),
        ),
        ("query", json!({"goal": "retry backoff"})),
        ("status", json!({})),
        (
            "context_pack",
            json!({"path": store, "collection": "docs", "field": "text", "query": "database search"}),
        ),
        (
            "vsearch",
            json!({"path": store, "collection": "docs", "field": "text", "query": "database search"}),
        ),
        (
            "docs_insert",
            json!({"path": store, "collection": "notes", "document": r#"{"_id": "n1", "text": "a note"}"#}),
        ),
        (
            "docs_import",
            json!({"path": store, "collection": "notes", "jsonl": "{\"text\":\"imported\"}\n"}),
        ),
        (
            "vsync",
            json!({"path": store, "collection": "docs", "field": "text"}),
        ),
    ];
    let mut names: Vec<&str> = calls.iter().map(|(name, _)| *name).collect();
    names.sort_unstable();
    let mut listed: Vec<String> = write.tools().iter().map(|t| t.name.to_string()).collect();
    listed.sort_unstable();
    assert_eq!(names, listed, "a call for every tool");
    let mut nulls = 0;
    for (name, given) in calls {
        let tool = write
            .tools()
            .into_iter()
            .find(|t| t.name == name)
            .expect("listed");
        let mut with_nulls = given.clone();
        for (argument, schema) in tool.input_schema["properties"]
            .as_object()
            .expect("properties")
        {
            if given.get(argument).is_none() {
                assert!(
                    nullable(schema),
                    "{name}: `{argument}` is neither given nor nullable"
                );
                with_nulls[argument] = Value::Null;
                nulls += 1;
            }
        }
        // The first call writes what a write tool writes, so the two compared calls see the
        // same store: both no-ops (index, artifact_add, vsync), both imports of one more
        // document, or both the conflict of an `_id` already there (docs_insert, which shows
        // that a null `replace` is false).
        call(&write, name, given.clone());
        let null_outcome = call(&write, name, with_nulls.clone());
        let plain_outcome = call(&write, name, given);
        assert_eq!(
            comparable(&null_outcome),
            comparable(&plain_outcome),
            "{with_nulls}"
        );
        match name {
            "docs_insert" => assert_eq!(null_outcome.exit_code(), 5, "{null_outcome:?}"),
            _ => assert!(
                matches!(null_outcome, Outcome::Ok { .. }),
                "{name}: {null_outcome:?}"
            ),
        }
    }
    // Every optional argument of every tool: 27 since the tools withhold their tuning options.
    assert!(
        nulls >= 27,
        "only {nulls} optional arguments were sent as null"
    );
}

#[test]
fn repo_context_pack_renders_every_format_the_cli_prints() {
    let f = Fixture::new();
    f.cli(&["index"]);
    let read = f.server(Scope::Read);
    let goal = "how are budgets enforced";
    let mut texts = Vec::new();
    for format in ["markdown", "text", "xml"] {
        let text = call(
            &read,
            "repo_context_pack",
            json!({"goal": goal, "view": "minimal", "format": format, "fresh": true}),
        )
        .text();
        let cli = f.cli(&["pack", goal, "--view", "minimal", "--format", format]);
        assert_eq!(format!("{text}\n"), cli, "{format}");
        texts.push(text);
    }
    // Markdown is the default, and the leanest for a model to read.
    let default = call(
        &read,
        "repo_context_pack",
        json!({"goal": goal, "view": "minimal", "format": null, "fresh": true}),
    )
    .text();
    assert_eq!(default, texts[0]);
    assert!(default.starts_with("# "), "{default}");
    let o200k = |text: &str| ctxpack_api::Meter::O200k.count(text);
    assert!(o200k(&texts[0]) < o200k(&texts[2]), "{texts:?}");
    // JSON is for programs (the CLI and the server's HTTP API), not the model's context.
    for format in ["json", "both", "yaml", "Markdown"] {
        let outcome = call(
            &read,
            "repo_context_pack",
            json!({"goal": goal, "format": format}),
        );
        assert_eq!(outcome.exit_code(), 2, "{format}");
        let message = outcome.envelope()["message"].as_str().expect("a message");
        assert!(message.contains("`format`"), "{message}");
    }
}

/// The o200k tokens of a JSON value as sent.
fn tokens(value: &Value) -> u64 {
    ctxpack_api::Meter::O200k.count(&value.to_string())
}

/// Every conversation pays for the tool list: the tools the printed configuration lists
/// (read scope) cost at most 1,500 o200k tokens, names, descriptions and schemas, exactly as
/// `tools/list` sends them. No tool declares an output schema.
#[test]
fn the_printed_configurations_tool_list_costs_at_most_1500_tokens() {
    let f = Fixture::new();
    let config: Value =
        serde_json::from_str(&ctxpack(&["mcp", "config", "--client", "claude-code"], b"").stdout)
            .expect("JSON");
    let args: Vec<&str> = strings(&config["mcpServers"]["ctxpack"]["args"]);
    let mut server = Raw::start_in(&f.repo, &args[1..]);
    server.initialize();
    let reply = server.request(1, "tools/list", json!({}));
    let tools = reply["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), READ_TOOLS.len(), "{reply}");
    for tool in tools {
        assert_eq!(tool.get("outputSchema"), None, "{tool}");
    }
    let cost = tokens(&reply["result"]);
    assert!(cost <= 1500, "tools/list costs {cost} o200k tokens");
    assert!(server.finish().0);
}

/// Everything a pack's result carries that a client may forward to the model (its text and
/// any structured content) costs at most 1.1 times the budget, at 2k and 8k, in every format,
/// on a repository with far more than 8k tokens that match the goal.
#[test]
fn a_whole_pack_result_costs_at_most_a_tenth_over_its_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    let mut script = ctxpack_testkit::Script::new();
    for i in 0..60 {
        let body: String = (0..12)
            .map(|j| {
                format!(
                    "    // The budget ledger keeps quota {i}.{j} for each request it admits.\n"
                )
            })
            .collect();
        script.write(
            &format!("src/quota_{i}.rs"),
            format!("/// Budget quotas, part {i}.\npub fn budget_quota_{i}(remaining: u64) -> u64 {{\n{body}    remaining\n}}\n"),
        );
    }
    script.commit("quotas").build().checkout_at(&repo);
    let mut server = Raw::start_in(&repo, &["--scope", "read"]);
    server.initialize();
    let mut id = 0;
    for budget in [2000u64, 8000] {
        for format in ["markdown", "text", "xml"] {
            id += 1;
            let reply = server.request(
                id,
                "tools/call",
                json!({"name": "repo_context_pack",
                       "arguments": {"goal": "budget quota ledger", "budget": budget, "format": format, "fresh": true}}),
            );
            let result = &reply["result"];
            assert_eq!(result["isError"], false, "{reply}");
            let text: u64 = result["content"]
                .as_array()
                .expect("content")
                .iter()
                .map(|block| {
                    ctxpack_api::Meter::O200k.count(block["text"].as_str().unwrap_or_default())
                })
                .sum();
            let structured = result.get("structuredContent").map_or(0, tokens);
            let whole = text + structured;
            assert!(
                whole * 10 <= budget * 11,
                "{format} at {budget}: {text} tokens of text and {structured} of structured content"
            );
            // The budget was worth filling: the pack is not small by accident.
            assert!(
                whole * 10 >= budget * 7,
                "{format} at {budget}: only {whole} tokens"
            );
        }
    }
    assert!(server.finish().0);
}

#[test]
fn a_hint_is_left_out_when_there_is_none_never_null() {
    let f = Fixture::new();
    let read = f.server(Scope::Read);
    // `call` checks every envelope's keys; these two have a hint and none.
    let not_indexed = call(
        &read,
        "repo_context_pack",
        json!({"goal": "budget", "index": false}),
    );
    assert!(
        not_indexed.envelope()["hint"].is_string(),
        "{not_indexed:?}"
    );
    let unknown = call(&read, "status", json!({"colour": "red"}));
    assert_eq!(unknown.envelope().get("hint"), None, "{unknown:?}");

    // Over the wire: neither the text nor the structured content says `"hint": null`.
    let repo = f.repo.to_str().expect("UTF-8");
    let mut server = Raw::start(&["--cwd", repo]);
    server.initialize();
    for (id, arguments) in [
        (1, json!({"name": "status", "arguments": {"colour": "red"}})),
        (
            2,
            json!({"name": "repo_context_pack", "arguments": {"goal": "x", "budget": 0}}),
        ),
        (
            3,
            json!({"name": "repo_context_pack", "arguments": {"goal": "x", "index": false}}),
        ),
    ] {
        let reply = server.request(id, "tools/call", arguments);
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text: Value = serde_json::from_str(
            reply["result"]["content"][0]["text"]
                .as_str()
                .expect("text"),
        )
        .expect("JSON");
        for envelope in [&text, &reply["result"]["structuredContent"]] {
            check_envelope(envelope);
        }
        assert!(!reply.to_string().contains(r#""hint":null"#), "{reply}");
        assert!(!reply.to_string().contains(r#"\"hint\":null"#), "{reply}");
    }
    let (ok, rest) = server.finish();
    assert!(ok && rest.is_empty(), "{rest}");
}

/// Every string in a JSON value.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn mcp_config_prints_a_configuration_that_works_as_pasted() {
    let f = Fixture::new();
    let machine: Vec<String> = [
        std::env::var("HOME").unwrap_or_default(),
        env!("CARGO_MANIFEST_DIR").to_owned(),
        env!("CARGO_BIN_EXE_ctxpack").to_owned(),
        std::env::current_dir().expect("cwd").display().to_string(),
        f.repo.display().to_string(),
    ]
    .into_iter()
    .filter(|p| p.len() > 1)
    .collect();
    for (client, servers, workspace_variable) in [
        ("claude-code", "mcpServers", false),
        ("cursor", "mcpServers", true),
        ("vscode", "servers", true),
    ] {
        for scope in ["read", "write"] {
            let run = ctxpack(
                &["mcp", "config", "--client", client, "--scope", scope],
                b"",
            );
            assert_eq!(run.code, 0, "{}", run.transcript());
            let config: Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|e| panic!("{client}: not JSON ({e}): {}", run.stdout));
            assert!(!run.stderr.is_empty(), "{client}: a note on where it goes");
            for text in strings(&config) {
                assert!(!text.starts_with('/'), "{client}: an absolute path {text}");
                for path in &machine {
                    assert!(
                        !text.contains(path.as_str()),
                        "{client}: {text} names {path}"
                    );
                }
            }
            let entry = &config[servers]["ctxpack"];
            assert_eq!(entry["command"], "ctxpack", "{config}");
            let args: Vec<&str> = strings(&entry["args"]);
            assert_eq!(args[..3], ["mcp", "--scope", scope], "{config}");
            let cwd = args.iter().position(|a| *a == "--cwd");
            assert_eq!(
                cwd.map(|i| args[i + 1]),
                workspace_variable.then_some("${workspaceFolder}"),
                "{config}"
            );
            if client == "vscode" {
                assert_eq!(entry["type"], "stdio");
            }

            // Started the way the client starts it, the server serves the project: the
            // client expands its variable, or starts the server in the project.
            let args: Vec<String> = args[1..]
                .iter()
                .map(|a| a.replace("${workspaceFolder}", f.repo.to_str().expect("UTF-8")))
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_serves(&f, &f.repo, &args);
        }
    }
    // Claude Desktop has no project: its configuration names this repository and this binary
    // by absolute path, and started as written it serves the repository.
    let run = ctxpack_in(
        &f.repo.join("src"),
        &["mcp", "config", "--client", "claude-desktop"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr.contains("claude_desktop_config.json"),
        "{}",
        run.stderr
    );
    let config: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let entry = &config["mcpServers"]["ctxpack"];
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_ctxpack"))
        .canonicalize()
        .expect("the binary");
    assert_eq!(entry["command"], binary.display().to_string(), "{config}");
    let args: Vec<&str> = strings(&entry["args"]);
    assert_eq!(
        args,
        [
            "mcp",
            "--scope",
            "read",
            "--cwd",
            f.repo.to_str().expect("UTF-8")
        ],
        "{config}"
    );
    assert_serves(&f, &f.outside, &args[1..]);
    let outside = ctxpack_in(&f.outside, &["mcp", "config", "--client", "claude-desktop"]);
    assert_eq!(outside.code, 2, "{}", outside.transcript());
    assert!(
        outside.stderr.contains("inside that repository"),
        "{}",
        outside.stderr
    );

    let unknown = ctxpack(&["mcp", "config", "--client", "notepad"], b"");
    assert_eq!(unknown.code, 2, "{}", unknown.transcript());
    let both = ctxpack(&["mcp", "--cwd", ".", "config", "--client", "cursor"], b"");
    assert_eq!(both.code, 2, "{}", both.transcript());

    // The example at the repository root is the Claude Code configuration, as printed.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.mcp.json");
    let example: Value =
        serde_json::from_str(&std::fs::read_to_string(example).expect("the example .mcp.json"))
            .expect("JSON");
    let printed = ctxpack(&["mcp", "config", "--client", "claude-code"], b"");
    assert_eq!(
        example,
        serde_json::from_str::<Value>(&printed.stdout).expect("JSON")
    );
}

/// Started in `dir` with `ctxpack mcp ARGS`, a server serves the fixture's repository.
fn assert_serves(f: &Fixture, dir: &Path, args: &[&str]) {
    let mut server = Raw::start_in(dir, args);
    server.initialize();
    let reply = server.request(1, "tools/call", json!({"name": "status", "arguments": {}}));
    assert_eq!(result_json(&reply)["head"], f.head.as_str(), "{reply}");
    assert!(server.finish().0, "the server exits 0");
}

/// A `file://` URI for a local path, percent-encoding every byte outside RFC 3986's
/// unreserved set and `/`.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[test]
fn file_uris_name_local_paths() {
    for (uri, path) in [
        ("file:///home/u/repo", Some("/home/u/repo")),
        ("file://localhost/home/u/repo", Some("/home/u/repo")),
        ("FILE:///srv/my%20repo/", Some("/srv/my repo/")),
        ("file:///srv/caf%C3%A9", Some("/srv/café")),
        ("file:///srv/repo?x=1#top", Some("/srv/repo")),
        ("file://example.com/srv/repo", None),
        ("file://relative", None),
        ("file:///srv/a%00b", None),
        ("file:///srv/%zz", None),
        ("https://example.com/repo", None),
        ("file:", None),
    ] {
        assert_eq!(file_uri_path(uri), path.map(PathBuf::from), "{uri}");
    }
    let odd = Path::new("/tmp/a b/ü#?%");
    assert_eq!(file_uri_path(&file_uri(odd)), Some(odd.to_owned()));
}

/// Reads the server's `roots/list` request and answers it with `answer` (a `result` or an
/// `error` member).
fn answer_roots(server: &mut Raw, answer: Value) {
    let request = server.receive();
    assert_eq!(request["method"], "roots/list", "{request}");
    let mut reply = json!({"jsonrpc": "2.0", "id": request["id"]});
    for (key, value) in answer.as_object().expect("an answer") {
        reply[key] = value.clone();
    }
    server.send(&reply.to_string());
}

/// The `status` a server gives, or the failure envelope.
fn status_of(server: &mut Raw, id: u64) -> Value {
    let reply = server.request(id, "tools/call", json!({"name": "status", "arguments": {}}));
    result_json(&reply)
}

/// The JSON a `tools/call` reply's text holds.
fn result_json(reply: &Value) -> Value {
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {reply}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn without_cwd_the_server_serves_the_clients_first_file_root() {
    let f = Fixture::new();
    let second = f.outside.join("second repo");
    let second_head = repository(&second, &[("notes.md", "# Notes\n\nBudgets.\n")]);
    // Started outside every repository, as a global configuration is.
    let mut server = Raw::start_in(&f.outside, &[]);
    server.initialize_with(json!({"roots": {"listChanged": true}}));
    answer_roots(
        &mut server,
        json!({"result": {"roots": [
            {"uri": "https://example.invalid/not-a-file"},
            {"uri": file_uri(&second), "name": "second"},
            {"uri": file_uri(&f.repo), "name": "first"},
        ]}}),
    );
    assert_eq!(status_of(&mut server, 1)["head"], second_head.as_str());

    // The client's roots change: the server asks again and follows.
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    answer_roots(
        &mut server,
        json!({"result": {"roots": [{"uri": file_uri(&f.repo)}]}}),
    );
    assert_eq!(status_of(&mut server, 2)["head"], f.head.as_str());

    // A client that cannot answer leaves the server on the directory it was started in.
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    answer_roots(
        &mut server,
        json!({"error": {"code": -32601, "message": "no roots here"}}),
    );
    let status = status_of(&mut server, 3);
    assert_eq!(status["error"]["exitCode"], 2, "{status}");
    let (ok, rest) = server.finish();
    assert!(ok && rest.is_empty(), "{rest}");

    // A client without roots: the directory the server was started in, and no request.
    let mut server = Raw::start_in(&f.repo.join("src"), &[]);
    server.initialize();
    assert!(server.request(1, "ping", json!({}))["result"].is_object());
    assert_eq!(status_of(&mut server, 2)["head"], f.head.as_str());
    server.finish();

    // `--cwd` wins over roots: none is asked for.
    let mut server = Raw::start_in(&f.outside, &["--cwd", f.repo.to_str().expect("UTF-8")]);
    server.initialize_with(json!({"roots": {"listChanged": true}}));
    assert!(server.request(1, "ping", json!({}))["result"].is_object());
    assert_eq!(status_of(&mut server, 2)["head"], f.head.as_str());
    server.finish();

    // A `--cwd` whose client variable was not expanded counts as none.
    let mut server = Raw::start_in(&f.outside, &["--cwd", "${workspaceFolder}"]);
    server.initialize_with(json!({"roots": {}}));
    answer_roots(
        &mut server,
        json!({"result": {"roots": [{"uri": file_uri(&second)}]}}),
    );
    assert_eq!(status_of(&mut server, 1)["head"], second_head.as_str());
    server.finish();
}
