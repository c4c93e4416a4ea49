//! History as evidence: past commit messages pull up the files they touched, a commit after
//! the snapshot never counts, and a one-file commit brings its message in as soon as it is
//! indexed.

use ctxpack_api::{QueryHit, Workspace};

use crate::api::fixture::{Fixture, Workspaces, index_at, parts, rank_of, top_hits};

/// Six files that mention overflow as often as the widget does, and a widget whose last change
/// was described as work on the "sprocket aligner" (words no file contains).
fn project() -> (Fixture, String) {
    project_described("Teach the sprocket aligner to clamp its width")
}

/// [`project`] with the widget's last change described by `message`.
fn project_described(message: &str) -> (Fixture, String) {
    let f = Fixture::new();
    for i in 0..6 {
        f.write(
            &format!("src/counter{i}.rs"),
            format!(
                "/// Overflow check {i}: no overflow.\npub fn check_{i}(a: u32, b: u32) -> Option<u32> {{\n    a.checked_add(b)\n}}\n"
            ),
        );
    }
    f.write(
        "src/widget.rs",
        "/// Width.\npub fn align(w: u32) -> u32 {\n    // may overflow\n    w.wrapping_add(1)\n}\n",
    );
    f.commit("Import the project");
    f.write(
        "src/widget.rs",
        "/// Width.\npub fn align(w: u32) -> u32 {\n    // may overflow\n    w.saturating_add(1)\n}\n",
    );
    let sha = f.commit(message);
    (f, sha)
}

/// The top ten hits for "sprocket aligner overflow" at `at`.
fn query(workspace: &Workspace, at: &str) -> Vec<QueryHit> {
    top_hits(workspace, "sprocket aligner overflow", at)
}

fn history_of(hits: &[QueryHit], path: &str) -> Option<f64> {
    parts(hits, path).map(|p| p.history)
}

#[test]
fn a_past_message_pulls_up_the_file_it_touched() {
    let (f, sha) = project();
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let hits = query(&workspace, &sha);
    // The message names two of the goal's three terms (in a history of two commits, where
    // they are common): some evidence, short of a message that is the goal.
    let widget = history_of(&hits, "src/widget.rs").expect("the widget is a hit");
    assert!(widget > 0.0 && widget < 1.0, "{hits:#?}");
    for i in 0..6 {
        assert_eq!(
            history_of(&hits, &format!("src/counter{i}.rs")),
            Some(0.0),
            "no past message touched counter{i}"
        );
    }
    // The same files, the same change, described in words the goal does not use.
    let (plain, plain_sha) = project_described("Clamp the width");
    let plain_workspace = plain.workspace();
    index_at(&plain_workspace, &plain_sha);
    let plain_hits = query(&plain_workspace, &plain_sha);
    assert_eq!(history_of(&plain_hits, "src/widget.rs"), Some(0.0));
    assert!(
        rank_of(&hits, "src/widget.rs") < rank_of(&plain_hits, "src/widget.rs"),
        "the message lifts the widget: {hits:#?}\n{plain_hits:#?}"
    );
}

#[test]
fn a_commit_after_the_snapshot_never_influences_its_pack() {
    let (f, snapshot) = project();
    let workspace = f.workspace();
    index_at(&workspace, &snapshot);
    let before = query(&workspace, &snapshot);
    let pack = |at: &str| {
        let request = ctxpack_api::SnapshotPackRequest {
            goal: "sprocket aligner overflow".into(),
            at: at.to_owned(),
            budget: ctxpack_core::Budget::new(2000).expect("budget"),
            ..ctxpack_api::SnapshotPackRequest::default()
        };
        let options = ctxpack_api::PackOptions {
            record: None,
            ..ctxpack_api::PackOptions::default()
        };
        let pack = workspace
            .snapshot_pack(&request, &options)
            .expect("pack")
            .pack;
        pack.hits
            .iter()
            .map(|h| (h.candidate.citation.0.clone(), h.candidate.score))
            .collect::<Vec<_>>()
    };
    let pack_before = pack(&snapshot);

    // The future: on the same branch and on another, messages that name the goal exactly,
    // touching a counter.
    f.write(
        "src/counter3.rs",
        "pub fn overflow_3(a: u32, b: u32) -> Option<u32> {\n    a.checked_add(b)\n}\n",
    );
    let future = f.commit("sprocket aligner overflow: the sprocket aligner overflow fix");
    f.git(&["checkout", "-q", "-b", "side", &snapshot]);
    f.write("src/counter4.rs", "pub fn overflow_4() {}\n");
    f.commit("sprocket aligner overflow on the side branch");
    f.git(&["checkout", "-q", "main"]);

    assert_eq!(
        query(&workspace, &snapshot),
        before,
        "commits after the snapshot changed its ranking"
    );
    assert_eq!(pack(&snapshot), pack_before);

    // The same commit does count once it is in the past, so the check above can fail.
    let summary = index_at(&workspace, &future);
    assert_eq!(
        summary.processed, 1,
        "one changed file is read: {summary:?}"
    );
    let after = query(&workspace, &future);
    assert!(
        history_of(&after, "src/counter3.rs").is_some_and(|h| h > 0.0),
        "the new commit's message is evidence at its own snapshot: {after:#?}"
    );
    assert_eq!(
        history_of(&after, "src/counter4.rs"),
        Some(0.0),
        "a commit on another branch is not in the past of main"
    );
}

