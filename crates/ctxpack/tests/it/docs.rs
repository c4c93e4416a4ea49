//! `ctxpack docs …` as a real process: only what the command line adds over the API, whose
//! behaviour is tested in process in `ctxpack-api` — what each command prints (seed 001's JSON
//! byte for byte), arguments and standard input, exit codes and the failure envelope, and an
//! import killed mid-way by SIGKILL.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Run, ctxpack};

/// A temporary directory with store paths inside it.
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

    /// The store directory.
    fn store(&self) -> PathBuf {
        self.path("app.ctxpack")
    }

    /// A path in the temporary directory.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `arg` with the placeholders `STORE` (the store), `MISSING` (a store that does not
    /// exist), `GARBAGE` (a store whose database is garbage) and `FILE` (`docs.jsonl`)
    /// replaced by their paths.
    fn expand(&self, arg: &str) -> String {
        let path = match arg {
            "STORE" => self.store(),
            "MISSING" => self.path("missing.ctxpack"),
            "GARBAGE" => self.path("garbage.ctxpack"),
            "FILE" => self.path("docs.jsonl"),
            other => return other.to_owned(),
        };
        path.to_str().expect("UTF-8 temp path").to_owned()
    }

    /// Runs `ctxpack docs ARGS` with `stdin`, placeholders expanded.
    fn run_with(&self, args: &[&str], stdin: &[u8]) -> Run {
        let expanded: Vec<String> = args.iter().map(|a| self.expand(a)).collect();
        let mut full = vec!["docs"];
        full.extend(expanded.iter().map(String::as_str));
        ctxpack(&full, stdin)
    }

    /// Runs `ctxpack docs ARGS` with nothing on standard input.
    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, b"")
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, 0, "{args:?}\n{}", run.transcript());
        run.stdout
    }

    /// Writes `docs.jsonl` (the `FILE` placeholder) and returns its path.
    fn write_file(&self, text: &str) -> String {
        std::fs::write(self.path("docs.jsonl"), text).expect("write");
        self.expand("FILE")
    }

    /// The stored documents of a collection, as printed by `find`.
    fn find(&self, collection: &str) -> Vec<String> {
        self.ok(&["find", "STORE", collection])
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The document count of a collection (0 when it does not exist), read in process through the
/// API while the command under test runs (a process per look would compete with it).
fn collection_count(store: &Path, collection: &str) -> u64 {
    let workspace = ctxpack_api::Workspace::for_store(store, ctxpack_api::Access::ReadOnly)
        .expect("a read-only workspace");
    workspace
        .collections()
        .expect("collections")
        .iter()
        .find(|c| c.name == collection)
        .map_or(0, |c| c.documents)
}

/// Replaces every ObjectId hex string in `text` with `...`, in order of appearance, returning
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
fn context_prints_seed_001_json() {
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
    let (_, inserted) = mask_oids(&format!("{first}{second}"));
    assert_eq!(inserted.len(), 2, "two distinct generated ids");
    let expected = concat!(
        r#"{"query":"database search","budgetTokens":500,"usedTokens":13,"truncated":false,"#,
        r#""chunks":[{"id":{"$oid":"..."},"score":0.7071,"tokens":7,"text":"database search and indexing"},"#,
        r#"{"id":{"$oid":"..."},"score":0.0,"tokens":6,"text":"chocolate cake recipe"}],"#,
        r#""citations":[{"$oid":"..."},{"$oid":"..."}]}"#,
        "\n"
    );
    let args = [
        "context",
        "STORE",
        "docs",
        "text",
        "database search",
        "--budget",
        "500",
    ];
    let out = f.ok(&args);
    let (masked, ids) = mask_oids(&out);
    assert_eq!(masked, expected);
    assert_eq!(ids, inserted);
    // The pack is in the store's ledger, and `show` gives back the exact line.
    let store = f.expand("STORE");
    let log = |expected: usize| {
        let log = ctxpack(&["log", "--store", &store, "--format", "json"], b"");
        let log: Value = serde_json::from_str(&log.stdout).expect("log is JSON");
        assert_eq!(log.as_array().expect("records").len(), expected);
        log
    };
    let records = log(1);
    assert_eq!(records[0]["surface"], "docs context");
    let id = records[0]["id"].as_str().expect("an id");
    let shown = ctxpack(&["show", id, "--store", &store], b"");
    assert_eq!(shown.stdout, out);
    // --no-ledger leaves no record.
    let mut quiet = args.to_vec();
    quiet.push("--no-ledger");
    assert_eq!(f.ok(&quiet), out);
    log(1);
    // Other formats (the pack was embedded on the fly, which all but seed 001's JSON say).
    // (extra options, stdout starts with, stdout must contain)
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["--pretty"],
            "{\n  \"query\": \"database search\",\n",
            "\n}\n",
        ),
        (&["--format", "text"], "", "embedded on the fly"),
        (&["--format", "markdown"], "", "embedded on the fly"),
    ];
    for (extra, starts, has) in cases {
        let mut full = args.to_vec();
        full.extend_from_slice(extra);
        let out = f.ok(&full);
        assert!(out.starts_with(starts), "{extra:?}\n{out}");
        assert!(out.contains(has), "{extra:?}\n{out}");
    }
}

