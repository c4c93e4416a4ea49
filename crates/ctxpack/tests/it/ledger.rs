//! Artifact scopes and the ledger: overlays merged into snapshot packs, and every pack
//! recorded so `ctxpack show` replays what the model saw.

use serde_json::Value;

use crate::ctxpack;
use crate::pack::{json, project};

const CI_LOG: &str = "running 3 tests\ntest budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\ntest result: FAILED. 2 passed; 1 failed\n";
const NOTES: &str =
    "Session note: the budget overflow happens when a pinned member is larger than the budget.\n";

#[test]
fn scope_all_mixes_snapshot_harness_and_evidence() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let log = f.path().join("ci.log");
    std::fs::write(&log, CI_LOG).expect("write");
    let log = log.to_str().expect("UTF-8");
    let run = f.run(&[
        "artifact",
        "add",
        "--scope",
        "evidence",
        "--id",
        "ci-log-17",
        "--title",
        "CI run 17",
        log,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "ci-log-17\n");
    let run = ctxpack(
        &[
            "artifact",
            "add",
            "--scope",
            "harness",
            "--source-id",
            "notes",
            "-",
            "--cwd",
            &f.cwd(),
        ],
        NOTES.as_bytes(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let harness_id = run.stdout.trim().to_owned();
    assert_eq!(harness_id.len(), 16, "the default id is a content hash");

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
    let hits = pack["hits"].as_array().expect("hits");
    let families: Vec<&str> = hits.iter().filter_map(|h| h["family"].as_str()).collect();
    assert!(families.contains(&"evidence:ci-log-17"), "{families:?}");
    assert!(families.contains(&"artifact:notes"), "{families:?}");
    assert!(
        families.iter().any(|f| f.starts_with("document:")),
        "{families:?}"
    );
    let evidence = hits
        .iter()
        .find(|h| h["family"] == "evidence:ci-log-17")
        .expect("evidence hit");
    assert_eq!(evidence["citation"], "evidence:ci-log-17#L1-L4");
    assert_eq!(evidence["title"], "CI run 17");
    let s = &pack["selection"];
    let n = |k: &str| s[k].as_u64().expect("counter");
    assert_eq!(
        n("uniqueCitations"),
        pack["selectedHits"].as_u64().expect("n") + n("budgetRejectedHits")
    );
    assert_eq!(
        n("candidateHits"),
        n("uniqueCitations") + n("duplicateCitationsSkipped")
    );
    let mut used: Vec<String> = pack["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .map(|a| a.as_str().expect("id").to_owned())
        .collect();
    used.sort();
    let mut expected = vec!["ci-log-17".to_owned(), harness_id];
    expected.sort();
    assert_eq!(used, expected);

    // Each scope merges only its own artifacts; durable merges none.
    let pack = json(&f.run(&[
        "pack",
        "budget overflow exceeded",
        "--scope",
        "evidence",
        "--format",
        "json",
    ]));
    assert!(!pack.to_string().contains("artifact:notes"));
    assert!(pack.to_string().contains("evidence:ci-log-17"));
    let pack = json(&f.run(&["pack", "budget overflow exceeded", "--format", "json"]));
    assert!(!pack.to_string().contains("evidence:") && !pack.to_string().contains("artifact:"));
}

#[test]
fn overlays_need_the_exact_snapshot_first() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let run = ctxpack(
        &[
            "artifact",
            "add",
            "--scope",
            "evidence",
            "--id",
            "log",
            "-",
            "--cwd",
            &f.cwd(),
        ],
        CI_LOG.as_bytes(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    f.write("new.rs", "fn budget_overflow() {}\n");
    f.commit("unindexed");
    let run = f.run(&["pack", "budget overflow", "--scope", "all"]);
    assert_eq!(
        run.code, 3,
        "a missing snapshot exits 3 even with artifacts: {}",
        run.stderr
    );
}

#[test]
fn artifact_commands_and_faults() {
    let (f, _) = project();
    let add = |args: &[&str], stdin: &[u8]| {
        let mut all = vec!["artifact", "add"];
        all.extend_from_slice(args);
        let cwd = f.cwd();
        all.extend_from_slice(&["--cwd", &cwd]);
        ctxpack(&all, stdin)
    };
    assert_eq!(
        add(&["--scope", "session", "--id", "n1", "-"], b"first note\n").code,
        0
    );
    // Same id, same content: nothing to do.
    assert_eq!(
        add(&["--scope", "session", "--id", "n1", "-"], b"first note\n").code,
        0
    );
    // Same id, different content: a typed conflict.
    let run = add(
        &["--scope", "session", "--id", "n1", "-"],
        b"another note\n",
    );
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(
        run.stderr.contains("ctxpack artifact rm n1"),
        "{}",
        run.stderr
    );
    assert_eq!(add(&["--scope", "working-memory", "-"], b"x\n").code, 2);
    assert_eq!(add(&["--scope", "session", "-"], b"bin\0ary").code, 2);
    assert_eq!(add(&["--scope", "session", "-"], b"\xff\xfe").code, 2);
    assert_eq!(
        add(
            &["--scope", "session", "--max-bytes", "4", "-"],
            b"too large\n"
        )
        .code,
        2
    );
    assert_eq!(
        add(&["--scope", "session", "--id", "../escape", "-"], b"x\n").code,
        2
    );

    let list = json(&f.run(&["artifact", "list", "--format", "json"]));
    assert_eq!(list.as_array().expect("list").len(), 1);
    assert_eq!(list[0]["family"], "artifact:n1");
    let run = f.run(&["artifact", "show", "n1"]);
    assert_eq!(run.stdout, "first note\n");
    assert_eq!(f.run(&["artifact", "show", "nope"]).code, 3);
    assert_eq!(f.run(&["artifact", "rm", "n1"]).code, 0);
    assert_eq!(f.run(&["artifact", "rm", "n1"]).code, 3);
    // After removal the id is free again, for any content.
    assert_eq!(
        add(
            &["--scope", "session", "--id", "n1", "-"],
            b"another note\n"
        )
        .code,
        0
    );
}

fn newest_id(f: &crate::pack::Fixture) -> String {
    let log = json(&f.run(&["log", "--format", "json", "--limit", "1"]));
    log[0]["id"].as_str().expect("an id").to_owned()
}

#[test]
fn show_replays_what_the_model_saw() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    for format in ["text", "markdown", "xml", "json", "both"] {
        for view in ["minimal", "default", "full"] {
            let run = f.run(&[
                "pack",
                "budget enforcement",
                "--budget",
                "12",
                "--format",
                format,
                "--view",
                view,
            ]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            let id = newest_id(&f);
            let shown = f.run(&["show", &id[..12]]);
            assert_eq!(shown.code, 0, "{}", shown.stderr);
            assert_eq!(shown.stdout, run.stdout, "{format}/{view}");
        }
    }
    let id = newest_id(&f);
    let dropped = f.run(&["show", &id, "--dropped"]);
    assert_eq!(dropped.code, 0);
    assert!(dropped.stdout.contains("over_budget"), "{}", dropped.stdout);
    let log = json(&f.run(&["log", "--format", "json"]));
    assert_eq!(log.as_array().expect("log").len(), 15);
    assert_eq!(log[0]["surface"], "pack");
    // Same inputs, same output: the same pack id.
    let before = newest_id(&f);
    assert_eq!(
        f.run(&[
            "pack",
            "budget enforcement",
            "--budget",
            "12",
            "--format",
            "both",
            "--view",
            "full"
        ])
        .code,
        0
    );
    assert_eq!(newest_id(&f), before);
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
}

#[test]
fn a_torn_ledger_record_is_ignored_and_reported() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    let first = newest_id(&f);
    let path = f.path().join(".ctxpack/ledger/packs.jsonl");
    let mut bytes = std::fs::read(&path).expect("ledger");
    bytes.extend_from_slice(br#"{"id":"0123","time":1,"surface":"pa"#);
    std::fs::write(&path, &bytes).expect("tear");
    let run = f.run(&["log", "--format", "json"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stderr
            .contains("ignored 1 torn ledger record(s) at line 2"),
        "{}",
        run.stderr
    );
    assert_eq!(json(&run).as_array().expect("log").len(), 1);
    assert_eq!(f.run(&["show", &first]).code, 0);
    // The next pack is recorded whole after the torn line.
    assert_eq!(f.run(&["pack", "readme cakes"]).code, 0);
    let run = f.run(&["log", "--format", "json"]);
    assert_eq!(json(&run).as_array().expect("log").len(), 2);
}

#[test]
fn pretty_json_replays_and_tampered_records_are_refused() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let run = f.run(&["pack", "budget", "--format", "json", "--pretty"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = newest_id(&f);
    assert_eq!(f.run(&["show", &id]).stdout, run.stdout);
    // A record naming a text outside the ledger is corrupt, never followed.
    let path = f.path().join(".ctxpack/ledger/packs.jsonl");
    let ledger = std::fs::read_to_string(&path).expect("ledger");
    let mut record: Value =
        serde_json::from_str(ledger.lines().last().expect("a record")).expect("JSON");
    record["id"] = Value::String("eeee".repeat(16));
    record["hits"][0]["text"] = Value::String("../../../../../../etc/hostname".into());
    std::fs::write(&path, format!("{ledger}{record}\n")).expect("write");
    let run = f.run(&["show", "eeee"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("not a SHA-256"), "{}", run.stderr);
}

#[test]
fn select_records_only_into_an_existing_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("typo");
    let run = ctxpack(
        &["select", "--store", missing.to_str().expect("UTF-8")],
        br#"[{"id": "a", "text": "x"}]"#,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(!missing.exists());
}
