//! `ctxpack index`, `status`, `query` and `pack` on real git repositories built with `git`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::{Run, ctxpack};

/// A temporary git repository.
pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let fixture = Fixture {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture.git(&["config", "user.name", "Test"]);
        fixture.git(&["config", "user.email", "test@example.invalid"]);
        fixture.git(&["config", "commit.gpgsign", "false"]);
        fixture
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn cwd(&self) -> String {
        self.path().to_str().expect("UTF-8 temp path").to_owned()
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_owned()
    }

    pub fn write(&self, path: &str, text: &str) {
        let full: PathBuf = self.path().join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, text).expect("write");
    }

    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = args.to_vec();
        let cwd = self.cwd();
        all.push("--cwd");
        all.push(&cwd);
        ctxpack(&all, b"")
    }
}

const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
const README: &str = "# Demo\n\nA tiny project about cakes and recipes.\n";
const CONFIG: &str = "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1\n";

/// A small project with code, a README, a secret and a binary, committed once.
pub fn project() -> (Fixture, String) {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    f.write("README.md", README);
    f.write("config.env", CONFIG);
    f.write("assets/logo.bin", "\u{0}\u{1}binary");
    let sha = f.commit("first");
    (f, sha)
}

/// The JSON on stdout of a successful run.
pub fn json(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("stdout is JSON")
}

#[test]
fn missing_snapshot_exits_3_until_indexed() {
    let (f, sha) = project();
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("snapshot {sha} is not indexed")),
        "{}",
        run.stderr
    );

    let run = f.run(&["index"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!("indexed {}", &sha[..12])),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("binary 1"), "{}", run.stdout);

    let pack = json(&f.run(&["pack", "how is the budget enforced", "--format", "json"]));
    assert_eq!(pack["snapshotSha"], Value::String(sha.clone()));
    assert_eq!(pack["snapshot"]["resolvedSha"], Value::String(sha.clone()));
    assert_eq!(pack["snapshot"]["requestedRef"], "HEAD");
    assert_eq!(pack["snapshot"]["selection"], "exact");
    assert_eq!(pack["snapshot"]["branch"], "main");
    assert_eq!(pack["snapshot"]["detached"], false);
    assert_eq!(pack["snapshot"]["worktreeDirty"], false);
    assert_eq!(pack["budget"], 1200);
    let s = &pack["selection"];
    // ctxpack's default selector is its own, measured better than seed 000's.
    assert_eq!(s["strategy"], "coverage-v1");
    let n = |k: &str| s[k].as_u64().expect("counter");
    assert_eq!(
        n("uniqueCitations"),
        pack["selectedHits"].as_u64().expect("n") + n("budgetRejectedHits")
    );
    assert_eq!(
        n("candidateHits"),
        n("uniqueCitations") + n("duplicateCitationsSkipped")
    );
    let first = pack["hits"][0]["citation"].as_str().expect("a hit");
    assert!(first.starts_with("src/budget.rs#L"), "{first}");
    assert!(first.ends_with(&format!("@{}", &sha[..7])), "{first}");
}