#[test]
fn commands_print_their_results() {
    let f = Fixture::empty();
    f.write_file("{\"_id\":\"f\",\"text\":\"from a file\"}\n");
    // A session, step by step: (arguments, standard input, stdout with `STORE` for the store).
    let steps: &[(&[&str], &str, &str)] = &[
        (&["create", "STORE"], "", "created store STORE\n"),
        (&["create", "STORE"], "", "exists: store STORE\n"),
        (&["collections", "STORE"], "", ""),
        (
            &[
                "insert",
                "STORE",
                "c",
                r#"{"_id":{"$oid":"65A1F0C2A1B2C3D4E5F60001"},"text":"search"}"#,
            ],
            "",
            "{\"$oid\":\"65a1f0c2a1b2c3d4e5f60001\"}\n",
        ),
        // `-` reads the document from standard input.
        (
            &["insert", "STORE", "c", "-"],
            r#"{"_id":"stdin","text":"database search"}"#,
            "\"stdin\"\n",
        ),
        (
            &["import", "STORE", "c", "-", "--batch-size", "2"],
            "{\"_id\":1,\"text\":\"chocolate cake\"}\n\n{\"_id\":2,\"text\":42}\n{\"_id\":3,\"text\":\"database search and indexing\"}\n",
            "imported 3 documents into c (2 batches)\n",
        ),
        (
            &["import", "STORE", "d", "FILE", "--format", "json"],
            "",
            "{\"collection\":\"d\",\"imported\":1,\"batches\":1}\n",
        ),
        (
            &["find", "STORE", "c", "--limit", "2"],
            "",
            "{\"_id\":{\"$oid\":\"65A1F0C2A1B2C3D4E5F60001\"},\"text\":\"search\"}\n{\"_id\":\"stdin\",\"text\":\"database search\"}\n",
        ),
        (
            &["vstale", "STORE", "c", "text"],
            "",
            "missing {\"$oid\":\"65a1f0c2a1b2c3d4e5f60001\"}\nmissing \"stdin\"\nmissing 1\nmissing 3\nc.text: 4 missing, 0 stale, 0 current, 1 skipped (no string), 0 orphaned\n",
        ),
        (
            &["vsync", "STORE", "c", "text"],
            "",
            "c.text: embedded 4 (4 missing, 0 stale), 0 current, 1 skipped (no string), 0 removed\n",
        ),
        (
            &["vstale", "STORE", "c", "text"],
            "",
            "c.text: 0 missing, 0 stale, 4 current, 1 skipped (no string), 0 orphaned\n",
        ),
        (
            &[
                "vsearch",
                "STORE",
                "c",
                "text",
                "database search",
                "--k",
                "2",
            ],
            "",
            concat!(
                "{\"id\":\"stdin\",\"score\":1.0,\"document\":{\"_id\":\"stdin\",\"text\":\"database search\"}}\n",
                // Ties in insertion order.
                "{\"id\":{\"$oid\":\"65a1f0c2a1b2c3d4e5f60001\"},\"score\":0.7071,\"document\":{\"_id\":{\"$oid\":\"65A1F0C2A1B2C3D4E5F60001\"},\"text\":\"search\"}}\n",
            ),
        ),
        // A field index answers equality filters; the results are the scan's.
        (
            &["index", "create", "STORE", "c", "_id"],
            "",
            "created index c._id\n",
        ),
        (
            &["index", "create", "STORE", "c", "_id", "--format", "json"],
            "",
            "{\"collection\":\"c\",\"field\":\"_id\",\"created\":false}\n",
        ),
        (&["index", "list", "STORE", "c"], "", "_id\t5 entries\n"),
        (
            &[
                "find",
                "STORE",
                "c",
                "--filter",
                r#"{"_id":{"$in":[3,"stdin"]}}"#,
            ],
            "",
            "{\"_id\":\"stdin\",\"text\":\"database search\"}\n{\"_id\":3,\"text\":\"database search and indexing\"}\n",
        ),
        (
            &[
                "delete",
                "STORE",
                "c",
                "--filter",
                r#"{"_id":{"$in":[1,2]}}"#,
            ],
            "",
            "deleted 2 documents from c\n",
        ),
        (
            &["delete", "STORE", "d", "--filter", "{}", "--format", "json"],
            "",
            "{\"collection\":\"d\",\"deleted\":1}\n",
        ),
        (
            &["collections", "STORE"],
            "",
            "c\t3 documents\nd\t0 documents\n",
        ),
    ];
    let store = f.expand("STORE");
    for (args, stdin, expected) in steps {
        let run = f.run_with(args, stdin.as_bytes());
        assert_eq!(run.code, 0, "{args:?}\n{}", run.transcript());
        assert_eq!(run.stdout, expected.replace("STORE", &store), "{args:?}");
    }
    // JSON reports are one line each, with the API's counts.
    // (arguments, key, value)
    let json: &[(&[&str], &str, Value)] = &[
        (
            &["vsync", "STORE", "c", "text", "--format", "json"],
            "current",
            3.into(),
        ),
        (
            &["vstale", "STORE", "c", "text", "--format", "json"],
            "missing",
            serde_json::json!([]),
        ),
        (
            &["collections", "STORE", "--format", "json"],
            "0",
            serde_json::json!("c"),
        ),
    ];
    for (args, key, value) in json {
        let out = f.ok(args);
        assert_eq!(out.lines().count(), 1, "{args:?}\n{out}");
        let got: Value = serde_json::from_str(&out).expect("JSON");
        let got = match key.parse::<usize>() {
            Ok(i) => &got[i]["name"],
            Err(_) => &got[*key],
        };
        assert_eq!(got, value, "{args:?}\n{out}");
    }
}

