//! `worktree`: packing the working tree as it is now over HEAD's snapshot, without writing a
//! snapshot; and `include`/`exclude` globs that restrict candidates (git's wildmatch).

use ctxpack_api::{ErrorKind, Pack, PackOptions, SnapshotPackRequest, Warning, Workspace};

use crate::api::fixture::{Fixture, Workspaces, ledger_chunk, project};

fn request(goal: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        goal: goal.into(),
        ..SnapshotPackRequest::default()
    }
}

fn pack(workspace: &Workspace, request: &SnapshotPackRequest) -> Pack {
    workspace
        .snapshot_pack(request, &PackOptions::default())
        .unwrap_or_else(|e| panic!("packing {:?}: {e}", request.goal))
        .pack
}

fn citations(pack: &Pack) -> Vec<String> {
    pack.hits
        .iter()
        .map(|h| h.candidate.citation.as_str().to_owned())
        .collect()
}

/// Every citation of `pack` naming `path`.
fn cited<'a>(citations: &'a [String], path: &str) -> Vec<&'a str> {
    citations
        .iter()
        .filter(|c| c.starts_with(&format!("{path}#")))
        .map(String::as_str)
        .collect()
}

fn worktree(goal: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        worktree: true,
        ..request(goal)
    }
}

/// An edited file's chunk is cut and cited exactly like the same chunk once committed: the
/// lines around the goal's match, never the whole chunk while committed hits are cut.
#[test]
fn an_edited_files_hit_is_cut_like_a_committed_one() {
    let f = Fixture::new();
    f.write("src/ledger.rs", "pub fn reconcile_ledger() {}\n");
    f.commit("start");
    let body = ledger_chunk();
    f.write("src/ledger.rs", &body);
    let workspace = f.workspace();
    // 700 units: at most 10 lines of the 44, and too few for the whole chunk.
    let small = |worktree: bool| SnapshotPackRequest {
        budget: ctxpack_api::Budget::new(700).expect("budget"),
        worktree,
        ..request("check the ledger for overflow")
    };
    let lines: Vec<&str> = body.lines().collect();
    let edited = pack(&workspace, &small(true));
    let hit = &edited.hits[0].candidate;
    assert_eq!(hit.citation.as_str(), "src/ledger.rs#L25-L34@worktree");
    assert_eq!(hit.text, format!("{}\n", lines[24..34].join("\n")));
    let sha = f.commit("x");
    let committed = pack(&workspace, &small(false));
    let hit = &committed.hits[0].candidate;
    assert_eq!(
        hit.citation.as_str(),
        format!("src/ledger.rs#L25-L34@{}", &sha[..7])
    );
    assert_eq!(hit.text, format!("{}\n", lines[24..34].join("\n")));
}

