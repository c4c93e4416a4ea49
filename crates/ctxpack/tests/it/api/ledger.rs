//! Artifact scopes and the ledger in process: overlays merged into snapshot packs, artifact
//! faults as typed errors, and every recorded pack replayed as the model saw it — with the
//! configuration it was built with, also after a torn write, and never by following what a
//! tampered record names.

use ctxpack_api::config::{Config, ConfigOptions, Setting, Source};
use ctxpack_api::plan::PlanRunRequest;
use ctxpack_api::{
    Access, ArtifactAddRequest, ArtifactInfo, ArtifactScope, Budget, BudgetCovers, Control,
    DropReason, Error, ErrorKind, Format, Hint, IndexRequest, LogFilter, Meter, Pack, PackOptions,
    PackScope, Recorded, RenderOptions, SelectRequest, SnapshotPackRequest, View, Workspace,
    render,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::api::fixture::{CONFIG, Fixture, Workspaces, project};

const CI_LOG: &str = "running 3 tests\ntest budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\ntest result: FAILED. 2 passed; 1 failed\n";
const NOTES: &str =
    "Session note: the budget overflow happens when a pinned member is larger than the budget.\n";

/// Renders as text with the default view.
const TEXT: RenderOptions = RenderOptions {
    format: Format::Text,
    view: View::Default,
    pretty: false,
};

/// A project indexed at HEAD, with a read-write workspace over it.
fn indexed() -> (Fixture, Workspace) {
    let (f, _) = project();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("HEAD indexes");
    (f, workspace)
}

/// A request for `goal` at HEAD merging the artifacts of `scope`, which never indexes.
fn scoped(goal: &str, scope: PackScope) -> SnapshotPackRequest {
    SnapshotPackRequest {
        goal: goal.into(),
        scope,
        index: false,
        ..SnapshotPackRequest::default()
    }
}

/// Builds a pack, recorded as shown with `rendering` when one is given.
fn build(
    workspace: &Workspace,
    request: &SnapshotPackRequest,
    rendering: Option<&RenderOptions>,
) -> (Pack, Recorded) {
    let built = workspace
        .snapshot_pack(
            request,
            &PackOptions {
                record: rendering,
                index_if_missing: false,
                rendering: None,
            },
        )
        .unwrap_or_else(|e| panic!("packing {:?}: {e}", request.goal));
    (built.pack, built.recorded)
}

/// Builds and records a pack, returning it with its record id.
fn record(
    workspace: &Workspace,
    request: &SnapshotPackRequest,
    rendering: &RenderOptions,
) -> (Pack, String) {
    let (pack, recorded) = build(workspace, request, Some(rendering));
    let id = recorded.id().expect("the pack was recorded").to_owned();
    (pack, id)
}

/// An artifact request of `scope` with the id `id`.
fn artifact(scope: ArtifactScope, id: &str) -> ArtifactAddRequest {
    ArtifactAddRequest {
        id: Some(id.into()),
        ..ArtifactAddRequest::new(scope)
    }
}

/// The lowercase hex SHA-256 of `bytes`.
fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The ids of the ledger's entries, newest first.
fn log_ids(workspace: &Workspace) -> Vec<String> {
    workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger is read")
        .entries
        .into_iter()
        .map(|e| e.id)
        .collect()
}

/// Asserts that `error` is of `kind`, with `hint`.
fn assert_error(error: &Error, kind: ErrorKind, hint: Option<&Hint>, what: &str) {
    assert_eq!(error.kind(), kind, "{what}: {error}");
    assert_eq!(error.hint(), hint, "{what}: {error}");
}

#[test]
fn scope_all_mixes_snapshot_harness_and_evidence() {
    let (_f, workspace) = indexed();
    let evidence = ArtifactAddRequest {
        title: Some("CI run 17".into()),
        name: Some("ci.log".into()),
        ..artifact(ArtifactScope::Evidence, "ci-log-17")
    };
    assert_eq!(
        workspace
            .add_artifact(&evidence, CI_LOG.as_bytes())
            .expect("stored"),
        "ci-log-17"
    );
    let notes = ArtifactAddRequest {
        source_id: Some("notes".into()),
        ..ArtifactAddRequest::new(ArtifactScope::Harness)
    };
    let harness_id = workspace
        .add_artifact(&notes, NOTES.as_bytes())
        .expect("stored");
    assert_eq!(
        harness_id,
        sha256(NOTES.as_bytes())[..16],
        "the default id is a content hash"
    );

    let pack = build(
        &workspace,
        &scoped("budget overflow exceeded", PackScope::All),
        None,
    )
    .0;
    let families: Vec<&str> = pack
        .hits
        .iter()
        .map(|h| h.candidate.family.as_str())
        .collect();
    assert!(families.contains(&"evidence:ci-log-17"), "{families:?}");
    assert!(families.contains(&"artifact:notes"), "{families:?}");
    assert!(
        families.iter().any(|f| f.starts_with("document:")),
        "{families:?}"
    );
    let hit = pack
        .hits
        .iter()
        .map(|h| &h.candidate)
        .find(|c| c.family.as_str() == "evidence:ci-log-17")
        .expect("an evidence hit");
    assert_eq!(hit.citation.as_str(), "evidence:ci-log-17#L1-L4");
    assert_eq!(hit.title.as_deref(), Some("CI run 17"));
    let c = &pack.counters;
    assert_eq!(c.unique_citations, pack.hits.len() + c.budget_rejected_hits);
    assert_eq!(
        c.candidate_hits,
        c.unique_citations + c.duplicate_citations_skipped
    );
    let mut expected = vec!["ci-log-17".to_owned(), harness_id];
    expected.sort();
    assert_eq!(pack.artifacts, expected);

    // Each scope merges only its own artifacts; durable merges none.
    // (scope, families that must appear, families that must not)
    let cases: [(PackScope, &[&str], &[&str]); 3] = [
        (PackScope::Evidence, &["evidence:"], &["artifact:"]),
        (PackScope::Harness, &["artifact:notes"], &["evidence:"]),
        (PackScope::Durable, &[], &["evidence:", "artifact:"]),
    ];
    for (scope, present, absent) in cases {
        let pack = build(&workspace, &scoped("budget overflow exceeded", scope), None).0;
        let families: Vec<&str> = pack
            .hits
            .iter()
            .map(|h| h.candidate.family.as_str())
            .chain(pack.dropped.iter().map(|d| d.family.as_str()))
            .collect();
        for prefix in present {
            assert!(
                families.iter().any(|f| f.starts_with(prefix)),
                "{scope}: no {prefix} in {families:?}"
            );
        }
        for prefix in absent {
            assert!(
                !families.iter().any(|f| f.starts_with(prefix)),
                "{scope}: {prefix} in {families:?}"
            );
        }
    }
}

#[test]
fn overlays_need_the_exact_snapshot_first() {
    let (f, workspace) = indexed();
    workspace
        .add_artifact(&artifact(ArtifactScope::Evidence, "log"), CI_LOG.as_bytes())
        .expect("stored");
    f.write("new.rs", "fn budget_overflow() {}\n");
    let head = f.commit("unindexed");
    let error = workspace
        .snapshot_pack(
            &scoped("budget overflow", PackScope::All),
            &PackOptions::default(),
        )
        .expect_err("a missing snapshot is not indexed, even with artifacts");
    assert_eq!(error.kind(), ErrorKind::NotIndexed, "{error}");
    assert!(
        matches!(error.hint(), Some(Hint::IndexCommit { sha, .. }) if *sha == head),
        "{error:?}"
    );
}

#[test]
fn artifacts_are_added_listed_shown_and_removed() {
    let (f, _) = project();
    let workspace = f.workspace();
    // No store yet: nothing listed, nothing to show or remove.
    assert_eq!(workspace.artifacts(None).expect("listed"), []);
    let error = workspace.artifact("n1").expect_err("no store");
    assert_error(
        &error,
        ErrorKind::NotFound,
        Some(&Hint::CreateStore { documents: false }),
        "show",
    );
    let error = workspace.remove_artifact("n1").expect_err("no store");
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
    // A read-only workspace stores nothing.
    let error = f
        .workspace_with(Access::ReadOnly, None)
        .add_artifact(&artifact(ArtifactScope::Session, "n1"), b"x\n")
        .expect_err("read-only");
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(!f.store().exists());

    let n1 = artifact(ArtifactScope::Session, "n1");
    assert_eq!(
        workspace
            .add_artifact(&n1, b"first note\n")
            .expect("stored"),
        "n1"
    );
    // Same id, same content: nothing to do.
    assert_eq!(
        workspace
            .add_artifact(&n1, b"first note\n")
            .expect("a no-op"),
        "n1"
    );
    let evidence = ArtifactAddRequest {
        source_id: Some("ci".into()),
        title: Some("CI".into()),
        ..artifact(ArtifactScope::Evidence, "e1")
    };
    workspace
        .add_artifact(&evidence, CONFIG.as_bytes())
        .expect("stored");

    let all = workspace.artifacts(None).expect("listed");
    let ids: Vec<&str> = all.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let n1_info = all.iter().find(|a| a.id == "n1").expect("n1 is listed");
    assert_eq!(
        *n1_info,
        ArtifactInfo {
            id: "n1".into(),
            scope: "session".into(),
            source_id: None,
            title: None,
            family: "artifact:n1".into(),
            bytes: 11,
            sha256: sha256(b"first note\n"),
            created_at: n1_info.created_at,
        }
    );
    let only: Vec<String> = workspace
        .artifacts(Some(ArtifactScope::Evidence))
        .expect("listed")
        .into_iter()
        .map(|a| format!("{} {} {:?}", a.id, a.family, a.source_id))
        .collect();
    assert_eq!(only, ["e1 evidence:e1 Some(\"ci\")"]);
    assert_eq!(workspace.artifact("n1").expect("shown").1, "first note\n");
    // Stored text is masked like snapshot files.
    let (info, text) = workspace.artifact("e1").expect("shown");
    assert_eq!(info.title.as_deref(), Some("CI"));
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"), "{text}");
    assert!(text.contains("[REDACTED:"), "{text}");

    let error = workspace.artifact("nope").expect_err("no such artifact");
    assert_error(
        &error,
        ErrorKind::NotFound,
        Some(&Hint::ListArtifacts),
        "show",
    );
    workspace.remove_artifact("n1").expect("removed");
    let error = workspace
        .remove_artifact("n1")
        .expect_err("already removed");
    assert_error(
        &error,
        ErrorKind::NotFound,
        Some(&Hint::ListArtifacts),
        "rm",
    );
    // After removal the id is free again, for any content.
    workspace
        .add_artifact(&n1, b"another note\n")
        .expect("the id is free");
    assert_eq!(workspace.artifact("n1").expect("shown").1, "another note\n");
}

#[test]
fn artifact_faults_are_typed() {
    let (f, _) = project();
    let workspace = f.workspace();
    workspace
        .add_artifact(&artifact(ArtifactScope::Session, "n1"), b"first note\n")
        .expect("stored");
    let session = ArtifactAddRequest::new(ArtifactScope::Session);
    /// A request, its content, and the kind, field and hint of the error it must fail with.
    type Fault = (
        ArtifactAddRequest,
        &'static [u8],
        ErrorKind,
        Option<&'static str>,
        Option<Hint>,
    );
    let cases: Vec<Fault> = vec![
        (
            artifact(ArtifactScope::Session, "n1"),
            b"another note\n",
            ErrorKind::Conflict,
            None,
            Some(Hint::RemoveArtifact { id: "n1".into() }),
        ),
        (
            session.clone(),
            b"bin\0ary",
            ErrorKind::InvalidInput,
            None,
            None,
        ),
        (
            session.clone(),
            b"\xff\xfe",
            ErrorKind::InvalidInput,
            None,
            None,
        ),
        (
            ArtifactAddRequest {
                max_bytes: 4,
                ..session.clone()
            },
            b"too large\n",
            ErrorKind::InvalidInput,
            Some("max_bytes"),
            Some(Hint::RaiseLimit),
        ),
        (
            artifact(ArtifactScope::Session, "../escape"),
            b"x\n",
            ErrorKind::InvalidInput,
            Some("id"),
            None,
        ),
        (
            artifact(ArtifactScope::Session, ".hidden"),
            b"x\n",
            ErrorKind::InvalidInput,
            Some("id"),
            None,
        ),
        (
            artifact(ArtifactScope::Session, ""),
            b"x\n",
            ErrorKind::InvalidInput,
            Some("id"),
            None,
        ),
        (
            ArtifactAddRequest {
                source_id: Some("a/b".into()),
                ..session
            },
            b"x\n",
            ErrorKind::InvalidInput,
            Some("source_id"),
            None,
        ),
    ];
    for (request, content, kind, field, hint) in cases {
        let what = format!("{request:?} with {content:?}");
        let error = workspace.add_artifact(&request, content).expect_err(&what);
        assert_error(&error, kind, hint.as_ref(), &what);
        assert_eq!(error.field(), field, "{what}");
    }
    // Nothing was stored by the failures, and n1 keeps its content.
    assert_eq!(workspace.artifacts(None).expect("listed").len(), 1);
    assert_eq!(workspace.artifact("n1").expect("shown").1, "first note\n");
    // Scopes are named, and unknown names are refused as the field `scope`.
    let error = "working-memory"
        .parse::<ArtifactScope>()
        .expect_err("an unknown scope");
    assert_eq!(
        (error.kind(), error.field()),
        (ErrorKind::InvalidInput, Some("scope"))
    );
    for scope in [
        ArtifactScope::Session,
        ArtifactScope::Harness,
        ArtifactScope::Evidence,
    ] {
        assert_eq!(scope.name().parse::<ArtifactScope>().ok(), Some(scope));
    }
}

#[test]
fn show_replays_what_the_model_saw() {
    let (_f, workspace) = indexed();
    let request = SnapshotPackRequest {
        goal: "budget enforcement".into(),
        budget: Budget::new(12).expect("valid"),
        // Content alone, so that a budget this small still packs and drops.
        budget_covers: BudgetCovers::Content,
        ..SnapshotPackRequest::default()
    };
    let mut ids = Vec::new();
    for format in Format::ALL {
        for view in View::ALL {
            for pretty in [false, true] {
                let rendering = RenderOptions {
                    format,
                    view,
                    pretty,
                };
                let (pack, id) = record(&workspace, &request, &rendering);
                let shown = workspace.show(&id[..12]).expect("the record replays");
                assert_eq!(shown.record.id, id);
                assert_eq!(shown.rendering, rendering);
                assert_eq!(shown.exact_output, None);
                assert!(shown.torn.is_empty());
                assert_eq!(
                    render(&shown.pack, &shown.rendering),
                    render(&pack, &rendering),
                    "{rendering:?}"
                );
                ids.push(id);
            }
        }
    }
    let newest = ids.last().expect("recorded").clone();
    let shown = workspace.show(&newest).expect("the full id replays");
    assert!(
        shown
            .pack
            .dropped
            .iter()
            .any(|d| d.reason == DropReason::OverBudget),
        "{:?}",
        shown.pack.dropped
    );
    // Newest first, one entry per pack, each describing its pack.
    ids.reverse();
    assert_eq!(log_ids(&workspace), ids);
    let log = workspace.log(1).expect("the ledger is read");
    let entry = &log.entries[0];
    assert_eq!(entry.id, newest);
    assert_eq!(
        (
            entry.surface.as_str(),
            entry.goal.as_str(),
            entry.budget,
            entry.meter.as_str(),
            entry.selector.as_str(),
            entry.parent.as_deref()
        ),
        ("pack", "budget enforcement", 12, "o200k", "coverage", None)
    );
    assert_eq!(
        entry.snapshot.as_deref(),
        shown
            .pack
            .snapshot
            .as_ref()
            .map(|s| s.resolved_sha.as_str())
    );
    assert_eq!(
        (entry.used_tokens, entry.selected_hits, entry.dropped),
        (
            shown.pack.used,
            shown.pack.hits.len(),
            shown.pack.dropped.len()
        )
    );
    // Same inputs, same output: the same pack id.
    let last = RenderOptions {
        format: Format::Xml,
        view: View::Full,
        pretty: true,
    };
    assert_eq!(record(&workspace, &request, &last).1, newest);

    // (id, kind, field, hint)
    let cases = [
        ("deadbeef", ErrorKind::NotFound, None, Hint::ListPacks),
        ("xyz", ErrorKind::InvalidInput, Some("id"), Hint::ListPacks),
        ("abc", ErrorKind::InvalidInput, Some("id"), Hint::ListPacks),
        ("", ErrorKind::InvalidInput, Some("id"), Hint::ListPacks),
    ];
    for (id, kind, field, hint) in cases {
        let error = workspace.show(id).expect_err(id);
        assert_error(&error, kind, Some(&hint), id);
        assert_eq!(error.field(), field, "{id}");
    }
}

#[test]
fn packs_are_recorded_only_when_asked_and_allowed() {
    let (f, workspace) = indexed();
    let request = scoped("budget", PackScope::Durable);
    // Not asked.
    assert_eq!(build(&workspace, &request, None).1, Recorded::NotAsked);
    // A read-only workspace records nothing, even when asked.
    let read_only = f.workspace_with(Access::ReadOnly, None);
    assert_eq!(
        build(&read_only, &request, Some(&TEXT)).1,
        Recorded::NotAsked
    );
    assert_eq!(log_ids(&workspace), Vec::<String>::new());
    assert!(!f.store().join("ledger").exists(), "no trace");
    // A caller name is recorded as the surface.
    let mcp = workspace.clone().with_caller("mcp");
    let (_, id) = record(&mcp, &request, &TEXT);
    let log = workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger is read");
    assert_eq!(log.entries[0].id, id);
    assert_eq!(log.entries[0].surface, "mcp");
}

#[test]
fn a_ledger_that_cannot_be_written_does_not_fail_the_pack() {
    let (f, workspace) = indexed();
    // A file where the ledger directory should be.
    std::fs::write(f.store().join("ledger"), "in the way").expect("write");
    let (pack, recorded) = build(
        &workspace,
        &scoped("budget", PackScope::Durable),
        Some(&TEXT),
    );
    assert!(!pack.hits.is_empty());
    let Recorded::Failed(error) = recorded else {
        panic!("recording cannot succeed: {recorded:?}");
    };
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
}

#[test]
fn select_records_into_an_existing_store_only() {
    let (f, _) = project();
    let input = br#"[{"id": "a", "text": "one two"}]"#;
    let request = SelectRequest {
        budget: Budget::new(5).expect("valid"),
        ..SelectRequest::default()
    };
    let markdown = RenderOptions {
        format: Format::Markdown,
        ..TEXT
    };
    // A store directory that is not there is a mistake, not a place to start one.
    let missing = f.path().join("typo");
    let error = Workspace::for_store(&missing, Access::ReadWrite)
        .expect("a workspace over a path")
        .select(&request, input, &markdown)
        .expect_err("no store");
    assert_error(
        &error,
        ErrorKind::NotFound,
        Some(&Hint::CreateStore { documents: true }),
        "select",
    );
    assert!(!missing.exists());

    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("the store is created");
    let store = Workspace::for_store(&f.store(), Access::ReadWrite).expect("a store workspace");
    let (pack, recorded) = store
        .select(&request, input, &markdown)
        .expect("selects and records");
    let id = recorded.id().expect("recorded");
    let log = workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger is read");
    assert_eq!(log.entries[0].id, id);
    assert_eq!(log.entries[0].surface, "select");
    assert_eq!(log.entries[0].snapshot, None);
    let shown = workspace.show(id).expect("replays");
    assert_eq!(shown.rendering, markdown);
    assert_eq!(
        render(&shown.pack, &shown.rendering),
        render(&pack, &markdown)
    );
}

#[test]
fn a_torn_ledger_record_is_ignored_and_reported() {
    let (f, workspace) = indexed();
    let (_, first) = record(&workspace, &scoped("budget", PackScope::Durable), &TEXT);
    let path = f.store().join("ledger/packs.jsonl");
    let mut bytes = std::fs::read(&path).expect("ledger");
    bytes.extend_from_slice(br#"{"id":"0123","time":1,"surface":"pa"#);
    std::fs::write(&path, &bytes).expect("tear");
    let log = workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("a torn ledger reads");
    assert_eq!(log.torn, [2]);
    assert_eq!(log.entries.len(), 1);
    let shown = workspace.show(&first).expect("the whole record replays");
    assert_eq!(shown.torn, [2]);
    // The next pack is recorded whole after the torn line.
    let (_, second) = record(
        &workspace,
        &scoped("readme cakes", PackScope::Durable),
        &TEXT,
    );
    let log = workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger is read");
    assert_eq!(log.torn, [2]);
    let ids: Vec<&str> = log.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()]);
    workspace.show(&second).expect("the new record replays");
}

