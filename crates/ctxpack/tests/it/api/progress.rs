//! Index progress reaches the API's progress sink in every phase, at a counted pace.

use std::sync::{Arc, Mutex};

use ctxpack_api::{Control, IndexRequest, Progress};
use ctxpack_index::indexer::PROGRESS_FILES;

use crate::api::fixture::{Fixture, Workspaces};

/// The phases of an index run, in order.
const PHASES: [&str; 4] = ["reading", "chunking", "lexical", "committing"];

/// Indexes HEAD of `fixture` and returns every progress event, in order.
fn events(fixture: &Fixture) -> Vec<Progress> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let control = Control::new().with_progress(move |p: &Progress| {
        sink.lock().expect("not poisoned").push(*p);
    });
    let summary = fixture
        .workspace()
        .index(&IndexRequest::default(), &control)
        .expect("indexes");
    assert!(!summary.already_indexed);
    seen.lock().expect("not poisoned").clone()
}

/// Checks the events of one run: the phases in order, each reporting when it starts (0) and
/// ends (its total), never more than `PROGRESS_FILES` files apart; returns each phase's
/// total and number of events.
fn check(events: &[Progress]) -> Vec<(&'static str, u64, usize)> {
    let mut phases: Vec<(&'static str, Vec<Progress>)> = Vec::new();
    for event in events {
        match phases.last_mut() {
            Some((phase, list)) if *phase == event.phase => list.push(*event),
            _ => phases.push((event.phase, vec![*event])),
        }
    }
    // Reading first reports before the tree is walked (a total of 0), then with its total.
    let names: Vec<&str> = phases.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, PHASES, "every phase reports, in order: {events:?}");
    phases
        .iter()
        .map(|(name, list)| {
            let total = list.last().expect("non-empty").total.expect("a total");
            let first = list
                .iter()
                .position(|p| p.total == Some(total))
                .expect("total");
            let with_total = &list[first..];
            assert_eq!(with_total[0].done, 0, "{name} reports its start");
            assert_eq!(
                with_total.last().expect("non-empty").done,
                total,
                "{name} reports its end"
            );
            for pair in with_total.windows(2) {
                assert!(pair[1].done > pair[0].done, "{name} counts up: {pair:?}");
                assert!(
                    pair[1].done - pair[0].done <= PROGRESS_FILES,
                    "{name} reports at least every {PROGRESS_FILES} files: {pair:?}"
                );
            }
            (*name, total, with_total.len())
        })
        .collect()
}

#[test]
fn every_phase_reports_at_start_end_and_every_256_files() {
    assert_eq!(PROGRESS_FILES, 256, "the documented pace");
    let fixture = Fixture::new();
    for i in 0..700 {
        fixture.write(
            &format!("src/m{:02}/f{i:04}.rs", i % 7),
            format!("/// Item {i}.\npub fn item_{i}() -> u32 {{ {i} }}\n"),
        );
    }
    fixture.commit("seven hundred files");
    // 0, 256, 512 and 700: start, two paced reports and the end. The lexical phase only
    // commits: chunking added each new version's entries as it wrote it.
    assert_eq!(
        check(&events(&fixture)),
        [
            ("reading", 700, 4),
            ("chunking", 700, 4),
            ("lexical", 0, 1),
            ("committing", 700, 4),
        ]
    );

    // The next commit changes 300 files: its tree is diffed against the indexed parent's, so
    // every phase sees only the 300 changed paths.
    for i in 0..300 {
        fixture.write(
            &format!("src/m{:02}/f{i:04}.rs", i % 7),
            format!("/// Item {i}, changed.\npub fn item_{i}() -> u32 {{ {i} + 1 }}\n"),
        );
    }
    fixture.commit("three hundred changed");
    assert_eq!(
        check(&events(&fixture)),
        [
            ("reading", 300, 3),
            ("chunking", 300, 3),
            ("lexical", 0, 1),
            ("committing", 300, 3),
        ]
    );
}

#[test]
fn a_phase_with_nothing_to_do_still_reports_once() {
    let fixture = Fixture::new();
    fixture.write("a.rs", "pub fn a() {}\n");
    fixture.write("b.rs", "pub fn b() {}\n");
    fixture.commit("one");
    let _ = events(&fixture);
    // Only a deletion: nothing new to chunk and write or add to the lexical index.
    fixture.git(&["rm", "-q", "a.rs"]);
    fixture.git(&["commit", "-q", "-m", "two"]);
    let phases = check(&events(&fixture));
    assert_eq!(
        phases,
        [
            ("reading", 1, 2),
            ("chunking", 0, 1),
            ("lexical", 0, 1),
            ("committing", 1, 2),
        ]
    );
}
