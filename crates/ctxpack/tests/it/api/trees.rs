//! Trees git itself would agree with, in process on real repositories built with `git`:
//! ignore rules decided per commit and as `git check-ignore` decides them, partial clones
//! that lack blobs, and file names that are not UTF-8.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::process::Stdio;

use ctxpack_api::{PackOptions, QueryRequest, SnapshotPackRequest, Workspace, WorkspaceOptions};

use crate::api::fixture::{BUDGET_RS, Fixture, Workspaces, git_in, index_at};

/// The files whose chunks a query for `goal` at `at` returns, with their citations.
fn found(workspace: &Workspace, at: &str, goal: &str) -> BTreeMap<String, Vec<String>> {
    let hits = workspace
        .query(&QueryRequest {
            goal: goal.to_owned(),
            at: at.to_owned(),
            top_k: 50,
            ..QueryRequest::default()
        })
        .unwrap_or_else(|e| panic!("querying {goal:?} at {at}: {e}"))
        .hits;
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for hit in hits {
        let path = hit.path.expect("snapshot hits name their file");
        files.entry(path).or_default().push(hit.citation);
    }
    files
}

/// Skip counts as a map, for comparisons.
fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// A word found in one file only: letters without vowels or `s` (no stemming touches it).
fn token(i: usize) -> String {
    const LETTERS: &[u8] = b"bcdfghjklmnpqrtvwxz";
    let n = LETTERS.len();
    let mut word = String::from("zq");
    for k in [i / (n * n), i / n % n, i % n] {
        word.push(char::from(LETTERS[k]));
    }
    word
}

/// The root `.ctxpackignore`: one rule of each kind git treats specially.
const ROOT_RULES: &[&str] = &[
    // A directory rule and a negation that cannot re-include a file below it.
    "build/",
    "!build/keep.rs",
    // Anchored, and at any depth.
    "/x",
    "**/y",
    // Globs, one re-included.
    "*.min.js",
    "!vendor/app.min.js",
    // Directory-only: a file of that name is kept.
    "tmp/",
    // Everything below `logs/`; re-including the directory does not re-include its files.
    "logs/**",
    "!logs/important/",
    // An anchored glob does not cross `/`.
    "docs/*.md",
    "!docs/README.md",
    "[abc].txt",
    "\\#hash.txt",
    // Trailing spaces are trimmed.
    "spaced.rs   ",
    "a/**/z.rs",
    // The root file wins over the built-in defaults.
    "!Cargo.lock",
];

/// A nested `.ctxpackignore`, relative to its directory.
const PKG_RULES: &[&str] = &["*.gen.rs", "!keep.gen.rs", "/local.rs"];

/// A nested file inside an excluded directory: git never reads it, and it changes nothing.
const BUILD_RULES: &[&str] = &["!keep.rs", "!*"];

/// The files of the fixture besides the ignore files.
const FILES: &[&str] = &[
    "src/main.rs",
    "build/out.rs",
    "build/keep.rs",
    "src/build/gen.rs",
    "building.rs",
    "x/inner.rs",
    "src/x",
    "x2.rs",
    "y",
    "deep/er/y",
    "y.rs",
    "deep/y/inside.rs",
    "web/app.min.js",
    "vendor/app.min.js",
    "app.js",
    "tmp/a.rs",
    "src/tmp",
    "logs/important/a.log",
    "logs/other.log",
    "docs/guide.md",
    "docs/README.md",
    "docs/sub/deep.md",
    "a.txt",
    "d.txt",
    "#hash.txt",
    "spaced.rs",
    "a/z.rs",
    "a/b/c/z.rs",
    "Cargo.lock",
    "yarn.lock",
    "src/app.js.map",
    "pkg/a.gen.rs",
    "pkg/keep.gen.rs",
    "pkg/local.rs",
    "pkg/sub/local.rs",
    "other/a.gen.rs",
];