#[test]
fn the_working_tree_is_packed_over_head_and_cited_at_worktree() {
    let (f, _) = project();
    f.write(".gitignore", "*.log\nnode_modules/\n");
    f.write("src/other.rs", "pub fn unrelated_helper() {}\n");
    f.commit("ignore logs");
    let workspace = f.workspace();
    let committed = pack(&workspace, &request("enforce budget overdraft"));
    let snapshots = workspace.status().expect("status").snapshots.len();

    // A modified file, a new one, a deleted one, and files that must never be read.
    f.write(
        "src/budget.rs",
        "/// Refuses an overdraft of the budget.\npub fn enforce_budget_overdraft() -> bool { true }\n",
    );
    f.write("src/new_budget.rs", "pub fn budget_overdraft_policy() {}\n");
    std::fs::remove_file(f.path().join("src/other.rs")).expect("rm");
    f.write("trace.log", "budget overdraft in a log\n");
    f.write(
        "node_modules/dep/index.js",
        "function budgetOverdraft() {}\n",
    );
    f.write(".ctxpackignore", "secret_notes.md\n");
    f.write("secret_notes.md", "budget overdraft notes\n");
    f.write(
        "src/overdraft_keys.rs",
        "const KEY: &str = \"AKIAIOSFODNN7EXAMPLE\"; // budget overdraft\n",
    );
    // Named like a credential store and ignored by no rule: still never read.
    f.write(
        ".env",
        "BUDGET_OVERDRAFT_TOKEN=budget-overdraft-plain-value\n",
    );

    let packed = pack(&workspace, &worktree("enforce budget overdraft"));
    let all = citations(&packed);
    let modified = cited(&all, "src/budget.rs");
    assert!(!modified.is_empty(), "{all:?}");
    assert!(modified.iter().all(|c| c.ends_with("@worktree")), "{all:?}");
    assert!(
        cited(&all, "src/new_budget.rs")
            .iter()
            .all(|c| c.ends_with("@worktree"))
            && !cited(&all, "src/new_budget.rs").is_empty(),
        "{all:?}"
    );
    let text: String = packed.hits.iter().map(|h| &*h.candidate.text).collect();
    assert!(text.contains("enforce_budget_overdraft"), "{text}");
    assert!(
        !text.contains("cost <= remaining"),
        "the old text is replaced: {text}"
    );
    for never in [
        "src/other.rs",
        "trace.log",
        "node_modules/",
        "secret_notes.md",
    ] {
        assert!(
            all.iter().all(|c| !c.starts_with(never)),
            "{never} is deleted or ignored: {all:?}"
        );
    }
    // Working-tree text is masked as indexed text is.
    assert!(!cited(&all, "src/overdraft_keys.rs").is_empty(), "{all:?}");
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"), "{text}");
    assert!(all.iter().all(|c| !c.starts_with(".env")), "{all:?}");
    assert!(!text.contains("budget-overdraft-plain-value"), "{text}");
    let notice = packed
        .warnings
        .iter()
        .map(Warning::to_string)
        .find(|w| w.starts_with("packed the working tree"))
        .expect("a notice");
    assert!(notice.contains("1 modified"), "{notice}");
    assert!(notice.contains("1 deleted"), "{notice}");
    assert!(notice.contains("1 secret_file"), "{notice}");
    // No snapshot was written, and packing the commit still reads the commit.
    assert_eq!(
        workspace.status().expect("status").snapshots.len(),
        snapshots
    );
    assert_eq!(
        citations(&pack(&workspace, &request("enforce budget overdraft"))),
        citations(&committed)
    );
    // Deterministic: the same tree packs the same.
    assert_eq!(
        citations(&pack(&workspace, &worktree("enforce budget overdraft"))),
        all
    );
}

#[test]
fn a_symlink_in_the_working_tree_is_never_followed() {
    let (f, _) = project();
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        outside.path().join("target.rs"),
        "pub fn outside_budget_secret() {}\n",
    )
    .expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path().join("target.rs"), f.path().join("link.rs"))
        .expect("symlink");
    let workspace = f.workspace();
    let packed = pack(&workspace, &worktree("outside budget secret"));
    let text: String = packed.hits.iter().map(|h| &*h.candidate.text).collect();
    assert!(!text.contains("outside_budget_secret"), "{text}");
}

#[test]
fn the_working_tree_is_packed_over_head_only() {
    let (f, sha) = project();
    let error = f
        .workspace()
        .snapshot_pack(
            &SnapshotPackRequest {
                at: sha,
                ..worktree("budget")
            },
            &PackOptions::default(),
        )
        .expect_err("worktree at another commit");
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert_eq!(error.field(), Some("at"));
}

fn globbed(include: &[&str], exclude: &[&str]) -> SnapshotPackRequest {
    SnapshotPackRequest {
        include: include.iter().map(|s| (*s).to_owned()).collect(),
        exclude: exclude.iter().map(|s| (*s).to_owned()).collect(),
        ..request("budget")
    }
}

fn globs_fixture() -> Fixture {
    let (f, _) = project();
    f.write("src/budget.test.ts", "test('budget', () => {});\n");
    f.write("web/budget.ts", "export function budget() {}\n");
    f.write("docs/budget.md", "# Budget\n\nHow the budget works.\n");
    f.commit("more budget files");
    f
}

