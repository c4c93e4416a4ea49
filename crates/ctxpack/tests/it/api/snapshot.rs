//! Indexing, status, raw retrieval and snapshot packs in process, on real git repositories
//! built with `git`: exact snapshots only, typed faults of the store and the repository,
//! awkward trees, shallow clones, the writer lock, progress and cancellation.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ctxpack_api::{
    Access, Ancestor, Budget, BudgetCovers, Control, DropReason, Dropped, Error, ErrorKind, Format,
    Hint, IndexRequest, IndexSummary, Meter, Pack, PackOptions, PackScope, Progress, QueryRequest,
    RenderOptions, SnapshotInfo, SnapshotPackRequest, View, Warning, Workspace, WorkspaceOptions,
    pack_json, render,
};
use serde_json::Value;

use crate::api::fixture::{BUDGET_RS, Fixture, Workspaces, git_in, ledger_chunk, project};

/// A request for `goal` at HEAD with ctxpack's defaults.
fn request(goal: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        goal: goal.into(),
        ..SnapshotPackRequest::default()
    }
}

/// A request for `goal` at HEAD with ctxpack's defaults, but that never indexes: an
/// unindexed commit is an error.
fn without_indexing(goal: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        index: false,
        ..request(goal)
    }
}

/// A request for `goal` at the commit `at`.
fn request_at(goal: &str, at: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        at: at.into(),
        ..request(goal)
    }
}

/// Builds a snapshot pack without recording it.
fn try_pack(workspace: &Workspace, request: &SnapshotPackRequest) -> Result<Pack, Error> {
    workspace
        .snapshot_pack(request, &PackOptions::default())
        .map(|built| built.pack)
}

/// Builds a snapshot pack that must succeed.
fn pack(workspace: &Workspace, request: &SnapshotPackRequest) -> Pack {
    try_pack(workspace, request)
        .unwrap_or_else(|e| panic!("packing {:?} at {}: {e}", request.goal, request.at))
}

/// Indexes HEAD, which must succeed.
fn index(workspace: &Workspace) -> IndexSummary {
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("HEAD indexes")
}

/// The citations of a pack's hits, in pack order.
fn citations(pack: &Pack) -> Vec<&str> {
    pack.hits
        .iter()
        .map(|h| h.candidate.citation.as_str())
        .collect()
}

/// Asserts the counter invariants every pack keeps, and that `used` fits the budget.
fn assert_counters(pack: &Pack) {
    let c = &pack.counters;
    assert_eq!(
        c.unique_citations,
        pack.hits.len() + c.budget_rejected_hits,
        "{c:?}"
    );
    assert_eq!(
        c.candidate_hits,
        c.unique_citations + c.duplicate_citations_skipped,
        "{c:?}"
    );
    assert!(
        pack.used <= pack.budget.get(),
        "{} > {}",
        pack.used,
        pack.budget
    );
}

/// A workspace over the repository (or plain directory) at `dir` and its default store.
fn workspace_at(dir: &Path) -> Workspace {
    Workspace::open(WorkspaceOptions {
        cwd: dir.to_owned(),
        ..WorkspaceOptions::default()
    })
    .expect("the workspace opens")
}

#[test]
fn a_missing_snapshot_is_not_indexed_until_indexed() {
    let (f, sha) = project();
    let workspace = f.workspace();
    let error = try_pack(&workspace, &without_indexing("budget")).expect_err("nothing is indexed");
    assert_eq!(error.kind(), ErrorKind::NotIndexed);
    assert!(
        error
            .message()
            .contains(&format!("snapshot {sha} is not indexed")),
        "{error}"
    );
    assert_eq!(
        error.hint(),
        Some(&Hint::IndexCommit {
            sha: sha.clone(),
            nearest: None
        })
    );

    let summary = index(&workspace);
    assert_eq!(summary.sha, sha);
    assert!(!summary.already_indexed);
    assert_eq!(
        (summary.files, summary.processed, summary.reused),
        (4, 4, 0)
    );
    assert_eq!(summary.skipped, BTreeMap::from([("binary".to_owned(), 1)]));

    let pack = pack(&workspace, &request("how is the budget enforced"));
    assert_eq!(
        pack.snapshot,
        Some(SnapshotInfo {
            requested_ref: "HEAD".into(),
            resolved_sha: sha.clone(),
            selection: "exact".into(),
            status: "indexed".into(),
            branch: Some("main".into()),
            detached: false,
            worktree_dirty: false,
        })
    );
    assert_eq!(pack.budget.get(), 8000);
    assert_eq!(pack.meter, Meter::O200k);
    // ctxpack's default selector is its own, measured better than seed 000's.
    assert_eq!(pack.selector.strategy(), "coverage-v4");
    assert_counters(&pack);
    let first = citations(&pack)[0];
    assert!(first.starts_with("src/budget.rs#L"), "{first}");
    assert!(first.ends_with(&format!("@{}", &sha[..7])), "{first}");
    // The canonical JSON names the snapshot the same way.
    let json = pack_json(&pack, View::Default);
    assert_eq!(json["snapshotSha"], Value::String(sha.clone()));
    assert_eq!(json["snapshot"]["resolvedSha"], Value::String(sha));
    assert_eq!(json["snapshot"]["requestedRef"], "HEAD");
    assert_eq!(json["selection"]["strategy"], "coverage-v4");
}

#[test]
fn incremental_index_and_ancestor_guidance() {
    let (f, first) = project();
    let workspace = f.workspace();
    index(&workspace);
    f.write(
        "src/budget.rs",
        BUDGET_RS.replace("cost <= remaining", "cost <= remaining && cost > 0"),
    );
    let second = f.commit("second");
    // The ancestor is guidance, never packed automatically.
    let error = try_pack(&workspace, &without_indexing("budget")).expect_err("HEAD is not indexed");
    assert_eq!(error.kind(), ErrorKind::NotIndexed);
    assert_eq!(
        error.hint(),
        Some(&Hint::IndexCommit {
            sha: second.clone(),
            nearest: Some(Ancestor {
                sha: first.clone(),
                distance: 1
            }),
        })
    );

    let summary = index(&workspace);
    assert_eq!(summary.sha, second);
    assert_eq!(summary.processed, 1, "only the changed blob is processed");
    assert_eq!(summary.reused, 3);
    let json = summary.to_json();
    assert_eq!(
        (&json["processed"], &json["reused"]),
        (&1.into(), &3.into())
    );
    let again = index(&workspace);
    assert!(again.already_indexed);
    assert_eq!((again.processed, again.reused), (0, 0));

    // Both snapshots stay packable; the old one by prefix.
    let old = pack(&workspace, &request_at("budget", &first[..8]));
    let snapshot = old.snapshot.as_ref().expect("a snapshot pack");
    assert_eq!(snapshot.resolved_sha, first);
    assert_eq!(snapshot.requested_ref, first[..8]);
    assert!(
        !old.hits[0].candidate.text.contains("cost > 0"),
        "the old snapshot has the old text"
    );
    let new = pack(&workspace, &request("budget"));
    assert!(new.hits[0].candidate.text.contains("cost > 0"));
}

