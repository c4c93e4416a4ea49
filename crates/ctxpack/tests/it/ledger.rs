//! The command line's thin layer over artifacts and the ledger: files and stdin as artifact
//! content, exit codes and hints in flags, `show` printing the exact bytes a pack was printed
//! with, and the torn-record warning. Behaviour is tested in process in `ctxpack-api`
//! (`tests/it/ledger.rs`).

use serde_json::Value;

use crate::ctxpack;
use crate::pack::{Cli, Fixture, json, project};

const CI_LOG: &str = "running 3 tests\ntest budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\ntest result: FAILED. 2 passed; 1 failed\n";
const NOTES: &str =
    "Session note: the budget overflow happens when a pinned member is larger than the budget.\n";

/// Runs `ctxpack artifact add ARGS --cwd ROOT` with `stdin`.
fn add(f: &Fixture, args: &[&str], stdin: &[u8]) -> crate::Run {
    let cwd = f.cwd();
    let mut all = vec!["artifact", "add"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--cwd", &cwd]);
    ctxpack(&all, stdin)
}

/// The id of the newest pack in the ledger.
fn newest_id(f: &Fixture) -> String {
    let log = json(&f.run(&["log", "--format", "json", "--limit", "1"]));
    log[0]["id"].as_str().expect("an id").to_owned()
}

#[test]
fn artifacts_come_from_files_or_stdin_and_faults_exit_typed() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let log = f.path().join("ci.log");
    std::fs::write(&log, CI_LOG).expect("write");
    let run = add(
        &f,
        &[
            "--scope",
            "evidence",
            "--id",
            "ci-log-17",
            "--title",
            "CI run 17",
            log.to_str().expect("UTF-8"),
        ],
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "ci-log-17\n");
    let run = add(
        &f,
        &["--scope", "harness", "--source-id", "notes", "-"],
        NOTES.as_bytes(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let harness_id = run.stdout.trim().to_owned();
    assert_eq!(harness_id.len(), 16, "the default id is a content hash");

    let list = json(&f.run(&["artifact", "list", "--format", "json"]));
    let families: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|a| a["family"].as_str())
        .collect();
    assert_eq!(families.len(), 2, "{list}");
    assert!(families.contains(&"evidence:ci-log-17"), "{list}");
    assert!(families.contains(&"artifact:notes"), "{list}");
    let run = f.run(&["artifact", "show", "ci-log-17"]);
    assert_eq!(run.stdout, CI_LOG);
    let pack = json(&f.run(&[
        "pack",
        "budget overflow exceeded",
        "--scope",
        "all",
        "--format",
        "json",
        "--view",
        "full",
    ]));
    let evidence = pack["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .find(|h| h["family"] == "evidence:ci-log-17")
        .expect("an evidence hit");
    assert_eq!(evidence["title"], "CI run 17");

    // Same id, other content: a conflict, and the way out in commands.
    let run = add(
        &f,
        &["--scope", "session", "--id", "ci-log-17", "-"],
        b"another\n",
    );
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(
        run.stderr.contains("ctxpack artifact rm ci-log-17"),
        "{}",
        run.stderr
    );
    let run = add(
        &f,
        &["--scope", "session", "--max-bytes", "4", "-"],
        b"too large\n",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--max-bytes"), "{}", run.stderr);
    assert_eq!(add(&f, &["--scope", "working-memory", "-"], b"x\n").code, 2);
    assert_eq!(
        add(&f, &["--scope", "session", "/nonexistent.log"], b"").code,
        3
    );
    assert_eq!(f.run(&["artifact", "show", "nope"]).code, 3);
    let run = f.run(&["artifact", "rm", "ci-log-17"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "removed ci-log-17\n");
    assert_eq!(f.run(&["artifact", "rm", "ci-log-17"]).code, 3);
}

#[test]
fn show_prints_the_exact_bytes_a_pack_was_printed_with() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let outputs: [&[&str]; 6] = [
        &["--format", "text"],
        &["--format", "markdown", "--view", "minimal"],
        &["--format", "xml", "--view", "full"],
        &["--format", "json"],
        &["--format", "json", "--pretty"],
        &["--format", "both", "--view", "full"],
    ];
    for output in outputs {
        let mut args = vec!["pack", "budget enforcement", "--budget", "260"];
        args.extend_from_slice(output);
        let run = f.run(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let id = newest_id(&f);
        let shown = f.run(&["show", &id[..12]]);
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        assert_eq!(shown.stdout, run.stdout, "{output:?}");
    }
    // A budget of content alone small enough to leave hits out: `--dropped` lists them.
    let run = f.run(&["context", "pack", "budget enforcement", "--budget", "12"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = newest_id(&f);
    let dropped = f.run(&["show", &id, "--dropped"]);
    assert_eq!(dropped.code, 0);
    assert!(dropped.stdout.contains("over_budget"), "{}", dropped.stdout);
    let log = json(&f.run(&["log", "--format", "json"]));
    assert_eq!(log.as_array().expect("log").len(), outputs.len() + 1);
    assert_eq!(log[0]["surface"], "pack");
    assert_eq!(f.run(&["show", "deadbeef"]).code, 3);
    assert_eq!(f.run(&["show", "xyz"]).code, 2);
}

#[test]
fn no_ledger_leaves_no_trace_and_select_records_with_a_store() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    assert_eq!(f.run(&["pack", "budget", "--no-ledger"]).code, 0);
    assert_eq!(
        json(&f.run(&["log", "--format", "json"])),
        Value::Array(Vec::new())
    );
    let store = f.path().join(".ctxpack");
    let store = store.to_str().expect("UTF-8");
    let run = ctxpack(
        &[
            "select", "--store", store, "--budget", "5", "--format", "markdown",
        ],
        br#"[{"id": "a", "text": "one two"}]"#,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = newest_id(&f);
    let log = json(&f.run(&["log", "--format", "json"]));
    assert_eq!(log[0]["surface"], "select");
    assert_eq!(f.run(&["show", &id]).stdout, run.stdout);
    // A store that is not there is a mistake: nothing is recorded or created.
    let missing = f.path().join("typo");
    let run = ctxpack(
        &["select", "--store", missing.to_str().expect("UTF-8")],
        br#"[{"id": "a", "text": "x"}]"#,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(!missing.exists());
}

#[test]
fn a_torn_ledger_record_is_reported_on_stderr() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    let first = newest_id(&f);
    let path = f.path().join(".ctxpack/ledger/packs.jsonl");
    let mut bytes = std::fs::read(&path).expect("ledger");
    bytes.extend_from_slice(br#"{"id":"0123","time":1,"surface":"pa"#);
    std::fs::write(&path, &bytes).expect("tear");
    for args in [&["log", "--format", "json"][..], &["show", &first]] {
        let run = f.run(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("warning: ignored 1 torn ledger record(s) at line 2"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// A pack of the working tree is marked as one in `log`, in text and JSON; a pack of the
/// committed snapshot is not.
#[test]
fn log_marks_a_worktree_pack() {
    let (f, _) = project();
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    f.write(
        "src/budget.rs",
        "/// Budgets, edited.\npub fn budget_edited() {}\n",
    );
    let run = f.run(&["pack", "budget", "--worktree"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = f.run(&["log"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    // Newest first: the worktree pack, then the committed one.
    assert!(lines[0].contains("[worktree] budget"), "{text}");
    assert!(!lines[1].contains("[worktree]"), "{text}");
    let entries: Value = json(&f.run(&["log", "--format", "json"]));
    assert_eq!(entries[0]["worktree"], true, "{entries}");
    assert_eq!(entries[1]["worktree"], false, "{entries}");
}

#[test]
fn the_log_takes_the_limits_the_server_takes() {
    let (f, _) = project();
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    for limit in ["0", "1001"] {
        let run = f.run(&["log", "--limit", limit]);
        assert_eq!(run.code, 2, "--limit {limit}: {}", run.stderr);
        assert!(run.stderr.contains("must be 1 to 1000"), "{}", run.stderr);
    }
    let log = json(&f.run(&["log", "--format", "json", "--limit", "1000"]));
    assert_eq!(log.as_array().map(Vec::len), Some(1));
}