#[test]
fn context_pack_alias_and_text_headers() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let run = f.run(&[
        "context",
        "pack",
        "budget",
        "--budget",
        "50",
        "--selector",
        "diverse",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for header in [
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
}

#[test]
fn incremental_index_and_ancestor_guidance() {
    let (f, first) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    f.write(
        "src/budget.rs",
        &BUDGET_RS.replace("cost <= remaining", "cost <= remaining && cost > 0"),
    );
    let second = f.commit("second");
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains(&format!(
            "nearest indexed ancestor: {first} (1 commit back)"
        )),
        "{}",
        run.stderr
    );
    // The ancestor is guidance, never packed automatically: still exit 3 with --format json.
    let run = f.run(&["pack", "budget", "--format", "json"]);
    assert_eq!(run.code, 3);
    let envelope: Value = serde_json::from_str(&run.stdout).expect("envelope");
    assert_eq!(envelope["error"]["code"], "not_found");
    assert_eq!(envelope["error"]["exitCode"], 3);

    let report = json(&f.run(&["index", "--format", "json"]));
    assert_eq!(report["sha"], Value::String(second.clone()));
    assert_eq!(report["processed"], 1, "only the changed blob is processed");
    assert_eq!(report["reused"], 3);
    // Both snapshots stay packable; the old one by prefix.
    let pack = json(&f.run(&["pack", "budget", "--at", &first[..8], "--format", "json"]));
    assert_eq!(pack["snapshotSha"], Value::String(first.clone()));
    assert_eq!(
        pack["snapshot"]["requestedRef"],
        Value::String(first[..8].to_owned())
    );
    let text = pack["hits"][0]["text"].as_str().expect("text");
    assert!(
        !text.contains("cost > 0"),
        "the old snapshot has the old text"
    );
    let pack = json(&f.run(&["pack", "budget", "--format", "json"]));
    assert!(
        pack["hits"][0]["text"]
            .as_str()
            .expect("text")
            .contains("cost > 0")
    );
}

#[test]
fn references_are_strict() {
    let (f, sha) = project();
    f.git(&["tag", "v1.0"]);
    assert_eq!(f.run(&["index"]).code, 0);
    for bad in ["main", "v1.0", "HEAD~1", "HEAD^", "abc", "zzzzzzz", "@"] {
        let run = f.run(&["pack", "budget", "--at", bad]);
        assert_eq!(run.code, 2, "--at {bad}: {}", run.stderr);
    }
    assert_eq!(f.run(&["pack", "budget", "--at", &sha]).code, 0);
    assert_eq!(
        f.run(&["pack", "budget", "--at", &sha.to_uppercase()]).code,
        0
    );
    assert_eq!(f.run(&["pack", "budget", "--at", "HEAD"]).code, 0);
    // A well-formed prefix of no commit.
    assert_eq!(f.run(&["pack", "budget", "--at", "0000000"]).code, 2);
}

#[test]
fn input_payload_rules() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let payload = f.path().join("in.json");
    std::fs::write(
        &payload,
        r#"{"goal": "budget", "budget": 40, "at": "HEAD"}"#,
    )
    .expect("write");
    let p = payload.to_str().expect("UTF-8");
    let pack = json(&f.run(&["pack", "--input", p, "--format", "json"]));
    assert_eq!(pack["budget"], 40);
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
fn dirty_worktree_warns_and_reads_the_commit() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    f.write(
        "src/budget.rs",
        "pub fn enforce_budget() { uncommitted_change() }\n",
    );
    let pack = json(&f.run(&["pack", "enforce budget", "--format", "json"]));
    assert_eq!(pack["snapshot"]["worktreeDirty"], true);
    assert!(
        pack["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .any(|w| w
                .as_str()
                .is_some_and(|w| w.starts_with("worktree has uncommitted changes")))
    );
    assert!(!pack.to_string().contains("uncommitted_change"));
}

#[test]
fn secrets_are_masked_and_counted() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let pack = json(&f.run(&["pack", "aws access key region", "--format", "json"]));
    let all = pack.to_string();
    assert!(!all.contains("AKIAIOSFODNN7EXAMPLE"), "{all}");
    assert!(all.contains("[REDACTED:"), "{all}");
    assert!(pack["redactionSummary"]["total"].as_u64().expect("total") >= 1);
}

#[test]
fn nothing_fits_warning_and_detached_head() {
    let (f, sha) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    f.git(&["checkout", "-q", "--detach", &sha]);
    let pack = json(&f.run(&["pack", "budget", "--budget", "1", "--format", "json"]));
    assert_eq!(pack["snapshot"]["detached"], true);
    assert_eq!(pack["selectedHits"], 0);
    assert_eq!(
        pack["warnings"][0],
        "context pack budget admitted no complete hit"
    );
}