#[test]
fn references_are_strict() {
    let (f, sha) = project();
    f.git(&["tag", "v1.0"]);
    let workspace = f.workspace();
    index(&workspace);
    let blob = f.git(&["rev-parse", "HEAD:src/budget.rs"]);
    let upper = sha.to_uppercase();
    // Branches, tags, revision syntax, short or non-hex strings, unknown prefixes and objects
    // that are not commits are refused as the field `at`.
    let refused = [
        "main", "v1.0", "HEAD~1", "HEAD^", "abc", "zzzzzzz", "@", "", "0000000", &blob,
    ];
    for at in refused {
        let error = try_pack(&workspace, &request_at("budget", at)).expect_err(at);
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{at:?}: {error}");
        assert_eq!(error.field(), Some("at"), "{at:?}: {error}");
        let error = workspace
            .query(&QueryRequest {
                goal: "budget".into(),
                at: at.to_owned(),
                ..QueryRequest::default()
            })
            .expect_err(at);
        assert_eq!(
            error.kind(),
            ErrorKind::InvalidInput,
            "query {at:?}: {error}"
        );
    }
    for at in ["HEAD", sha.as_str(), upper.as_str(), &sha[..7]] {
        let pack = pack(&workspace, &request_at("budget", at));
        let snapshot = pack.snapshot.expect("a snapshot pack");
        assert_eq!(snapshot.resolved_sha, sha, "{at}");
        assert_eq!(snapshot.requested_ref, at, "{at}");
    }
}

#[test]
fn requests_are_checked_field_by_field() {
    let (f, _) = project();
    let workspace = f.workspace();
    index(&workspace);
    // (request, the field at fault)
    let cases: Vec<(SnapshotPackRequest, &str)> = vec![
        (request(""), "goal"),
        (request("   "), "goal"),
        (
            SnapshotPackRequest {
                top_k: 0.into(),
                ..request("budget")
            },
            "top_k",
        ),
    ];
    for (request, field) in cases {
        let error = try_pack(&workspace, &request).expect_err(field);
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{request:?}");
        assert_eq!(error.field(), Some(field), "{request:?}");
    }
    for goal in ["", " \n"] {
        let error = workspace
            .query(&QueryRequest {
                goal: goal.into(),
                ..QueryRequest::default()
            })
            .expect_err("an empty goal");
        assert_eq!(error.field(), Some("goal"));
    }
    let error = workspace
        .index(
            &IndexRequest {
                max_file_bytes: 0,
                ..IndexRequest::default()
            },
            &Control::new(),
        )
        .expect_err("no file fits in 0 bytes");
    assert_eq!(error.field(), Some("max_file_bytes"));
    // Scopes and budgets are checked where they are made.
    let error = "bogus".parse::<PackScope>().expect_err("an unknown scope");
    assert_eq!(
        (error.kind(), error.field()),
        (ErrorKind::InvalidInput, Some("scope"))
    );
    for budget in [0, 1 << 53] {
        assert!(Budget::new(budget).is_err(), "{budget}");
    }
    assert!(Budget::new((1 << 53) - 1).is_ok());
}

/// The dirty-worktree warning of a pack, if it has one.
fn dirty_warning(pack: &Pack) -> Option<String> {
    pack.warnings
        .iter()
        .map(Warning::to_string)
        .find(|w| w.starts_with("worktree has uncommitted changes"))
}

#[test]
fn a_dirty_worktree_warns_and_the_pack_reads_the_commit() {
    let (f, _) = project();
    let workspace = f.workspace();
    index(&workspace);
    assert_eq!(dirty_warning(&pack(&workspace, &request("budget"))), None);
    f.write(
        "src/budget.rs",
        "pub fn enforce_budget() { uncommitted_change() }\n",
    );
    let pack = pack(&workspace, &request("enforce budget"));
    assert!(pack.snapshot.as_ref().expect("snapshot").worktree_dirty);
    assert_eq!(
        dirty_warning(&pack).as_deref(),
        Some(
            "worktree has uncommitted changes (1 modified, 0 untracked); the pack reads the committed snapshot and excludes them"
        )
    );
    let json = pack_json(&pack, View::Full).to_string();
    assert!(!json.contains("uncommitted_change"), "{json}");
    assert!(json.contains("worktree has uncommitted changes"), "{json}");
    assert!(
        json.contains("cost <= remaining"),
        "the committed text: {json}"
    );
}

#[test]
fn untracked_files_count_in_the_dirty_warning_and_ignored_ones_do_not() {
    let (f, _) = project();
    f.write(".gitignore", "*.log\n");
    f.commit("ignore logs");
    let workspace = f.workspace();
    // Only untracked files: still uncommitted changes that the pack leaves out.
    f.write("notes.md", "budget notes\n");
    f.write("drafts/a.rs", "fn draft_budget() {}\n");
    f.write("drafts/b.rs", "fn other_draft() {}\n");
    f.write("build.log", "ignored by .gitignore\n");
    let only_untracked = pack(&workspace, &request("budget"));
    assert!(
        only_untracked
            .snapshot
            .as_ref()
            .expect("snapshot")
            .worktree_dirty
    );
    assert_eq!(
        dirty_warning(&only_untracked).as_deref(),
        Some(
            "worktree has uncommitted changes (0 modified, 3 untracked); the pack reads the committed snapshot and excludes them"
        )
    );
    // The store's own files are never counted, even without the `.gitignore` it keeps.
    std::fs::remove_file(f.store().join(".gitignore")).expect("rm");
    assert_eq!(
        dirty_warning(&pack(&workspace, &request("budget"))),
        dirty_warning(&only_untracked)
    );
    let cited = citations(&only_untracked);
    assert!(
        cited
            .iter()
            .all(|c| !c.starts_with("notes.md") && !c.starts_with("drafts/")),
        "untracked files are not packed: {cited:?}"
    );
    // A modified and a deleted file count as modified; a file staged but never committed is
    // not in HEAD, so it counts with the untracked ones.
    f.write("README.md", "# Changed\n");
    std::fs::remove_file(f.path().join("config.env")).expect("rm");
    f.write("staged.rs", "fn staged() {}\n");
    f.git(&["add", "staged.rs"]);
    let warning = dirty_warning(&pack(&workspace, &request("budget"))).expect("a warning");
    assert!(warning.contains("(2 modified, 4 untracked)"), "{warning}");
    // Status counts the same way.
    let status = workspace.status().expect("status");
    assert!(status.worktree_dirty);
    assert_eq!(
        (status.worktree_modified, status.worktree_untracked),
        (2, 4),
        "{status:?}"
    );
    let json = status.to_json();
    assert_eq!(
        (&json["worktreeModified"], &json["worktreeUntracked"]),
        (&2.into(), &4.into())
    );
}

