//! One library, three surfaces: the same request packed through the Rust API, the command
//! line and the MCP server (a real `ctxpack mcp` process over stdio) gives the same pack,
//! byte for byte: the same JSON from the library and `--format json`, and the same Markdown
//! from the library's renderer, `--format markdown` and the server's text.

use ctxpack_api::{
    Access, Format, PackOptions, PackScope, RenderOptions, SnapshotPackRequest, View, Workspace,
    WorkspaceOptions, pack_json, render,
};
use serde_json::{Value, json};

use crate::mcp::Raw;
use crate::pack::{Cli, Fixture};

const RETRY_RS: &str = "//! The HTTP client.\n\n/// Retries a request with exponential backoff until the budget of attempts is spent.\npub fn retry_with_backoff(attempts: u32, budget: u32) -> u32 {\n    attempts.min(budget) * 2\n}\n";
const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n\n/// The budget left after a hit.\npub fn remaining_budget(budget: u64, used: u64) -> u64 {\n    budget.saturating_sub(used)\n}\n";
const NOTES_MD: &str = "# Notes\n\nBudgets are enforced per hit: a hit that does not fit the remaining budget is dropped.\n";
const CI_LOG: &str =
    "test budget::enforce ... FAILED\nassertion failed: remaining budget must never go negative\n";

/// A request as each surface spells it: the library's request, CLI flags, MCP arguments.
struct Case {
    name: &'static str,
    request: SnapshotPackRequest,
    flags: &'static [&'static str],
    arguments: Value,
}

fn cases(goal: &str) -> Vec<Case> {
    let base = || SnapshotPackRequest {
        goal: goal.to_owned(),
        ..SnapshotPackRequest::default()
    };
    vec![
        Case {
            name: "default",
            request: base(),
            flags: &[],
            arguments: json!({"goal": goal}),
        },
        Case {
            name: "a small budget",
            request: SnapshotPackRequest {
                budget: ctxpack_api::Budget::new(400).expect("valid"),
                ..base()
            },
            flags: &["--budget", "400"],
            arguments: json!({"goal": goal, "budget": 400}),
        },
        Case {
            name: "paths filtered",
            request: SnapshotPackRequest {
                include: vec!["src/**".into()],
                exclude: vec!["src/retry.rs".into()],
                ..base()
            },
            flags: &["--include", "src/**", "--exclude", "src/retry.rs"],
            arguments: json!({"goal": goal, "include": ["src/**"], "exclude": ["src/retry.rs"]}),
        },
        Case {
            name: "scope all with an artifact",
            request: SnapshotPackRequest {
                scope: PackScope::All,
                ..base()
            },
            flags: &["--scope", "all"],
            arguments: json!({"goal": goal, "scope": "all"}),
        },
    ]
}

#[test]
fn library_cli_and_mcp_give_the_same_pack_bytes() {
    let f = Fixture::new();
    f.write("src/retry.rs", RETRY_RS);
    f.write("src/budget.rs", BUDGET_RS);
    f.write("docs/notes.md", NOTES_MD);
    f.commit("init");
    assert_eq!(f.run(&["index"]).code, 0);
    let log = f.path().join("ci.log");
    std::fs::write(&log, CI_LOG).expect("write the log");
    let log = log.to_str().expect("UTF-8 path");
    let added = f.run(&[
        "artifact", "add", log, "--scope", "evidence", "--id", "ci-17",
    ]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    std::fs::remove_file(f.path().join("ci.log")).expect("rm");

    let goal = "how is the remaining budget enforced";
    let library = Workspace::open(WorkspaceOptions {
        cwd: f.path().to_owned(),
        access: Access::ReadOnly,
        ..WorkspaceOptions::default()
    })
    .expect("the workspace opens");
    let mut mcp = Raw::start(&["--cwd", &f.cwd()]);
    mcp.initialize();
    for (n, case) in cases(goal).into_iter().enumerate() {
        let built = library
            .snapshot_pack(&case.request, &PackOptions::default())
            .expect("the library packs");
        let from_library = pack_json(&built.pack, View::Default).to_string();

        let mut args = vec!["pack", goal, "--format", "json"];
        args.extend(case.flags);
        let run = f.run(&args);
        assert_eq!(run.code, 0, "{}: {}", case.name, run.stderr);
        let from_cli = run.stdout.strip_suffix('\n').expect("one line");

        let reply = mcp.request(
            100 + n as u64,
            "tools/call",
            // Fresh: each case is compared whole, whatever the server's session showed before.
            json!({"name": "repo_context_pack", "arguments": fresh(&case.arguments)}),
        );
        let result = &reply["result"];
        assert_eq!(result["isError"], false, "{}: {reply}", case.name);
        let from_mcp = result["content"][0]["text"].as_str().expect("a text block");
        let markdown = RenderOptions {
            format: Format::Markdown,
            view: View::Default,
            pretty: false,
        };
        let library_markdown = render(&built.pack, &markdown);
        let mut args = vec!["pack", goal, "--format", "markdown"];
        args.extend(case.flags);
        let cli_markdown = f.run(&args).stdout;
        assert_eq!(
            cli_markdown, library_markdown,
            "{}: CLI and library differ",
            case.name
        );
        assert_eq!(
            from_mcp,
            library_markdown.trim_end_matches('\n'),
            "{}: MCP and library differ",
            case.name
        );

        assert_eq!(
            from_cli, from_library,
            "{}: CLI and library differ",
            case.name
        );
        let pack: Value = serde_json::from_str(&from_library).expect("JSON");
        assert!(
            pack["selectedHits"].as_u64().expect("a count") > 0,
            "{}: an empty pack proves nothing: {pack}",
            case.name
        );
        if case.request.scope == PackScope::All {
            assert!(
                from_library.contains("evidence:ci-17"),
                "{}: the artifact is merged: {pack}",
                case.name
            );
        }
    }
    let (clean, rest) = mcp.finish();
    assert!(clean && rest.is_empty(), "{rest}");
    // The read-only library workspace and the read-scope MCP server recorded nothing; the
    // CLI recorded each of its packs (JSON and Markdown for each case).
    let log = f.run(&["log", "--format", "json"]);
    let records: Vec<Value> = serde_json::from_str(&log.stdout).expect("a JSON log");
    assert_eq!(records.len(), 8, "{}", log.stdout);
    assert!(records.iter().all(|r| r["surface"] == "pack"));
}

/// `arguments` with `fresh` set: the call shows every hit whole, whatever this MCP session
/// was shown before.
fn fresh(arguments: &serde_json::Value) -> serde_json::Value {
    let mut arguments = arguments.clone();
    arguments["fresh"] = json!(true);
    arguments
}