/// Every page and every lookup by id, through the index: the same as the records file says.
fn assert_pages_follow_the_records(workspace: &Workspace, what: &str) {
    let ids = log_ids(workspace);
    for limit in [1, 2, 50] {
        for offset in 0..=ids.len() {
            let page = workspace
                .log_page(&LogFilter {
                    offset,
                    limit,
                    ..LogFilter::default()
                })
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let listed: Vec<&str> = page.entries.iter().map(|e| e.id.as_str()).collect();
            let expected: Vec<&str> = ids
                .iter()
                .skip(offset)
                .take(limit)
                .map(String::as_str)
                .collect();
            assert_eq!((listed, page.total), (expected, ids.len()), "{what}");
        }
    }
    for id in &ids {
        let shown = workspace
            .show(id)
            .unwrap_or_else(|e| panic!("{what}: {id}: {e}"));
        assert_eq!(&shown.record.id, id, "{what}");
    }
}

/// The index's lines, each whole.
fn index_lines(f: &Fixture) -> Vec<Value> {
    std::fs::read_to_string(f.store().join("ledger/index.jsonl"))
        .expect("an index")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a whole index line"))
        .collect()
}

#[test]
fn the_ledger_index_is_derived_and_never_trusted_past_the_records() {
    let (f, workspace) = indexed();
    for goal in ["budget", "readme cakes", "configuration"] {
        record(&workspace, &scoped(goal, PackScope::Durable), &TEXT);
    }
    let index = f.store().join("ledger/index.jsonl");
    let records = f.store().join("ledger/packs.jsonl");
    assert_eq!(index_lines(&f).len(), 3, "one index line per record");
    assert_pages_follow_the_records(&workspace, "indexed");

    // No index (a ledger written before there was one): read from the records; the next
    // append indexes every record.
    std::fs::remove_file(&index).expect("remove");
    assert_pages_follow_the_records(&workspace, "no index");
    record(&workspace, &scoped("cakes", PackScope::Durable), &TEXT);
    assert_eq!(index_lines(&f).len(), 4);
    assert_pages_follow_the_records(&workspace, "indexed again");

    // A damaged line inside: the entries before it are used, the rest is read from the
    // records.
    let text = std::fs::read_to_string(&index).expect("index");
    let mut lines: Vec<&str> = text.lines().collect();
    let whole = lines[1];
    lines[1] = "{\"l\":2,\"o\":";
    std::fs::write(&index, lines.join("\n") + "\n").expect("damage");
    assert_pages_follow_the_records(&workspace, "damaged inside");
    // A last line torn by a crash: the next append rewrites the index whole.
    lines[1] = whole;
    let torn = lines.join("\n");
    std::fs::write(&index, &torn[..torn.len() - 5]).expect("tear");
    assert_pages_follow_the_records(&workspace, "torn at the end");
    record(&workspace, &scoped("readme", PackScope::Durable), &TEXT);
    assert_eq!(index_lines(&f).len(), 5);
    assert_pages_follow_the_records(&workspace, "rewritten");

    // An index that starts at a later record is not followed: its first entry is not where
    // the records start.
    let text = std::fs::read_to_string(&index).expect("index");
    let last = text.lines().last().expect("a line");
    std::fs::write(&index, format!("{last}\n")).expect("truncate");
    assert_pages_follow_the_records(&workspace, "an index that starts late");

    // Something other than a file where the index goes is never opened (a FIFO would block),
    // and the next append replaces it.
    std::fs::remove_file(&index).expect("remove");
    let status = std::process::Command::new("mkfifo")
        .arg(&index)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    assert_pages_follow_the_records(&workspace, "a FIFO index");
    record(
        &workspace,
        &scoped("cakes budget", PackScope::Durable),
        &TEXT,
    );
    assert_eq!(index_lines(&f).len(), 6);

    // An index that names a length past the records is not followed (nor allocated).
    let huge = "{\"l\":1,\"o\":0,\"n\":18446744073709551000,\"i\":\"ab\",\"t\":0,\"g\":\"\"}\n";
    std::fs::write(&index, huge).expect("tamper");
    assert_pages_follow_the_records(&workspace, "a length past the records");

    // Records rewritten in another order under an index of the old places: the index names
    // lines that hold other records, so the records file is read instead.
    record(
        &workspace,
        &scoped("budget cakes", PackScope::Durable),
        &TEXT,
    );
    let text = std::fs::read_to_string(&records).expect("records");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.reverse();
    std::fs::write(&records, lines.join("\n") + "\n").expect("reorder");
    assert_pages_follow_the_records(&workspace, "reordered records");
    assert_eq!(log_ids(&workspace).len(), 7);
    // The next append finds its last line elsewhere and indexes the records again.
    record(
        &workspace,
        &scoped("readme budget", PackScope::Durable),
        &TEXT,
    );
    let lines = index_lines(&f);
    let records_now = std::fs::read_to_string(&records).expect("records");
    let ids: Vec<Value> = records_now
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a record")["id"].clone())
        .collect();
    let listed: Vec<Value> = lines.iter().map(|e| e["i"].clone()).collect();
    assert_eq!(listed, ids);

    // An index line that names another record's id: the record at its place is not that
    // record, so the records file is read instead.
    let text = std::fs::read_to_string(&index).expect("index");
    let mut entries: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("an index line"))
        .collect();
    let (first, last) = (entries[0]["i"].clone(), entries[7]["i"].clone());
    entries[0]["i"] = last;
    entries[7]["i"] = first;
    let swapped: String = entries.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&index, swapped).expect("swap");
    assert_pages_follow_the_records(&workspace, "swapped ids");

    // A record torn by a crash is an index line without an id, reported where it was.
    let (f, workspace) = indexed();
    record(&workspace, &scoped("budget", PackScope::Durable), &TEXT);
    let mut bytes = std::fs::read(f.store().join("ledger/packs.jsonl")).expect("records");
    bytes.extend_from_slice(br#"{"id":"0123","time":1,"surface":"pa"#);
    std::fs::write(f.store().join("ledger/packs.jsonl"), &bytes).expect("tear");
    let (_, second) = record(&workspace, &scoped("readme", PackScope::Durable), &TEXT);
    let lines = index_lines(&f);
    assert_eq!(lines.len(), 3);
    assert!(lines[1].get("i").is_none(), "{}", lines[1]);
    assert_eq!(lines[2]["l"], 3);
    assert_eq!(workspace.show(&second).expect("shown").torn, [2]);
    assert_pages_follow_the_records(&workspace, "torn");
}