#[test]
fn mass_changes_and_huge_messages_lend_nothing_unbounded() {
    let (f, _) = project();
    // A reformat of sixty files described in the goal's words: it describes none of them.
    for i in 0..60 {
        f.write(&format!("src/gen/g{i}.rs"), format!("pub fn g{i}() {{}}\n"));
    }
    f.commit("sprocket aligner overflow everywhere");
    // A message of 100 KB that names the goal only past the part that is read.
    f.write("src/counter5.rs", "pub fn check_5() {}\n");
    let long = format!("Rework\n\n{}sprocket aligner overflow", "x ".repeat(50_000));
    let sha = f.commit(&long);
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let hits = query(&workspace, &sha);
    assert!(
        history_of(&hits, "src/widget.rs").is_some_and(|h| h > 0.0),
        "{hits:#?}"
    );
    for h in &hits {
        let path = h.path.as_deref().unwrap_or_default();
        if path != "src/widget.rs" {
            assert_eq!(h.score_breakdown.history, 0.0, "{path}: {hits:#?}");
        }
    }
}

#[test]
fn files_that_changed_with_the_best_file_carry_co_change() {
    let f = Fixture::new();
    f.write(
        "src/ledger.rs",
        "/// Ledger append: every ledger record is appended.\npub fn append_ledger_record() {}\n",
    );
    f.write("src/index.rs", "/// The record index.\npub fn index() {}\n");
    f.write("src/other.rs", "/// Another record.\npub fn other() {}\n");
    f.commit("Start");
    for round in 0..2 {
        f.write("src/ledger.rs", format!("/// Ledger append: every ledger record is appended.\npub fn append_ledger_record() {{ let _ = {round}; }}\n"));
        f.write(
            "src/index.rs",
            format!("/// The record index.\npub fn index() {{ let _ = {round}; }}\n"),
        );
        f.commit(&format!("Keep the two in step, round {round}"));
    }
    let sha = f.git(&["rev-parse", "HEAD"]);
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let hits = top_hits(&workspace, "ledger append record", &sha);
    let cochange = |path: &str| parts(&hits, path).map(|p| p.cochange);
    // Two of the ledger's three commits (two, plus one) changed the index too.
    assert!(
        cochange("src/index.rs").is_some_and(|c| (c - 2.0 / 3.0).abs() < 1e-3),
        "{hits:#?}"
    );
    assert_eq!(cochange("src/other.rs"), Some(0.0), "{hits:#?}");
    // The ledger changed with the index too, but the index lends in proportion to its own,
    // weaker evidence.
    assert!(
        cochange("src/ledger.rs").is_some_and(|c| c < 0.1),
        "{hits:#?}"
    );
}

/// The past of a snapshot is derived when it is indexed: a pack reads none from git and packs
/// what it packed when it read the past from git (a store indexed before, which has none), and
/// a shallow clone, whose past may grow, keeps reading it from git.
#[test]
fn a_pack_reads_the_past_stored_at_index_time_not_git() {
    use ctxpack_api::{PackOptions, SnapshotPackRequest};
    let (f, sha) = project();
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let request = SnapshotPackRequest {
        goal: "sprocket aligner overflow".into(),
        at: sha.clone(),
        index: false,
        ..SnapshotPackRequest::default()
    };
    let pack = |workspace: &Workspace| {
        workspace
            .snapshot_pack(&request, &PackOptions::default())
            .expect("packs")
    };
    let stored = pack(&workspace);
    assert!(!stored.past_read, "the past was read from git");
    let hits = query(&workspace, &sha);
    assert!(
        history_of(&hits, "src/widget.rs").is_some_and(|h| h > 0.0),
        "{hits:#?}"
    );
    // Without the stored past (a store indexed before there was one), git is read, to the
    // same pack.
    let db = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("the store");
    db.execute("DELETE FROM histories", []).expect("forget");
    drop(db);
    let read = pack(&workspace);
    assert!(read.past_read);
    assert_eq!(
        ctxpack_api::pack_json(&read.pack, ctxpack_api::View::Full),
        ctxpack_api::pack_json(&stored.pack, ctxpack_api::View::Full)
    );
    // A shallow clone stores none.
    let dir = tempfile::tempdir().expect("tempdir");
    let shallow = dir.path().join("shallow");
    let cloned = std::process::Command::new("git")
        .args(["clone", "-q", "--depth", "1"])
        .arg(format!("file://{}", f.path().display()))
        .arg(&shallow)
        .status()
        .expect("git runs");
    assert!(cloned.success());
    let shallow_workspace = Workspace::open(ctxpack_api::WorkspaceOptions {
        cwd: shallow,
        ..ctxpack_api::WorkspaceOptions::default()
    })
    .expect("a workspace");
    let built = shallow_workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                at: "HEAD".into(),
                index: true,
                ..request.clone()
            },
            &PackOptions::default(),
        )
        .expect("packs");
    assert!(built.past_read, "a shallow clone's past is read from git");
}
