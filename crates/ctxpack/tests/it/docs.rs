//! `ctxpack docs …` as a real process: seed 001's worked example byte for byte, exact
//! round-trips, conflicts, import atomicity (including a SIGKILL mid-import), vsync/vstale,
//! vsearch with a pre-filter, and the exit code of every kind of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Run, ctxpack};

/// A temporary directory with a store path inside it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// A fixture whose store exists.
    fn new() -> Fixture {
        let fixture = Fixture::empty();
        fixture.ok(&["create", "STORE"]);
        fixture
    }

    /// A fixture without a store.
    fn empty() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("app.ctxpack")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `ctxpack docs ARGS`, with `STORE` standing for the store path.
    fn run_with(&self, args: &[&str], stdin: &[u8]) -> Run {
        let store = self.store();
        let store = store.to_str().expect("UTF-8 temp path");
        let mut full = vec!["docs"];
        full.extend(args.iter().map(|a| if *a == "STORE" { store } else { a }));
        ctxpack(&full, stdin)
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, b"")
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, 0, "{args:?}\n{}", run.transcript());
        run.stdout
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("UTF-8 temp path").to_owned()
    }

    /// The stored documents of a collection, as printed by `find`.
    fn find(&self, collection: &str) -> Vec<String> {
        self.ok(&["find", "STORE", collection])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The document count of a collection (0 when it does not exist).
    fn count(&self, collection: &str) -> u64 {
        collection_count(&self.store(), collection)
    }
}

