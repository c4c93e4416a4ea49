//! `gc` removes exactly the snapshots no rule keeps, leaves every kept snapshot as it was
//! (chains through removed snapshots included), and reclaims only what nothing else uses.

use ctxpack_api::{
    Control, ErrorKind, GcRequest, PackOptions, RenderOptions, SnapshotPackRequest, VerifyRequest,
    Workspace,
};
use ctxpack_store::Store;

use crate::api::deltas::seen;
use crate::api::fixture::{Fixture, Script, Workspaces, index_at};

fn pack(workspace: &Workspace, at: &str) -> String {
    let request = SnapshotPackRequest {
        goal: "remaining budget cost of a step".to_owned(),
        at: at.to_owned(),
        ..SnapshotPackRequest::default()
    };
    let pack = workspace
        .snapshot_pack(&request, &PackOptions::default())
        .unwrap_or_else(|e| panic!("packing at {at}: {e}"))
        .pack;
    format!("{pack:?}")
}

fn sound(workspace: &Workspace) {
    let report = workspace
        .verify(&VerifyRequest::default(), &Control::new())
        .expect("verify runs");
    assert!(report.found.is_empty(), "{:?}", report.found);
}

#[test]
fn gc_keeps_by_rule_and_every_kept_snapshot_reads_as_before() {
    let mut script = Script::new();
    for i in 0..40 {
        script.write(
            &format!("src/shared{i}.rs"),
            format!("pub fn shared_{i}() {{}}\n"),
        );
    }
    for step in 0..12 {
        script.write(
            &format!("src/step{}.rs", step % 5),
            format!("/// The remaining budget cost of step {step}.\npub fn step_{step}() -> u64 {{ {step} }}\n"),
        );
        if step == 6 {
            script.remove("src/shared3.rs");
        }
        script.commit(&format!("step {step}"));
    }
    let repo = script.build();
    let f = repo.checkout();
    let commits = repo.commits().to_vec();
    let workspace = f.workspace();
    for sha in &commits {
        index_at(&workspace, sha);
    }
    let before: Vec<_> = commits.iter().map(|sha| seen(&f.store(), sha)).collect();
    let packs: Vec<String> = commits.iter().map(|sha| pack(&workspace, sha)).collect();
    // Snapshot s is stored against snapshot s & (s - 1): with 0 pinned, 9 (stored against
    // 8, stored against 0) keeps a chain through a removed snapshot to a kept one.
    workspace.pin(&commits[0], true).expect("pins");
    workspace.pin(&commits[2], true).expect("pins");
    let request = GcRequest {
        keep_last: 3,
        keep_younger_than: None,
        ..GcRequest::default()
    };
    let dry = workspace
        .gc(&GcRequest {
            dry_run: true,
            ..request.clone()
        })
        .expect("dry run");
    let summary = workspace.gc(&request).expect("gc");
    assert_eq!(
        dry.removed, summary.removed,
        "a dry run names what a run removes"
    );
    // Kept: the last three (HEAD among them) and the pinned ones.
    let kept = [0, 2, 9, 10, 11];
    let mut removed: Vec<&String> = (0..12)
        .filter(|i| !kept.contains(i))
        .map(|i| &commits[i])
        .collect();
    removed.reverse();
    assert_eq!(summary.removed.iter().collect::<Vec<_>>(), removed);
    assert_eq!(summary.kept, 5);
    // Step s writes `src/step{s % 5}.rs`. The kept snapshots list the versions of steps 0, 1
    // and 2 (snapshot 2) and 5 to 11 (the last three); those of steps 3 and 4 (one chunk
    // each) only removed snapshots listed.
    assert_eq!(
        (summary.file_versions, summary.chunks),
        (2, 2),
        "{summary:?}"
    );
    sound(&workspace);
    for &i in &kept {
        assert_eq!(seen(&f.store(), &commits[i]), before[i], "snapshot {i}");
        assert_eq!(pack(&workspace, &commits[i]), packs[i], "the pack at {i}");
    }
    let store = Store::open(&f.store()).expect("opens");
    for sha in &removed {
        assert!(store.snapshot(sha).expect("reads").is_none());
    }
    drop(store);
    // A removed commit is indexed again on request, equal to what it was.
    index_at(&workspace, &commits[7]);
    assert_eq!(seen(&f.store(), &commits[7]), before[7]);
    assert_eq!(pack(&workspace, &commits[7]), packs[7]);
    sound(&workspace);
    // The commit indexed again is now the most recent, so snapshot 9 falls out of the last
    // three; unpinned, snapshots 2 and 0 go too. A second run finds nothing else.
    workspace.pin(&commits[0], false).expect("unpins");
    workspace.pin(&commits[2], false).expect("unpins");
    let again = workspace.gc(&request).expect("gc");
    assert_eq!(
        again.removed,
        vec![commits[9].clone(), commits[2].clone(), commits[0].clone()]
    );
    for i in [7, 10, 11] {
        assert_eq!(seen(&f.store(), &commits[i]), before[i], "snapshot {i}");
    }
    assert!(workspace.gc(&request).expect("gc").removed.is_empty());
    sound(&workspace);
}

