//! A process killed at any named phase of `index`, `index --rebuild` or a store migration
//! (`CTXPACK_FAILPOINT=PHASE:N` aborts it there, as `kill -9` would) leaves a store that
//! `verify` passes and whose packs are byte-equal to the ones before the run; the next run
//! completes. Timed kills stay in benchmark scripts: these points are deterministic.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::pack::{Cli, Fixture};

/// Runs `ctxpack ARGS` in the fixture with a failpoint armed; returns the exit code, or
/// `None` when the process was killed by a signal (the abort).
fn run_with(f: &Fixture, args: &[&str], failpoint: &str) -> Option<i32> {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
        .args(args)
        .args(["--cwd", &f.cwd()])
        .env("CTXPACK_FAILPOINT", failpoint)
        .stdin(Stdio::null())
        .output()
        .expect("ctxpack starts");
    out.status.code()
}

/// The canonical JSON of the packs of a few goals at `at`, recorded nowhere.
fn packs(f: &Fixture, at: &str) -> Vec<String> {
    [
        "how are budgets enforced",
        "remaining cost",
        "cakes and recipes",
    ]
    .iter()
    .map(|goal| {
        let run = f.run(&["pack", goal, "--at", at, "--format", "json", "--no-ledger"]);
        assert_eq!(run.code, 0, "{goal}: {}", run.transcript());
        run.stdout
    })
    .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).expect("rm");
    }
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// `verify` passes.
fn sound(f: &Fixture, point: &str) {
    let run = f.run(&["verify"]);
    assert_eq!(run.code, 0, "after {point}: {}", run.transcript());
}

#[test]
fn every_kill_point_of_index_and_rebuild_leaves_a_sound_store_and_the_same_packs() {
    let f = Fixture::new();
    f.write("src/budget.rs", "/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n");
    f.write(
        "README.md",
        "# Demo\n\nA tiny project about cakes and recipes.\n",
    );
    let first = f.commit("first");
    assert_eq!(f.run(&["index"]).code, 0);
    let at_first = packs(&f, &first);
    f.write("src/cost.rs", "/// The remaining cost of a pack.\npub fn remaining_cost(budget: u64, used: u64) -> u64 {\n    budget - used\n}\n");
    f.write("src/budget.rs", "/// Admits a hit only if its whole cost fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n");
    let second = f.commit("second");
    let store = f.path().join(".ctxpack");
    let pristine = tempfile::tempdir().expect("tmp");
    copy_dir(&store, pristine.path());

    let mut survived = 0;
    for point in [
        "index:read",
        "index:chunked",
        "index:files-written",
        "index:lexical-committed",
        "index:snapshot-committed",
    ] {
        copy_dir(pristine.path(), &store);
        let code = run_with(&f, &["index"], &format!("{point}:1"));
        assert_eq!(code, None, "{point}: the run was aborted there");
        sound(&f, point);
        assert_eq!(
            packs(&f, &first),
            at_first,
            "{point}: the earlier snapshot is unchanged"
        );
        let run = f.run(&["index"]);
        assert_eq!(
            run.code,
            0,
            "{point}: the next run completes: {}",
            run.transcript()
        );
        sound(&f, point);
        packs(&f, &second);
        survived += 1;
    }
    // Rebuilds, with both commits indexed.
    assert_eq!(f.run(&["index"]).code, 0);
    let at_second = packs(&f, &second);
    copy_dir(&store, pristine.path());
    for point in [
        "rebuild:database-ready",
        "rebuild:lexical-built",
        "rebuild:switched",
    ] {
        copy_dir(pristine.path(), &store);
        let code = run_with(&f, &["index", "--rebuild"], &format!("{point}:1"));
        assert_eq!(code, None, "{point}: the run was aborted there");
        sound(&f, point);
        assert_eq!(packs(&f, &first), at_first, "{point}");
        assert_eq!(packs(&f, &second), at_second, "{point}");
        assert_eq!(f.run(&["index", "--rebuild"]).code, 0, "{point}");
        assert_eq!(packs(&f, &second), at_second, "{point}");
        survived += 1;
    }
    assert_eq!(survived, 8);
}

