//! Sessions, in process: a second pack in a session repeats no text the first showed and
//! names it instead; lines partly shown come back as only what is new; `fresh` shows them
//! whole; `recall` gives their text again; sessions are kept apart and within their bounds
//! on every store.

use std::collections::BTreeSet;
use std::sync::Arc;

use ctxpack_api::{
    Access, Budget, ErrorKind, Format, MemorySessions, Pack, PackOptions, RenderOptions,
    SessionLimits, SessionStore, Sessions, SnapshotPack, SnapshotPackRequest, View, Workspace,
    pack_json, render,
};
use ctxpack_store::{FileSessions, SessionKey, ShownRange};

use crate::api::fixture::{Workspaces, budget_impls};

fn request(budget: u64, session: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        goal: "enforce the budget".into(),
        budget: Budget::new(budget).expect("a budget"),
        session: Some(session.into()),
        ..SnapshotPackRequest::default()
    }
}

fn pack(workspace: &Workspace, request: &SnapshotPackRequest) -> SnapshotPack {
    workspace
        .snapshot_pack(
            request,
            &PackOptions {
                record: Some(&RenderOptions::default()),
                ..PackOptions::default()
            },
        )
        .expect("a pack")
}

/// Every line the pack shows as evidence (references excluded): path, number and text.
fn lines(pack: &Pack) -> BTreeSet<(String, u32, String)> {
    pack.hits
        .iter()
        .filter(|h| !h.seen.as_ref().is_some_and(|s| s.whole))
        .flat_map(|h| {
            let l = h.candidate.location.as_ref().expect("a file's lines");
            h.candidate
                .text
                .lines()
                .enumerate()
                .map(|(n, text)| (l.path.clone(), l.start_line + n as u32, text.to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn citations(pack: &Pack) -> Vec<String> {
    pack.hits
        .iter()
        .map(|h| h.candidate.citation.0.clone())
        .collect()
}

#[test]
fn a_second_pack_in_a_session_repeats_no_line_and_names_the_pack_that_showed_it() {
    let f = budget_impls(6);
    let workspace = f.workspace();
    let first = pack(&workspace, &request(2000, "task-1"));
    assert!(first.pack.hits.len() > 2, "{:?}", citations(&first.pack));
    assert!(first.pack.hits.iter().all(|h| h.seen.is_none()));
    assert_eq!(first.pack.session.as_deref(), Some("task-1"));
    let id = first.recorded.id().expect("recorded").to_owned();

    let second = pack(&workspace, &request(2000, "task-1"));
    // Every hit of the first comes back as a reference to it, a few tokens each.
    for hit in &first.pack.hits {
        let again = second
            .pack
            .hits
            .iter()
            .find(|h| h.candidate.citation == hit.candidate.citation)
            .unwrap_or_else(|| {
                panic!(
                    "{} is not referenced: {:#?}\n{}",
                    hit.candidate.citation,
                    second
                        .pack
                        .dropped
                        .iter()
                        .map(|d| format!(
                            "{} {:?} {} {:?}",
                            d.citation, d.reason, d.cost, d.remaining
                        ))
                        .collect::<Vec<_>>(),
                    render(&second.pack, &RenderOptions::default())
                )
            });
        let seen = again.seen.as_ref().expect("seen before");
        assert!(seen.whole);
        assert_eq!(seen.pack, id);
        assert_eq!(seen.citation, hit.candidate.citation);
        assert!(again.candidate.cost <= 16, "{}", again.candidate.cost);
        assert_eq!(seen.saved + again.candidate.cost, hit.candidate.cost);
    }
    // The budget went to new evidence, and no line of the first is shown again.
    let shown = lines(&first.pack);
    let new = lines(&second.pack);
    assert!(!new.is_empty());
    assert!(shown.is_disjoint(&new), "{:?}", shown.intersection(&new));
    // The renderings say which hits are references, and carry none of their text.
    let json = pack_json(&second.pack, View::Default);
    assert_eq!(json["session"]["id"], "task-1");
    assert_eq!(
        json["session"]["references"].as_u64(),
        Some(first.pack.hits.len() as u64)
    );
    assert!(json["session"]["savedTokens"].as_u64().expect("saved") > 100);
    let reference = json["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .find(|h| h["shownBefore"]["whole"] == true)
        .expect("a reference");
    assert_eq!(reference["shownBefore"]["pack"], id.as_str());
    for format in [Format::Markdown, Format::Text, Format::Xml] {
        let text = render(
            &second.pack,
            &RenderOptions {
                format,
                ..RenderOptions::default()
            },
        );
        assert!(text.contains(&id[..12]), "{format}: {text}");
        for (_, _, line) in &shown {
            if line.contains("budget_") {
                assert!(!text.contains(line.as_str()), "{format} repeats {line}");
            }
        }
    }
    // The ledger records the session and the references.
    let recorded = workspace
        .show(second.recorded.id().expect("recorded"))
        .expect("shown");
    assert_eq!(recorded.pack.session.as_deref(), Some("task-1"));
    let seen = |pack: &Pack| {
        pack.hits
            .iter()
            .map(|h| {
                (
                    h.candidate.citation.clone(),
                    h.candidate.text.clone(),
                    h.seen.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(seen(&recorded.pack), seen(&second.pack));

    // Fresh: the first's hits whole again (and the same pack as the first).
    let fresh = pack(
        &workspace,
        &SnapshotPackRequest {
            fresh: true,
            ..request(2000, "task-1")
        },
    );
    assert!(fresh.pack.hits.iter().all(|h| h.seen.is_none()));
    assert_eq!(citations(&fresh.pack), citations(&first.pack));

    // Recall by a prefix of the first pack's id: its text, whole.
    let recall = pack(
        &workspace,
        &SnapshotPackRequest {
            goal: String::new(),
            recall: vec![id[..8].to_owned()],
            ..request(8000, "task-1")
        },
    );
    let mut recalled = citations(&recall.pack);
    let mut expected = citations(&first.pack);
    recalled.sort();
    expected.sort();
    assert_eq!(recalled, expected);
    assert_eq!(lines(&recall.pack), shown);
    // Recall by citation.
    let one = first.pack.hits[0].candidate.citation.0.clone();
    let recall = pack(
        &workspace,
        &SnapshotPackRequest {
            recall: vec![one.clone()],
            ..request(8000, "task-1")
        },
    );
    assert_eq!(citations(&recall.pack), vec![one]);
    // Another session has seen nothing.
    let other = pack(&workspace, &request(2000, "task-2"));
    assert_eq!(citations(&other.pack), citations(&first.pack));
}

#[test]
fn a_hit_partly_shown_before_shows_only_its_new_lines() {
    let f = budget_impls(6);
    let workspace = f.workspace();
    // A small pack cuts each chunk to ten lines; a larger one to forty, around the same
    // matches: the larger one's hits overlap the smaller one's.
    let small = pack(&workspace, &request(1000, "s"));
    let shown = lines(&small.pack);
    let large = pack(&workspace, &request(8000, "s"));
    let partial: Vec<_> = large
        .pack
        .hits
        .iter()
        .filter(|h| h.seen.as_ref().is_some_and(|s| !s.whole))
        .collect();
    assert!(!partial.is_empty(), "{:?}", citations(&large.pack));
    for hit in &partial {
        let l = hit.candidate.location.as_ref().expect("lines");
        // Cited by exactly the lines it shows.
        assert_eq!(
            hit.candidate.text.lines().count() as u32,
            l.end_line - l.start_line + 1
        );
        assert!(
            hit.candidate
                .citation
                .0
                .contains(&format!("#L{}-L{}@", l.start_line, l.end_line))
        );
    }
    let new = lines(&large.pack);
    assert!(shown.is_disjoint(&new), "{:?}", shown.intersection(&new));
}

#[test]
fn session_requests_are_checked_and_sessions_kept_apart() {
    let f = budget_impls(6);
    let workspace = f.workspace();
    let refused = |request: SnapshotPackRequest, field: &str| {
        let e = workspace
            .snapshot_pack(&request, &PackOptions::default())
            .expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.field(), Some(field), "{e}");
    };
    refused(request(2000, ""), "session");
    refused(request(2000, &"x".repeat(129)), "session");
    refused(request(2000, "a\nb"), "session");
    refused(
        SnapshotPackRequest {
            session: None,
            fresh: true,
            ..request(2000, "s")
        },
        "fresh",
    );
    refused(
        SnapshotPackRequest {
            session: None,
            recall: vec!["abcd".into()],
            ..request(2000, "s")
        },
        "recall",
    );
    // Recalling what the session was never shown is not found.
    let e = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                recall: vec!["abcd".into()],
                ..request(2000, "never")
            },
            &PackOptions::default(),
        )
        .expect_err("nothing to recall");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    // A workspace that writes nothing keeps no session of its own.
    pack(&workspace, &request(2000, "index first"));
    let read_only = f.workspace_with(Access::ReadOnly, None);
    let e = read_only
        .snapshot_pack(&request(2000, "s"), &PackOptions::default())
        .expect_err("no sessions");
    assert_eq!(e.field(), Some("session"), "{e}");
    // Given sessions, it keeps them; one owner never sees another's.
    let sessions = Sessions::in_memory();
    let alice = read_only.clone().with_sessions(sessions.for_owner("alice"));
    let bob = read_only.with_sessions(sessions.for_owner("bob"));
    let first = pack(&alice, &request(2000, "s"));
    assert!(
        first.recorded.id().is_none(),
        "a read-only workspace records nothing"
    );
    let again = pack(&alice, &request(2000, "s"));
    assert!(again.pack.hits.iter().any(|h| h.seen.is_some()));
    let theirs = pack(&bob, &request(2000, "s"));
    assert!(theirs.pack.hits.iter().all(|h| h.seen.is_none()));
    // The unrecorded pack's id still names it for a recall.
    let id = &again
        .pack
        .hits
        .iter()
        .find_map(|h| h.seen.clone())
        .expect("seen")
        .pack;
    let recall = pack(
        &alice,
        &SnapshotPackRequest {
            recall: vec![id.clone()],
            ..request(8000, "s")
        },
    );
    assert_eq!(lines(&recall.pack), lines(&first.pack));
}

fn range(pack: &str, line: u32, text: &str) -> ShownRange {
    ShownRange {
        pack: pack.into(),
        citation: format!("a.rs#L{line}"),
        path: "a.rs".into(),
        start_line: line,
        end_line: line,
        text: text.into(),
    }
}

fn key(owner: &str, id: &str) -> SessionKey {
    SessionKey {
        owner: owner.into(),
        id: id.into(),
    }
}

/// The bounds every session store keeps: ranges and bytes per session (oldest first),
/// expiry after inactivity, sessions per owner (least recently used first), owners apart.
pub fn bounds_hold(store: &dyn SessionStore, now: u64) {
    let limits = store.limits();
    assert_eq!(
        limits,
        SessionLimits {
            sessions: 2,
            ranges: 3,
            bytes: 10,
            idle_secs: 100,
        }
    );
    let a = key("o", "a");
    store
        .add(
            &a,
            vec![range("p1", 1, "1111"), range("p1", 2, "2222")],
            now,
        )
        .expect("session store");
    assert_eq!(store.shown(&a, now).expect("session store").len(), 2);
    store
        .add(&a, vec![range("p2", 3, "3333")], now + 1)
        .expect("session store");
    let lines = |at| {
        store
            .shown(&a, at)
            .expect("session store")
            .iter()
            .map(|r| r.start_line)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        lines(now + 1),
        vec![2, 3],
        "12 bytes past 10: the oldest goes"
    );
    store
        .add(&a, vec![range("p3", 4, "4"), range("p3", 5, "5")], now + 2)
        .expect("session store");
    assert_eq!(lines(now + 2), vec![3, 4, 5], "4 ranges past 3");
    assert!(
        store
            .shown(&key("other", "a"), now + 2)
            .expect("session store")
            .is_empty()
    );
    assert!(lines(now + 103).is_empty(), "idle past 100 s");
    store
        .add(&a, vec![range("p4", 9, "9")], now + 103)
        .expect("session store");
    assert_eq!(lines(now + 103), vec![9], "started afresh");
    store
        .add(&key("o", "b"), vec![range("p5", 1, "1")], now + 104)
        .expect("session store");
    store
        .add(&key("other", "x"), vec![range("p", 1, "1")], now + 104)
        .expect("session store");
    store
        .add(&key("o", "c"), vec![range("p6", 1, "1")], now + 105)
        .expect("session store");
    assert!(
        lines(now + 105).is_empty(),
        "a third session: the least recently used goes"
    );
    assert_eq!(
        store
            .shown(&key("o", "b"), now + 105)
            .expect("session store")
            .len(),
        1
    );
    assert_eq!(
        store
            .shown(&key("o", "c"), now + 105)
            .expect("session store")
            .len(),
        1
    );
    assert_eq!(
        store
            .shown(&key("other", "x"), now + 105)
            .expect("session store")
            .len(),
        1
    );
}

fn limits() -> SessionLimits {
    SessionLimits {
        sessions: 2,
        ranges: 3,
        bytes: 10,
        idle_secs: 100,
    }
}

/// The bounds a session store keeps by default are the ones the documentation gives users.
#[test]
fn the_default_session_bounds_are_the_documented_ones() {
    let limits = SessionLimits::default();
    let documented = format!(
        "Each keeps {} sessions per owner (a token on a server), up to {} ranges and {} MiB of text\n\
         per session, and forgets a session after {} hours without a pack",
        limits.sessions,
        "1,000",
        limits.bytes >> 20,
        limits.idle_secs / 3600
    );
    assert_eq!(limits.ranges, 1000);
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md"),
    )
    .expect("docs/mcp.md");
    assert!(
        docs.contains(&documented),
        "docs/mcp.md should say: {documented}"
    );
}

#[test]
fn every_session_store_keeps_its_bounds() {
    bounds_hold(&MemorySessions::new(limits()), 1_000_000);
    // A store directory has one owner, and prunes its files by their time on disk: checked
    // with the real clock.
    let dir = tempfile::tempdir().expect("tempdir");
    let files = FileSessions::new(dir.path(), limits());
    let now = ctxpack_store::session::now_secs();
    let a = key("", "a");
    files
        .add(&a, vec![range("p", 1, "1")], now)
        .expect("session store");
    assert_eq!(files.shown(&a, now).expect("session store").len(), 1);
    assert!(
        files
            .shown(&a, now + 101)
            .expect("session store")
            .is_empty()
    );
    for id in ["b", "c", "d"] {
        files
            .add(&key("", id), vec![range("p", 1, "1")], now)
            .expect("session store");
    }
    let kept = std::fs::read_dir(dir.path().join("sessions"))
        .expect("the sessions directory")
        .count();
    assert_eq!(kept, 2, "a store directory keeps at most `sessions` files");
    // A damaged file is refused, saying how to start afresh; removing it does.
    let file = std::fs::read_dir(dir.path().join("sessions"))
        .expect("the sessions directory")
        .next()
        .expect("a file")
        .expect("an entry")
        .path();
    std::fs::write(&file, b"{not json").expect("damaged");
    let damaged = ["b", "c", "d"]
        .iter()
        .filter_map(|id| files.shown(&key("", id), now).err())
        .next()
        .expect("the damaged session is refused");
    assert!(damaged.to_string().contains("delete it"), "{damaged}");
    std::fs::remove_file(&file).expect("removed");
    // A session file keeps the range and text bounds too, dropping its oldest ranges.
    let e = key("", "e");
    let lines = |at| {
        files
            .shown(&e, at)
            .expect("session store")
            .iter()
            .map(|r| r.start_line)
            .collect::<Vec<_>>()
    };
    files
        .add(
            &e,
            vec![range("p1", 1, "1111"), range("p1", 2, "2222")],
            now,
        )
        .expect("session store");
    files
        .add(&e, vec![range("p2", 3, "3333")], now)
        .expect("session store");
    assert_eq!(lines(now), vec![2, 3], "12 bytes past 10: the oldest goes");
    files
        .add(&e, vec![range("p3", 4, "4"), range("p3", 5, "5")], now)
        .expect("session store");
    assert_eq!(lines(now), vec![3, 4, 5], "4 ranges past 3");
    if let Some(db) = crate::api::backends::postgres() {
        let database = ctxpack_pg::Database::connect(db.url()).expect("connects");
        let sessions: Arc<dyn SessionStore> = Arc::new(database.sessions(limits()));
        bounds_hold(sessions.as_ref(), 1_000_000);
    }
}