#[test]
fn secrets_are_masked_and_counted() {
    let (f, _) = project();
    let workspace = f.workspace();
    index(&workspace);
    let pack = pack(&workspace, &request("aws access key region"));
    for format in Format::ALL {
        let out = render(
            &pack,
            &RenderOptions {
                format,
                view: View::Full,
                pretty: false,
            },
        );
        assert!(!out.contains("AKIAIOSFODNN7EXAMPLE"), "{format}: {out}");
        assert!(out.contains("[REDACTED:"), "{format}: {out}");
    }
    assert!(pack.redactions.total() >= 1, "{:?}", pack.redactions);
}

#[test]
fn nothing_fits_warning_and_detached_head() {
    let (f, sha) = project();
    let workspace = f.workspace();
    index(&workspace);
    f.git(&["checkout", "-q", "--detach", &sha]);
    let pack = pack(
        &workspace,
        &SnapshotPackRequest {
            budget: Budget::new(1).expect("valid"),
            budget_covers: BudgetCovers::Content,
            ..request("budget")
        },
    );
    let snapshot = pack.snapshot.as_ref().expect("a snapshot pack");
    assert!(snapshot.detached);
    assert_eq!(snapshot.branch, None);
    assert!(pack.hits.is_empty());
    assert_eq!(pack.used, 0);
    assert_eq!(pack.warnings, [Warning::NoCompleteHitFits]);
    assert_eq!(
        Warning::NoCompleteHitFits.to_string(),
        "context pack budget admitted no complete hit"
    );
    assert_counters(&pack);
}

#[test]
fn outside_a_repository_is_invalid_input() {
    let empty = tempfile::tempdir().expect("tempdir");
    let workspace = workspace_at(empty.path());
    let failures: [(&str, Error); 3] = [
        (
            "pack",
            try_pack(&workspace, &request("g")).expect_err("no repository"),
        ),
        (
            "index",
            workspace
                .index(&IndexRequest::default(), &Control::new())
                .expect_err("no repository"),
        ),
        ("status", workspace.status().expect_err("no repository")),
    ];
    for (what, error) in failures {
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{what}: {error}");
    }
    assert!(
        !empty.path().join(".ctxpack").exists(),
        "nothing is created"
    );
}

#[test]
fn a_damaged_store_is_typed_and_rebuilt() {
    let (f, _) = project();
    let workspace = f.workspace();
    index(&workspace);
    let store = f.store();
    let rebuild = IndexRequest {
        rebuild: true,
        ..IndexRequest::default()
    };
    let damaged = |what: &str| {
        let error = try_pack(&workspace, &request("budget")).expect_err(what);
        assert_eq!(error.kind(), ErrorKind::Damaged, "{what}: {error}");
        assert_eq!(error.hint(), Some(&Hint::RebuildStore), "{what}");
    };

    // A deleted lexical index: damaged, and a rebuild restores it from the stored chunks.
    std::fs::remove_dir_all(store.join("lexical")).expect("rm");
    damaged("a deleted lexical index");
    let summary = workspace
        .index(&rebuild, &Control::new())
        .expect("rebuilds");
    assert_eq!(summary.moved_aside, None);
    assert!(citations(&pack(&workspace, &request("budget")))[0].starts_with("src/budget.rs"));

    // A garbage database: rebuilding moves it aside (nothing is deleted) and starts afresh.
    let garbage = b"this is not sqlite at all, not even close......";
    std::fs::write(store.join("ctxpack.sqlite"), garbage).expect("write");
    let _ = std::fs::remove_file(store.join("ctxpack.sqlite-wal"));
    let _ = std::fs::remove_file(store.join("ctxpack.sqlite-shm"));
    damaged("a garbage database");
    let summary = workspace
        .index(&rebuild, &Control::new())
        .expect("rebuilds");
    let aside = summary.moved_aside.expect("the database was moved aside");
    assert_eq!(
        std::fs::read(&aside).expect("the old database is kept"),
        garbage
    );
    assert!(!summary.already_indexed, "the store starts afresh");
    assert_eq!(summary.files, 4);
    assert!(citations(&pack(&workspace, &request("budget")))[0].starts_with("src/budget.rs"));
}

#[test]
fn a_newer_store_format_is_refused() {
    let (f, _) = project();
    let workspace = f.workspace();
    index(&workspace);
    let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite"))
        .expect("open the store database");
    conn.pragma_update(None, "user_version", 99)
        .expect("set the format version");
    drop(conn);
    let error = try_pack(&workspace, &request("budget")).expect_err("a newer format");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    assert!(error.message().contains("format version 99"), "{error}");
    // Rebuilding would throw a newer ctxpack's store away: the advice is to upgrade.
    assert_eq!(error.hint(), Some(&Hint::UpgradeCtxpack), "{error}");
    let error = workspace.status().expect_err("a newer format");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
}

#[test]
fn status_and_query() {
    let (f, sha) = project();
    let workspace = f.workspace();
    let status = workspace.status().expect("status without a store");
    assert!(!status.store_exists);
    assert!(!status.head_indexed);
    assert!(status.snapshots.is_empty());
    assert_eq!(status.head.as_deref(), Some(sha.as_str()));
    assert_eq!(status.branch.as_deref(), Some("main"));
    assert_eq!(Path::new(&status.store), f.store());
    assert!(!f.store().exists(), "status creates nothing");

    index(&workspace);
    let status = workspace.status().expect("status");
    assert!(status.store_exists);
    assert!(status.head_indexed);
    assert!(!status.worktree_dirty);
    let shas: Vec<&str> = status.snapshots.iter().map(|s| s.sha.as_str()).collect();
    assert_eq!(shas, [sha.as_str()]);
    assert_eq!(status.snapshots[0].files, 4);
    assert_eq!(status.to_json()["headIndexed"], true);

    let query = workspace
        .query(&QueryRequest {
            goal: "enforce budget".into(),
            ..QueryRequest::default()
        })
        .expect("query");
    assert_eq!(query.snapshot_sha, sha);
    let hit = &query.hits[0];
    assert_eq!(hit.rank, 1);
    assert!(hit.citation.starts_with("src/budget.rs"), "{hit:?}");
    assert_eq!(hit.path.as_deref(), Some("src/budget.rs"));
    let b = hit.score_breakdown;
    assert!(
        (b.text + b.path + b.symbol - b.chunk).abs() < 1e-3,
        "{hit:?}"
    );
    let ranks: Vec<usize> = query.hits.iter().map(|h| h.rank).collect();
    assert_eq!(ranks, (1..=query.hits.len()).collect::<Vec<_>>());
    // The canonical JSON names the breakdown as the front ends print it.
    let json = query.to_json();
    assert_eq!(json["snapshotSha"], Value::String(sha));
    assert_eq!(json["meter"], "words");
    let breakdown = &json["hits"][0]["scoreBreakdown"];
    for part in [
        "text", "path", "symbol", "chunk", "file", "history", "prior",
    ] {
        assert!(breakdown[part].is_number(), "{part}: {json}");
    }
}