/// Asks `git check-ignore` which of `paths` it ignores in `dir`.
fn git_check_ignore(dir: &Path, paths: &[String]) -> BTreeSet<String> {
    // Not `git_in`: exit code 1 (nothing ignored) is an answer here.
    let mut child = ctxpack_testkit::git::command(dir)
        .args([
            "-c",
            "core.excludesFile=/dev/null",
            "check-ignore",
            "--no-index",
            "--stdin",
            "-z",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git runs");
    let mut input = child.stdin.take().expect("piped");
    for path in paths {
        input.write_all(path.as_bytes()).expect("write");
        input.write_all(b"\0").expect("write");
    }
    drop(input);
    let out = child.wait_with_output().expect("git finishes");
    // 0: some paths are ignored; 1: none is; anything else is a failure.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "git check-ignore: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8(p.to_vec()).expect("UTF-8 paths"))
        .collect()
}

#[test]
fn ignore_rules_leave_out_exactly_the_files_git_check_ignore_ignores() {
    let f = Fixture::new();
    // Every file, the ignore files included, holds a word no other file has.
    let mut files: Vec<(String, String)> = Vec::new();
    let mut add = |path: &str, lines: &[&str]| {
        let word = token(files.len());
        let mut text = format!("# {word}\n");
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        files.push((path.to_owned(), text));
    };
    add(".ctxpackignore", ROOT_RULES);
    add("pkg/.ctxpackignore", PKG_RULES);
    add("build/.ctxpackignore", BUILD_RULES);
    for path in FILES {
        add(path, &[]);
    }
    for (path, text) in &files {
        f.write(path, text);
    }
    let sha = f.commit("rules of every kind");

    // What git decides: the same tree in a scratch repository that nothing is committed to,
    // each `.ctxpackignore` copied to a `.gitignore` beside it, and the defaults where git
    // keeps repository-wide rules below every `.gitignore`.
    let scratch = tempfile::tempdir().expect("tempdir");
    let scratch = scratch.path();
    git_in(scratch, &["init", "-q"]);
    for (path, text) in &files {
        let full = scratch.join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(&full, text).expect("write");
        if let Some(dir) = path.strip_suffix(".ctxpackignore") {
            std::fs::write(scratch.join(dir).join(".gitignore"), text).expect("write");
        }
    }
    std::fs::write(
        scratch.join(".git/info/exclude"),
        ctxpack_index::ignore::DEFAULT_PATTERNS,
    )
    .expect("write");
    let paths: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let git_ignores = git_check_ignore(scratch, &paths);
    // The fixture holds the cases a hand-written translation gets wrong.
    for tricky in ["build/keep.rs", "logs/important/a.log", "yarn.lock"] {
        assert!(git_ignores.contains(tricky), "{tricky}: {git_ignores:?}");
    }
    for kept in [
        "Cargo.lock",
        "vendor/app.min.js",
        "src/tmp",
        "pkg/keep.gen.rs",
    ] {
        assert!(!git_ignores.contains(kept), "{kept}: {git_ignores:?}");
    }

    let workspace = f.workspace();
    let summary = index_at(&workspace, &sha);
    assert_eq!(
        summary.skipped,
        counts(&[("ignored", git_ignores.len() as u64)])
    );
    let mut disagreements = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let retrievable = found(&workspace, &sha, &token(i)).contains_key(path);
        let git_ignored = git_ignores.contains(path);
        if retrievable == git_ignored {
            disagreements.push(format!(
                "{path}: git ignores it: {git_ignored}, ctxpack retrieves it: {retrievable}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// A small project with a generated file, and a commit that ignores or stops ignoring it.
fn generated(ignored_first: bool) -> (Fixture, String, String) {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    f.write("generated/schema.rs", "pub struct QuokkaSchema;\n");
    if ignored_first {
        f.write(".ctxpackignore", "generated/\n");
    }
    let first = f.commit("first");
    let rules = f.path().join(".ctxpackignore");
    if ignored_first {
        std::fs::remove_file(rules).expect("remove the rules");
    } else {
        f.write(".ctxpackignore", "generated/\n");
    }
    let second = f.commit("second");
    (f, first, second)
}

#[test]
fn a_rule_added_later_leaves_an_already_indexed_file_out_of_the_next_snapshot() {
    let (f, first, second) = generated(false);
    let workspace = f.workspace();
    let summary = index_at(&workspace, &first);
    assert!(summary.skipped.is_empty(), "{summary:?}");
    assert!(found(&workspace, &first, "quokka").contains_key("generated/schema.rs"));

    let summary = index_at(&workspace, &second);
    assert_eq!(summary.skipped, counts(&[("ignored", 1)]));
    // Still incremental: only the new rules file is read.
    assert_eq!(
        (summary.files, summary.processed, summary.reused),
        (3, 1, 1)
    );
    assert!(found(&workspace, &second, "quokka").is_empty());
    // The earlier snapshot is unchanged.
    assert!(found(&workspace, &first, "quokka").contains_key("generated/schema.rs"));
    let status = workspace.status().expect("status");
    let skipped: BTreeMap<&str, &BTreeMap<String, u64>> = status
        .snapshots
        .iter()
        .map(|s| (s.sha.as_str(), &s.skipped))
        .collect();
    assert_eq!(skipped[second.as_str()], &counts(&[("ignored", 1)]));
    assert!(skipped[first.as_str()].is_empty());
}

#[test]
fn a_rule_removed_later_brings_an_ignored_file_into_the_next_snapshot() {
    let (f, first, second) = generated(true);
    let workspace = f.workspace();
    let summary = index_at(&workspace, &first);
    assert_eq!(summary.skipped, counts(&[("ignored", 1)]));
    assert!(found(&workspace, &first, "quokka").is_empty());

    let summary = index_at(&workspace, &second);
    assert!(summary.skipped.is_empty(), "{summary:?}");
    assert_eq!(
        (summary.files, summary.processed, summary.reused),
        (2, 1, 1)
    );
    assert!(found(&workspace, &second, "quokka").contains_key("generated/schema.rs"));
    assert!(found(&workspace, &first, "quokka").is_empty());
}

#[test]
fn a_link_and_a_file_with_the_same_blob_are_each_decided_by_their_commit() {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    // A link's blob is its target, so a file holding the same bytes has the same blob.
    std::os::unix::fs::symlink("wombat-notes.txt", f.path().join("notes")).expect("symlink");
    let link = f.commit("a link");
    std::fs::remove_file(f.path().join("notes")).expect("remove the link");
    f.write("notes", "wombat-notes.txt");
    let file = f.commit("a file");
    assert_eq!(
        f.git(&["rev-parse", &format!("{link}:notes")]),
        f.git(&["rev-parse", &format!("{file}:notes")])
    );

    let workspace = f.workspace();
    assert_eq!(
        index_at(&workspace, &link).skipped,
        counts(&[("symlink", 1)])
    );
    assert!(index_at(&workspace, &file).skipped.is_empty());
    assert!(found(&workspace, &file, "wombat").contains_key("notes"));
    assert!(found(&workspace, &link, "wombat").is_empty());
}

#[test]
fn a_partial_clone_skips_missing_blobs_as_object_not_present_and_packs_the_rest() {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    f.write("README.md", "# Demo\n\nA budget demo.\n");
    f.write("big/wombat.txt", "wombat burrow\n".repeat(400));
    f.write("big/numbat.txt", "numbat termite\n".repeat(400));
    let head = f.commit("first");
    f.git(&["config", "uploadpack.allowFilter", "true"]);
    let clone = tempfile::tempdir().expect("tempdir");
    let url = format!("file://{}", f.path().display());
    git_in(
        clone.path(),
        &[
            "clone",
            "-q",
            "--filter=blob:limit=2k",
            "--no-checkout",
            &url,
            "partial",
        ],
    );
    let dest = clone.path().join("partial");
    // The clone lacks exactly the two large blobs (listing them fetches nothing).
    let missing: BTreeSet<String> =
        git_in(&dest, &["rev-list", "--objects", "--missing=print", "HEAD"])
            .lines()
            .filter_map(|line| line.strip_prefix('?').map(str::to_owned))
            .collect();
    let large: BTreeSet<String> = ["big/wombat.txt", "big/numbat.txt"]
        .iter()
        .map(|p| f.git(&["rev-parse", &format!("HEAD:{p}")]))
        .collect();
    assert_eq!(missing, large);

    let workspace = Workspace::open(WorkspaceOptions {
        cwd: dest.clone(),
        ..WorkspaceOptions::default()
    })
    .expect("the workspace opens");
    let summary = index_at(&workspace, "HEAD");
    assert_eq!(summary.sha, head);
    assert_eq!(summary.files, 4);
    assert_eq!(summary.skipped, counts(&[("object_not_present", 2)]));
    let status = workspace.status().expect("status");
    assert_eq!(
        status.snapshots[0].skipped,
        counts(&[("object_not_present", 2)])
    );
    let pack = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: "how is the budget enforced".into(),
                ..SnapshotPackRequest::default()
            },
            &PackOptions::default(),
        )
        .expect("the rest packs")
        .pack;
    assert!(
        pack.hits
            .iter()
            .any(|h| h.candidate.citation.as_str().starts_with("src/budget.rs#L")),
        "{pack:?}"
    );
    assert!(found(&workspace, "HEAD", "wombat").is_empty());

    // Once git fetches one blob on demand, a commit with the same tree indexes it: not being
    // present was this snapshot's fact, not the file version's.
    git_in(&dest, &["cat-file", "-p", "HEAD:big/wombat.txt"]);
    let child = git_in(
        &dest,
        &["commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "child"],
    );
    let summary = index_at(&workspace, &child);
    assert_eq!(summary.skipped, counts(&[("object_not_present", 1)]));
    assert_eq!((summary.processed, summary.reused), (1, 2));
    assert!(found(&workspace, &child, "wombat").contains_key("big/wombat.txt"));
}

#[test]
fn file_names_that_decode_to_the_same_text_are_indexed_apart() {
    let f = Fixture::new();
    // Two Latin-1 names that a lossy decoding turns into the same `caf\u{FFFD}.rs`, and a UTF-8
    // name spelled like the first one's escaped form.
    let names: [(&[u8], &str, &str); 3] = [
        (b"caf\xe9.rs", "fn wombat() {}\n", "caf\u{FFFD}E9.rs"),
        (b"caf\xe8.rs", "fn numbat() {}\n", "caf\u{FFFD}E8.rs"),
        (
            "caf\u{FFFD}E9.rs".as_bytes(),
            "fn quokka() {}\n",
            "caf\u{FFFD}EF\u{FFFD}BF\u{FFFD}BDE9.rs",
        ),
    ];
    for (raw, text, _) in &names {
        std::fs::write(f.path().join(OsStr::from_bytes(raw)), text).expect("write");
    }
    let sha = f.commit("names that are not UTF-8");
    // git lists three names (quoted, as they are not UTF-8).
    assert_eq!(
        f.git(&["ls-tree", "--name-only", "HEAD"]).lines().count(),
        3
    );

    let workspace = f.workspace();
    let summary = index_at(&workspace, &sha);
    assert_eq!((summary.files, summary.processed), (3, 3));
    assert!(summary.skipped.is_empty(), "{summary:?}");
    let mut citations = BTreeSet::new();
    for (_, text, path) in &names {
        let word = &text[3..9];
        let files = found(&workspace, &sha, word);
        let cites = files
            .get(*path)
            .unwrap_or_else(|| panic!("{word} is found in {path}: {files:?}"));
        for cite in cites {
            assert!(cite.starts_with(&format!("{path}#L")), "{cite}");
            citations.insert(cite.clone());
        }
    }
    assert_eq!(citations.len(), names.len(), "{citations:?}");
}