#[test]
fn concurrent_appends_are_indexed_in_order() {
    let (f, workspace) = indexed();
    let (pack, _) = build(&workspace, &scoped("budget", PackScope::Durable), None);
    // Four writers with a ledger each, as four processes would have, appending at once.
    std::thread::scope(|s| {
        for writer in 0..4 {
            let (f, pack) = (&f, &pack);
            s.spawn(move || {
                let ledger = ctxpack_store::Ledger::new(&f.store());
                let context = ctxpack_store::RecordContext {
                    surface: format!("writer {writer}"),
                    ..ctxpack_store::RecordContext::default()
                };
                for _ in 0..25 {
                    ledger.append(pack, &context).expect("appended");
                }
            });
        }
    });
    let records = std::fs::read_to_string(f.store().join("ledger/packs.jsonl")).expect("records");
    assert_eq!(records.lines().count(), 100, "no empty or torn lines");
    let mut offset = 0;
    for (n, (entry, line)) in index_lines(&f).iter().zip(records.lines()).enumerate() {
        let record: Value = serde_json::from_str(line).expect("a whole record");
        assert_eq!(entry["l"], n + 1);
        assert_eq!(entry["o"], offset);
        assert_eq!(entry["n"], line.len());
        assert_eq!(entry["i"], record["id"]);
        offset += line.len() + 1;
    }
    assert_eq!(index_lines(&f).len(), 100);
}