/// Ranking reads the chunk heads of its pool best bound first and stops once no hit left
/// could rank among those asked for: a chunk's own test marker, known only from its head, can
/// only halve its score. Here the strongest matches are test code outside any test path, so the
/// best three have to be found past the first heads read, and they are the first three of a
/// query that reads many more heads of the same pool (under 25 asked, the pool is the same).
#[test]
fn hits_halved_by_their_test_marker_give_way_to_the_next_best() {
    let f = Fixture::new();
    for n in 0..12 {
        let words = "frobnicate the widget cache ".repeat(6);
        f.write(
            &format!("src/marked_{n}.rs"),
            format!("#[test]\nfn frobnicate_widget_{n}() {{\n    // {words}\n}}\n"),
        );
    }
    for n in 0..6 {
        let words = "frobnicate the widget cache ".repeat(5);
        f.write(
            &format!("src/plain_{n}.rs"),
            format!("pub fn frobnicate_widget_{n}() {{\n    // {words}\n}}\n"),
        );
    }
    f.commit("widgets");
    let workspace = f.workspace();
    index(&workspace);
    let query = |top_k| {
        workspace
            .query(&QueryRequest {
                goal: "frobnicate the widget cache".into(),
                top_k,
                ..QueryRequest::default()
            })
            .expect("query")
            .hits
    };
    let few = query(3);
    let many = query(24);
    assert_eq!(few.len(), 3);
    let cited = |hits: &[ctxpack_api::QueryHit]| -> Vec<(String, f64)> {
        hits.iter().map(|h| (h.citation.clone(), h.score)).collect()
    };
    assert_eq!(cited(&few), cited(&many[..3]));
    // The marked chunks match best, so the first heads read are theirs; the plain ones win.
    assert!(
        few.iter()
            .all(|h| h.path.as_deref().is_some_and(|p| p.contains("plain_"))),
        "{few:#?}"
    );
    assert!(
        many.iter()
            .any(|h| h.path.as_deref().is_some_and(|p| p.contains("marked_"))
                && (h.score_breakdown.prior - 0.5).abs() < 1e-9),
        "{many:#?}"
    );
}

#[test]
fn huge_top_k_is_bounded_by_the_index() {
    let (f, _) = project();
    let workspace = f.workspace();
    index(&workspace);
    let query = workspace
        .query(&QueryRequest {
            goal: "budget".into(),
            top_k: usize::MAX,
            ..QueryRequest::default()
        })
        .expect("a huge top_k");
    assert!(!query.hits.is_empty());
    let pack = pack(
        &workspace,
        &SnapshotPackRequest {
            top_k: usize::MAX.into(),
            ..request("budget")
        },
    );
    assert_counters(&pack);
}

#[test]
fn a_new_commit_packs_without_a_manual_index() {
    let (f, first) = project();
    let workspace = f.workspace();
    let built = workspace
        .snapshot_pack(&request("budget"), &PackOptions::default())
        .expect("indexes and packs");
    let indexed = built.indexed.expect("HEAD was indexed first");
    assert_eq!(
        (indexed.sha.as_str(), indexed.processed),
        (first.as_str(), 4)
    );
    assert_eq!(built.pack.snapshot.expect("snapshot").resolved_sha, first);
    // Already indexed: nothing more to do.
    let built = workspace
        .snapshot_pack(&request("budget"), &PackOptions::default())
        .expect("packs");
    assert_eq!(built.indexed, None);

    // The next commit is indexed incrementally, with progress reported through the control.
    f.write(
        "src/budget.rs",
        BUDGET_RS.replace("cost <= remaining", "cost <= remaining && cost > 0"),
    );
    let second = f.commit("second");
    let events = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = events.clone();
    let control = Control::new().with_progress(move |event: &Progress| {
        sink.lock().expect("no panic while held").push(*event);
    });
    let built = workspace
        .snapshot_pack_with(&request("budget"), &PackOptions::default(), &control)
        .expect("indexes and packs");
    let indexed = built.indexed.expect("the new HEAD was indexed first");
    assert_eq!(
        (indexed.sha.as_str(), indexed.processed, indexed.reused),
        (second.as_str(), 1, 3)
    );
    assert!(built.pack.hits[0].candidate.text.contains("cost > 0"));
    assert!(
        events
            .lock()
            .expect("done")
            .iter()
            .any(|e| e.phase == "chunking"),
        "indexing reported its progress"
    );

    // Any commit asked for is indexed, not only HEAD.
    f.write("src/more.rs", "fn more_budget() {}\n");
    let third = f.commit("third");
    f.git(&["checkout", "-q", "--detach", &first]);
    let built = workspace
        .snapshot_pack(
            &request_at("more budget", &third[..10]),
            &PackOptions::default(),
        )
        .expect("indexes the commit asked for");
    assert_eq!(built.indexed.expect("indexed").sha, third);
}

#[test]
fn without_indexing_or_write_access_an_unindexed_commit_is_not_found() {
    let (f, sha) = project();
    let not_indexed = |error: Error| {
        assert_eq!(error.kind(), ErrorKind::NotIndexed, "{error}");
        assert_eq!(
            error.hint(),
            Some(&Hint::IndexCommit {
                sha: sha.clone(),
                nearest: None
            })
        );
    };
    // The request says not to index.
    not_indexed(try_pack(&f.workspace(), &without_indexing("budget")).expect_err("no index"));
    // A read-only workspace never writes, whatever the request or the options say.
    let read_only = f.workspace_with(Access::ReadOnly, None);
    not_indexed(try_pack(&read_only, &request("budget")).expect_err("read-only"));
    let options = PackOptions {
        record: None,
        index_if_missing: true,
        rendering: None,
    };
    not_indexed(
        read_only
            .snapshot_pack(&without_indexing("budget"), &options)
            .expect_err("read-only"),
    );
    assert!(!f.store().exists(), "nothing was written");
    // The options can ask for indexing that the request does not.
    let built = f
        .workspace()
        .snapshot_pack(&without_indexing("budget"), &options)
        .expect("indexes");
    assert_eq!(built.indexed.expect("indexed").sha, sha);
}

