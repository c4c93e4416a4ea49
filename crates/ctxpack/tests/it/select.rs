//! `ctxpack select`: the engine over JSON candidates.

use serde_json::Value;

use crate::ctxpack;

const CANDS: &str = r#"[
  {"id": "src/select.rs#L1-L20", "text": "fn select(candidates, budget) { dedup then admit whole hits }", "score": 0.9},
  {"citation": "src/select.rs#L1-L20", "text": "a different text under the same id"},
  {"id": "src/select.rs#L40-L60", "text": "fn fill(rest) { for hit in rest { if fits { take } } }"},
  {"id": "README.md#L1-L3", "text": "ctxpack packs evidence under a budget", "family": "docs"},
  {"id": "notes", "text": "pinned session note", "pinned": true},
  {"id": "big", "text": "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"}
]"#;

fn counters(stdout: &str) -> (u64, u64, u64, u64, u64) {
    let v: Value = serde_json::from_str(stdout).expect("stdout is one JSON document");
    let s = &v["selection"];
    let n = |k: &str| s[k].as_u64().expect("counter");
    (
        n("candidateHits"),
        n("uniqueCitations"),
        n("duplicateCitationsSkipped"),
        n("budgetRejectedHits"),
        v["selectedHits"].as_u64().expect("selectedHits"),
    )
}

#[test]
fn json_pack_counters_satisfy_both_identities() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cands.json");
    std::fs::write(&path, CANDS).expect("write");
    let path = path.to_str().expect("UTF-8 path");
    for selector in ["diverse", "prefix", "skip", "coverage"] {
        let run = ctxpack(
            &[
                "select",
                "--input",
                path,
                "--budget",
                "50",
                "--selector",
                selector,
                "--format",
                "json",
            ],
            b"",
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout.lines().count(), 1, "canonical JSON is one line");
        let (candidates, unique, duplicates, rejected, selected) = counters(&run.stdout);
        assert_eq!(candidates, 6);
        assert_eq!(duplicates, 1);
        assert_eq!(unique, selected + rejected, "{selector}");
        assert_eq!(candidates, unique + duplicates, "{selector}");
    }
}

#[test]
fn transcripts() {
    let cases: &[(&str, &[&str], &[u8])] = &[
        (
            "diverse_words_text",
            &[
                "select",
                "--selector",
                "diverse",
                "--budget",
                "30",
                "--meter",
                "words",
                "--goal",
                "budgets",
            ],
            CANDS.as_bytes(),
        ),
        (
            "prefix_approx_json",
            &[
                "select",
                "--budget",
                "20",
                "--meter",
                "approx",
                "--selector",
                "prefix",
                "--format",
                "json",
                "--view",
                "minimal",
            ],
            CANDS.as_bytes(),
        ),
        (
            "skip_markdown",
            &[
                "select",
                "--budget",
                "25",
                "--meter",
                "o200k",
                "--selector",
                "skip",
                "--format",
                "markdown",
                "--goal",
                "budgets",
            ],
            CANDS.as_bytes(),
        ),
        (
            "nothing_fits",
            &["select", "--budget", "1", "--meter", "words"],
            br#"[{"id": "a", "text": "two words"}]"#,
        ),
        ("empty_input_array", &["select", "--budget", "5"], b"[]"),
        ("error_not_json", &["select"], b"{not json"),
        (
            "error_not_json_envelope",
            &["select", "--format", "json"],
            b"{not json",
        ),
        (
            "error_not_array",
            &["select"],
            br#"{"id": "a", "text": "t"}"#,
        ),
        ("error_missing_text", &["select"], br#"[{"id": "a"}]"#),
        ("error_missing_id", &["select"], br#"[{"text": "t"}]"#),
        (
            "error_unknown_key",
            &["select"],
            br#"[{"id": "a", "text": "t", "txt": "x"}]"#,
        ),
        (
            "error_conflicting_ids",
            &["select"],
            br#"[{"id": "a", "citation": "b", "text": "t"}]"#,
        ),
        (
            "error_bad_score",
            &["select"],
            br#"[{"id": "a", "text": "t", "score": "high"}]"#,
        ),
        (
            "error_invalid_utf8",
            &["select"],
            b"[{\"id\": \"a\", \"text\": \"\xff\xfe\"}]",
        ),
        ("error_budget_zero", &["select", "--budget", "0"], b"[]"),
        (
            "error_budget_negative",
            &["select", "--budget", "-3"],
            b"[]",
        ),
        (
            "error_budget_fraction",
            &["select", "--budget", "2.5"],
            b"[]",
        ),
        (
            "error_budget_too_large",
            &["select", "--budget", "9007199254740992"],
            b"[]",
        ),
        ("error_unknown_meter", &["select", "--meter", "gpt"], b"[]"),
        (
            "error_unknown_selector",
            &["select", "--selector", "best"],
            b"[]",
        ),
        (
            "error_unknown_format",
            &["select", "--format", "yaml"],
            b"[]",
        ),
        ("error_unknown_view", &["select", "--view", "huge"], b"[]"),
        (
            "error_missing_file",
            &["select", "--input", "/nonexistent/cands.json"],
            b"",
        ),
    ];
    for (name, args, stdin) in cases {
        let run = ctxpack(args, stdin);
        insta::with_settings!({ snapshot_suffix => *name, description => args.join(" ") }, {
            insta::assert_snapshot!(run.transcript());
        });
    }
}

#[test]
fn exit_codes() {
    assert_eq!(ctxpack(&["select"], b"[]").code, 0);
    assert_eq!(ctxpack(&["select"], b"nope").code, 2);
    assert_eq!(ctxpack(&["select", "--budget", "0"], b"[]").code, 2);
    assert_eq!(ctxpack(&["select", "--meter", "x"], b"[]").code, 2);
    assert_eq!(
        ctxpack(&["select", "--input", "/nonexistent/x.json"], b"").code,
        3
    );
}

#[test]
fn same_input_same_bytes_across_processes() {
    let args = [
        "select",
        "--budget",
        "40",
        "--selector",
        "coverage",
        "--format",
        "both",
        "--view",
        "full",
    ];
    let a = ctxpack(&args, CANDS.as_bytes());
    let b = ctxpack(&args, CANDS.as_bytes());
    assert_eq!(a.code, 0);
    assert_eq!(a.stdout, b.stdout);
}