#[test]
fn gc_rules_are_checked_and_pins_need_a_snapshot() {
    let f = Fixture::new();
    f.write("a.rs", "pub fn a() {}\n");
    let sha = f.commit("one");
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let bad = workspace
        .gc(&GcRequest {
            keep_younger_than: Some("30 days".to_owned()),
            ..GcRequest::default()
        })
        .expect_err("not an age");
    assert_eq!(bad.kind(), ErrorKind::InvalidInput);
    assert_eq!(bad.field(), Some("keep_younger_than"));
    f.write("b.rs", "pub fn b() {}\n");
    let unindexed = f.commit("two");
    let err = workspace.pin(&unindexed, true).expect_err("not indexed");
    assert_eq!(err.kind(), ErrorKind::NotIndexed);
    // HEAD's snapshot is kept whatever the rules say.
    index_at(&workspace, &unindexed);
    let summary = workspace
        .gc(&GcRequest {
            keep_last: 0,
            keep_younger_than: None,
            ..GcRequest::default()
        })
        .expect("gc");
    assert_eq!(summary.removed, vec![sha]);
    assert_eq!(summary.kept, 1);
}

#[test]
fn gc_reclaims_ledger_texts_only_when_asked_and_shows_them_as_reclaimed() {
    let f = Fixture::new();
    f.write(
        "src/shared.rs",
        "/// The remaining budget of every step.\npub fn shared() {}\n",
    );
    f.write(
        "src/step.rs",
        "/// The remaining budget cost of step one.\npub fn one() {}\n",
    );
    let old = f.commit("one");
    f.write(
        "src/step.rs",
        "/// The remaining budget cost of step two.\npub fn two() {}\n",
    );
    let new = f.commit("two");
    let workspace = f.workspace();
    index_at(&workspace, &old);
    index_at(&workspace, &new);
    let record = |at: &str| {
        let request = SnapshotPackRequest {
            goal: "remaining budget cost of a step".to_owned(),
            at: at.to_owned(),
            ..SnapshotPackRequest::default()
        };
        let rendering = RenderOptions::default();
        let options = PackOptions {
            record: Some(&rendering),
            ..PackOptions::default()
        };
        let built = workspace.snapshot_pack(&request, &options).expect("packs");
        built.recorded.id().expect("recorded").to_owned()
    };
    let (at_old, at_new) = (record(&old), record(&new));
    let texts = |id: &str| -> Vec<String> {
        let shown = workspace.show(id).expect("shows");
        shown
            .pack
            .hits
            .iter()
            .map(|h| h.candidate.text.clone())
            .collect()
    };
    let (old_texts, new_texts) = (texts(&at_old), texts(&at_new));
    assert!(old_texts.iter().any(|t| t.contains("step one")));
    let request = GcRequest {
        keep_last: 1,
        keep_younger_than: None,
        ..GcRequest::default()
    };
    // Without asking, the removed snapshot's pack keeps its texts.
    let summary = workspace.gc(&request).expect("gc");
    assert_eq!(
        (summary.removed.clone(), summary.ledger_texts),
        (vec![old.clone()], 0)
    );
    assert_eq!(texts(&at_old), old_texts);
    // Asked, only the texts no kept pack names go: `step one`, not the shared file.
    let asked = GcRequest {
        ledger_texts: true,
        ..request
    };
    let dry = workspace
        .gc(&GcRequest {
            dry_run: true,
            ..asked.clone()
        })
        .expect("dry run");
    let summary = workspace.gc(&asked).expect("gc");
    assert_eq!(dry.ledger_texts, summary.ledger_texts);
    let reclaimed = old_texts.iter().filter(|t| !new_texts.contains(t)).count() as u64;
    assert!(reclaimed > 0);
    assert_eq!(summary.ledger_texts, reclaimed);
    for (before, after) in old_texts.iter().zip(texts(&at_old)) {
        if new_texts.contains(before) {
            assert_eq!(&after, before);
        } else {
            assert_eq!(after, ctxpack_store::ledger::RECLAIMED_TEXT);
        }
    }
    assert_eq!(texts(&at_new), new_texts);
    // A reclaimed text is not damage.
    sound(&workspace);
    assert_eq!(workspace.gc(&asked).expect("gc").ledger_texts, 0);
}

#[test]
fn gc_stores_one_whole_manifest_for_kept_snapshots_that_lose_their_bases() {
    let mut script = Script::new();
    for i in 0..200 {
        script.write(&format!("src/f{i:03}.rs"), format!("pub fn f{i}() {{}}\n"));
    }
    script.commit("start");
    for step in 1..=16 {
        script
            .write(
                &format!("src/f{step:03}.rs"),
                format!("pub fn f{step}() {{ {step} }}\n"),
            )
            .commit(&format!("step {step}"));
    }
    let repo = script.build();
    let f = repo.checkout();
    let commits = repo.commits().to_vec();
    let workspace = f.workspace();
    for sha in &commits {
        index_at(&workspace, sha);
    }
    let before: Vec<_> = commits.iter().map(|sha| seen(&f.store(), sha)).collect();
    workspace
        .gc(&GcRequest {
            keep_last: 4,
            keep_younger_than: None,
            ..GcRequest::default()
        })
        .expect("gc");
    // Snapshots 13 (stored against 12, 8, 0), 14 (against 12) and 16 (against 0) lose their
    // bases; 15 keeps 14. The oldest of them is stored whole, the others as changes against
    // it: 200 rows and a few, not 600.
    let store = Store::open(&f.store()).expect("opens");
    let rows: u64 = commits[13..]
        .iter()
        .map(|sha| store.manifest_rows(sha).expect("rows"))
        .sum();
    assert!((200..=210).contains(&rows), "{rows} rows");
    for n in 13..=16 {
        assert_eq!(seen(&f.store(), &commits[n]), before[n], "snapshot {n}");
    }
    sound(&workspace);
}