#[test]
fn the_two_presets_of_one_request() {
    let json =
        |request: SnapshotPackRequest| serde_json::to_value(request).expect("a request serializes");
    // ctxpack's measured-best pipeline.
    assert_eq!(
        json(SnapshotPackRequest::default()),
        serde_json::json!({
            "goal": "", "budget": 8000, "at": "HEAD", "scope": "durable", "meter": "o200k",
            "selector": "coverage", "top_k": null, "budget_covers": "output", "index": true,
            "include": [], "exclude": [], "worktree": false, "session": null, "fresh": false,
            "recall": [],
        })
    );
    // Seed 000's `context pack` contract.
    assert_eq!(
        json(SnapshotPackRequest::context_pack()),
        serde_json::json!({
            "goal": "", "budget": 1200, "at": "HEAD", "scope": "durable", "meter": "words",
            "selector": "diverse", "top_k": 30, "budget_covers": "content", "index": false,
            "include": [], "exclude": [], "worktree": false, "session": null, "fresh": false,
            "recall": [],
        })
    );
    let default = SnapshotPackRequest::default();
    assert_eq!(default.top_k.fixed(), None);
    assert_eq!(SnapshotPackRequest::context_pack().top_k.fixed(), Some(30));
    // A pool sized to the budget: one candidate per 20 budget units, never fewer than 30.
    for (budget, pool) in [(1, 30), (600, 30), (2000, 100), (8000, 400), (32000, 1600)] {
        let budget = Budget::new(budget).expect("valid");
        assert_eq!(default.top_k.first_pool(budget), pool, "{budget}");
        assert_eq!(ctxpack_api::candidates_for(budget.get()), pool);
    }
    // JSON spells a fixed pool as its number and a pool sized to the budget as null or
    // nothing, and the budget's coverage by name.
    let parsed: SnapshotPackRequest = serde_json::from_value(
        serde_json::json!({"goal": "g", "top_k": 7, "budget_covers": "content"}),
    )
    .expect("parses");
    assert_eq!(parsed.top_k.fixed(), Some(7));
    assert_eq!(
        parsed.budget_covers,
        SnapshotPackRequest::context_pack().budget_covers
    );
    let parsed: SnapshotPackRequest =
        serde_json::from_value(serde_json::json!({"goal": "g", "top_k": null})).expect("parses");
    assert_eq!(parsed.top_k, default.top_k);
    for bad in [
        serde_json::json!({"goal": "g", "top_k": "many"}),
        serde_json::json!({"goal": "g", "budget_covers": "everything"}),
        serde_json::json!({"goal": "g", "index": "yes"}),
    ] {
        assert!(
            serde_json::from_value::<SnapshotPackRequest>(bad.clone()).is_err(),
            "{bad}"
        );
    }
}

/// A repository of many small files that all match `budget`: a pool sized to a budget of
/// 2,000 (100 candidates of 10 tokens) runs out long before the budget does.
fn many_small_matches() -> Fixture {
    let f = Fixture::new();
    for i in 0..300 {
        f.write(
            &format!("src/budget_{i:03}.rs"),
            format!("fn budget_{i}(x: u8) {{}}\n"),
        );
    }
    f.commit("many small budget files");
    f
}

#[test]
fn a_pool_sized_to_the_budget_widens_when_it_runs_out_first() {
    let f = many_small_matches();
    let workspace = f.workspace();
    index(&workspace);
    let budget = Budget::new(2000).expect("valid");
    let first_pool = SnapshotPackRequest::default().top_k.first_pool(budget);
    assert_eq!(first_pool, 100);
    // The budget counts content alone here, so that 100 candidates of 10 tokens are 1,000
    // of it whatever their markup costs.
    let sized = SnapshotPackRequest {
        budget,
        budget_covers: BudgetCovers::Content,
        ..request("budget")
    };
    // What the first pool alone gives: it runs out with most of the budget unused.
    let unwidened = pack(
        &workspace,
        &SnapshotPackRequest {
            top_k: first_pool.into(),
            ..sized.clone()
        },
    );
    assert_eq!(unwidened.counters.candidate_hits, first_pool);
    assert_eq!(
        unwidened.counters.budget_rejected_hits, 0,
        "every candidate fit"
    );
    assert!(unwidened.used <= 2000 / 2, "{}", unwidened.used);

    let widened = pack(&workspace, &sized);
    assert_counters(&widened);
    assert!(
        widened.counters.candidate_hits > first_pool,
        "{:?}",
        widened.counters
    );
    assert!(
        widened.used > unwidened.used && widened.used > 2000 * 9 / 10,
        "widened {} against {}",
        widened.used,
        unwidened.used
    );
    // Deterministic: the same request takes the same steps to the same pack.
    assert_eq!(
        pack_json(&pack(&workspace, &sized), View::Full),
        pack_json(&widened, View::Full)
    );
    // A pool that fills the budget is not widened, and a pool that retrieval could not fill
    // (every match already in it) has nothing more to give.
    let small = pack(
        &workspace,
        &SnapshotPackRequest {
            budget: Budget::new(200).expect("valid"),
            ..sized.clone()
        },
    );
    assert_eq!(small.counters.candidate_hits, 30);
    let everything = pack(
        &workspace,
        &SnapshotPackRequest {
            budget: Budget::new(100_000).expect("valid"),
            ..sized.clone()
        },
    );
    assert_eq!(everything.counters.candidate_hits, 300);
    assert_eq!(everything.hits.len(), 300);
}

#[test]
fn a_second_writer_is_refused_or_waits() {
    let (f, first) = project();
    let workspace = f.workspace();
    index(&workspace);
    let lock = ctxpack_store::WriterLock::acquire(&f.store(), false).expect("the lock is free");
    f.write("more.rs", "fn more() {}\n");
    let second = f.commit("more");
    let error = workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect_err("the lock is held");
    assert_eq!(error.kind(), ErrorKind::Busy, "{error}");
    assert_eq!(error.hint(), Some(&Hint::WaitForWriter));
    assert!(
        error.message().contains(&format!(
            "is being written by another process (pid {})",
            std::process::id()
        )),
        "{error}"
    );
    // Readers are not blocked by the writer.
    pack(&workspace, &request_at("budget", &first));
    workspace.status().expect("status reads");
    // A waiting writer proceeds once the lock is released.
    let waiter = {
        let workspace = workspace.clone();
        std::thread::spawn(move || {
            let wait = IndexRequest {
                wait: true,
                ..IndexRequest::default()
            };
            workspace.index(&wait, &Control::new())
        })
    };
    // Give the waiter a chance to reach the lock; nothing here depends on how long it takes.
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        !waiter.is_finished(),
        "a writer cannot finish while the lock is held"
    );
    drop(lock);
    let summary = waiter
        .join()
        .expect("the waiter does not panic")
        .expect("the waiter indexes once the lock is free");
    assert_eq!(summary.sha, second);
}

