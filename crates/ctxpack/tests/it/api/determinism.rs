//! Deterministic by construction: a snapshot pack depends on the snapshot, the goal and the
//! options, never on what else the store has held. Two stores over one repository — one that
//! indexed only commit X, one that first indexed twenty other commits full of the goals' words
//! (some at X's own paths) — give byte-identical packs at X.

use std::path::Path;

use ctxpack_api::{
    Access, Control, IndexRequest, PackOptions, SnapshotPackRequest, View, Workspace, pack_json,
};

use crate::api::fixture::{Fixture, Lcg, Workspaces};

/// The goals, each about a part of the project at X.
const GOALS: [&str; 10] = [
    "how is the token budget enforced",
    "retry requests with exponential backoff",
    "cache eviction of stale entries",
    "parse the configuration file",
    "write log records to the journal",
    "authenticate a session token",
    "schedule jobs on the worker queue",
    "store blobs on disk with checksums",
    "render the report as markdown",
    "merge ranked results from two indexes",
];

/// Words the files are written in: every goal's words and some common ones.
const WORDS: [&str; 40] = [
    "token",
    "budget",
    "enforce",
    "retry",
    "request",
    "exponential",
    "backoff",
    "cache",
    "eviction",
    "stale",
    "entry",
    "parse",
    "configuration",
    "file",
    "write",
    "log",
    "record",
    "journal",
    "authenticate",
    "session",
    "schedule",
    "job",
    "worker",
    "queue",
    "store",
    "blob",
    "disk",
    "checksum",
    "render",
    "report",
    "markdown",
    "merge",
    "rank",
    "result",
    "index",
    "value",
    "state",
    "count",
    "limit",
    "error",
];

/// A Rust source file of `functions` functions whose names and comments mix the words,
/// leaning on the words at `focus` so each file is about something.
fn source(rng: &mut Lcg, focus: &[usize], functions: usize) -> String {
    let mut out = String::new();
    for f in 0..functions {
        let mut words = Vec::new();
        for _ in 0..3 + rng.next(12) {
            let w = if rng.next(3) == 0 {
                rng.next(WORDS.len())
            } else {
                focus[rng.next(focus.len())]
            };
            words.push(WORDS[w]);
        }
        let name = format!("{}_{}_{f}", words[0], words[1]);
        out.push_str(&format!(
            "/// {}.\npub fn {name}(value: u64) -> u64 {{\n    // {}\n    value + {f}\n}}\n\n",
            words.join(" "),
            words.iter().rev().cloned().collect::<Vec<_>>().join(" "),
        ));
    }
    out
}

/// Writes one commit's files under `dir`: `modules` files, each about a few of the words.
fn write_tree(fixture: &Fixture, rng: &mut Lcg, dir: &str, modules: usize) {
    for m in 0..modules {
        let focus: Vec<usize> = (0..3).map(|_| rng.next(WORDS.len())).collect();
        let functions = 2 + rng.next(6);
        let name = format!("{dir}/{}_{m}.rs", WORDS[focus[0]]);
        fixture.write(&name, source(rng, &focus, functions));
    }
}

fn workspace(fixture: &Fixture, store: &Path) -> Workspace {
    fixture.workspace_with(Access::ReadWrite, Some(store))
}

fn index(workspace: &Workspace, at: &str) {
    workspace
        .index(
            &IndexRequest {
                at: at.into(),
                ..IndexRequest::default()
            },
            &Control::new(),
        )
        .unwrap_or_else(|e| panic!("indexing {at}: {e}"));
}

/// Each goal's pack at `at`: its citations in order, and the whole pack as JSON.
fn packs(workspace: &Workspace, at: &str) -> Vec<(Vec<String>, String)> {
    GOALS
        .iter()
        .map(|goal| {
            let request = SnapshotPackRequest {
                goal: (*goal).into(),
                at: at.into(),
                ..SnapshotPackRequest::default()
            };
            let built = workspace
                .snapshot_pack(&request, &PackOptions::default())
                .unwrap_or_else(|e| panic!("{goal}: {e}"));
            assert!(
                built.pack.hits.len() >= 5,
                "{goal}: only {} hits",
                built.pack.hits.len()
            );
            let citations = built
                .pack
                .hits
                .iter()
                .map(|h| h.candidate.citation.as_str().to_owned())
                .collect();
            (citations, pack_json(&built.pack, View::Full).to_string())
        })
        .collect()
}

#[test]
fn packs_do_not_depend_on_what_else_the_store_holds() {
    let fixture = Fixture::new();
    let mut rng = Lcg(7);
    // Twenty commits on a side branch, dense in the goals' words; some reuse X's paths.
    fixture.git(&["checkout", "-q", "-b", "noise"]);
    let mut others = Vec::new();
    for i in 0..20 {
        write_tree(&fixture, &mut rng, "src", 3);
        write_tree(&fixture, &mut rng, &format!("noise/{i}"), 4);
        others.push(fixture.commit(&format!("noise {i}")));
    }
    // X: the project, on a branch of its own.
    fixture.git(&["checkout", "-q", "--orphan", "project"]);
    fixture.git(&["rm", "-rqf", "."]);
    let mut rng = Lcg(11);
    write_tree(&fixture, &mut rng, "src", 24);
    write_tree(&fixture, &mut rng, "lib", 12);
    let x = fixture.commit("project");

    let alone_store = fixture.path().join("alone");
    let alone = workspace(&fixture, &alone_store);
    index(&alone, &x);

    let crowded_store = fixture.path().join("crowded");
    let crowded = workspace(&fixture, &crowded_store);
    for sha in &others {
        index(&crowded, sha);
    }
    index(&crowded, &x);

    let expected = packs(&alone, &x);
    let got = packs(&crowded, &x);
    for ((goal, a), b) in GOALS.iter().zip(&expected).zip(&got) {
        assert_eq!(a.0, b.0, "the packs for {goal:?} cite differently");
        assert!(a.1 == b.1, "the packs for {goal:?} differ");
    }
}
