//! One library, three surfaces: the same request packed through the Rust API, the command
//! line and the MCP server (a real `ctxpack mcp` process over stdio) gives the same pack,
//! byte for byte: the same JSON from the library and `--format json`, and the same Markdown
//! from the library's renderer, `--format markdown` and the server's text. And the binary,
//! run as a process, answers what the command line answers in process, where most of the
//! command line's tests run it.

use ctxpack_api::{
    Access, Format, PackOptions, PackScope, RenderOptions, SnapshotPackRequest, View, Workspace,
    WorkspaceOptions, pack_json, render,
};
use serde_json::{Value, json};

use crate::mcp::Raw;
use crate::pack::{Cli, Fixture};
use crate::{Run, ctxpack, ctxpack_process};

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

#[test]
fn the_binary_answers_what_the_command_line_answers_in_process() {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    f.write("docs/notes.md", NOTES_MD);
    let first = f.commit("init");
    f.write("src/retry.rs", RETRY_RS);
    f.commit("second");
    assert_eq!(f.run(&["index"]).code, 0);
    let out = tempfile::tempdir().expect("tempdir");
    let written = out.path().join("pack.md");
    let in_store = f.path().join(".ctxpack/x");
    let [cwd, written_arg, in_store] =
        [f.path(), &written, &in_store].map(|p| p.to_str().expect("UTF-8 path").to_owned());
    let (cwd, first) = (cwd.as_str(), &first[..12]);
    let candidates = br#"[{"id": "a", "text": "the remaining budget is enforced"}]"#;
    let json = ["--format", "json"];
    let cases: Vec<(Vec<&str>, &[u8])> = vec![
        (vec!["--version"], b""),
        (vec!["pack", "--help"], b""),
        // Usage errors, with the failure envelope for a caller that asked for JSON.
        (vec!["pack", "--budgett", "9"], b""),
        ([&["pack", "x", "--budget", "0"][..], &json].concat(), b""),
        // Not indexed (exit 3), and its envelope.
        (
            [
                &["pack", "budget", "--at", first, "--no-index", "--cwd", cwd][..],
                &json,
            ]
            .concat(),
            b"",
        ),
        (vec!["index", "--cwd", cwd], b""),
        (
            [&["pack", "remaining budget", "--cwd", cwd][..], &json].concat(),
            b"",
        ),
        (vec!["pack", "remaining budget", "--cwd", cwd], b""),
        (
            vec![
                "-o",
                &written_arg,
                "pack",
                "budget",
                "--format",
                "markdown",
                "--cwd",
                cwd,
            ],
            b"",
        ),
        (vec!["-o", &in_store, "status", "--cwd", cwd], b""),
        (
            [&["select", "--input", "-", "--budget", "50"][..], &json].concat(),
            candidates,
        ),
        (vec!["select", "--input", "-"], b"not JSON"),
        (vec!["show", "0000", "--cwd", cwd], b""),
    ];
    let mut codes = std::collections::BTreeSet::new();
    for (args, stdin) in &cases {
        let in_process = ctxpack(args, stdin);
        let file = std::fs::read(&written).ok();
        let _ = std::fs::remove_file(&written);
        let process = ctxpack_process(args, stdin);
        let file_from_process = std::fs::read(&written).ok();
        let _ = std::fs::remove_file(&written);
        let same =
            |a: &Run, b: &Run| (a.code, &a.stdout, &a.stderr) == (b.code, &b.stdout, &b.stderr);
        assert!(
            same(&in_process, &process),
            "{args:?}:\nin process\n{}\nas a process\n{}",
            in_process.transcript(),
            process.transcript()
        );
        assert_eq!(file, file_from_process, "{args:?}: the --output file");
        codes.insert(process.code);
    }
    // The cases cover success, usage errors, a missing index and a bad input.
    assert!(codes.is_superset(&[0, 2, 3].into()), "{codes:?}");

    // A command that needs a process of its own says so in process.
    let mcp = ctxpack::cli::run_in_process(&["mcp", "--cwd", cwd], b"");
    assert_eq!(mcp.code, 2);
    let said = String::from_utf8_lossy(&mcp.stderr);
    assert!(said.contains("runs in a process of its own"), "{said}");
}