#[test]
fn awkward_trees_are_indexed_or_skipped_with_reasons() {
    let f = Fixture::new();
    let workspace = f.workspace();
    // An empty repository has no snapshot to index.
    let error = workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect_err("no commits");
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
    assert!(error.message().contains("no commits yet"), "{error}");

    f.write(
        "dir with spaces/naïve café.rs",
        "fn café() { let budget = 1; }\n",
    );
    std::fs::write(f.path().join("latin1.txt"), b"caf\xe9 budget\n").expect("write");
    std::fs::write(f.path().join("nul.txt"), b"budget\0budget\n").expect("write");
    f.write("big.txt", "budget line\n".repeat(20_000));
    f.write("ignored/skip.rs", "fn budget() {}\n");
    f.write(".ctxpackignore", "ignored/\n");
    std::os::unix::fs::symlink("latin1.txt", f.path().join("link.txt")).expect("symlink");
    // A submodule entry (a gitlink) without cloning anything.
    f.write("seed.txt", "seed\n");
    let seed = f.commit("seed");
    f.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{seed},vendor/sub"),
    ]);
    f.git(&["commit", "-q", "-m", "awkward"]);
    let summary = workspace
        .index(
            &IndexRequest {
                max_file_bytes: 100_000,
                ..IndexRequest::default()
            },
            &Control::new(),
        )
        .expect("an awkward tree indexes");
    let expected: BTreeMap<String, u64> = [
        "invalid_utf8",
        "binary",
        "too_large",
        "ignored",
        "symlink",
        "submodule",
    ]
    .into_iter()
    .map(|reason| (reason.to_owned(), 1))
    .collect();
    assert_eq!(summary.skipped, expected);
    let pack = pack(&workspace, &request("café budget"));
    let cites = citations(&pack);
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
    let head = f.commit("second");
    let clone = tempfile::tempdir().expect("tempdir");
    let url = format!("file://{}", f.path().display());
    let dest = clone.path().join("shallow");
    git_in(
        clone.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let workspace = workspace_at(&dest);
    // Without history there is no ancestor to name, and no failure looking for one.
    let error = try_pack(&workspace, &without_indexing("budget")).expect_err("not indexed");
    assert_eq!(
        error.hint(),
        Some(&Hint::IndexCommit {
            sha: head.clone(),
            nearest: None
        })
    );
    let summary = index(&workspace);
    assert_eq!((summary.sha.as_str(), summary.files), (head.as_str(), 5));
    let pack = pack(&workspace, &request("budget"));
    assert!(!pack.hits.is_empty());
    // A commit on top of the shallow root names it as the nearest indexed ancestor.
    std::fs::write(dest.join("src/later.rs"), "fn later() {}\n").expect("write");
    git_in(&dest, &["add", "-A"]);
    git_in(&dest, &["commit", "-q", "-m", "later"]);
    let later = git_in(&dest, &["rev-parse", "HEAD"]);
    let error = try_pack(&workspace, &without_indexing("budget")).expect_err("not indexed");
    assert_eq!(
        error.hint(),
        Some(&Hint::IndexCommit {
            sha: later,
            nearest: Some(Ancestor {
                sha: head,
                distance: 1
            }),
        })
    );
}

#[test]
fn a_missing_git_object_is_skipped_counted_and_the_rest_packs() {
    let f = Fixture::new();
    f.write("src/a.rs", "fn budget() {}\n");
    f.write(
        "src/b.rs",
        "/// The remaining budget.\nfn remaining_budget() {}\n",
    );
    f.commit("first");
    let blob = f.git(&["rev-parse", "HEAD:src/a.rs"]);
    let object = f
        .path()
        .join(".git/objects")
        .join(&blob[..2])
        .join(&blob[2..]);
    std::fs::remove_file(object).expect("the blob is a loose object");
    let workspace = f.workspace();
    let summary = workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("the rest of the commit is indexed");
    assert_eq!(
        summary.skipped.get("object_not_present"),
        Some(&1),
        "{summary:?}"
    );
    let built = workspace
        .snapshot_pack(&request("budget"), &PackOptions::default())
        .expect("packs");
    let cited: Vec<&str> = built
        .pack
        .hits
        .iter()
        .map(|h| h.candidate.citation.as_str())
        .collect();
    assert!(cited.iter().all(|c| c.starts_with("src/b.rs")), "{cited:?}");
    assert!(!cited.is_empty());
}

