//! The command line's thin layer over indexing and snapshot packs, on real git repositories
//! built with `git`: exit codes, the failure envelope, hints in flags, text headers, the
//! `--input` payload, and a kill of a real `index` process. Behaviour is tested in process in
//! `ctxpack-api` (`tests/it/snapshot.rs`).

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;

use ctxpack_api::{Control, IndexRequest, Progress, Workspace, WorkspaceOptions};
use serde_json::Value;

use crate::{Run, ctxpack};

pub use ctxpack_testkit::{Fixture, Script};

/// The command line, run in a fixture.
pub trait Cli {
    /// The repository root as a `--cwd` argument.
    fn cwd(&self) -> String;

    /// Runs `ctxpack ARGS --cwd ROOT` with empty stdin.
    fn run(&self, args: &[&str]) -> Run;
}

impl Cli for Fixture {
    fn cwd(&self) -> String {
        self.path().to_str().expect("UTF-8 temp path").to_owned()
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = args.to_vec();
        let cwd = self.cwd();
        all.push("--cwd");
        all.push(&cwd);
        ctxpack(&all, b"")
    }
}

/// Source of a small Rust file about budgets.
const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
/// A README.
const README: &str = "# Demo\n\nA tiny project about cakes and recipes.\n";
/// A config file with a secret in it.
const CONFIG: &str = "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1\n";

/// A small project with code, a README, a secret and a binary, committed once.
pub fn project() -> (Fixture, String) {
    let repo = Script::new()
        .write("src/budget.rs", BUDGET_RS)
        .write("README.md", README)
        .write("config.env", CONFIG)
        .write("assets/logo.bin", "\u{0}\u{1}binary")
        .commit("first")
        .build();
    (repo.checkout(), repo.head().to_owned())
}

/// The JSON on stdout of a successful run.
pub fn json(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("stdout is JSON")
}