#[test]
fn include_and_exclude_globs_restrict_the_candidates() {
    let f = globs_fixture();
    let workspace = f.workspace();
    let paths = |request: &SnapshotPackRequest| -> Vec<String> {
        let mut paths: Vec<String> = citations(&pack(&workspace, request))
            .iter()
            .filter_map(|c| c.split('#').next().map(str::to_owned))
            .collect();
        paths.sort();
        paths.dedup();
        paths
    };
    let everything = paths(&request("budget"));
    assert!(everything.len() >= 4, "{everything:?}");
    assert_eq!(
        paths(&globbed(&["src/**"], &[])),
        ["src/budget.rs", "src/budget.test.ts"]
    );
    assert_eq!(
        paths(&globbed(&["src/**"], &["**/*.test.ts"])),
        ["src/budget.rs"]
    );
    assert_eq!(paths(&globbed(&["*.md"], &[])), ["docs/budget.md"]);
    let without_docs = paths(&globbed(&[], &["docs/"]));
    assert!(!without_docs.iter().any(|p| p.starts_with("docs/")));
    assert_eq!(without_docs.len(), everything.len() - 1);
}

#[test]
fn a_bad_glob_is_invalid_input_on_its_field() {
    let f = globs_fixture();
    let workspace = f.workspace();
    for (request, field) in [
        (globbed(&[""], &[]), "include"),
        (globbed(&[], &["!src/**"]), "exclude"),
        (globbed(&["x".repeat(5000).as_str()], &[]), "include"),
    ] {
        let error = workspace
            .snapshot_pack(&request, &PackOptions::default())
            .expect_err("a bad glob");
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
        assert_eq!(error.field(), Some(field), "{error}");
        assert!(error.hint().is_some(), "{error}");
    }
}

/// Globs that keep no file of the snapshot are what the caller must fix, not the goal: the
/// pack says so on the glob's field instead of "nothing matched the goal". A filter that keeps
/// files none of which matches the goal still gives an empty pack that says why.
#[test]
fn globs_that_keep_no_file_say_so() {
    let f = globs_fixture();
    let workspace = f.workspace();
    for (request, field, says) in [
        (
            globbed(&["lib/**"], &[]),
            "include",
            "no file matches 'lib/**'",
        ),
        (
            globbed(&["src/**", "web/**"], &["**/*.ts", "src/*.rs"]),
            "include",
            "no file matches 'src/**' or 'web/**' once '**/*.ts' or 'src/*.rs' are left out",
        ),
        (
            globbed(&[], &["**"]),
            "exclude",
            "'**' leaves out every file",
        ),
    ] {
        let error = workspace
            .snapshot_pack(&request, &PackOptions::default())
            .expect_err("no file is kept");
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
        assert_eq!(error.field(), Some(field), "{error}");
        assert!(error.message().starts_with(says), "{error}");
        assert!(error.hint().is_some(), "{error}");
    }
    let kept = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: "zyzzyva quokka".into(),
                ..globbed(&["src/**"], &[])
            },
            &PackOptions::default(),
        )
        .expect("files are kept: an empty pack");
    assert!(kept.pack.hits.is_empty());
}

/// The status of the working tree at `clone` against its HEAD.
fn status_at(clone: &std::path::Path) -> ctxpack_index::worktree::WorktreeChanges {
    let repo = ctxpack_index::git::Repo::discover(clone).expect("a repository");
    let head = repo.resolve("HEAD").expect("HEAD");
    repo.worktree_changes(&head, 1 << 20).expect("a status")
}