/// Which progress event of an index run cancels it: the first of a phase, or the one that
/// ends the phase.
#[derive(Clone, Copy, Debug)]
enum CancelAt {
    /// The first event of the phase.
    First(&'static str),
    /// The event that reports the phase done (`done == total`, with work to do).
    Last(&'static str),
}

impl CancelAt {
    /// Whether `event` is the one to cancel at.
    fn matches(self, event: &Progress) -> bool {
        match self {
            CancelAt::First(phase) => event.phase == phase,
            CancelAt::Last(phase) => {
                event.phase == phase && event.done > 0 && Some(event.done) == event.total
            }
        }
    }
}

#[test]
fn a_cancelled_index_leaves_no_snapshot() {
    // (when to cancel, file versions (processed, reused) by the run after it)
    let cases = [
        (CancelAt::First("reading"), (4, 0)),
        (CancelAt::First("chunking"), (4, 0)),
        // From the end of chunking on, the file versions are written; the snapshot is not.
        (CancelAt::Last("chunking"), (0, 4)),
        (CancelAt::First("lexical"), (0, 4)),
    ];
    for (at, (processed, reused)) in cases {
        let (f, sha) = project();
        let workspace = f.workspace();
        let control = Control::new();
        let canceller = control.canceller();
        let control = control.with_progress(move |event: &Progress| {
            if at.matches(event) {
                canceller.cancel();
            }
        });
        let error = workspace
            .index(&IndexRequest::default(), &control)
            .expect_err("cancelled");
        assert_eq!(error.kind(), ErrorKind::Cancelled, "{at:?}: {error}");
        let status = workspace.status().expect("status");
        assert!(!status.head_indexed, "{at:?}");
        assert!(status.snapshots.is_empty(), "{at:?}");
        let error = try_pack(&workspace, &without_indexing("budget")).expect_err("no snapshot");
        assert_eq!(error.kind(), ErrorKind::NotIndexed, "{at:?}");

        // The next run completes (the lock was released) and reuses what was written.
        let summary = index(&workspace);
        assert_eq!(summary.sha, sha);
        assert!(!summary.already_indexed);
        assert_eq!(
            (summary.processed, summary.reused),
            (processed, reused),
            "{at:?}"
        );
        assert!(workspace.status().expect("status").head_indexed, "{at:?}");
        let pack = pack(&workspace, &request("budget"));
        assert!(citations(&pack)[0].starts_with("src/budget.rs"), "{at:?}");
    }
}

#[test]
fn index_progress_is_reported_by_phase() {
    const FILES: u64 = 600;
    /// At least this often (in files) the reading and chunking phases report.
    const EVERY: u64 = 256;
    let f = Fixture::new();
    for i in 0..FILES {
        f.write(&format!("gen/file_{i:03}.txt"), format!("line {i}\n"));
    }
    f.commit("many files");
    let events = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = events.clone();
    let control = Control::new().with_progress(move |event: &Progress| {
        sink.lock().expect("no panic while held").push(*event);
    });
    let summary = f
        .workspace()
        .index(&IndexRequest::default(), &control)
        .expect("indexes");
    assert_eq!((summary.files, summary.processed), (FILES, FILES));
    let events = events.lock().expect("the run is over").clone();

    // The phases come in order, each in one run of events.
    let mut phases: Vec<&str> = events.iter().map(|e| e.phase).collect();
    phases.dedup();
    assert_eq!(phases, ["reading", "chunking", "lexical", "committing"]);
    for phase in ["reading", "chunking"] {
        let of_phase: Vec<&Progress> = events.iter().filter(|e| e.phase == phase).collect();
        let done: Vec<u64> = of_phase.iter().map(|e| e.done).collect();
        assert!(done.windows(2).all(|w| w[0] <= w[1]), "{phase}: {done:?}");
        let last = of_phase.last().expect("every phase reports");
        assert_eq!(
            (last.done, last.total),
            (FILES, Some(FILES)),
            "{phase} ends done"
        );
        if phase == "chunking" {
            // Chunking reports by the clock; only its end is counted here.
            continue;
        }
        assert_eq!(done[0], 0, "{phase} reports its start");
        assert!(
            done.windows(2).all(|w| w[1] - w[0] <= EVERY),
            "{phase} reports at least every {EVERY} files: {done:?}"
        );
        assert!(
            of_phase.len() as u64 > FILES.div_ceil(EVERY),
            "{phase}: {} events",
            of_phase.len()
        );
    }
}

#[test]
fn a_meter_this_build_lacks_is_invalid_input_not_a_crash() {
    if Meter::Cl100k.is_built() {
        return;
    }
    let (f, _) = project();
    let workspace = f.workspace();
    // A request read from JSON (an MCP call, a library caller) may name any known meter.
    let request: SnapshotPackRequest =
        serde_json::from_value(serde_json::json!({"goal": "budget", "meter": "cl100k"}))
            .expect("the name is known");
    let error = try_pack(&workspace, &request).expect_err("cl100k is not built in");
    assert_eq!(
        (error.kind(), error.field()),
        (ErrorKind::InvalidInput, Some("meter"))
    );
    assert!(error.to_string().contains("cl100k"), "{error}");
    let error = workspace
        .query(&QueryRequest {
            goal: "budget".into(),
            meter: Meter::Cl100k,
            ..QueryRequest::default()
        })
        .expect_err("cl100k is not built in");
    assert_eq!(error.field(), Some("meter"));
}

/// The full-text index's own lock is an `flock`, which a child process forked by another
/// thread holds for an instant after this process released it. Indexing waits for such a
/// lock to be released instead of failing: here another process holds it for a moment.
#[test]
fn indexing_waits_out_a_full_text_lock_held_for_a_moment() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let (f, _) = project();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    f.write("src/later.rs", "pub fn later_budget() -> u64 { 1 }\n");
    f.commit("later");
    let lexical = std::fs::read_dir(f.store())
        .expect("the store")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("lexical"))
        })
        .expect("a full-text index directory");
    let mut holder = Command::new("flock")
        .arg("-x")
        .arg(lexical.join(".tantivy-writer.lock"))
        .args(["-c", "echo held; sleep 0.3"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock runs");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("flock reports");
    assert_eq!(line.trim(), "held");
    let summary = workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes once the lock is released");
    assert_eq!(summary.processed, 1);
    assert!(holder.wait().expect("flock exits").success());
}

#[test]
fn a_small_budget_shows_the_lines_of_a_long_chunk_that_match_and_cites_exactly_them() {
    let f = Fixture::new();
    let body = ledger_chunk();
    f.write("src/ledger.rs", &body);
    let sha = f.commit("ledger");
    let workspace = f.workspace();
    let pack = |goal: &str, budget: u64| {
        workspace
            .snapshot_pack(
                &SnapshotPackRequest {
                    budget: Budget::new(budget).expect("budget"),
                    ..request(goal)
                },
                &PackOptions::default(),
            )
            .expect("pack")
            .pack
    };
    let lines: Vec<&str> = body.lines().collect();
    let short = &sha[..7];
    // 700 units: at most 10 lines of the 44 (one per 200 units, at least 10), and too few to
    // show the whole chunk with what is left. The goal's terms are densest at the top (the doc
    // comment and the signature name it): the first 10 lines.
    let small = pack("reconcile the ledger", 700);
    let hit = &small.hits[0].candidate;
    assert_eq!(hit.citation.0, format!("src/ledger.rs#L1-L10@{short}"));
    assert_eq!(hit.text, format!("{}\n", lines[..10].join("\n")));
    assert_eq!(hit.cost, Meter::O200k.count(&hit.text));
    // A goal that one line deep in the chunk matches best: 10 lines around it (line 30),
    // not the first 10.
    let deep = pack("check the ledger for overflow", 700);
    let hit = &deep.hits[0].candidate;
    assert_eq!(hit.citation.0, format!("src/ledger.rs#L25-L34@{short}"));
    assert_eq!(hit.text, format!("{}\n", lines[24..34].join("\n")));
    assert!(hit.text.contains("ledger overflow check"));
    assert_eq!(hit.cost, Meter::O200k.count(&hit.text));
    // 8,000 units: 40 lines, then the whole chunk again, since the budget left pays for it;
    // 12,000: the whole chunk, never cut.
    let hit = &pack("reconcile the ledger", 8000).hits[0].candidate;
    assert_eq!(hit.citation.0, format!("src/ledger.rs#L1-L44@{short}"));
    let large = pack("reconcile the ledger", 12_000);
    let hit = &large.hits[0].candidate;
    assert_eq!(hit.citation.0, format!("src/ledger.rs#L1-L44@{short}"));
    assert_eq!(hit.text, body);
}

/// A request reader whose one large chunk is the best evidence for a goal about JSON body
/// limits; `medium` smaller files about JSON bodies; and `weak` widget files that match the
/// goal's one common word ("size") and nothing else.
fn strong_medium_and_weak(medium: usize, weak: usize) -> Fixture {
    let f = Fixture::new();
    let mut strong = String::from("pub fn read_body(request: &Request) -> Result<Json, Error> {\n");
    for i in 0..44 {
        strong.push_str(&format!("    let part_{i} = request.chunk({i})?;\n"));
    }
    strong.push_str("    if request.body_size() > config.max_content_length {\n");
    strong.push_str(
        "        return Err(Error::BodyTooLarge); // the JSON request body is over the limit\n",
    );
    strong.push_str("    }\n    parse_json(request)\n}\n");
    f.write("src/request.rs", &strong);
    for n in 0..medium {
        let mut body = format!(
            "/// Reads a JSON body of at most `limit` bytes, {n}.\npub fn json_body_{n}(limit: usize) -> usize {{\n"
        );
        for i in 0..28 {
            body.push_str(&format!("    let j{i} = limit + {i};\n"));
        }
        body.push_str("    0\n}\n");
        f.write(&format!("src/json_{n:02}.rs"), &body);
    }
    for n in 0..weak {
        let mut body = format!("/// The size of widget {n}.\npub fn widget_{n}() -> usize {{\n");
        for i in 0..28 {
            body.push_str(&format!("    let w{i} = {n} + {i};\n"));
        }
        body.push_str("    0\n}\n");
        f.write(&format!("src/widget_{n:02}.rs"), &body);
    }
    f.commit("a request reader, JSON bodies and widgets");
    f
}

/// The shape a pack must get right: the best chunk is large and in the right file, smaller
/// chunks elsewhere fit more cheaply, and many weak ones match one common word each. The pack
/// shows the large chunk's matching lines first, and the files selection did not reach as a
/// line each (a hit cited by that line); the weak files are never packed, not even as a line.
#[test]
fn a_strong_chunk_beats_cheap_weak_ones_and_further_files_get_a_line() {
    let f = strong_medium_and_weak(12, 12);
    let workspace = f.workspace();
    let pack = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                budget: Budget::new(600).expect("budget"),
                budget_covers: BudgetCovers::Content,
                ..request("limit the maximum size of JSON request bodies")
            },
            &PackOptions::default(),
        )
        .expect("pack")
        .pack;
    assert_counters(&pack);
    let first = &pack.hits[0].candidate;
    let location = first.location.as_ref().expect("a file span");
    assert_eq!(location.path, "src/request.rs", "{:?}", pack.hits);
    // Ten lines (the fewest a cut keeps) around the lines that match, not the first ten.
    assert_eq!(location.end_line - location.start_line + 1, 10);
    assert!(first.text.contains("max_content_length"), "{}", first.text);
    // The budget cannot show every JSON file's chunk: the further files get a line each,
    // the signature of their function (not its doc comment), cited by exactly that line, and
    // no other hit of theirs.
    let spans: Vec<&ctxpack_api::Location> = pack
        .hits
        .iter()
        .filter_map(|h| h.candidate.location.as_ref())
        .collect();
    let lines: Vec<&ctxpack_api::Candidate> = pack
        .hits
        .iter()
        .map(|h| &h.candidate)
        .filter(|c| {
            c.location
                .as_ref()
                .is_some_and(|l| l.start_line == l.end_line)
        })
        .collect();
    assert!(lines.len() >= 2, "{:?}", pack.hits);
    for c in lines {
        let l = c.location.as_ref().expect("a span");
        assert!(l.path.starts_with("src/json_"), "{c:?}");
        assert!(c.text.starts_with("pub fn json_body_"), "{c:?}");
        assert_eq!(l.start_line, 2, "{c:?}");
        assert!(
            c.citation
                .0
                .contains(&format!("#L{}-L{}@", l.start_line, l.end_line))
        );
        assert_eq!(c.cost, Meter::O200k.count(&c.text));
        assert_eq!(
            spans.iter().filter(|s| s.path == l.path).count(),
            1,
            "{c:?}"
        );
    }
    // The widgets are far weaker than the best: each is dropped as weak, none is packed.
    assert!(
        spans.iter().all(|s| !s.path.contains("widget")),
        "{spans:?}"
    );
    let weak: Vec<&Dropped> = pack
        .dropped
        .iter()
        .filter(|d| d.reason == DropReason::Weak)
        .collect();
    assert_eq!(weak.len(), 12, "{:?}", pack.dropped);
    assert!(weak.iter().all(|d| d.citation.0.starts_with("src/widget_")));
    assert!(pack.used <= 600);
    // `context pack` shows whole hits only: no line of a file stands in for its chunk.
    let whole = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: "limit the maximum size of JSON request bodies".into(),
                ..SnapshotPackRequest::context_pack()
            },
            &PackOptions::default(),
        )
        .expect("pack")
        .pack;
    assert!(
        whole
            .hits
            .iter()
            .all(|h| h.candidate.text.lines().count() > 1),
        "{:?}",
        whole.hits
    );
}