#[test]
fn tampered_records_are_refused() {
    let (f, workspace) = indexed();
    let pretty = RenderOptions {
        format: Format::Json,
        view: View::Default,
        pretty: true,
    };
    let (pack, id) = record(&workspace, &scoped("budget", PackScope::Durable), &pretty);
    let shown = workspace.show(&id).expect("replays");
    assert!(shown.rendering.pretty);
    assert_eq!(
        render(&shown.pack, &shown.rendering),
        render(&pack, &pretty)
    );

    let path = f.store().join("ledger/packs.jsonl");
    let ledger = std::fs::read_to_string(&path).expect("ledger");
    let original: Value =
        serde_json::from_str(ledger.lines().last().expect("a record")).expect("JSON");
    let text_hash = original["hits"][0]["text"]
        .as_str()
        .expect("a text hash")
        .to_owned();
    // (id of the appended copy, the hit text it names, what the refusal says)
    let cases = [
        (
            "eeee".repeat(16),
            "../../../../../../etc/hostname".to_owned(),
            "not a SHA-256",
        ),
        ("dddd".repeat(16), "0".repeat(64), "cannot be read"),
        ("cccc".repeat(16), text_hash.to_uppercase(), "not a SHA-256"),
    ];
    for (copy_id, text, refusal) in &cases {
        let mut record = original.clone();
        record["id"] = Value::String(copy_id.clone());
        record["hits"][0]["text"] = Value::String(text.clone());
        let mut ledger = std::fs::read_to_string(&path).expect("ledger");
        ledger.push_str(&format!("{record}\n"));
        std::fs::write(&path, ledger).expect("write");
        // A record whose content no longer matches its id is refused before anything else.
        let error = workspace.show(&copy_id[..4]).expect_err(refusal);
        assert_eq!(error.kind(), ErrorKind::Damaged, "{text}: {error}");
        assert!(
            error.message().contains("was changed after it was written"),
            "{text}: {error}"
        );
        // Sealed with a matching id, the text it names is still checked.
        let mut sealed: ctxpack_store::LedgerRecord =
            serde_json::from_value(record).expect("a record");
        sealed.id = sealed.content_hash();
        let mut ledger = std::fs::read_to_string(&path).expect("ledger");
        ledger.push_str(&format!(
            "{}\n",
            serde_json::to_string(&sealed).expect("JSON")
        ));
        std::fs::write(&path, ledger).expect("write");
        let error = workspace.show(&sealed.id).expect_err(refusal);
        assert_eq!(error.kind(), ErrorKind::Damaged, "{text}: {error}");
        assert!(error.message().contains(refusal), "{text}: {error}");
    }
    // Two records that share a prefix need more digits.
    let mut record = original.clone();
    record["id"] = Value::String(format!("{}{}", &id[..6], "0".repeat(58)));
    let mut ledger = std::fs::read_to_string(&path).expect("ledger");
    ledger.push_str(&format!("{record}\n"));
    std::fs::write(&path, ledger).expect("write");
    let error = workspace.show(&id[..6]).expect_err("ambiguous");
    assert_error(
        &error,
        ErrorKind::InvalidInput,
        Some(&Hint::MoreDigits),
        "ambiguous",
    );
    assert_eq!(error.field(), Some("id"));
    workspace.show(&id).expect("the full id is not ambiguous");
    // A stored text that no longer matches its hash.
    let stored = f
        .store()
        .join("ledger/texts")
        .join(&text_hash[..2])
        .join(&text_hash[2..]);
    std::fs::write(&stored, "something else").expect("tamper");
    let error = workspace.show(&id).expect_err("a changed text");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    assert!(
        error.message().contains("does not match its hash"),
        "{error}"
    );
}