#[test]
fn approximate_indexes_are_declared_listed_and_dropped() {
    let f = Fixture::new();
    let file = f.write_file(concat!(
        "{\"_id\":1,\"text\":\"database search and indexing\"}\n",
        "{\"_id\":2,\"text\":\"chocolate cake recipe\"}\n",
        "{\"_id\":3,\"text\":\"vector search over documents\"}\n",
    ));
    f.ok(&["import", "STORE", "c", &file, "--embed", "text"]);
    assert_eq!(
        f.ok(&[
            "ann", "create", "STORE", "c", "text", "--lists", "2", "--probes", "2", "--format",
            "json"
        ]),
        "{\"field\":\"text\",\"lists\":2,\"probes\":2,\"rows\":3,\"current\":true}\n"
    );
    assert_eq!(
        f.ok(&["ann", "list", "STORE", "c"]),
        "text\t3 rows in 2 lists, 2 probed\n"
    );
    let search = |exact: bool| {
        let mut args = vec!["vsearch", "STORE", "c", "text", "search", "--k", "2"];
        if exact {
            args.push("--exact");
        }
        f.ok(&args)
    };
    assert_eq!(search(false), search(true));
    assert_eq!(
        f.ok(&["ann", "drop", "STORE", "c", "text"]),
        "dropped approximate index c.text\n"
    );
    assert_eq!(
        f.ok(&["ann", "list", "STORE", "c", "--format", "json"]),
        "[]\n"
    );
}