/// When the candidates run out before the budget does, the pack gives its strong chunks depth
/// (a cut hit is shown whole again, best first, while the budget pays for it) rather than
/// spending the rest on weak files, and says the candidates ran dry.
#[test]
fn budget_left_after_the_candidates_shows_strong_chunks_whole_not_weak_ones() {
    let f = strong_medium_and_weak(2, 12);
    let workspace = f.workspace();
    let pack_at = |budget: u64| {
        workspace
            .snapshot_pack(
                &SnapshotPackRequest {
                    budget: Budget::new(budget).expect("budget"),
                    ..request("limit the maximum size of JSON request bodies")
                },
                &PackOptions::default(),
            )
            .expect("pack")
            .pack
    };
    let short = &f.head()[..7];
    let pack = pack_at(8000);
    assert_counters(&pack);
    // From 8,000 a chunk is cut to 40 lines; the request reader's 50 are shown whole.
    let first = &pack.hits[0].candidate;
    assert_eq!(first.citation.0, format!("src/request.rs#L1-L50@{short}"));
    assert_eq!(
        first.text,
        std::fs::read_to_string(f.path().join("src/request.rs")).expect("read")
    );
    let paths: Vec<&str> = pack
        .hits
        .iter()
        .filter_map(|h| h.candidate.location.as_ref().map(|l| l.path.as_str()))
        .collect();
    assert_eq!(
        paths,
        ["src/request.rs", "src/json_00.rs", "src/json_01.rs"],
        "{:?}",
        pack.hits
    );
    let weak = pack
        .dropped
        .iter()
        .filter(|d| d.reason == DropReason::Weak)
        .count();
    assert_eq!(weak, 12, "{:?}", pack.dropped);
    assert_eq!(pack.counters.budget_rejected_hits, 12);
    let text = render(
        &pack,
        &RenderOptions {
            format: Format::Text,
            view: View::Default,
            pretty: false,
        },
    );
    assert!(
        text.contains("but 12 far weaker than the best (dropped as weak)")
            && text.contains("the candidate pool ran dry"),
        "{text}"
    );
    let json = pack_json(&pack, View::Default);
    assert!(
        json["dropped"]
            .as_array()
            .expect("dropped")
            .iter()
            .any(|d| d["reason"] == "weak"),
        "{json}"
    );
    // Where the budget is spent, nothing is said: a pack of 2,000 cuts the reader to its
    // matching lines and still leaves the widgets out.
    let small = pack_at(2000);
    assert_counters(&small);
    let first = &small.hits[0].candidate;
    assert!(first.text.contains("max_content_length"), "{}", first.text);
    assert!(
        small
            .hits
            .iter()
            .all(|h| !h.candidate.citation.0.contains("widget")),
        "{:?}",
        small.hits
    );
}
