//! `ctxpack plan run` and `plan check` against real git repositories: sources, pins, exclude,
//! `+=` versions, the trace, the ledger chain, and the refusals (`run` without permission, a
//! command that hangs, a path outside the repository).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::ctxpack;
use crate::pack::{Fixture, json, project};

/// A plan file in its own temporary directory (outside the repository under test).
struct PlanFile {
    _dir: tempfile::TempDir,
    path: String,
}

fn plan_file(text: &str) -> PlanFile {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plan.ctx");
    std::fs::write(&path, text).expect("write the plan");
    PlanFile {
        path: path.to_str().expect("UTF-8 temp path").to_owned(),
        _dir: dir,
    }
}

const CI_LOG: &str =
    "test budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\n";

const PLAN: &str = r#"# Why does the budget check fail? Evidence for a reviewer.
flow explain-budget
  src = read("src/budget.rs")
  readme = read("README.md", lines: 1..1)
  env = read("config.env")
  hits = query("budget enforcement", top: 3)
  note = text("why is the budget exceeded?")
  ctx debug
    purpose "explain the budget check"
    budget 800
    include note, hits, readme, env
    exclude env
    pin src
  emit debug
  log = artifact("ci-log-17")
  debug += log
  emit debug
"#;

fn indexed_project_with_log() -> (Fixture, String) {
    let (f, sha) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let log = f.path().join("ci.log");
    std::fs::write(&log, CI_LOG).expect("write");
    let run = f.run(&[
        "artifact",
        "add",
        "--scope",
        "evidence",
        "--id",
        "ci-log-17",
        "--title",
        "CI run 17",
        log.to_str().expect("UTF-8"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::remove_file(f.path().join("ci.log")).expect("rm");
    (f, sha)
}

fn citations(pack: &Value) -> Vec<String> {
    pack["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["citation"].as_str().expect("citation").to_owned())
        .collect()
}

#[test]
fn a_plan_runs_end_to_end_and_every_version_is_in_the_ledger() {
    let (f, sha) = indexed_project_with_log();
    let plan = plan_file(PLAN);
    let out = json(&f.run(&[
        "plan", "run", &plan.path, "--format", "json", "--view", "full", "--trace",
    ]));
    assert_eq!(out["flow"], "explain-budget");
    let packs = out["packs"].as_array().expect("packs");
    assert_eq!(packs.len(), 2);
    assert_eq!(
        (packs[0]["ctx"].as_str(), packs[0]["version"].as_u64()),
        (Some("debug"), Some(1))
    );
    assert_eq!(packs[1]["version"], 2);

    // Version 1: the pinned read first, cited by member, with its file span and commit.
    let v1 = &packs[0]["pack"];
    assert_eq!(v1["goal"], "explain the budget check");
    assert_eq!(v1["meter"], "chars");
    assert_eq!(v1["selection"]["strategy"], "drop-and-continue");
    let first = &v1["hits"][0];
    assert_eq!(first["citation"], "plan:debug/src");
    assert_eq!(first["tier"], "pinned");
    assert_eq!(first["path"], "src/budget.rs");
    assert_eq!(
        first["title"],
        Value::String(format!("src/budget.rs#L1-L6@{}", &sha[..7]))
    );
    let cited = citations(v1);
    assert_eq!(cited[1], "plan:debug/note");
    assert!(
        cited
            .iter()
            .any(|c| c.starts_with("src/budget.rs#L") && c.ends_with(&sha[..7])),
        "query hits keep their own citations: {cited:?}"
    );
    assert!(v1["usedTokens"].as_u64().expect("used") <= 800);
    // The excluded member is reported, never packed: the secret in it goes nowhere.
    let dropped = v1["dropped"].as_array().expect("dropped");
    assert!(
        dropped
            .iter()
            .any(|d| d["citation"] == "plan:debug/env" && d["reason"] == "excluded"),
        "{dropped:?}"
    );
    assert!(!out.to_string().contains("AKIAIOSFODNN7EXAMPLE"));

    // Version 2 adds the artifact; version 1 is unchanged.
    let v2 = &packs[1]["pack"];
    let cited2 = citations(v2);
    assert!(cited2.contains(&"plan:debug/log".to_owned()), "{cited2:?}");
    assert_eq!(v2["artifacts"], serde_json::json!(["ci-log-17"]));
    assert!(!citations(v1).contains(&"plan:debug/log".to_owned()));

    // The trace, in order.
    let events: Vec<&str> = out["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .map(|e| e["event"].as_str().expect("event"))
        .filter(|e| *e != "ctx_shrunk")
        .collect();
    assert_eq!(
        events,
        [
            "bind",
            "bind",
            "bind",
            "bind",
            "bind",
            "ctx_built",
            "emit",
            "bind",
            "version_appended",
            "emit"
        ]
    );
    let shrunk: Vec<&Value> = out["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .filter(|e| e["event"] == "ctx_shrunk")
        .collect();
    assert!(
        shrunk
            .iter()
            .any(|e| e["member"] == "env" && e["reason"] == "excluded"),
        "{shrunk:?}"
    );

    // The ledger: both versions, the second linked to the first; `show` replays each.
    let log = json(&f.run(&["log", "--format", "json"]));
    let records = log.as_array().expect("log");
    let plan_records: Vec<&Value> = records.iter().filter(|r| r["surface"] == "plan").collect();
    assert_eq!(plan_records.len(), 2);
    let (newest, oldest) = (plan_records[0], plan_records[1]);
    assert_eq!(oldest["id"], packs[0]["id"]);
    assert_eq!(newest["id"], packs[1]["id"]);
    assert_eq!(oldest["parent"], Value::Null);
    assert_eq!(newest["parent"], oldest["id"]);
    assert_eq!(newest["goal"], "explain the budget check");
    for entry in packs {
        let id = entry["id"].as_str().expect("id");
        let shown = json(&f.run(&["show", &id[..12]]));
        assert_eq!(shown, entry["pack"], "show {id} replays what was emitted");
    }
}

#[test]
fn text_output_names_each_emitted_version_and_lists_the_trace() {
    let (f, _) = indexed_project_with_log();
    let plan = plan_file(PLAN);
    let run = f.run(&["plan", "run", &plan.path, "--trace", "--no-ledger"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("=== emit debug v1 ===\ngoal: explain the budget check\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n=== emit debug v2 ===\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("--- plan:debug/src (plan:debug/src, "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("dropped: plan:debug/env excluded"),
        "{}",
        run.stdout
    );
    let trace = run
        .stdout
        .split("\n=== trace ===\n")
        .nth(1)
        .expect("a trace section");
    assert!(
        trace.starts_with("  1. bind src = read(\"src/budget.rs\"): text, "),
        "{trace}"
    );
    assert!(
        trace.contains(". ctx_shrunk debug v1 env: excluded (plan:debug/env"),
        "{trace}"
    );
    assert!(
        trace.contains(". version_appended debug v2 (from v1): +log; "),
        "{trace}"
    );
    assert!(trace.trim_end().ends_with(". emit debug v2"), "{trace}");
    // --no-ledger leaves no trace in the ledger.
    let log = json(&f.run(&["log", "--format", "json"]));
    assert!(
        log.as_array()
            .expect("log")
            .iter()
            .all(|r| r["surface"] != "plan")
    );
}

#[test]
fn plan_check_resolves_without_running_anything() {
    let ok = plan_file(PLAN);
    let run = ctxpack(&["plan", "check", &ok.path], b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.ends_with(
            ": ok (flow explain-budget: 6 bindings, 1 ctx, 1 append, 2 emits, 0 warnings)\n"
        ),
        "{}",
        run.stdout
    );

    let bad = plan_file(
        "flow f\n  spec = text(\"s\")\n  ctx d\n    purpose \"p\"\n    budget 0\n    include spce\n  emit spec\n",
    );
    let run = ctxpack(&["plan", "check", &bad.path], b"");
    assert_eq!(run.code, 2, "{}", run.stderr);
    let stderr = run.stderr.replace(&bad.path, "plan.ctx");
    insta::assert_snapshot!("plan_check_errors", stderr);

    let missing = ctxpack(&["plan", "check", "/nonexistent/plan.ctx"], b"");
    assert_eq!(missing.code, 3, "{}", missing.stderr);
}

#[test]
fn run_is_refused_without_allow_run_and_nothing_is_recorded() {
    let (f, _) = project();
    let plan = plan_file(
        "flow f\n  out = run(\"echo hello\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include out\n  emit d\n",
    );
    let run = f.run(&["plan", "run", &plan.path, "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`run` is refused: commands are not allowed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("pass --allow-run"), "{}", run.stderr);
    let envelope: Value = serde_json::from_str(&run.stdout).expect("an error envelope");
    assert_eq!(envelope["error"]["code"], "invalid_input");
    assert!(!f.path().join(".ctxpack/ledger/packs.jsonl").exists());

    let out = json(&f.run(&["plan", "run", &plan.path, "--allow-run", "--format", "json"]));
    assert_eq!(out["packs"][0]["pack"]["hits"][0]["text"], "hello\n");
}

#[test]
fn run_output_has_both_streams_and_the_exit_status() {
    let (f, _) = project();
    let plan = plan_file(
        "flow f\n  out = run(\"sh -c 'echo out; echo err >&2; exit 2'\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include out\n  emit d\n",
    );
    let out = json(&f.run(&[
        "plan",
        "run",
        &plan.path,
        "--allow-run",
        "--format",
        "json",
        "--view",
        "full",
    ]));
    let hit = &out["packs"][0]["pack"]["hits"][0];
    assert_eq!(hit["text"], "out\nerr\n[exit 2]\n");
    assert_eq!(
        hit["title"],
        "run: sh -c 'echo out; echo err >&2; exit 2' (exit 2)"
    );
}

#[test]
fn a_hanging_run_is_killed_at_its_time_limit_and_reported() {
    let (f, _) = project();
    let plan = plan_file(
        "flow f\n  slow = run(\"sleep 30\")\n  note = text(\"n\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include slow, note\n  emit d\n",
    );
    let started = Instant::now();
    let run = f.run(&[
        "plan",
        "run",
        &plan.path,
        "--allow-run",
        "--run-timeout",
        "1",
        "--format",
        "json",
        "--trace",
    ]);
    // Not a benchmark: only that the 30 s sleep did not run to its end.
    assert!(started.elapsed() < Duration::from_secs(25));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`slow` is unbound and contributes nothing: `sleep 30` was killed at its time limit of 1 s"),
        "{}",
        run.stderr
    );
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let bind = &out["trace"][0];
    assert_eq!(bind["event"], "bind");
    assert_eq!(bind["ok"], false);
    let pack = &out["packs"][0]["pack"];
    assert_eq!(citations(pack), ["plan:d/note"]);
    assert_eq!(pack["dropped"][0]["citation"], "plan:d/slow");
    assert_eq!(pack["dropped"][0]["reason"], "unbound");
}

#[test]
fn a_read_path_outside_the_repository_is_refused() {
    let (f, _) = project();
    let outside = plan_file(
        "flow f\n  secret = read(\"../../etc/passwd\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include secret\n  emit d\n",
    );
    let run = f.run(&["plan", "run", &outside.path]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("path `../../etc/passwd` is outside the repository"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("^^^"), "a caret: {}", run.stderr);

    // A symbolic link in the worktree that leads out is refused too.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/hostname", f.path().join("escape")).expect("symlink");
        let link = plan_file(
            "flow f\n  secret = read(\"escape\", worktree: true)\n  ctx d\n    purpose \"p\"\n    budget 100\n    include secret\n  emit d\n",
        );
        let run = f.run(&["plan", "run", &link.path]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("`escape` resolves outside the repository"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn reads_come_from_the_commit_unless_the_worktree_is_asked_for() {
    let (f, _) = project();
    f.write("src/budget.rs", "pub fn uncommitted() {}\n");
    let plan = plan_file(
        "flow f\n  committed = read(\"src/budget.rs\", lines: 4..4)\n  live = read(\"src/budget.rs\", worktree: true)\n  gone = read(\"src/missing.rs\")\n  ctx d\n    purpose \"p\"\n    budget 1000\n    include committed, live, gone\n  emit d\n",
    );
    let run = f.run(&["plan", "run", &plan.path, "--format", "json", "--no-ledger"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`gone` is unbound and contributes nothing: no file `src/missing.rs` at "),
        "{}",
        run.stderr
    );
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let pack = &out["packs"][0]["pack"];
    assert_eq!(
        pack["hits"][0]["text"],
        "pub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n"
    );
    assert_eq!(pack["hits"][0]["startLine"], 4);
    assert_eq!(pack["hits"][1]["text"], "pub fn uncommitted() {}\n");
    let warnings = pack["warnings"].to_string();
    assert!(
        warnings.contains("worktree has uncommitted changes"),
        "{warnings}"
    );
    assert!(
        warnings.contains("member `gone` of `d` is unbound"),
        "{warnings}"
    );
}

#[test]
fn docs_members_contribute_their_documents_with_their_citations() {
    let (f, _) = project();
    let store = f.path().join("app.ctxpack");
    let store = store.to_str().expect("UTF-8");
    assert_eq!(ctxpack(&["docs", "create", store], b"").code, 0);
    for doc in [
        r#"{"_id": 1, "text": "budget overflow in the selector", "status": "open"}"#,
        r#"{"_id": 2, "text": "budget overflow fixed last week", "status": "closed"}"#,
        r#"{"_id": 3, "text": "cake recipes", "status": "open"}"#,
    ] {
        let run = ctxpack(&["docs", "insert", store, "tickets", doc], b"");
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    // The store path is relative to the repository root.
    let plan = plan_file(
        "flow f\n  tickets = docs(\"app.ctxpack\", \"tickets\", \"text\", \"budget overflow\", filter: {\"status\": \"open\"}, top: 2)\n  ctx d\n    purpose \"p\"\n    budget 1000\n    include tickets\n  emit d\n",
    );
    let out = json(&f.run(&["plan", "run", &plan.path, "--format", "json", "--no-ledger"]));
    let pack = &out["packs"][0]["pack"];
    assert_eq!(citations(pack), ["doc:tickets/1", "doc:tickets/3"]);
    assert_eq!(pack["hits"][0]["text"], "budget overflow in the selector");
    assert_eq!(pack["hits"][0]["family"], "collection:tickets/1");
}
