//! The command-line layer of `ctxpack plan run` and `plan check`: what each output format
//! prints, compiler-style errors on stderr, and the advice given in flags. What plans do is
//! tested in process in `ctxpack-api`'s `tests/it/plan.rs`.

use serde_json::Value;

use crate::ctxpack;
use crate::pack::{Cli, Fixture, json, project};

/// A plan file in its own temporary directory (outside the repository under test).
struct PlanFile {
    _dir: tempfile::TempDir,
    path: String,
}

/// Writes `text` to `plan.ctx` in a new temporary directory.
fn plan_file(text: &str) -> PlanFile {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plan.ctx");
    std::fs::write(&path, text).expect("write the plan");
    PlanFile {
        path: path.to_str().expect("UTF-8 temp path").to_owned(),
        _dir: dir,
    }
}

/// A CI log stored as the artifact `ci-log-17`.
const CI_LOG: &str =
    "test budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\n";

/// Every kind of source but `docs` and `run`, an exclude, and a `+=` that makes a second
/// version.
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

/// The project, indexed, with the CI log stored as the evidence artifact `ci-log-17`.
fn indexed_project_with_log() -> Fixture {
    let (f, _) = project();
    let run = f.run(&["index"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log = f.path().join("ci.log");
    std::fs::write(&log, CI_LOG).expect("write the log");
    let run = f.run(&[
        "artifact",
        "add",
        "--scope",
        "evidence",
        "--id",
        "ci-log-17",
        "--title",
        "CI run 17",
        log.to_str().expect("UTF-8 temp path"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::remove_file(&log).expect("remove the log");
    f
}

/// The ledger's `plan` records, newest first.
fn plan_records(f: &Fixture) -> Vec<Value> {
    let log = json(&f.run(&["log", "--format", "json"]));
    log.as_array()
        .expect("the log is an array")
        .iter()
        .filter(|r| r["surface"] == "plan")
        .cloned()
        .collect()
}

#[test]
fn text_and_markdown_output_name_each_emitted_version_and_list_the_trace() {
    let f = indexed_project_with_log();
    let plan = plan_file(PLAN);

    // Text, not recorded: version headers without pack ids.
    let run = f.run(&["plan", "run", &plan.path, "--trace", "--no-ledger"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "nothing to warn about");
    let (packs, trace) = run
        .stdout
        .split_once("\n=== trace ===\n")
        .expect("a trace section");
    assert!(
        packs.starts_with("=== emit debug v1 ===\ngoal: explain the budget check\n"),
        "{packs}"
    );
    for part in [
        "\n=== emit debug v2 ===\n",
        "[plan:debug/src] (plan:debug/src",
        "dropped: plan:debug/env excluded",
    ] {
        assert!(packs.contains(part), "{part}: {packs}");
    }
    assert!(
        trace.starts_with("  1. bind src = read(\"src/budget.rs\"): text, "),
        "{trace}"
    );
    for part in [
        ". ctx_shrunk debug v1 env: excluded (plan:debug/env",
        ". version_appended debug v2 (from v1): +log; ",
    ] {
        assert!(trace.contains(part), "{part}: {trace}");
    }
    assert!(trace.trim_end().ends_with(". emit debug v2"), "{trace}");
    assert!(plan_records(&f).is_empty(), "--no-ledger records nothing");

    // Markdown, recorded: each header names its pack id.
    let run = f.run(&["plan", "run", &plan.path, "--trace", "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = plan_records(&f);
    let ids: Vec<&str> = records
        .iter()
        .rev()
        .map(|r| r["id"].as_str().expect("an id"))
        .collect();
    assert_eq!(ids.len(), 2);
    let (packs, trace) = run
        .stdout
        .split_once("\n## Trace\n\n")
        .expect("a trace section");
    assert!(
        packs.starts_with(&format!(
            "<!-- ctxpack plan: emit debug v1, pack {} -->\n",
            &ids[0][..12]
        )),
        "{packs}"
    );
    assert!(
        packs.contains(&format!(
            "\n<!-- ctxpack plan: emit debug v2, pack {} -->\n",
            &ids[1][..12]
        )),
        "{packs}"
    );
    assert!(
        trace.starts_with("1. `bind src = read(\"src/budget.rs\"): text, "),
        "{trace}"
    );
    assert!(trace.trim_end().ends_with(". `emit debug v2`"), "{trace}");
}

#[test]
fn json_output_has_the_flow_the_emitted_packs_and_the_trace() {
    let f = indexed_project_with_log();
    let plan = plan_file(PLAN);
    let out = json(&f.run(&["plan", "run", &plan.path, "--format", "json", "--trace"]));
    let keys = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&out), ["flow", "packs", "trace"]);
    assert_eq!(out["flow"], "explain-budget");
    let packs = out["packs"].as_array().expect("packs");
    let versions: Vec<(&str, u64)> = packs
        .iter()
        .map(|p| {
            assert_eq!(keys(p), ["ctx", "id", "pack", "version"]);
            (
                p["ctx"].as_str().expect("ctx"),
                p["version"].as_u64().expect("version"),
            )
        })
        .collect();
    assert_eq!(versions, [("debug", 1), ("debug", 2)]);
    assert_eq!(packs[0]["pack"]["goal"], "explain the budget check");
    assert_eq!(packs[0]["pack"]["hits"][0]["citation"], "plan:debug/src");

    // The ids are the ledger's, the second version linked to the first.
    let records = plan_records(&f);
    assert_eq!(records.len(), 2);
    assert_eq!(records[1]["id"], packs[0]["id"]);
    assert_eq!(records[0]["id"], packs[1]["id"]);
    assert_eq!(records[0]["parent"], packs[0]["id"]);

    let trace = out["trace"].as_array().expect("trace");
    let first = trace[0].as_object().expect("an event");
    assert_eq!(
        first.keys().next().map(String::as_str),
        Some("event"),
        "{first:?}"
    );
    assert_eq!(first["event"], "bind");
    assert_eq!(first["name"], "src");
    assert_eq!(trace.last().expect("events")["event"], "emit");

    // Without the ledger, and without --trace, neither ids nor a trace.
    let out = json(&f.run(&["plan", "run", &plan.path, "--format", "json", "--no-ledger"]));
    assert_eq!(keys(&out), ["flow", "packs"]);
    assert_eq!(keys(&out["packs"][0]), ["ctx", "pack", "version"]);
}

#[test]
fn refusals_exit_2_and_advise_the_flag_to_pass() {
    let (f, _) = project();
    let plan = plan_file(
        "flow f\n  out = run(\"echo hello\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include out\n  emit d\n",
    );
    let run = f.run(&["plan", "run", &plan.path, "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for part in [
        "error: `run` is refused: commands are not allowed",
        &format!(" --> {}:2:9", plan.path),
        "^^^",
        "pass --allow-run",
    ] {
        assert!(run.stderr.contains(part), "{part}: {}", run.stderr);
    }
    let envelope: Value = serde_json::from_str(&run.stdout).expect("an error envelope");
    assert_eq!(envelope["error"]["code"], "invalid_input");

    let out = json(&f.run(&["plan", "run", &plan.path, "--allow-run", "--format", "json"]));
    assert_eq!(out["packs"][0]["pack"]["hits"][0]["text"], "hello\n");

    // An out-of-range time limit is invalid input, refused before anything runs.
    let run = f.run(&[
        "plan",
        "run",
        &plan.path,
        "--allow-run",
        "--run-timeout",
        "0",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("must be between 1 and 86400 seconds, got 0\n"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
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