fn collection_count(store: &Path, collection: &str) -> u64 {
    let run = ctxpack(
        &[
            "docs",
            "collections",
            store.to_str().expect("UTF-8"),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    list.as_array()
        .expect("an array")
        .iter()
        .find(|c| c["name"] == collection)
        .map_or(0, |c| c["documents"].as_u64().expect("a count"))
}

/// Replaces every ObjectId hex string in `text` with `…`, in order of appearance, returning
/// the text and the distinct ids.
fn mask_oids(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("{\"$oid\":\"") {
        let start = at + "{\"$oid\":\"".len();
        let hex = &rest[start..start + 24];
        if !ids.iter().any(|i| i == hex) {
            ids.push(hex.to_owned());
        }
        out.push_str(&rest[..start]);
        out.push_str("...");
        rest = &rest[start + 24..];
    }
    out.push_str(rest);
    (out, ids)
}

#[test]
fn seed_001_worked_example() {
    let f = Fixture::new();
    let first = f.ok(&[
        "insert",
        "STORE",
        "docs",
        r#"{"text":"database search and indexing"}"#,
    ]);
    let second = f.ok(&[
        "insert",
        "STORE",
        "docs",
        r#"{"text":"chocolate cake recipe"}"#,
    ]);
    let expected = concat!(
        r#"{"query":"database search","budgetTokens":500,"usedTokens":13,"truncated":false,"#,
        r#""chunks":[{"id":{"$oid":"..."},"score":0.7071,"tokens":7,"text":"database search and indexing"},"#,
        r#"{"id":{"$oid":"..."},"score":0.0,"tokens":6,"text":"chocolate cake recipe"}],"#,
        r#""citations":[{"$oid":"..."},{"$oid":"..."}]}"#,
        "\n"
    );
    let (_, inserted) = mask_oids(&format!("{first}{second}"));
    assert_eq!(inserted.len(), 2, "two distinct generated ids");
    let args = [
        "context",
        "STORE",
        "docs",
        "text",
        "database search",
        "--budget",
        "500",
    ];
    // Never synced (embedded on the fly), then synced: the same bytes.
    let before = f.ok(&args);
    f.ok(&["vsync", "STORE", "docs", "text"]);
    let after = f.ok(&args);
    assert_eq!(before, after);
    let (masked, ids) = mask_oids(&after);
    assert_eq!(masked, expected);
    // Chunks then citations, in the inserted order.
    assert_eq!(ids, inserted);
    // Each pack is in the store's ledger, and `show` gives back the exact line.
    let store = f.store();
    let store = store.to_str().expect("UTF-8 temp path");
    let log = crate::ctxpack(&["log", "--store", store, "--format", "json"], b"");
    let log: serde_json::Value = serde_json::from_str(&log.stdout).expect("log is JSON");
    assert_eq!(log.as_array().expect("records").len(), 2);
    assert_eq!(log[0]["surface"], "docs context");
    let id = log[0]["id"].as_str().expect("an id");
    let shown = crate::ctxpack(&["show", id, "--store", store], b"");
    assert_eq!(shown.stdout, after);
    // --no-ledger leaves no record.
    let mut quiet = args.to_vec();
    quiet.push("--no-ledger");
    f.ok(&quiet);
    let log = crate::ctxpack(&["log", "--store", store, "--format", "json"], b"");
    let log: serde_json::Value = serde_json::from_str(&log.stdout).expect("log is JSON");
    assert_eq!(log.as_array().expect("records").len(), 2);
}

#[test]
fn context_options_and_warning() {
    let f = Fixture::new();
    for text in ["database search and indexing", "chocolate cake recipe"] {
        f.ok(&[
            "insert",
            "STORE",
            "docs",
            &format!(r#"{{"text":"{text}"}}"#),
        ]);
    }
    let base = ["context", "STORE", "docs", "text", "database search"];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        f.run(&args)
    };
    let warning = "embedded on the fly";
    // (extra options, stdout must contain, stdout must not contain)
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--format", "text"], warning, "\"query\""),
        // Every rendering but seed 001's JSON says what happened.
        (&["--format", "markdown"], warning, "\"query\""),
        (&["--format", "xml"], warning, "\"query\""),
        (&[], "\"budgetTokens\":1000", warning),
        (
            &["--pretty"],
            "\n  \"query\": \"database search\",\n",
            warning,
        ),
        // The seed's prefix stops at the first chunk that does not fit.
        (
            &["--budget", "6"],
            "\"usedTokens\":0,\"truncated\":true,\"chunks\":[]",
            "cake",
        ),
        // Skip drops the first and takes the second.
        (
            &["--budget", "6", "--selector", "skip"],
            "\"usedTokens\":6,\"truncated\":true",
            "indexing",
        ),
        (&["--meter", "words"], "\"usedTokens\":7", warning),
        (
            &["--filter", r#"{"text":{"$regex":"^choc"}}"#],
            "\"usedTokens\":6,",
            "indexing",
        ),
        (&["--top-k", "1"], "\"citations\":[{", "cake"),
    ];
    for (extra, has, lacks) in cases {
        let run = with(extra);
        assert_eq!(run.code, 0, "{extra:?}\n{}", run.transcript());
        assert!(
            run.stdout.contains(has),
            "{extra:?}: no {has:?} in\n{}",
            run.stdout
        );
        assert!(
            !run.stdout.contains(lacks),
            "{extra:?}: {lacks:?} in\n{}",
            run.stdout
        );
    }
    // Once synced, text output no longer warns.
    f.ok(&["vsync", "STORE", "docs", "text"]);
    assert!(!with(&["--format", "text"]).stdout.contains(warning));
}

#[test]
fn documents_round_trip_exactly() {
    let f = Fixture::new();
    let docs = [
        r#"{"z":1,"_id":"mid","a":2,"m":{"y":true,"b":null}}"#,
        r#"{"_id":"k","big":123456789012345678901234567890,"f":1.50,"e":1E+3,"neg":-0.0}"#,
        r#"{"s":"café \u00e9 日本語 😀 \"q\" \\ \n\t","_id":7}"#,
        r#"{"arr":[1,[2,[3]],{"x":[]}],"empty":{},"_id":{"$oid":"65A1F0C2A1B2C3D4E5F60001"}}"#,
    ];
    for doc in docs {
        f.ok(&["insert", "STORE", "c", doc]);
    }
    // Whitespace between tokens is not part of a document.
    f.ok(&[
        "insert",
        "STORE",
        "c",
        "{ \"_id\" : 8 ,\n \"t\" : [ 1 , 2 ] }",
    ]);
    let found = f.find("c");
    assert_eq!(found.len(), 5);
    for (stored, given) in found.iter().zip(docs) {
        assert_eq!(stored, given);
    }
    assert_eq!(found[4], r#"{"_id":8,"t":[1,2]}"#);
    // A generated `_id` goes first; the rest stays as written.
    let id = f.ok(&["insert", "STORE", "g", r#"{"b":1,"a":"é"}"#]);
    let (masked, _) = mask_oids(&f.find("g")[0]);
    assert_eq!(masked, r#"{"_id":{"$oid":"..."},"b":1,"a":"é"}"#);
    assert!(f.find("g")[0].starts_with(&format!("{{\"_id\":{}", id.trim())));
    // The same documents through import.
    let file = f.write("docs.jsonl", &format!("{}\n\n", docs.join("\n")));
    f.ok(&["import", "STORE", "imported", &file]);
    assert_eq!(f.find("imported"), docs);
}

#[test]
fn insert_prints_the_canonical_id() {
    let f = Fixture::new();
    // (document, printed id)
    let cases: &[(&str, &str)] = &[
        (r#"{"_id":1}"#, "1"),
        (r#"{"_id":"1"}"#, "\"1\""),
        (r#"{"_id":2.0}"#, "2"),
        (
            r#"{"_id":{"$oid":"65A1F0C2A1B2C3D4E5F60001"}}"#,
            r#"{"$oid":"65a1f0c2a1b2c3d4e5f60001"}"#,
        ),
        (r#"{"_id":null}"#, "null"),
    ];
    for (doc, id) in cases {
        assert_eq!(
            f.ok(&["insert", "STORE", "c", doc]),
            format!("{id}\n"),
            "{doc}"
        );
    }
    let generated = f.ok(&["insert", "STORE", "c", "{}"]);
    let (masked, ids) = mask_oids(&generated);
    assert_eq!(masked, "{\"$oid\":\"...\"}\n");
    assert!(
        ids[0]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    // From standard input.
    let run = f.run_with(&["insert", "STORE", "c", "-"], br#"{"_id":"stdin"}"#);
    assert_eq!(run.stdout, "\"stdin\"\n");
}

#[test]
fn duplicate_ids_conflict_and_write_nothing() {
    let f = Fixture::new();
    f.ok(&["insert", "STORE", "c", r#"{"_id":1,"v":"first"}"#]);
    // (command, stderr must contain)
    let dup_in_file = f.write("dup.jsonl", "{\"_id\":2}\n{\"_id\":3}\n{\"_id\":2}\n");
    let dup_stored = f.write("stored.jsonl", "{\"_id\":4}\n{\"_id\":1.0}\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["insert", "STORE", "c", r#"{"_id":1,"v":"second"}"#],
            "duplicate _id 1",
        ),
        (
            vec!["insert", "STORE", "c", r#"{"_id":1.0}"#],
            "duplicate _id 1",
        ),
        (
            vec!["import", "STORE", "c", &dup_in_file],
            "dup.jsonl:3: duplicate _id 2 (first at line 1)",
        ),
        (
            vec!["import", "STORE", "c", &dup_stored],
            "stored.jsonl:2: duplicate _id 1: already in collection `c`",
        ),
        (
            vec!["import", "STORE", "c", &dup_in_file, "--batch-size", "1"],
            "dup.jsonl:3:",
        ),
    ];
    for (args, message) in cases {
        let run = f.run(&args);
        assert_eq!(run.code, 5, "{args:?}\n{}", run.transcript());
        assert!(run.stderr.contains(message), "{args:?}\n{}", run.stderr);
        assert_eq!(f.find("c"), [r#"{"_id":1,"v":"first"}"#], "{args:?}");
    }
    // With --format json the envelope says so.
    let run = f.run(&["import", "STORE", "c", &dup_stored, "--format", "json"]);
    let envelope: Value = serde_json::from_str(&run.stdout).expect("an envelope");
    assert_eq!(envelope["error"]["code"], "conflict");
    assert_eq!(envelope["error"]["exitCode"], 5);
}

#[test]
fn import_errors_name_the_line_and_write_nothing() {
    let f = Fixture::new();
    // (file content, exit code, stderr must contain)
    let cases: &[(&[u8], i32, &str)] = &[
        (
            b"{\"a\":1}\n{\"a\":\n",
            2,
            "bad.jsonl:2: invalid JSON: EOF while parsing",
        ),
        (
            b"{\"a\":1}\n\n{\"a\" 1}\n",
            2,
            "bad.jsonl:3: invalid JSON: expected `:` at column 6",
        ),
        (
            b"{\"a\":1}\n[1,2]\n",
            2,
            "bad.jsonl:2: a document must be a JSON object, got an array",
        ),
        (
            b"{\"a\":1}\n\"s\"\n",
            2,
            "bad.jsonl:2: a document must be a JSON object, got a string",
        ),
        (b"{\"_id\":[1]}\n", 2, "bad.jsonl:1: invalid _id [1]"),
        (
            b"{\"_id\":{\"$oid\":\"12\"}}\n",
            2,
            "bad.jsonl:1: invalid _id",
        ),
        (
            b"{\"a\":1}\n{\"a\":\"\xff\"}\n",
            2,
            "bad.jsonl:2: not valid UTF-8",
        ),
        (
            b"{\"a\":1}\n{\"a\":2} {\"b\":3}\n",
            2,
            "bad.jsonl:2: invalid JSON: trailing characters",
        ),
    ];
    for (content, code, message) in cases {
        let path = f.path("bad.jsonl");
        std::fs::write(&path, content).expect("write");
        let run = f.run(&[
            "import",
            "STORE",
            "c",
            path.to_str().expect("UTF-8"),
            "--batch-size",
            "1",
        ]);
        assert_eq!(run.code, *code, "{content:?}\n{}", run.transcript());
        assert!(run.stderr.contains(message), "{content:?}\n{}", run.stderr);
        assert_eq!(f.count("c"), 0, "{content:?}: nothing written");
    }
    let missing = f.path("nope.jsonl");
    let run = f.run(&["import", "STORE", "c", missing.to_str().expect("UTF-8")]);
    assert_eq!(run.code, 3, "{}", run.transcript());
    // A good import reports batches.
    let good = f.write("good.jsonl", "{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}\n");
    assert_eq!(
        f.ok(&["import", "STORE", "c", &good, "--batch-size", "2"]),
        "imported 3 documents into c (2 batches)\n"
    );
}

#[test]
fn import_killed_mid_way_leaves_only_whole_batches() {
    const BATCH: u64 = 7;
    const LINES: u64 = 200_000;
    let f = Fixture::new();
    let mut content = String::with_capacity(LINES as usize * 40);
    for i in 0..LINES {
        content.push_str(&format!(
            "{{\"_id\":{i},\"text\":\"document number {i}\"}}\n"
        ));
    }
    let file = f.write("big.jsonl", &content);
    let store = f.store();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
        .args(["docs", "import"])
        .arg(&store)
        .args(["c", &file, "--batch-size", &BATCH.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("import starts");
    // Wait until some batches are committed, then kill it without warning.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = 0;
    while seen == 0 && Instant::now() < deadline {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        seen = collection_count(&store, "c");
        if seen == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let finished = child.try_wait().expect("try_wait").is_some();
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(
        !finished,
        "the import finished before it could be killed; make the input larger"
    );
    assert!(seen > 0, "no batch was committed within the deadline");
    let count = f.count("c");
    assert!(
        count >= seen && count < LINES,
        "{count} documents after the kill"
    );
    assert_eq!(
        count % BATCH,
        0,
        "{count} is not a whole number of batches of {BATCH}"
    );
    // The store is readable and writable, and the documents are the first lines in order.
    let found = f.find("c");
    assert_eq!(found.len() as u64, count);
    assert_eq!(found[0], r#"{"_id":0,"text":"document number 0"}"#);
    let last = count - 1;
    assert_eq!(
        found[found.len() - 1],
        format!("{{\"_id\":{last},\"text\":\"document number {last}\"}}")
    );
    f.ok(&["insert", "STORE", "c", r#"{"_id":"after"}"#]);
}

#[test]
fn vsync_and_vstale_counts() {
    let f = Fixture::new();
    let file = f.write(
        "docs.jsonl",
        concat!(
            "{\"_id\":1,\"text\":\"database search\"}\n",
            "{\"_id\":2,\"text\":\"chocolate cake\"}\n",
            "{\"_id\":3,\"body\":\"no text field\"}\n",
            "{\"_id\":4,\"text\":42}\n",
            "{\"_id\":5,\"meta\":{\"summary\":\"nested field\"}}\n",
        ),
    );
    f.ok(&["import", "STORE", "c", &file]);
    let stale_json = |field: &str| -> Value {
        serde_json::from_str(&f.ok(&["vstale", "STORE", "c", field, "--format", "json"]))
            .expect("JSON")
    };
    let counts = |v: &Value| {
        [
            v["missingCount"].as_u64(),
            v["staleCount"].as_u64(),
            v["current"].as_u64(),
            v["skipped"].as_u64(),
            v["orphans"].as_u64(),
        ]
        .map(|c| c.expect("a count"))
    };
    // [missing, stale, current, skipped, orphans]
    let before = stale_json("text");
    assert_eq!(counts(&before), [2, 0, 0, 3, 0]);
    assert_eq!(before["missing"], serde_json::json!([1, 2]));
    assert_eq!(
        f.ok(&["vsync", "STORE", "c", "text"]),
        "c.text: embedded 2 (2 missing, 0 stale), 0 current, 3 skipped (no string), 0 removed\n"
    );
    assert_eq!(counts(&stale_json("text")), [0, 0, 2, 3, 0]);
    // A document changes: its embedding is stale. A new one is missing.
    f.ok(&[
        "insert",
        "STORE",
        "c",
        r#"{"_id":2,"text":"chocolate cake recipe"}"#,
        "--replace",
    ]);
    f.ok(&["insert", "STORE", "c", r#"{"_id":6,"text":"new"}"#]);
    let after = stale_json("text");
    assert_eq!(counts(&after), [1, 1, 1, 3, 0]);
    assert_eq!(after["stale"], serde_json::json!([2]));
    assert_eq!(after["missing"], serde_json::json!([6]));
    assert_eq!(
        f.ok(&["vstale", "STORE", "c", "text"]),
        "missing 6\nstale 2\nc.text: 1 missing, 1 stale, 1 current, 3 skipped (no string), 0 orphaned\n"
    );
    let sync: Value =
        serde_json::from_str(&f.ok(&["vsync", "STORE", "c", "text", "--format", "json"]))
            .expect("JSON");
    let got = ["embedded", "missing", "stale", "current", "skipped"].map(|k| sync[k].as_u64());
    assert_eq!(got, [2, 1, 1, 1, 3].map(Some));
    assert_eq!(counts(&stale_json("text")), [0, 0, 3, 3, 0]);
    // A document that loses its string is skipped, and its old vector is never searched.
    f.ok(&[
        "insert",
        "STORE",
        "c",
        r#"{"_id":6,"text":null}"#,
        "--replace",
    ]);
    assert_eq!(counts(&stale_json("text")), [0, 0, 2, 4, 0]);
    assert!(
        !f.ok(&["vsearch", "STORE", "c", "text", "new"])
            .contains("\"id\":6")
    );
    // Deleting a document deletes its embedding.
    f.ok(&["delete", "STORE", "c", "--filter", r#"{"_id":1}"#]);
    assert_eq!(counts(&stale_json("text")), [0, 0, 1, 4, 0]);
    assert!(
        f.ok(&["vsync", "STORE", "c", "text"])
            .ends_with(", 0 removed\n")
    );
    // A dotted path.
    assert_eq!(counts(&stale_json("meta.summary")), [1, 0, 0, 4, 0]);
}

#[test]
fn vsearch_ranks_with_a_prefilter() {
    let f = Fixture::new();
    let file = f.write(
        "docs.jsonl",
        concat!(
            "{\"_id\":1,\"status\":\"draft\",\"text\":\"database search\"}\n",
            "{\"_id\":2,\"status\":\"published\",\"text\":\"database search and indexing\"}\n",
            "{\"_id\":3,\"status\":\"published\",\"text\":\"chocolate cake recipe\"}\n",
            "{\"_id\":4,\"status\":\"published\"}\n",
            "{\"_id\":5,\"status\":\"published\",\"text\":\"search\"}\n",
        ),
    );
    f.ok(&["import", "STORE", "c", &file]);
    // Scores as printed: four decimals.
    let ids = |out: &str| -> Vec<(i64, String)> {
        out.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("JSON line");
                (v["id"].as_i64().expect("id"), v["score"].to_string())
            })
            .collect()
    };
    let query = "database search";
    /// Extra options, expected (id, score) in order.
    type Case<'a> = (&'a [&'a str], &'a [(i64, &'a str)]);
    let cases: &[Case<'_>] = &[
        (&[], &[(1, "1.0"), (2, "0.7071"), (5, "0.7071"), (3, "0.0")]),
        (&["--k", "2"], &[(1, "1.0"), (2, "0.7071")]),
        (
            &["--filter", r#"{"status":"published"}"#],
            &[(2, "0.7071"), (5, "0.7071"), (3, "0.0")],
        ),
        (
            &["--filter", r#"{"status":"published"}"#, "--k", "1"],
            &[(2, "0.7071")],
        ),
        (&["--filter", r#"{"_id":{"$in":[3,4]}}"#], &[(3, "0.0")]),
        (&["--filter", r#"{"status":"gone"}"#], &[]),
    ];
    for synced in [false, true] {
        if synced {
            f.ok(&["vsync", "STORE", "c", "text"]);
        }
        for (extra, expected) in cases {
            let mut args = vec!["vsearch", "STORE", "c", "text", query];
            args.extend_from_slice(extra);
            let expected: Vec<(i64, String)> = expected
                .iter()
                .map(|(id, score)| (*id, (*score).to_owned()))
                .collect();
            assert_eq!(ids(&f.ok(&args)), expected, "synced {synced}, {extra:?}");
        }
    }
    // Each line carries the document as stored.
    let line = f.ok(&["vsearch", "STORE", "c", "text", query, "--k", "1"]);
    assert_eq!(
        line,
        "{\"id\":1,\"score\":1.0,\"document\":{\"_id\":1,\"status\":\"draft\",\"text\":\"database search\"}}\n"
    );
}

#[test]
fn find_and_delete_with_filters() {
    let f = Fixture::new();
    let file = f.write(
        "docs.jsonl",
        "{\"_id\":1,\"n\":1,\"tags\":[\"a\"]}\n{\"_id\":2,\"n\":5}\n{\"_id\":3,\"n\":9,\"tags\":[\"a\",\"b\"]}\n",
    );
    f.ok(&["import", "STORE", "c", &file]);
    // (arguments after `find STORE c`, expected ids)
    let cases: &[(&[&str], &[i64])] = &[
        (&[], &[1, 2, 3]),
        (&["--limit", "2"], &[1, 2]),
        (&["--limit", "0"], &[]),
        (&["--filter", r#"{"n":{"$gt":1}}"#], &[2, 3]),
        (&["--filter", r#"{"tags":"a"}"#, "--limit", "1"], &[1]),
        (&["--filter", r#"{"$or":[{"n":1},{"tags":"b"}]}"#], &[1, 3]),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["find", "STORE", "c"];
        args.extend_from_slice(extra);
        let got: Vec<i64> = f
            .ok(&args)
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("JSON")["_id"]
                    .as_i64()
                    .expect("id")
            })
            .collect();
        assert_eq!(got, *expected, "{extra:?}");
    }
    assert_eq!(
        f.ok(&[
            "delete",
            "STORE",
            "c",
            "--filter",
            r#"{"tags":{"$exists":true}}"#
        ]),
        "deleted 2 documents from c\n"
    );
    assert_eq!(f.find("c"), [r#"{"_id":2,"n":5}"#]);
    assert_eq!(f.ok(&["collections", "STORE"]), "c\t1 documents\n");
}

#[test]
fn bad_input_exit_codes() {
    let f = Fixture::new();
    f.ok(&["insert", "STORE", "c", r#"{"_id":1,"text":"x"}"#]);
    // (arguments, exit code, stderr must contain)
    let cases: &[(&[&str], i32, &str)] = &[
        (&["insert", "STORE", "c", "{\"a\":"], 2, "invalid JSON"),
        (
            &["insert", "STORE", "c", "[1]"],
            2,
            "must be a JSON object, got an array",
        ),
        (
            &["insert", "STORE", "c", r#"{"_id":{"a":1}}"#],
            2,
            "invalid _id",
        ),
        (
            &["insert", "STORE", "$bad", "{}"],
            2,
            "invalid collection name",
        ),
        (
            &["find", "STORE", "c", "--filter", r#"{"a":{"$foo":1}}"#],
            2,
            "unknown operator `$foo` at `a`",
        ),
        (
            &["find", "STORE", "c", "--filter", r#"{"a":{"$regex":"("}}"#],
            2,
            "`$regex` at `a` does not compile",
        ),
        (
            &["find", "STORE", "c", "--filter", r#"{"a..b":1}"#],
            2,
            "field path `a..b` has an empty segment",
        ),
        (
            &["find", "STORE", "c", "--filter", "[1]"],
            2,
            "filter must be a JSON object",
        ),
        (
            &["find", "STORE", "c", "--filter", "{"],
            2,
            "--filter: not valid JSON",
        ),
        (
            &["delete", "STORE", "c", "--filter", r#"{"$where":1}"#],
            2,
            "unknown top-level operator `$where`",
        ),
        (
            &["vsearch", "STORE", "c", "a..b", "q"],
            2,
            "field path `a..b` has an empty segment",
        ),
        (&["vsync", "STORE", "c", ".text"], 2, "empty segment"),
        (
            &["context", "STORE", "c", "text", "q", "--budget", "0"],
            2,
            "budget",
        ),
        (
            &["context", "STORE", "c", "text", "q", "--format", "both"],
            2,
            "not a docs context format",
        ),
        (
            &[
                "context",
                "STORE",
                "c",
                "text",
                "q",
                "--filter",
                r#"{"n":{"$in":1}}"#,
            ],
            2,
            "`$in` at `n` needs an array",
        ),
        (
            &["import", "STORE", "c", "x.jsonl", "--batch-size", "0"],
            2,
            "--batch-size",
        ),
        (
            &["find", "STORE", "nope"],
            3,
            "collection `nope` does not exist",
        ),
        (
            &["vsearch", "STORE", "nope", "text", "q"],
            3,
            "does not exist",
        ),
        (
            &["context", "STORE", "nope", "text", "q"],
            3,
            "does not exist",
        ),
        (
            &["delete", "STORE", "nope", "--filter", "{}"],
            3,
            "does not exist",
        ),
    ];
    for (args, code, message) in cases {
        let run = f.run(args);
        assert_eq!(run.code, *code, "{args:?}\n{}", run.transcript());
        assert!(run.stderr.contains(message), "{args:?}\n{}", run.stderr);
    }
    assert_eq!(f.find("c"), [r#"{"_id":1,"text":"x"}"#]);
}

#[test]
fn missing_and_garbage_stores() {
    let commands: &[&[&str]] = &[
        &["insert", "STORE", "c", "{}"],
        &["find", "STORE", "c"],
        &["collections", "STORE"],
        &["vsearch", "STORE", "c", "text", "q"],
        &["vsync", "STORE", "c", "text"],
        &["vstale", "STORE", "c", "text"],
        &["context", "STORE", "c", "text", "q"],
        &["delete", "STORE", "c", "--filter", "{}"],
    ];
    let missing = Fixture::empty();
    let garbage = Fixture::empty();
    std::fs::create_dir_all(garbage.store()).expect("mkdir");
    std::fs::write(
        garbage.store().join("ctxpack.sqlite"),
        "this is not a database, just garbage bytes ".repeat(200),
    )
    .expect("write");
    for args in commands {
        let run = missing.run(args);
        assert_eq!(run.code, 3, "missing {args:?}\n{}", run.transcript());
        assert!(run.stderr.contains("no ctxpack store at"), "{}", run.stderr);
        assert!(!missing.store().exists(), "{args:?} created the store");
        let run = garbage.run(args);
        assert_eq!(run.code, 4, "garbage {args:?}\n{}", run.transcript());
        assert!(run.stderr.contains("corrupt"), "{}", run.stderr);
    }
    let run = garbage.run(&["create", "STORE"]);
    assert_eq!(run.code, 4, "{}", run.transcript());
    // `create` is idempotent.
    missing.ok(&["create", "STORE"]);
    assert_eq!(missing.ok(&["collections", "STORE"]), "");
    assert!(
        missing
            .ok(&["create", "STORE"])
            .starts_with("exists: store ")
    );
}

/// The searches compared between the vector file and the embeddings table.
const VECTOR_QUERIES: &[&[&str]] = &[
    &["vsearch", "STORE", "c", "text", "database search"],
    &[
        "vsearch",
        "STORE",
        "c",
        "text",
        "database search",
        "--k",
        "3",
    ],
    &["vsearch", "STORE", "c", "text", "cake search", "--k", "100"],
    &[
        "vsearch",
        "STORE",
        "c",
        "text",
        "database search",
        "--filter",
        r#"{"status":"published"}"#,
    ],
    &["context", "STORE", "c", "text", "database search"],
    &["context", "STORE", "c", "text", "search", "--budget", "20"],
    &[
        "context",
        "STORE",
        "c",
        "text",
        "chocolate indexing",
        "--selector",
        "skip",
        "--format",
        "json",
        "--filter",
        r#"{"status":"draft"}"#,
    ],
];

/// A collection with many equal scores (repeated texts), documents without the field or with a
/// non-string at it, and a filterable status; synced, so its vector file exists.
fn vector_fixture() -> (Fixture, PathBuf) {
    let f = Fixture::new();
    let texts = [
        "database search",
        "database search and indexing",
        "chocolate cake recipe",
        "search",
    ];
    let mut lines = String::new();
    for i in 0..60 {
        let status = if i % 3 == 0 { "draft" } else { "published" };
        let line = match i % 7 {
            5 => serde_json::json!({"_id": i, "status": status}),
            6 => serde_json::json!({"_id": i, "status": status, "text": i}),
            _ => serde_json::json!({"_id": i, "status": status, "text": texts[i % 4]}),
        };
        lines.push_str(&format!("{line}\n"));
    }
    let file = f.write("docs.jsonl", &lines);
    f.ok(&["import", "STORE", "c", &file]);
    f.ok(&["vsync", "STORE", "c", "text"]);
    let path = ctxpack_store::Store::open(&f.store())
        .expect("open")
        .vector_file_path("c", "text");
    assert!(path.is_file(), "vsync wrote {}", path.display());
    (f, path)
}

impl Fixture {
    /// The outputs of [`VECTOR_QUERIES`].
    fn vector_answers(&self) -> Vec<String> {
        VECTOR_QUERIES.iter().map(|args| self.ok(args)).collect()
    }

    /// The outputs of [`VECTOR_QUERIES`] computed from the embeddings table alone, with the
    /// vector file moved away meanwhile.
    fn table_answers(&self, vector_file: &Path) -> Vec<String> {
        let aside = vector_file.with_extension("aside");
        std::fs::rename(vector_file, &aside).expect("move the vector file away");
        let answers = self.vector_answers();
        std::fs::rename(&aside, vector_file).expect("move the vector file back");
        answers
    }
}

/// Zeroes the first vector of a vector file (the first document synced), keeping its length,
/// so a search that reads the file gives that document a score of 0.
fn zero_first_vector(vector_file: &Path) {
    let mut bytes = std::fs::read(vector_file).expect("read");
    let start = ctxpack_store::docs::vectors::HEADER_BYTES;
    bytes[start..start + 1024].fill(0);
    std::fs::write(vector_file, bytes).expect("write");
}

/// The `_id` and score of the best `vsearch` hit for "database search".
fn best_hit(f: &Fixture) -> (i64, String) {
    let out = f.ok(&[
        "vsearch",
        "STORE",
        "c",
        "text",
        "database search",
        "--k",
        "1",
    ]);
    let v: Value = serde_json::from_str(out.trim_end()).expect("JSON line");
    (v["id"].as_i64().expect("id"), v["score"].to_string())
}

#[test]
fn vector_file_gives_the_table_answers_and_only_while_current() {
    let (f, vector_file) = vector_fixture();
    let good = std::fs::read(&vector_file).expect("read");
    // Fresh: the same bytes as a scan of the table, ties in the same order.
    let answers = f.vector_answers();
    assert_eq!(answers, f.table_answers(&vector_file));
    assert_eq!(best_hit(&f), (0, "1.0".to_owned()));
    // ...and it is the file that is read: a zeroed row changes the answer.
    zero_first_vector(&vector_file);
    assert_eq!(best_hit(&f), (4, "1.0".to_owned()));
    // A vsync that changes nothing keeps a current file as it is.
    f.ok(&["vsync", "STORE", "c", "text"]);
    assert_eq!(best_hit(&f), (4, "1.0".to_owned()));

    // Deleting after vsync makes the file stale: it is ignored, and the answers are right.
    f.ok(&["delete", "STORE", "c", "--filter", r#"{"_id":59}"#]);
    assert_eq!(best_hit(&f), (0, "1.0".to_owned()));
    assert_eq!(f.vector_answers(), f.table_answers(&vector_file));
    // The next vsync rewrites it from the table.
    f.ok(&["vsync", "STORE", "c", "text"]);
    assert_ne!(std::fs::read(&vector_file).expect("read"), good);
    assert_eq!(best_hit(&f), (0, "1.0".to_owned()));
    let answers = f.vector_answers();
    assert_eq!(answers, f.table_answers(&vector_file));

    // Inserting or replacing documents leaves the stored vectors (hence the file) as they are:
    // new documents are embedded on the fly, a replaced one keeps its old vector until the
    // next vsync, exactly as the table scan does.
    f.ok(&[
        "insert",
        "STORE",
        "c",
        r#"{"_id":100,"status":"published","text":"database search"}"#,
    ]);
    f.ok(&[
        "insert",
        "STORE",
        "c",
        r#"{"_id":1,"status":"draft","text":"cake"}"#,
        "--replace",
    ]);
    f.ok(&[
        "insert",
        "STORE",
        "c",
        r#"{"_id":4,"status":"draft"}"#,
        "--replace",
    ]);
    let after_writes = f.vector_answers();
    assert_ne!(after_writes, answers);
    assert_eq!(after_writes, f.table_answers(&vector_file));
    assert!(
        after_writes[2].contains("\"id\":100,"),
        "{}",
        after_writes[2]
    );
    assert!(
        !after_writes[2].contains("\"id\":4,"),
        "{}",
        after_writes[2]
    );
    f.ok(&["vsync", "STORE", "c", "text"]);
    let synced = f.vector_answers();
    assert_eq!(synced, f.table_answers(&vector_file));
    let good = std::fs::read(&vector_file).expect("read");

    // A damaged file is ignored, never a panic or a wrong answer, and vsync repairs it.
    let header = ctxpack_store::docs::vectors::HEADER_BYTES;
    let mut flipped_magic = good.clone();
    flipped_magic[0] ^= 0xff;
    let mut bad_format = good.clone();
    bad_format[8] = 99;
    let mut huge_count = good.clone();
    huge_count[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut bad_names = good.clone();
    let last = bad_names.len() - 1;
    bad_names[last] ^= 0x01;
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("header only", good[..header].to_vec()),
        ("one byte short", good[..good.len() - 1].to_vec()),
        ("one byte long", [&good[..], &[0]].concat()),
        (
            "garbage",
            (0..good.len()).map(|i| (i * 7 + 3) as u8).collect(),
        ),
        ("flipped magic", flipped_magic),
        ("unknown format", bad_format),
        ("huge count", huge_count),
        ("other names", bad_names),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&vector_file, &bytes).expect("write");
        assert_eq!(f.vector_answers(), synced, "{what}");
        f.ok(&["vsync", "STORE", "c", "text"]);
        assert_eq!(
            std::fs::read(&vector_file).expect("read"),
            good,
            "vsync rewrote the {what} file"
        );
    }
    // A directory where the file should be is ignored too.
    std::fs::remove_file(&vector_file).expect("remove");
    std::fs::create_dir(&vector_file).expect("mkdir");
    assert_eq!(f.vector_answers(), synced);
}