#[test]
fn failures_have_exit_codes_and_envelopes() {
    let f = Fixture::new();
    f.ok(&["insert", "STORE", "c", r#"{"_id":1,"text":"x"}"#]);
    std::fs::create_dir_all(f.path("garbage.ctxpack")).expect("mkdir");
    std::fs::write(
        f.path("garbage.ctxpack").join("ctxpack.sqlite"),
        "this is not a database, just garbage bytes ".repeat(200),
    )
    .expect("write");
    f.write_file("{\"_id\":4}\n{\"_id\":1.0}\n");
    // (arguments, exit code, stderr must contain); nothing goes to stdout.
    let cases: &[(&[&str], i32, &str)] = &[
        (&["frobnicate", "STORE"], 2, "unrecognized subcommand"),
        (&["insert", "STORE", "c", "{\"a\":"], 2, "invalid JSON"),
        // A request field is named by its argument or flag.
        (
            &["insert", "STORE", "$bad", "{}"],
            2,
            "COLLECTION: invalid collection name",
        ),
        (
            &["find", "STORE", "c", "--filter", "{"],
            2,
            "--filter: not valid JSON",
        ),
        (
            &["index", "create", "STORE", "c", "a..b"],
            2,
            "FIELD: invalid field",
        ),
        (
            &["index", "drop", "STORE", "c", "status"],
            3,
            "collection `c` has no index of `status`",
        ),
        (
            &["ann", "drop", "STORE", "c", "text"],
            3,
            "collection `c` has no approximate index of `text`",
        ),
        (
            &["ann", "create", "STORE", "c", "a..b"],
            2,
            "FIELD: invalid field",
        ),
        (&["ann", "create", "STORE", "nowhere", "text"], 3, "nowhere"),
        (
            &["import", "STORE", "c", "FILE", "--batch-size", "0"],
            2,
            "--batch-size",
        ),
        (
            &["context", "STORE", "c", "text", "q", "--budget", "0"],
            2,
            "budget",
        ),
        (
            &["context", "STORE", "c", "text", "q", "--format", "both"],
            2,
            "expected one of json, text, markdown, xml",
        ),
        (&["delete", "STORE", "c"], 2, "`delete` needs a filter"),
        (
            &["find", "STORE", "nope"],
            3,
            "collection `nope` does not exist",
        ),
        (
            &["find", "MISSING", "c"],
            3,
            "hint: create it with `ctxpack docs create DIR`",
        ),
        (&["find", "GARBAGE", "c"], 4, "corrupt"),
        (&["create", "GARBAGE"], 4, "corrupt"),
        (
            &["insert", "STORE", "c", r#"{"_id":1}"#],
            5,
            "duplicate _id 1",
        ),
        (
            &["import", "STORE", "c", "FILE"],
            5,
            "docs.jsonl:2: duplicate _id 1: already in collection `c`",
        ),
    ];
    for (args, code, message) in cases {
        let run = f.run(args);
        assert_eq!(run.code, *code, "{args:?}\n{}", run.transcript());
        assert!(run.stderr.contains(message), "{args:?}\n{}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
    }
    assert!(
        !f.path("missing.ctxpack").exists(),
        "a failure created a store"
    );
    // With JSON output, the envelope goes to stdout: (arguments, code, exit code).
    let envelopes: &[(&[&str], &str, i32)] = &[
        (
            &["import", "STORE", "c", "FILE", "--format", "json"],
            "conflict",
            5,
        ),
        // `docs context` prints JSON by default.
        (&["context", "STORE", "nope", "text", "q"], "not_found", 3),
        (
            &[
                "context", "STORE", "c", "text", "q", "--budget", "0", "--format", "json",
            ],
            "invalid_input",
            2,
        ),
        (
            &["collections", "MISSING", "--format", "json"],
            "not_found",
            3,
        ),
        (
            &["collections", "GARBAGE", "--format", "json"],
            "corrupt",
            4,
        ),
    ];
    for (args, name, code) in envelopes {
        let run = f.run(args);
        assert_eq!(run.code, *code, "{args:?}\n{}", run.transcript());
        let envelope: Value = serde_json::from_str(&run.stdout).expect("an envelope");
        assert_eq!(envelope["error"]["code"], *name, "{args:?}");
        assert_eq!(envelope["error"]["exitCode"], *code, "{args:?}");
        assert!(envelope["error"]["message"].is_string(), "{args:?}");
    }
    assert_eq!(f.find("c"), [r#"{"_id":1,"text":"x"}"#]);
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
    let file = f.write_file(&content);
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
            std::thread::sleep(Duration::from_millis(10));
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
    let count = collection_count(&store, "c");
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