#[test]
fn store_faults_are_typed() {
    let (f, _) = project();
    // Not a repository at all.
    let empty = tempfile::tempdir().expect("tempdir");
    let run = ctxpack(
        &["pack", "g", "--cwd", empty.path().to_str().expect("UTF-8")],
        b"",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);

    assert_eq!(f.run(&["index"]).code, 0);
    let store = f.path().join(".ctxpack");
    // A deleted lexical index: exit 4 and a way out.
    std::fs::remove_dir_all(store.join("lexical")).expect("rm");
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("ctxpack index --rebuild"),
        "{}",
        run.stderr
    );
    assert_eq!(f.run(&["index", "--rebuild"]).code, 0);
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
    // A garbage database.
    std::fs::write(
        store.join("ctxpack.sqlite"),
        b"this is not sqlite at all, not even close......",
    )
    .expect("write");
    let _ = std::fs::remove_file(store.join("ctxpack.sqlite-wal"));
    let _ = std::fs::remove_file(store.join("ctxpack.sqlite-shm"));
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("ctxpack index --rebuild"),
        "{}",
        run.stderr
    );
    // Rebuilding moves the unreadable database aside (nothing is deleted) and starts afresh.
    let run = f.run(&["index", "--rebuild"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("moved to"), "{}", run.stderr);
    assert_eq!(f.run(&["pack", "budget"]).code, 0);
}

#[test]
fn newer_store_format_is_refused() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let db = f.path().join(".ctxpack/ctxpack.sqlite");
    let conn = rusqlite::Connection::open(&db).expect("open the store database");
    conn.pragma_update(None, "user_version", 99)
        .expect("set the format version");
    drop(conn);
    let run = f.run(&["pack", "budget"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("format version 99"), "{}", run.stderr);
}

#[test]
fn status_and_query() {
    let (f, sha) = project();
    let status: Value = json(&f.run(&["status", "--format", "json"]));
    assert_eq!(status["storeExists"], false);
    assert_eq!(status["headIndexed"], false);
    assert_eq!(f.run(&["index"]).code, 0);
    let status: Value = json(&f.run(&["status", "--format", "json"]));
    assert_eq!(status["headIndexed"], true);
    assert_eq!(status["head"], Value::String(sha.clone()));
    assert_eq!(status["snapshots"][0]["sha"], Value::String(sha));
    let query = json(&f.run(&["query", "enforce budget", "--format", "json"]));
    let hit = &query["hits"][0];
    assert!(
        hit["citation"]
            .as_str()
            .expect("citation")
            .starts_with("src/budget.rs")
    );
    let b = &hit["scoreBreakdown"];
    let sum = b["text"].as_f64().expect("f")
        + b["path"].as_f64().expect("f")
        + b["symbol"].as_f64().expect("f");
    assert!(
        (sum - b["chunk"].as_f64().expect("chunk")).abs() < 1e-3,
        "{hit}"
    );
}

#[test]
fn pack_index_flag_indexes_head_first() {
    let (f, sha) = project();
    let run = f.run(&["pack", "--index", "budget", "--format", "json"]);
    let pack = json(&run);
    assert_eq!(pack["snapshotSha"], Value::String(sha.clone()));
    assert!(
        run.stderr.contains(&format!("indexed {}", &sha[..12])),
        "{}",
        run.stderr
    );
    // Already indexed: nothing more to do, and nothing printed about indexing.
    let run = f.run(&["pack", "--index", "budget"]);
    assert_eq!(run.code, 0);
    assert!(!run.stderr.contains("indexed"), "{}", run.stderr);
}

