//! Snapshots indexed from their parent's snapshot (a tree diff, manifests stored as changes)
//! are the snapshots a whole walk of the commit makes, and cost rows by the change.

use std::collections::BTreeMap;
use std::path::Path;

use ctxpack_api::Access;
use ctxpack_store::Store;

use crate::api::fixture::{Lcg, Script, Workspaces, index_at};

/// What a snapshot is, independent of the ids one store gave its file versions: every listed
/// path with its blob, the counts, and the skips by reason.
#[derive(Debug, PartialEq)]
pub struct Seen {
    listed: Vec<(String, String)>,
    files: u64,
    chunks: u64,
    skipped: BTreeMap<String, u64>,
}

/// What snapshot `sha` of the store at `store` is.
pub fn seen(store: &Path, sha: &str) -> Seen {
    let store = Store::open(store).expect("the store opens");
    let row = store.snapshot(sha).expect("reads").expect("indexed");
    let listed = store
        .manifest(sha)
        .expect("manifest")
        .into_iter()
        .map(|(path, _)| {
            let blob = store.blob_at(sha, &path).expect("reads").expect("listed");
            (path, blob)
        })
        .collect();
    Seen {
        listed,
        files: row.files,
        chunks: row.chunks,
        skipped: row.skipped,
    }
}

#[test]
fn every_child_snapshot_equals_a_whole_walk_of_its_commit() {
    let mut script = Script::new();
    for i in 0..30 {
        script.write(
            &format!("src/d{}/f{i}.rs", i % 4),
            format!("pub fn f{i}() -> u32 {{ {i} }}\n"),
        );
    }
    script.write(".ctxpackignore", "*.gen\n").commit("start");
    let mut rng = Lcg(7);
    for step in 0..40 {
        // One to three edits of every kind the indexer decides differently.
        for _ in 0..1 + rng.next(3) {
            let i = rng.next(40);
            let path = format!("src/d{}/f{i}.rs", i % 4);
            // Whatever is at the path (a file, a link or a directory) goes first.
            match rng.next(10) {
                0..=2 => {
                    script
                        .remove(&path)
                        .write(&path, format!("pub fn f{i}() -> u32 {{ {step} }}\n"));
                }
                3 => {
                    script.remove(&path);
                }
                // Ignored by the root rules, then listed again when renamed back.
                4 => {
                    script.write(&format!("src/out{i}.gen"), format!("generated {step}\n"));
                }
                5 => {
                    script.remove(&path).link(&path, "../elsewhere.rs");
                }
                6 => {
                    script.remove(&path).write(&path, "\u{0}binary now\n");
                }
                // A file becomes a directory, or a directory's file comes back as a file.
                7 => {
                    script
                        .remove(&path)
                        .write(&format!("{path}/inner.rs"), "pub fn inner() {}\n");
                }
                // The rules change: this commit is walked whole.
                8 => {
                    script.write(".ctxpackignore", format!("*.gen\nsrc/d{}/\n", i % 4));
                }
                _ => {
                    script.write(".ctxpackignore", "*.gen\n");
                }
            }
        }
        // A submodule entry now and then.
        if step % 13 == 5 {
            script.submodule(
                &format!("sub{step}"),
                "1234567890abcdef1234567890abcdef12345678",
            );
        }
        script.commit(&format!("step {step}"));
    }
    let repo = script.build();
    let f = repo.checkout();
    let commits = repo.commits();

    let incremental = f.workspace();
    for sha in commits {
        index_at(&incremental, sha);
    }
    // Indexing only every third commit diffs against the last one indexed.
    let sparse = tempfile::tempdir().expect("tempdir");
    let every_third = f.workspace_with(Access::ReadWrite, Some(sparse.path()));
    for sha in commits.iter().step_by(3) {
        index_at(&every_third, sha);
        assert_eq!(
            seen(sparse.path(), sha),
            seen(&f.store(), sha),
            "{sha} from three back"
        );
    }
    for (n, sha) in commits.iter().enumerate() {
        let scratch = tempfile::tempdir().expect("tempdir");
        let alone = f.workspace_with(Access::ReadWrite, Some(scratch.path()));
        let summary = index_at(&alone, sha);
        assert_eq!(summary.processed + summary.reused, {
            let s = seen(scratch.path(), sha);
            s.listed.len() as u64
        });
        assert_eq!(
            seen(&f.store(), sha),
            seen(scratch.path(), sha),
            "commit {n} ({sha}) indexed after its parent differs from a whole walk"
        );
    }
}

#[test]
fn a_one_file_commit_stores_rows_by_the_change_and_reads_back_whole() {
    let mut script = Script::new();
    for i in 0..200 {
        script.write(&format!("src/f{i:03}.rs"), format!("pub fn f{i}() {{}}\n"));
    }
    script.commit("start");
    for step in 0..32 {
        let i = step * 7 % 200;
        script
            .write(
                &format!("src/f{i:03}.rs"),
                format!("pub fn f{i}() {{ {step} }}\n"),
            )
            .commit(&format!("step {step}"));
    }
    let repo = script.build();
    let f = repo.checkout();
    let commits = repo.commits();
    let workspace = f.workspace();
    for sha in commits {
        let summary = index_at(&workspace, sha);
        assert_eq!(summary.files, 200);
    }
    let store = Store::open(&f.store()).expect("opens");
    assert_eq!(store.manifest_rows(&commits[0]).expect("rows"), 200);
    // Skip deltas: the child numbered s stores the changes since the snapshot numbered s
    // with its lowest set bit cleared, here one row per commit in that span: s's lowest set
    // bit. Over s = 1..=32 that is 16 * 1 + 8 * 2 + 4 * 4 + 2 * 8 + 1 * 16 + 1 * 32 = 112
    // rows, where whole manifests would take 6,400.
    for (s, sha) in commits.iter().enumerate().skip(1) {
        let lowest = 1 << s.trailing_zeros();
        assert_eq!(
            store.manifest_rows(sha).expect("rows"),
            lowest,
            "snapshot {s}"
        );
    }
    // Every path's current blob at every commit, as git names it, asked in one call.
    let mut wanted = Vec::new();
    for n in 0..commits.len() {
        for step in 0..n {
            let i = step * 7 % 200;
            let last = (0..n).rev().find(|&s| s * 7 % 200 == i).expect("this step");
            wanted.push((n, format!("src/f{i:03}.rs"), last + 1));
        }
    }
    let revs: Vec<String> = wanted
        .iter()
        .map(|(_, path, at)| format!("{}:{path}", commits[*at]))
        .collect();
    let mut args = vec!["rev-parse"];
    args.extend(revs.iter().map(String::as_str));
    let blobs = f.git(&args);
    let mut blobs = blobs.lines();
    for (n, sha) in commits.iter().enumerate() {
        let manifest = store.manifest(sha).expect("manifest");
        assert_eq!(manifest.len(), 200);
        let mut ids = store.manifest_ids(sha).expect("ids");
        ids.sort_unstable();
        let mut expected: Vec<i64> = manifest.iter().map(|(_, id)| *id).collect();
        expected.sort_unstable();
        assert_eq!(ids, expected, "the ids of snapshot {n}");
    }
    // Every path's current text is the one the commit holds.
    for (n, path, _) in &wanted {
        let blob = store
            .blob_at(&commits[*n], path)
            .expect("reads")
            .expect("listed");
        let expected = blobs.next().expect("git named every blob");
        assert_eq!(blob, expected, "{path} at commit {n}");
    }
}