/// The ledger line of the record `id`, as JSON.
fn record_line(f: &Fixture, id: &str) -> Value {
    let ledger = std::fs::read_to_string(f.store().join("ledger/packs.jsonl")).expect("ledger");
    ledger
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|record| record["id"] == id)
        .unwrap_or_else(|| panic!("no record {id}"))
}

/// Appends a record to the ledger.
fn append_line(f: &Fixture, record: &Value) {
    let path = f.store().join("ledger/packs.jsonl");
    let mut ledger = std::fs::read_to_string(&path).expect("ledger");
    ledger.push_str(&format!("{record}\n"));
    std::fs::write(&path, ledger).expect("write");
}

#[test]
fn the_effective_configuration_is_recorded_and_replayed() {
    let (f, workspace) = indexed();
    f.write("ctxpack.toml", "budget = 400\nselector = \"diverse\"\n");
    let mut config = Config::load(&ConfigOptions {
        cwd: f.path().to_owned(),
        environment: [("CTXPACK_VIEW".to_owned(), "full".into())].into(),
        ..ConfigOptions::default()
    })
    .expect("the configuration loads");
    config.meter = Some(Setting::flag(Meter::Words));
    let request = config.apply_pack(scoped("budget enforcement", PackScope::Durable));
    let rendering = config.apply_render(TEXT);
    let effective = config
        .effective(
            &SnapshotPackRequest::default(),
            &TEXT,
            &PlanRunRequest::default(),
        )
        .for_packs();
    let configured = workspace.clone().with_config(effective.clone());
    assert_eq!(configured.config(), Some(&effective));
    let (pack, id) = record(&configured, &request, &rendering);
    assert_eq!(pack.budget.get(), 400);

    let shown = workspace.show(&id).expect("the record replays");
    assert_eq!(shown.config.as_ref(), Some(&effective));
    assert_eq!(shown.rendering, rendering);
    assert_eq!(
        render(&shown.pack, &shown.rendering),
        render(&pack, &rendering)
    );
    let config = shown.config.expect("recorded");
    // (key, value, source)
    let repository = Source::Repository(f.path().join("ctxpack.toml"));
    let expected = [
        ("budget", serde_json::json!(400), repository.clone()),
        ("selector", serde_json::json!("diverse"), repository),
        ("meter", serde_json::json!("words"), Source::Flag),
        (
            "view",
            serde_json::json!("full"),
            Source::Environment("CTXPACK_VIEW".into()),
        ),
        ("format", serde_json::json!("text"), Source::Default),
    ];
    for (key, value, source) in expected {
        let setting = config
            .get(key)
            .unwrap_or_else(|| panic!("{key} is recorded"));
        assert_eq!(
            (&setting.value, &setting.source),
            (&value, &source),
            "{key}"
        );
    }
    assert!(
        config.get("allow_run").is_none(),
        "plan keys are not a pack's"
    );
    let line = record_line(&f, &id);
    assert_eq!(line["config"][0]["key"], "budget");
    assert_eq!(line["config"][0]["source"], "repository");

    // The same pack built without a configuration records none, so records written before
    // configuration was recorded keep their ids and read as they did.
    let (_, plain) = record(&workspace, &request, &rendering);
    assert_ne!(plain, id, "the id covers the configuration");
    assert!(record_line(&f, &plain).get("config").is_none());
    assert_eq!(workspace.show(&plain).expect("replays").config, None);
    let mut without = line.clone();
    without.as_object_mut().expect("an object").remove("config");
    let resealed: ctxpack_store::LedgerRecord =
        serde_json::from_value(without).expect("an old record still reads");
    assert_eq!(resealed.content_hash(), plain);

    // A recorded value changed afterwards is refused: the id seals the configuration too.
    let mut tampered = line;
    tampered["id"] = Value::String("ffff".repeat(16));
    tampered["config"][0]["value"] = serde_json::json!(8000);
    append_line(&f, &tampered);
    let error = workspace.show("ffff").expect_err("a changed configuration");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    assert!(
        error.message().contains("was changed after it was written"),
        "{error}"
    );
    // Sealed again, an unknown source is damage, not a guess.
    tampered["config"][0]["value"] = serde_json::json!(12);
    tampered["config"][0]["source"] = Value::String("gossip".into());
    let mut sealed: ctxpack_store::LedgerRecord =
        serde_json::from_value(tampered).expect("a record");
    sealed.id = sealed.content_hash();
    append_line(&f, &serde_json::to_value(&sealed).expect("JSON"));
    let error = workspace.show(&sealed.id).expect_err("an unknown source");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    assert!(error.message().contains("gossip"), "{error}");
}