/// A fresh clone's files and index are written in the same second, which makes every entry
/// racily clean to git; the status a pack takes trusts the stat the index recorded and reads no
/// file, however large the tree, and still sees an edit and a new file.
#[test]
fn a_fresh_clone_is_seen_clean_from_its_stat_alone() {
    let mut script = ctxpack_testkit::Script::new();
    for i in 0..300 {
        script.write(
            &format!("src/f{i}.rs"),
            format!("pub fn f{i}() -> u32 {{ {i} }}\n"),
        );
    }
    script.commit("three hundred files");
    let fixture = script.build().fresh_clone();
    let clone = fixture.path().to_path_buf();
    let changes = status_at(&clone);
    assert_eq!(changes.contents_read, 0, "{changes:?}");
    assert!(
        changes.files.is_empty() && changes.deleted.is_empty(),
        "{changes:?}"
    );
    // An edit (another size) and a new file are seen, from the stat and the directory walk.
    std::fs::write(clone.join("src/f7.rs"), "pub fn f7() -> u32 { 70 }\n").expect("edit");
    std::fs::write(clone.join("src/new.rs"), "pub fn new() {}\n").expect("add");
    let changes = status_at(&clone);
    assert_eq!((changes.modified, changes.added), (1, 1), "{changes:?}");
    assert!(changes.files.contains_key("src/f7.rs"), "{changes:?}");
    // A pack of the clone says it is clean.
    let workspace = Workspace::open(ctxpack_api::WorkspaceOptions {
        cwd: clone.clone(),
        ..ctxpack_api::WorkspaceOptions::default()
    })
    .expect("a workspace");
    std::fs::remove_file(clone.join("src/new.rs")).expect("remove");
    std::fs::write(clone.join("src/f7.rs"), "pub fn f7() -> u32 { 7 }\n").expect("restore");
    let built = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: "f7".into(),
                index: true,
                ..SnapshotPackRequest::default()
            },
            &PackOptions::default(),
        )
        .expect("packs");
    let snapshot = built.pack.snapshot.expect("a snapshot");
    assert!(!snapshot.worktree_dirty, "{snapshot:?}");
}

/// What a commit changed and `git reset --soft` undid is only staged: the index and the files
/// agree, and HEAD's tree alone differs. The index's cached tree is valid then, but it is the
/// undone commit's, not HEAD's: the status compares the index with HEAD's tree and sees both
/// the modified file and the added one.
#[test]
fn a_change_only_staged_is_seen_against_heads_tree() {
    let mut script = ctxpack_testkit::Script::new();
    script.write("src/a.rs", "pub fn a() {}\n");
    script.write("src/b.rs", "pub fn b() {}\n");
    script.commit("first");
    script.write("src/a.rs", "pub fn a() -> u32 { 1 }\n");
    script.write("src/c.rs", "pub fn c() {}\n");
    script.commit("second");
    let fixture = script.build().fresh_clone();
    let clone = fixture.path().to_path_buf();
    let clean = status_at(&clone);
    assert_eq!(
        (clean.modified, clean.added, clean.contents_read),
        (0, 0, 0)
    );
    let reset = std::process::Command::new("git")
        .args(["reset", "-q", "--soft", "HEAD~1"])
        .current_dir(&clone)
        .status()
        .expect("git runs");
    assert!(reset.success());
    let staged = status_at(&clone);
    assert_eq!((staged.modified, staged.added), (1, 1), "{staged:?}");
    assert!(
        staged.files.contains_key("src/a.rs") && staged.files.contains_key("src/c.rs"),
        "{staged:?}"
    );
    assert!(staged.deleted.is_empty(), "{staged:?}");
}

/// A status that finds many changed paths lists HEAD's tree once instead of looking each up:
/// both ways classify alike (a modified file, a deleted one, and 300 new files).
#[test]
fn many_changed_paths_are_classified_as_a_few_are() {
    let mut script = ctxpack_testkit::Script::new();
    script.write("src/kept.rs", "pub fn kept() {}\n");
    script.write("src/edited.rs", "pub fn edited() {}\n");
    script.write("src/gone.rs", "pub fn gone() {}\n");
    script.commit("three files");
    let fixture = script.build().fresh_clone();
    let clone = fixture.path().to_path_buf();
    std::fs::write(clone.join("src/edited.rs"), "pub fn edited() -> u8 { 1 }\n").expect("edit");
    std::fs::remove_file(clone.join("src/gone.rs")).expect("delete");
    let status = |new: usize| {
        for i in 0..new {
            std::fs::write(clone.join(format!("src/new_{i}.rs")), "pub fn n() {}\n").expect("add");
        }
        status_at(&clone)
    };
    // A few changed paths (looked up one by one), then more than 256 (the tree listed).
    for new in [2, 300] {
        let changes = status(new);
        assert_eq!(
            (changes.modified, changes.added, changes.deleted.len()),
            (1, new, 1),
            "{new} new files"
        );
        assert!(changes.files.contains_key("src/edited.rs"));
        assert!(changes.deleted.contains("src/gone.rs"));
    }
}