#[test]
fn a_second_writer_is_refused_or_waits() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let dir = f.path().join(".ctxpack");
    let lock = ctxpack_store::WriterLock::acquire(&dir, false).expect("lock");
    f.write("more.rs", "fn more() {}\n");
    f.commit("more");
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
    // Readers are not blocked by the writer.
    assert_eq!(
        f.run(&["pack", "budget", "--at", &f.git(&["rev-parse", "HEAD~1"])])
            .code,
        0
    );
    // A waiting writer proceeds once the lock is released.
    let cwd = f.cwd();
    let waiter = std::thread::spawn(move || ctxpack(&["index", "--wait", "--cwd", &cwd], b""));
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(lock);
    let run = waiter.join().expect("waiter thread");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn awkward_trees_are_indexed_or_skipped_with_reasons() {
    let f = Fixture::new();
    // An empty repository has no snapshot to index.
    let run = f.run(&["index"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("no commits yet"), "{}", run.stderr);

    f.write(
        "dir with spaces/naïve café.rs",
        "fn café() { let budget = 1; }\n",
    );
    f.write("latin1.txt", "");
    std::fs::write(f.path().join("latin1.txt"), b"caf\xe9 budget\n").expect("write");
    std::fs::write(f.path().join("nul.txt"), b"budget\0budget\n").expect("write");
    f.write("big.txt", &"budget line\n".repeat(20_000));
    f.write("ignored/skip.rs", "fn budget() {}\n");
    f.write(".ctxpackignore", "ignored/\n");
    std::os::unix::fs::symlink("latin1.txt", f.path().join("link.txt")).expect("symlink");
    // A submodule entry (a gitlink) without cloning anything.
    let head = {
        f.write("seed.txt", "seed\n");
        f.commit("seed")
    };
    f.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{head},vendor/sub"),
    ]);
    f.git(&["commit", "-q", "-m", "awkward"]);
    let report = json(&f.run(&["index", "--max-file-bytes", "100000", "--format", "json"]));
    let skipped = &report["skipped"];
    assert_eq!(skipped["invalid_utf8"], 1, "{report}");
    assert_eq!(skipped["binary"], 1, "{report}");
    assert_eq!(skipped["too_large"], 1, "{report}");
    assert_eq!(skipped["ignored"], 1, "{report}");
    assert_eq!(skipped["symlink"], 1, "{report}");
    assert_eq!(skipped["submodule"], 1, "{report}");
    let pack = json(&f.run(&["pack", "café budget", "--format", "json"]));
    let cites: Vec<&str> = pack["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter_map(|h| h["citation"].as_str())
        .collect();
    assert!(
        cites
            .iter()
            .any(|c| c.starts_with("dir with spaces/naïve café.rs#L1-L1@")),
        "{cites:?}"
    );
}

#[test]
fn shallow_clone_indexes_and_guides_without_history() {
    let (f, _) = project();
    f.write("src/extra.rs", "fn extra_budget() {}\n");
    f.commit("second");
    let clone = tempfile::tempdir().expect("tempdir");
    let url = format!("file://{}", f.cwd());
    let out = Command::new("git")
        .args([
            "clone",
            "-q",
            "--depth",
            "1",
            &url,
            clone.path().to_str().expect("UTF-8"),
        ])
        .output()
        .expect("git clone");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cwd = clone.path().to_str().expect("UTF-8");
    let run = ctxpack(&["index", "--cwd", cwd], b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = ctxpack(&["pack", "budget", "--cwd", cwd, "--format", "json"], b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn kill_during_index_leaves_earlier_snapshots_intact() {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    let first = f.commit("first");
    assert_eq!(f.run(&["index"]).code, 0);
    // A second commit large enough that indexing it takes a while.
    for i in 0..400 {
        f.write(
            &format!("gen/module_{i}.rs"),
            &format!("/// Module {i}.\npub fn budget_{i}(x: u64) -> u64 {{\n    x + {i}\n}}\n")
                .repeat(20),
        );
    }
    let second = f.commit("second");
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
        let run = f.run(&["pack", "budget", "--at", &second, "--format", "json"]);
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
fn a_missing_git_object_is_a_typed_failure() {
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
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains(&blob), "{}", run.stderr);
    assert!(run.stderr.contains("git fsck"), "{}", run.stderr);
}

#[test]
fn huge_top_k_is_bounded_by_the_index() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let run = f.run(&["query", "budget", "--top-k", "18446744073709551615"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = f.run(&["pack", "budget", "--top-k", "4294967296"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
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