/// The problems `verify` finds with the ledger's index.
fn index_problems(workspace: &Workspace, repair: bool) -> Vec<String> {
    let report = workspace
        .verify(&ctxpack_api::VerifyRequest { repair }, &Control::new())
        .expect("verify runs");
    let list = if repair {
        &report.remaining
    } else {
        &report.found
    };
    list.iter()
        .filter(|p| p.part == "ledger index")
        .map(|p| p.detail.clone())
        .collect()
}

#[test]
fn a_damaged_ledger_index_never_hides_a_record_from_show() {
    let (f, workspace) = indexed();
    let ids: Vec<String> = ["budget", "readme cakes", "configuration"]
        .into_iter()
        .map(|goal| record(&workspace, &scoped(goal, PackScope::Durable), &TEXT).1)
        .collect();
    let index = f.store().join("ledger/index.jsonl");
    let sound = std::fs::read_to_string(&index).expect("index");
    let entries = index_lines(&f);
    let write = |entries: &[Value]| {
        let text: String = entries.iter().map(|e| format!("{e}\n")).collect();
        std::fs::write(&index, text).expect("tamper");
    };
    let mut without_line = entries.clone();
    without_line[1]
        .as_object_mut()
        .expect("an entry")
        .remove("l");
    let mut duplicate = entries.clone();
    duplicate[1]["i"] = entries[0]["i"].clone();
    // The second record's bytes claimed as empty lines: the third entry follows the first,
    // as many lines later as the second record has bytes.
    let mut skipped = vec![entries[0].clone(), entries[2].clone()];
    let gap = entries[1]["n"].as_u64().expect("a length") + 1;
    skipped[1]["l"] = Value::from(entries[0]["l"].as_u64().expect("a line") + 1 + gap);
    for (what, tampered) in [
        ("an entry without its line", without_line),
        ("a duplicate id", duplicate),
        ("bytes claimed as skipped lines", skipped),
    ] {
        write(&tampered);
        for id in &ids {
            let shown = workspace
                .show(id)
                .unwrap_or_else(|e| panic!("{what}: {id}: {e}"));
            assert_eq!(&shown.record.id, id, "{what}");
        }
        assert!(
            !index_problems(&workspace, false).is_empty(),
            "{what}: verify finds the index wrong"
        );
        assert!(
            index_problems(&workspace, true).is_empty(),
            "{what}: verify --repair writes it again"
        );
        assert_eq!(
            std::fs::read_to_string(&index).expect("index"),
            sound,
            "{what}"
        );
        assert_eq!(log_ids(&workspace).len(), 3, "{what}");
    }
}