#[test]
fn a_migration_killed_part_way_leaves_the_old_format_whole() {
    // The format-1 store of the API crate's fixtures, over the repository its script builds.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().expect("tmp");
    let status = Command::new("bash")
        .arg(root.join("scripts/make_store_fixture.sh"))
        .arg(dir.path())
        .status()
        .expect("the fixture script runs");
    assert!(status.success());
    let f = Fixture::adopt(dir);
    copy_dir(
        &root.join("crates/ctxpack/tests/fixtures/store-v1"),
        &f.store(),
    );
    let head = f.git(&["rev-parse", "HEAD"]);
    let before = packs(&f, &head);
    for point in ["migrate:columns-added", "migrate:checksums-written"] {
        let code = run_with(&f, &["index"], &format!("{point}:1"));
        assert_eq!(code, None, "{point}: the run was aborted there");
        let status = f.run(&["status", "--format", "json"]);
        assert_eq!(status.code, 0, "{point}: {}", status.transcript());
        sound(&f, point);
        assert_eq!(packs(&f, &head), before, "{point}");
    }
    assert_eq!(f.run(&["index"]).code, 0);
    sound(&f, "the migration");
    assert_eq!(packs(&f, &head), before);
}

#[test]
fn a_gc_killed_at_any_phase_leaves_a_sound_store_and_the_next_run_finishes_it() {
    let f = Fixture::new();
    let mut commits = Vec::new();
    for step in 0..5 {
        f.write(
            "src/budget.rs",
            format!("/// Admits a hit only if it fits the remaining budget ({step}).\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {{\n    cost <= remaining\n}}\n"),
        );
        f.write(
            &format!("src/step{step}.rs"),
            format!("/// The remaining cost of step {step}.\npub fn remaining_cost_{step}(budget: u64) -> u64 {{\n    budget\n}}\n"),
        );
        commits.push(f.commit(&format!("step {step}")));
        assert_eq!(f.run(&["index"]).code, 0);
    }
    // The last two and the pinned first are kept.
    assert_eq!(f.run(&["pin", &commits[0]]).code, 0);
    let kept = [&commits[0], &commits[3], &commits[4]];
    let before: Vec<Vec<String>> = kept.iter().map(|sha| packs(&f, sha)).collect();
    let store = f.path().join(".ctxpack");
    let pristine = tempfile::tempdir().expect("tmp");
    copy_dir(&store, pristine.path());
    let gc = ["gc", "--keep-last", "2", "--no-age-rule"];
    for point in ["gc:snapshots-removed", "gc:lexical-deleted"] {
        copy_dir(pristine.path(), &store);
        let code = run_with(&f, &gc, &format!("{point}:1"));
        assert_eq!(code, None, "{point}: the run was aborted there");
        sound(&f, point);
        let after: Vec<Vec<String>> = kept.iter().map(|sha| packs(&f, sha)).collect();
        assert_eq!(after, before, "{point}: the kept snapshots pack as before");
        let run = f.run(&[
            "gc",
            "--keep-last",
            "2",
            "--no-age-rule",
            "--format",
            "json",
        ]);
        assert_eq!(run.code, 0, "{point}: {}", run.transcript());
        sound(&f, point);
        let after: Vec<Vec<String>> = kept.iter().map(|sha| packs(&f, sha)).collect();
        assert_eq!(after, before, "{point}: after the next run");
        let status = f.run(&["status", "--format", "json"]);
        let status: serde_json::Value = serde_json::from_str(&status.stdout).expect("json");
        let mut left: Vec<String> = status["snapshots"]
            .as_array()
            .expect("snapshots")
            .iter()
            .map(|s| s["sha"].as_str().expect("sha").to_owned())
            .collect();
        left.sort();
        let mut want: Vec<String> = kept.iter().map(|s| (*s).clone()).collect();
        want.sort();
        assert_eq!(left, want, "{point}");
    }
}