#[test]
fn missing_snapshot_exits_3_with_guidance_until_indexed() {
    let (f, first) = project();
    let run = f.run(&["pack", "budget", "--no-index"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("error: snapshot {first} is not indexed")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "hint: no indexed ancestor; run `ctxpack index --at {first}`"
        )),
        "{}",
        run.stderr
    );

    let run = f.run(&["index"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!("indexed {}", &first[..12])),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("binary 1"), "{}", run.stdout);
    let pack = json(&f.run(&["pack", "budget", "--format", "json"]));
    assert_eq!(pack["snapshotSha"], Value::String(first.clone()));

    f.write(
        "src/budget.rs",
        BUDGET_RS.replace("cost <= remaining", "cost <= remaining && cost > 0"),
    );
    let second = f.commit("second");
    let run = f.run(&["pack", "budget", "--no-index"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "nearest indexed ancestor: {first} (1 commit back)"
        )),
        "{}",
        run.stderr
    );
    // The ancestor is guidance, never packed automatically: still exit 3 with --format json,
    // and the envelope on stdout.
    let run = f.run(&["pack", "budget", "--no-index", "--format", "json"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let envelope: Value = serde_json::from_str(&run.stdout).expect("envelope");
    assert_eq!(envelope["error"]["code"], "not_found");
    assert_eq!(envelope["error"]["exitCode"], 3);
    assert!(
        envelope["error"]["hint"]
            .as_str()
            .expect("a hint")
            .contains(&format!("ctxpack index --at {second}")),
        "{envelope}"
    );
}

/// `context pack` counts complete hit text: a chunk larger than the budget is skipped, never
/// cut to fit, and one that fits is shown whole (`pack` cuts: `ctxpack-api`'s snapshot tests).
#[test]
fn context_pack_never_cuts_a_hit() {
    // One 40-line chunk of 320 words.
    let mut body =
        String::from("pub fn reconcile_ledger(entries: &[u64]) -> u64 { // ledger entries\n");
    for i in 0..38 {
        body.push_str(&format!(
            "    let step_{i} = entries.len() + {i}; // ledger\n"
        ));
    }
    body.push_str("    0 } // end of ledger\n");
    assert_eq!(body.lines().count(), 40);
    assert_eq!(body.split_whitespace().count(), 320);
    let repo = Script::new()
        .write("src/ledger.rs", &body)
        .commit("ledger")
        .build();
    let f = repo.checkout();
    let short = &repo.head()[..7];
    assert_eq!(f.run(&["index"]).code, 0);
    let hits = |args: &[&str]| -> Vec<String> {
        let mut all = vec![
            "context",
            "pack",
            "reconcile the ledger",
            "--format",
            "json",
        ];
        all.extend_from_slice(args);
        json(&f.run(&all))["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| h["citation"].as_str().expect("a citation").to_owned())
            .collect()
    };
    assert_eq!(hits(&[]), [format!("src/ledger.rs#L1-L40@{short}")]);
    assert_eq!(hits(&["--budget", "100"]), Vec::<String>::new());
    let pack = json(&f.run(&[
        "context",
        "pack",
        "reconcile the ledger",
        "--budget",
        "100",
        "--format",
        "json",
    ]));
    assert_eq!(pack["dropped"][0]["reason"], "over_budget", "{pack}");
    assert_eq!(pack["dropped"][0]["tokens"], 320, "{pack}");
}

/// The shape a pack must get right, through the command: the best chunk is large and in the
/// right file; smaller chunks of other files fit more cheaply; weak files match one common word
/// of the goal; and some files match none. At 8,000 tokens the pack holds the large chunk
/// whole, at 2,000 its matching lines, and neither packs a weak file or one without a goal
/// term.
#[test]
fn the_right_files_large_chunk_whole_at_8k_and_its_matching_lines_at_2k() {
    const GOAL: &str = "limit the maximum size of JSON request bodies";
    let mut strong = String::from("pub fn read_body(request: &Request) -> Result<Json, Error> {\n");
    for i in 0..50 {
        strong.push_str(&format!(
            "    let part_{i} = request.chunk({i}).map_err(Error::Read)?; // part {i} of the stream\n"
        ));
    }
    strong.push_str("    if request.body_size() > config.max_content_length {\n");
    strong.push_str(
        "        return Err(Error::BodyTooLarge); // the JSON request body is over the limit\n",
    );
    strong.push_str("    }\n    parse_json(request)\n}\n");
    let lines = strong.lines().count();
    let mut script = Script::new();
    script.write("src/request.rs", &strong);
    for n in 0..12 {
        let mut body = format!(
            "/// Reads a JSON body of at most `limit` bytes, {n}.\npub fn json_body_{n}(limit: usize) -> usize {{\n"
        );
        for i in 0..28 {
            body.push_str(&format!("    let j{i} = limit + {i};\n"));
        }
        body.push_str("    0\n}\n");
        script.write(&format!("src/json_{n:02}.rs"), &body);
        let mut weak = format!("/// The size of widget {n}.\npub fn widget_{n}() -> usize {{\n");
        let mut unrelated = format!("/// Paints swatch {n}.\npub fn swatch_{n}() -> u8 {{\n");
        for i in 0..28 {
            weak.push_str(&format!("    let w{i} = {n} + {i};\n"));
            unrelated.push_str(&format!("    let s{i} = {n} + {i};\n"));
        }
        weak.push_str("    0\n}\n");
        unrelated.push_str("    0\n}\n");
        script.write(&format!("src/widget_{n:02}.rs"), &weak);
        script.write(&format!("src/swatch_{n:02}.rs"), &unrelated);
    }
    let repo = script
        .commit("a request reader, JSON bodies, widgets and swatches")
        .build();
    let f = repo.checkout();
    let short = &repo.head()[..7];
    let pack = |budget: &str| {
        json(&f.run(&[
            "pack",
            GOAL,
            "--budget",
            budget,
            "--format",
            "json",
            "--no-ledger",
        ]))
    };
    let paths = |pack: &Value| -> Vec<String> {
        pack["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| h["path"].as_str().expect("a path").to_owned())
            .collect()
    };
    for budget in ["8000", "2000"] {
        let pack = pack(budget);
        let packed = paths(&pack);
        assert_eq!(packed[0], "src/request.rs", "{budget}: {packed:?}");
        assert!(
            packed
                .iter()
                .all(|p| !p.contains("widget") && !p.contains("swatch")),
            "{budget}: {packed:?}"
        );
        let weak: Vec<&Value> = pack["dropped"]
            .as_array()
            .expect("dropped")
            .iter()
            .filter(|d| d["reason"] == "weak")
            .collect();
        assert_eq!(weak.len(), 12, "{budget}: {pack}");
        assert!(
            weak.iter().all(|d| d["citation"]
                .as_str()
                .is_some_and(|c| c.starts_with("src/widget_"))),
            "{budget}: {pack}"
        );
    }
    let large = pack("8000");
    assert_eq!(
        large["hits"][0]["citation"],
        format!("src/request.rs#L1-L{lines}@{short}").as_str(),
        "{large}"
    );
    assert_eq!(large["hits"][0]["text"], strong.as_str());
    let small = pack("2000");
    let first = &small["hits"][0];
    let text = first["text"].as_str().expect("text");
    assert!(text.contains("max_content_length"), "{small}");
    assert_eq!(text.lines().count(), 10, "{small}");
    assert_eq!(
        first["citation"],
        format!(
            "src/request.rs#L{}-L{}@{short}",
            first["startLine"], first["endLine"]
        )
        .as_str()
    );
}

/// The best-ranked chunks are shown whole while together they take at most half the budget;
/// the chunks after them are cut to their matching lines. At 2,000 tokens the best chunk
/// (about 600 tokens) is whole, though the cut chunks of six other files would fill the budget
/// without it.
#[test]
fn the_best_chunks_are_whole_within_half_the_budget_and_the_rest_cut() {
    const GOAL: &str = "retry the upload when the quota is exceeded";
    let mut best = String::from("pub fn upload_with_retry(quota: &Quota) -> Result<(), Error> {\n");
    for i in 0..20 {
        best.push_str(&format!(
            "    let try_{i} = upload(quota).or_else(|e| retry(e, {i}))?; // retry {i}\n"
        ));
    }
    best.push_str("    if quota.exceeded() { return retry_upload(quota); }\n    Ok(())\n}\n");
    let best_lines = best.lines().count();
    let mut script = Script::new();
    script.write("src/upload.rs", &best);
    for n in 0..6 {
        let mut report = format!("pub fn retry_upload_report_{n}(quota: &Quota) -> String {{\n");
        for i in 0..44 {
            report.push_str(&format!(
                "    let line_{i} = format!(\"{{}} of upload quota {n} is used by part {i}\", quota.used({i}));\n"
            ));
        }
        report
            .push_str("    if quota.exceeded() { retry_upload_report() }\n    String::new()\n}\n");
        script.write(&format!("src/quota_{n}.rs"), &report);
    }
    let repo = script.commit("an uploader and its reports").build();
    let f = repo.checkout();
    let short = &repo.head()[..7];
    let pack = json(&f.run(&[
        "pack",
        GOAL,
        "--budget",
        "2000",
        "--format",
        "json",
        "--no-ledger",
    ]));
    let hits = pack["hits"].as_array().expect("hits");
    assert_eq!(
        hits[0]["citation"],
        format!("src/upload.rs#L1-L{best_lines}@{short}").as_str(),
        "{pack}"
    );
    assert_eq!(hits[0]["text"], best.as_str());
    // Past a line for a further file (its signature), each other file's chunk is cut.
    let reports: Vec<&Value> = hits
        .iter()
        .filter(|h| {
            h["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("src/quota_"))
        })
        .filter(|h| h["endLine"] != h["startLine"])
        .collect();
    assert!(reports.len() >= 2, "{pack}");
    for report in reports {
        let text = report["text"].as_str().expect("text");
        assert_eq!(text.lines().count(), 10, "{pack}");
        assert!(text.contains("quota.exceeded()"), "{pack}");
    }
}

#[test]
fn context_pack_keeps_seed_000s_contract_and_header_lines() {
    let (f, sha) = project();
    // No indexing: an unindexed commit exits 3, as seed 000 says.
    let run = f.run(&["context", "pack", "budget"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("error: snapshot {sha} is not indexed")),
        "{}",
        run.stderr
    );
    assert!(!f.path().join(".ctxpack").exists(), "nothing was written");
    assert_eq!(f.run(&["index"]).code, 0);
    let run = f.run(&["context", "pack", "budget"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for header in [
        "budget: 1200 words\n",
        "selection_strategy: citation-diverse-v2\n",
        "candidate_hits: ",
        "unique_citations: ",
        "selected_sources: ",
        "duplicate_citations_skipped: ",
        "budget_rejected_hits: ",
    ] {
        assert!(
            run.stdout.contains(header),
            "missing {header:?} in\n{}",
            run.stdout
        );
    }
    let pack = json(&f.run(&["context", "pack", "budget", "--format", "json"]));
    assert_eq!(
        (
            &pack["budget"],
            &pack["meter"],
            &pack["selection"]["strategy"]
        ),
        (&1200.into(), &"words".into(), &"citation-diverse-v2".into()),
        "{pack}"
    );
    // Its options are `pack`'s; only the defaults differ.
    let pack = json(&f.run(&[
        "context",
        "pack",
        "budget",
        "--budget",
        "2k",
        "--meter",
        "o200k",
        "--selector",
        "coverage",
        "--format",
        "json",
    ]));
    assert_eq!(
        (
            &pack["budget"],
            &pack["meter"],
            &pack["selection"]["strategy"]
        ),
        (&2000.into(), &"o200k".into(), &"coverage-v4".into()),
        "{pack}"
    );
    // Help is wrapped to the terminal's width, so words are compared, not line breaks.
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = words(&f.run(&["context", "pack", "--help"]).stdout);
    for default in [
        "[default: 1200]",
        "[default: words]",
        "[default: diverse]",
        "[default: 30]",
    ] {
        assert!(help.contains(default), "{default}: {help}");
    }
    let help = words(&f.run(&["pack", "--help"]).stdout);
    for default in [
        "[default: 8000]",
        "[default: o200k]",
        "[default: coverage]",
        "[default: sized to the budget",
    ] {
        assert!(help.contains(default), "{default}: {help}");
    }
}

#[test]
fn a_new_commit_packs_without_a_manual_index() {
    let (f, first) = project();
    let run = f.run(&["pack", "budget", "--format", "json"]);
    let pack = json(&run);
    assert_eq!(pack["snapshotSha"], Value::String(first.clone()));
    assert_eq!(
        (
            &pack["budget"],
            &pack["meter"],
            &pack["selection"]["strategy"]
        ),
        (&8000.into(), &"o200k".into(), &"coverage-v4".into()),
        "{pack}"
    );
    assert!(
        run.stderr.contains(&format!("indexed {}", &first[..12])),
        "{}",
        run.stderr
    );
    // Already indexed: nothing more to do, and nothing printed about indexing. `--index`
    // is still accepted and means the default.
    let run = f.run(&["pack", "--index", "budget"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("indexed"), "{}", run.stderr);

    f.write(
        "src/budget.rs",
        BUDGET_RS.replace("cost <= remaining", "cost <= remaining && cost > 0"),
    );
    let second = f.commit("second");
    // --no-index refuses, naming the indexed ancestor; the last of --index and --no-index
    // wins.
    for flags in [&["--no-index"][..], &["--index", "--no-index"]] {
        let mut args = vec!["pack", "budget"];
        args.extend_from_slice(flags);
        let run = f.run(&args);
        assert_eq!(run.code, 3, "{flags:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!("nearest indexed ancestor: {first}")),
            "{}",
            run.stderr
        );
    }
    let run = f.run(&[
        "pack",
        "budget",
        "--no-index",
        "--index",
        "--format",
        "json",
    ]);
    let pack = json(&run);
    assert_eq!(pack["snapshotSha"], Value::String(second.clone()));
    assert!(
        run.stderr.contains(&format!(
            "indexed {}: 4 files (1 new, 3 reused)",
            &second[..12]
        )),
        "incremental: {}",
        run.stderr
    );
    assert!(
        pack["hits"][0]["text"]
            .as_str()
            .expect("a hit")
            .contains("cost > 0"),
        "{pack}"
    );
}

#[test]
fn budgets_take_k_and_m_suffixes_on_the_command_line() {
    // (flag value, the budget or the error)
    let cases: &[(&str, Result<u64, &str>)] = &[
        ("8k", Ok(8_000)),
        ("32k", Ok(32_000)),
        ("1.5k", Ok(1_500)),
        ("0.5k", Ok(500)),
        ("1.000k", Ok(1_000)),
        ("8K", Ok(8_000)),
        ("1m", Ok(1_000_000)),
        ("2.25M", Ok(2_250_000)),
        ("9007199254.740991m", Ok(9_007_199_254_740_991)),
        ("1200", Ok(1_200)),
        (" 8k ", Ok(8_000)),
        ("1.2345k", Err("budget must be a whole number, got 1.2345k")),
        ("0.0001m", Ok(100)),
        (
            "0.0000001m",
            Err("budget must be a whole number, got 0.0000001m"),
        ),
        ("0k", Err("budget must be a positive integer, got 0k")),
        ("0.0k", Err("budget must be a positive integer, got 0.0k")),
        ("-1k", Err("budget must be a positive integer, got -1k")),
        ("-1.5k", Err("budget must be a positive integer, got -1.5k")),
        (
            "9007199254741k",
            Err(
                "budget 9007199254741k is above the largest safe integer (2^53 - 1 = 9007199254740991)",
            ),
        ),
        (
            "99999999999999999999999999m",
            Err(
                "budget 99999999999999999999999999m is above the largest safe integer (2^53 - 1 = 9007199254740991)",
            ),
        ),
        ("k", Err("budget must be a positive integer, got `k`")),
        ("1.k", Err("budget must be a positive integer, got `1.k`")),
        (".5k", Err("budget must be a positive integer, got `.5k`")),
        ("1e3k", Err("budget must be a positive integer, got `1e3k`")),
        ("8 k", Err("budget must be a positive integer, got `8 k`")),
        ("8kk", Err("budget must be a positive integer, got `8kk`")),
        ("1g", Err("budget must be a positive integer, got `1g`")),
        ("0", Err("budget must be a positive integer, got 0")),
    ];
    for (given, expected) in cases {
        let parsed = ctxpack::args::parse_budget(given).map(ctxpack_api::Budget::get);
        assert_eq!(
            parsed.as_ref().copied().map_err(String::as_str),
            *expected,
            "{given:?}"
        );
    }

    // On the command line: `pack` and `context pack` (and `eval --budgets`, in eval.rs).
    let (f, _) = project();
    let pack = json(&f.run(&["pack", "budget", "--budget", "1.5k", "--format", "json"]));
    assert_eq!(pack["budget"], 1500);
    let pack = json(&f.run(&[
        "context", "pack", "budget", "--budget", "2k", "--index", "--format", "json",
    ]));
    assert_eq!(pack["budget"], 2000);
    let run = f.run(&["pack", "budget", "--budget", "1.2345k", "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let envelope: Value = serde_json::from_str(&run.stdout).expect("an envelope");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .expect("message")
            .contains("budget must be a whole number, got 1.2345k"),
        "{envelope}"
    );
    // `pack --input` takes the command line's budget strings; `context pack --input` keeps the
    // seed's contract of positive integers.
    let payload = f.path().join("in.json");
    let payload_arg = payload.to_str().expect("UTF-8");
    std::fs::write(&payload, r#"{"goal": "budget", "budget": "2k"}"#).expect("write");
    let pack = json(&f.run(&["pack", "--input", payload_arg, "--format", "json"]));
    assert_eq!(pack["budget"], 2000);
    let run = f.run(&["context", "pack", "--input", payload_arg, "--index"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("the budget is a positive integer"),
        "{}",
        run.stderr
    );
    std::fs::write(&payload, r#"{"goal": "budget", "budget": 2000}"#).expect("write");
    let pack = json(&f.run(&[
        "context",
        "pack",
        "--input",
        payload_arg,
        "--index",
        "--format",
        "json",
    ]));
    assert_eq!(pack["budget"], 2000);
    std::fs::write(&payload, r#"{"goal": "budget", "budget": "2.0005k"}"#).expect("write");
    let run = f.run(&["pack", "--input", payload_arg]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--budget"), "{}", run.stderr);
}

#[test]
fn untracked_files_are_counted_in_the_dirty_warning() {
    let (f, _) = project();
    f.write(".gitignore", "*.log\n");
    f.commit("ignore logs");
    f.write("src/budget.rs", "// changed\n");
    f.write("notes/todo.md", "budget todo\n");
    f.write("scratch.rs", "fn scratch_budget() {}\n");
    f.write("debug.log", "ignored\n");
    let warning = "warning: worktree has uncommitted changes (1 modified, 2 untracked); the pack reads the committed snapshot and excludes them\n";
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(warning), "{}", run.stdout);
    // The seed contract's header says so in a line of its own.
    let run = f.run(&["context", "pack", "budget"]);
    assert!(
        run.stdout.contains("worktree_dirty: true\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(warning), "{}", run.stdout);
    let run = f.run(&["status"]);
    assert!(
        run.stdout
            .contains("worktree: dirty (1 modified, 2 untracked)\n"),
        "{}",
        run.stdout
    );
    // Untracked files alone make the worktree dirty too.
    f.git(&["checkout", "--", "src/budget.rs"]);
    let pack = json(&f.run(&["context", "pack", "budget", "--format", "json"]));
    assert_eq!(pack["snapshot"]["worktreeDirty"], true);
    assert_eq!(
        pack["warnings"],
        serde_json::json!([
            "worktree has uncommitted changes (0 modified, 2 untracked); the pack reads the committed snapshot and excludes them"
        ])
    );
}

#[test]
fn input_payload_rules() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let payload = f.path().join("in.json");
    std::fs::write(
        &payload,
        r#"{"goal": "budget", "budget": 400, "at": "HEAD"}"#,
    )
    .expect("write");
    let p = payload.to_str().expect("UTF-8");
    let pack = json(&f.run(&["pack", "--input", p, "--format", "json"]));
    assert_eq!(pack["budget"], 400);
    assert_eq!(pack["goal"], "budget");
    for extra in [&["goal"][..], &["--budget", "5"], &["--at", "HEAD"]] {
        let mut args = vec!["pack", "--input", p];
        args.extend_from_slice(extra);
        assert_eq!(f.run(&args).code, 2, "{args:?}");
    }
    for bad in [
        r#"{"goal": ""}"#,
        r#"{"goal": "g", "budget": 0}"#,
        r#"{"goal": "g", "budget": 2.5}"#,
        r#"{"goal": "g", "budget": 9007199254740992}"#,
        "[1]",
        "nope",
    ] {
        std::fs::write(&payload, bad).expect("write");
        assert_eq!(f.run(&["pack", "--input", p]).code, 2, "{bad}");
    }
    assert_eq!(f.run(&["pack", "   "]).code, 2);
    assert_eq!(f.run(&["pack"]).code, 2);
    assert_eq!(f.run(&["pack", "g", "--scope", "bogus"]).code, 2);
    assert_eq!(f.run(&["pack", "g", "--budget", "-1"]).code, 2);
}

#[test]
fn damaged_stores_and_repositories_exit_4_with_a_way_out() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let store = f.path().join(".ctxpack");
    std::fs::remove_dir_all(store.join("lexical")).expect("rm");
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("ctxpack verify --repair"),
        "{}",
        run.stderr
    );
    let run = f.run(&["verify", "--repair"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains("repaired: rebuilt the lexical index"),
        "{}",
        run.stdout
    );
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    // A manifest whose file list lost its files is damage too, never a pack without them.
    rusqlite::Connection::open(store.join("ctxpack.sqlite"))
        .and_then(|c| c.execute("UPDATE snapshots SET file_ids = X'01'", []))
        .expect("a file list changed");
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("were committed") && run.stderr.contains("ctxpack verify --repair"),
        "{}",
        run.stderr
    );
    let run = f.run(&["verify", "--repair"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains("again from its commit"),
        "{}",
        run.stdout
    );
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    // A chunk whose text was edited in the store is damage to `pack` and `query` alike (its
    // checksum), never evidence.
    rusqlite::Connection::open(store.join("ctxpack.sqlite"))
        .and_then(|c| {
            c.execute(
                "UPDATE chunks SET text = replace(text, 'cost <= remaining', 'true') \
                 WHERE file_id IN (SELECT id FROM files WHERE path = 'src/budget.rs')",
                [],
            )
        })
        .expect("a chunk edited");
    for command in ["pack", "query"] {
        let run = f.run(&[command, "enforce the budget"]);
        assert_eq!(run.code, 4, "{command}: {}", run.transcript());
        assert!(
            run.stderr.contains("checksum") && run.stderr.contains("ctxpack verify --repair"),
            "{command}: {}",
            run.stderr
        );
        assert!(!run.stdout.contains("true"), "{command}: {}", run.stdout);
    }
    assert_eq!(f.run(&["verify", "--repair"]).code, 0);
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    // Rebuilding says where an unreadable database went (it is never deleted).
    std::fs::write(
        store.join("ctxpack.sqlite"),
        b"this is not sqlite at all, not even close......",
    )
    .expect("write");
    let _ = std::fs::remove_file(store.join("ctxpack.sqlite-wal"));
    let _ = std::fs::remove_file(store.join("ctxpack.sqlite-shm"));
    let run = f.run(&["index", "--rebuild"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("moved to"), "{}", run.stderr);
    assert_eq!(f.run(&["pack", "budget"]).code, 0);

    // A repository that lacks an object.
    let f = Fixture::new();
    f.write("src/a.rs", "fn budget() {}\n");
    f.commit("first");
    let blob = f.git(&["rev-parse", "HEAD:src/a.rs"]);
    let object = f
        .path()
        .join(".git/objects")
        .join(&blob[..2])
        .join(&blob[2..]);
    std::fs::remove_file(object).expect("the blob is a loose object");
    let run = f.run(&["index"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("object_not_present 1"),
        "{}",
        run.stdout
    );
}

/// Starts indexing HEAD in this process and returns once it holds the writer lock: the run
/// blocks at its first progress event until the returned sender is used (or dropped), and the
/// handle gives its result.
fn hold_the_writer_lock(
    f: &Fixture,
) -> (
    mpsc::Sender<()>,
    std::thread::JoinHandle<Result<ctxpack_api::IndexSummary, ctxpack_api::Error>>,
) {
    let workspace = Workspace::open(WorkspaceOptions {
        cwd: f.path().to_owned(),
        ..WorkspaceOptions::default()
    })
    .expect("the workspace opens");
    let (started, is_started) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let started = Mutex::new(Some(started));
    let released = Mutex::new(released);
    let control = Control::new().with_progress(move |_: &Progress| {
        let first = started.lock().expect("no panic while held").take();
        if let Some(started) = first {
            let _ = started.send(());
            let _ = released.lock().expect("no panic while held").recv();
        }
    });
    let run = std::thread::spawn(move || workspace.index(&IndexRequest::default(), &control));
    is_started
        .recv()
        .expect("the run reports progress once it holds the lock");
    (release, run)
}

#[test]
fn a_busy_store_exits_3_and_a_waiting_index_proceeds() {
    let (f, first) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    f.write("more.rs", "fn more() {}\n");
    let second = f.commit("more");
    let (release, holder) = hold_the_writer_lock(&f);
    let run = f.run(&["index"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "is being written by another process (pid {})",
            std::process::id()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("pass --wait"), "{}", run.stderr);
    // Readers are not blocked by the writer.
    assert_eq!(f.run(&["pack", "budget", "--at", &first]).code, 0);
    // A waiting writer proceeds once the lock is released.
    let mut waiter = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
        .args(["index", "--wait", "--cwd", &f.cwd()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ctxpack binary starts");
    // Give the waiter a chance to reach the lock; nothing here depends on how long it takes.
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        waiter.try_wait().expect("the waiter is running").is_none(),
        "a writer cannot finish while the lock is held"
    );
    release.send(()).expect("the holder is waiting");
    let summary = holder
        .join()
        .expect("the holder does not panic")
        .expect("the holder indexes");
    assert_eq!(summary.sha, second);
    let out = waiter.wait_with_output().expect("the waiter finishes");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        stdout.starts_with(&format!("snapshot {} is already indexed", &second[..12])),
        "{stdout}"
    );
}

#[test]
fn kill_during_index_leaves_earlier_snapshots_intact() {
    let mut script = Script::new();
    script.write("src/budget.rs", BUDGET_RS).commit("first");
    // A second commit large enough that indexing it takes a while.
    for i in 0..400 {
        script.write(
            &format!("gen/module_{i}.rs"),
            format!("/// Module {i}.\npub fn budget_{i}(x: u64) -> u64 {{\n    x + {i}\n}}\n")
                .repeat(20),
        );
    }
    let repo = script.commit("second").build();
    let [first, second] = [&repo.commits()[0], &repo.commits()[1]].map(String::clone);
    let f = repo.checkout();
    assert_eq!(f.run(&["index", "--at", &first]).code, 0);
    let cwd = f.cwd();
    for delay_ms in [5, 20, 50, 100, 200, 400, 800] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
            .args(["index", "--cwd", &cwd])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // The store is readable and the first snapshot packs as before.
        let status = json(&f.run(&["status", "--format", "json"]));
        assert!(
            status["snapshots"]
                .as_array()
                .expect("snapshots")
                .iter()
                .any(|s| s["sha"] == Value::String(first.clone()))
        );
        let pack = json(&f.run(&["pack", "budget", "--at", &first, "--format", "json"]));
        assert!(
            pack["hits"][0]["citation"]
                .as_str()
                .expect("hit")
                .starts_with("src/budget.rs")
        );
        // The second is either complete or absent, never half there.
        let run = f.run(&[
            "pack",
            "budget",
            "--at",
            &second,
            "--no-index",
            "--format",
            "json",
        ]);
        if run.code == 0 {
            let stats = status["snapshots"]
                .as_array()
                .expect("snapshots")
                .iter()
                .find(|s| s["sha"] == Value::String(second.clone()))
                .cloned();
            assert_eq!(stats.expect("a packable snapshot is listed")["files"], 401);
        } else {
            assert_eq!(run.code, 3, "{}", run.stderr);
        }
    }
    // Finishing the run afterwards gives the complete snapshot.
    let report = json(&f.run(&["index", "--format", "json"]));
    assert_eq!(report["files"], 401);
    let pack = json(&f.run(&["pack", "budget 399", "--format", "json"]));
    assert!(pack["hits"].as_array().expect("hits").iter().any(|h| {
        h["citation"]
            .as_str()
            .is_some_and(|c| c.starts_with("gen/module_399.rs"))
    }));
}

#[test]
fn usage_errors_carry_the_envelope_when_json_was_asked_for() {
    let (f, _) = project();
    let run = f.run(&["pack", "budget", "--budget", "0", "--format", "json"]);
    assert_eq!(run.code, 2);
    let envelope: Value = serde_json::from_str(&run.stdout).expect("an envelope");
    assert_eq!(envelope["error"]["code"], "invalid_input");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .expect("message")
            .contains("budget must be a positive integer")
    );
}

#[test]
fn include_exclude_and_worktree_reach_the_pack() {
    let (f, _) = project();
    f.write(
        "src/drafts.rs",
        "pub fn budget_draft_in_the_worktree() {}\n",
    );
    f.write("docs/budget.md", "# Budget drafts\n");
    let pack = json(&f.run(&[
        "pack",
        "budget draft worktree",
        "--worktree",
        "--include",
        "src/**",
        "--include",
        "docs/**",
        "--exclude",
        "*.md",
        "--format",
        "json",
    ]));
    let citations: Vec<&str> = pack["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["citation"].as_str().expect("a citation"))
        .collect();
    assert!(
        citations.iter().all(|c| c.starts_with("src/")),
        "{citations:?}"
    );
    assert!(
        citations
            .iter()
            .any(|c| c.starts_with("src/drafts.rs#") && c.ends_with("@worktree")),
        "{citations:?}"
    );
    // The working tree is packed over HEAD only; a malformed glob names its flag.
    let run = f.run(&["pack", "budget", "--worktree", "--at", "HEAD"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let run = f.run(&["pack", "budget", "--exclude", "!src/**"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("exclude"), "{}", run.stderr);
}

/// A session on the command line: a second pack in it repeats no hit text and names the
/// first instead; `--fresh` shows it whole; `--recall` gives its text back; the session lives
/// in the store directory, across processes.
#[test]
fn a_session_on_the_command_line_sends_references_instead_of_text_again() {
    let repo = Script::new()
        .write("src/budget.rs", BUDGET_RS)
        .write("README.md", README)
        .commit("first")
        .build();
    let f = repo.checkout();
    let goal = "how are budgets enforced";
    let pack = |extra: &[&str]| {
        let mut args = vec!["pack", goal, "--format", "json"];
        args.extend_from_slice(extra);
        let run = f.run(&args);
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
        json(&run)
    };
    let first = pack(&["--session", "task 1"]);
    let hits = first["hits"].as_array().expect("hits").clone();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.get("shownBefore").is_none()));
    let second = pack(&["--session", "task 1"]);
    assert_eq!(second["session"]["id"], "task 1");
    assert_eq!(second["session"]["references"], hits.len());
    for hit in second["hits"].as_array().expect("hits") {
        assert_eq!(hit["shownBefore"]["whole"], true, "{hit}");
        assert!(
            !hit["text"]
                .as_str()
                .expect("text")
                .contains("enforce_budget")
        );
    }
    // What the session showed lives in the store, under the pack's ledger id.
    let id = second["hits"][0]["shownBefore"]["pack"]
        .as_str()
        .expect("a pack id")
        .to_owned();
    let shown = f.run(&["show", &id, "--format", "json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    // Text and Markdown say so in a line per reference, with no text.
    let run = f.run(&["pack", goal, "--session", "task 1"]);
    assert!(
        run.stdout.contains(&format!(
            "shown before: {} in pack {}",
            hits[0]["citation"].as_str().expect("citation"),
            &id[..12]
        )),
        "{}",
        run.stdout
    );
    let run = f.run(&["pack", goal, "--session", "task 1", "--format", "markdown"]);
    assert!(
        run.stdout.contains("Shown before in this session:"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("in pack `{}`", &id[..12])),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("fn enforce_budget"), "{}", run.stdout);
    // Fresh: whole again; another session: whole.
    let fresh = pack(&["--session", "task 1", "--fresh"]);
    assert_eq!(fresh["hits"], first["hits"]);
    assert_eq!(pack(&["--session", "task 2"])["hits"], first["hits"]);
    // Recall by pack id (a prefix of it) and by citation.
    let run = f.run(&["pack", "--session", "task 1", "--recall", &id[..8]]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("fn enforce_budget"), "{}", run.stdout);
    let citation = hits[0]["citation"].as_str().expect("a citation");
    let recalled = pack(&["--session", "task 1", "--recall", citation]);
    assert_eq!(recalled["hits"][0]["citation"], citation);
    // Misuse: documented exit codes.
    assert_eq!(
        f.run(&["pack", goal, "--fresh"]).code,
        2,
        "--fresh needs --session"
    );
    assert_eq!(f.run(&["pack", goal, "--session", ""]).code, 2);
    let unknown = f.run(&["pack", "--session", "task 1", "--recall", "abcdef01"]);
    assert_eq!(unknown.code, 3, "{}", unknown.stderr);
}

/// The files of `root`'s working tree that processes open while a watch is held: every
/// directory but `.git` is watched (inotify watches one directory, not its subdirectories);
/// the store `.ctxpack` is made after the watches and is not among them.
#[cfg(target_os = "linux")]
struct Opens {
    inotify: std::os::fd::OwnedFd,
}

#[cfg(target_os = "linux")]
impl Opens {
    fn watch(root: &std::path::Path) -> Opens {
        use rustix::fs::inotify;
        let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
            .expect("inotify");
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            inotify::add_watch(&fd, &dir, inotify::WatchFlags::OPEN).expect("a watch");
            for entry in std::fs::read_dir(&dir).expect("a directory") {
                let entry = entry.expect("an entry");
                if entry.file_type().expect("a type").is_dir() && entry.file_name() != ".git" {
                    dirs.push(entry.path());
                }
            }
        }
        Opens { inotify: fd }
    }

    /// The names of the files opened since the last call (directories listed are not counted).
    fn files(&self) -> Vec<String> {
        use rustix::fs::inotify;
        let mut buf = [std::mem::MaybeUninit::uninit(); 8192];
        let mut reader = inotify::Reader::new(&self.inotify, &mut buf);
        let mut names = Vec::new();
        loop {
            match reader.next() {
                Ok(event) => {
                    if !event.events().contains(inotify::ReadFlags::ISDIR)
                        && let Some(name) = event.file_name()
                    {
                        names.push(name.to_string_lossy().into_owned());
                    }
                }
                Err(rustix::io::Errno::WOULDBLOCK) => return names,
                Err(error) => panic!("reading inotify events: {error}"),
            }
        }
    }
}

/// A pack of a fresh clone decides from the index's stat alone that the tree is clean (git
/// holds every entry racily clean): the first pack, which indexes, and the next open no file
/// of the working tree, in a tree of 20 files as in one of 600. The watch sees a read.
#[cfg(target_os = "linux")]
#[test]
fn a_pack_of_a_fresh_clone_opens_no_file_of_the_working_tree() {
    let opened = |files: usize| {
        let mut script = Script::new();
        for i in 0..files {
            script.write(
                &format!("src/m{}/f{i}.rs", i % 7),
                format!("/// Step {i} of the budget.\npub fn step_{i}() -> u32 {{ {i} }}\n"),
            );
        }
        script.write("README.md", "Budget steps.\n");
        script.commit("steps");
        let clone = script.build().fresh_clone();
        let opens = Opens::watch(clone.path());
        let mut packs = Vec::new();
        for _ in 0..2 {
            let run = clone.run(&["pack", "budget step", "--format", "json"]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            packs.push(json(&run));
        }
        assert!(!packs[1]["hits"].as_array().expect("hits").is_empty());
        assert_eq!(packs[1]["snapshot"]["worktreeDirty"], false, "{}", packs[1]);
        let during = opens.files();
        // The count can fail: a read of one file is seen.
        std::fs::read(clone.path().join("src/m0/f0.rs")).expect("a file");
        assert_eq!(opens.files(), ["f0.rs"]);
        during
    };
    for files in [20, 600] {
        assert_eq!(opened(files), Vec::<String>::new(), "{files} files");
    }
}