#[test]
fn a_long_goal_is_indexed_by_its_start_and_found_by_any_part() {
    let (f, workspace) = indexed();
    let words: String = (0..6_000).map(|n| format!("word{n} ")).collect();
    let goal = format!("budget {words}zebra-tail");
    assert!(goal.len() > 48 * 1024);
    let (_, id) = record(&workspace, &scoped(&goal, PackScope::Durable), &TEXT);
    record(&workspace, &scoped("readme", PackScope::Durable), &TEXT);
    // The record holds the whole goal once; the index line holds its start and a digest.
    let index = f.store().join("ledger/index.jsonl");
    let len = std::fs::metadata(&index).expect("index").len();
    assert!(len < 4_000, "an index of {len} bytes");
    let entries = index_lines(&f);
    assert_eq!(
        entries[0]["g"].as_str().map(|g| g.chars().count()),
        Some(ctxpack_store::ledger::INDEXED_GOAL_CHARS)
    );
    assert_eq!(
        entries[0]["h"],
        Value::from(
            Sha256::digest(goal.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )
    );
    assert_eq!(workspace.show(&id).expect("shown").record.goal, goal);
    // A goal filter on words past the indexed start still finds it, and only it.
    for (filter, expected) in [
        ("zebra-tail", 1),
        ("word5999", 1),
        ("budget", 1),
        ("nothing", 0),
    ] {
        let page = workspace
            .log_page(&LogFilter {
                goal: Some(filter.into()),
                limit: 10,
                ..LogFilter::default()
            })
            .expect("a page");
        assert_eq!(page.total, expected, "{filter}");
    }

    // An index an older version wrote, with whole goals: verify says so, and the next append
    // writes it again with the starts alone.
    let mut old = entries.clone();
    old[0]["g"] = Value::from(goal.clone());
    old[0].as_object_mut().expect("an entry").remove("h");
    std::fs::write(
        &index,
        old.iter().map(|e| format!("{e}\n")).collect::<String>(),
    )
    .expect("an older index");
    assert!(
        index_problems(&workspace, false)
            .iter()
            .any(|p| p.contains("whole goals")),
        "verify reports the older index"
    );
    record(
        &workspace,
        &scoped("configuration", PackScope::Durable),
        &TEXT,
    );
    let lines = index_lines(&f);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], entries[0]);
    assert!(index_problems(&workspace, false).is_empty());
}
