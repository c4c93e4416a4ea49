//! Upgrades keep users' stores: a store written by the release of store format 1 (committed
//! under crates/ctxpack/tests/fixtures/store-v1, made by scripts/make_store_fixture.sh from a repository the
//! script rebuilds commit for commit) is read as it is, and the first writer migrates it —
//! snapshots, packs, documents, artifacts and the ledger all survive.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxpack_api::docs::{DocumentPackRequest, FindRequest};
use ctxpack_api::{
    Access, Control, Format, IndexRequest, PackOptions, PackScope, RenderOptions,
    SnapshotPackRequest, VerifyRequest, View, Workspace, WorkspaceOptions, pack_json,
};

/// The commits the fixture repository is rebuilt with: HEAD~1 and HEAD.
const FIRST: &str = "925a925b4d0bfeee3c52a070baae23c75542bfeb";
const SECOND: &str = "f5f8fc6ff146e942e5042b58e62fc31faa14910f";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fixture repository, rebuilt, with a copy of the format-1 store as its `.ctxpack`.
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    let repo = dir.path().join("repo");
    let status = Command::new("bash")
        .arg(workspace_root().join("scripts/make_store_fixture.sh"))
        .arg(&repo)
        .status()
        .expect("the fixture script runs");
    assert!(status.success());
    let heads = crate::api::fixture::git_in(&repo, &["rev-parse", "HEAD", "HEAD~1"]);
    assert_eq!(
        heads.split_whitespace().collect::<Vec<_>>(),
        [SECOND, FIRST]
    );
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v1"),
        &repo.join(".ctxpack"),
    );
    (dir, repo)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn open(repo: &Path, access: Access) -> Workspace {
    Workspace::open(WorkspaceOptions {
        cwd: repo.to_owned(),
        access,
        ..WorkspaceOptions::default()
    })
    .expect("opens")
}

/// What a user sees of the store: packs at both commits, the ledger, documents, artifacts.
fn everything(workspace: &Workspace, store: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (goal, at, scope) in [
        ("how are budgets enforced", FIRST, PackScope::Durable),
        ("retry with backoff", SECOND, PackScope::All),
    ] {
        let request = SnapshotPackRequest {
            goal: goal.into(),
            at: at.into(),
            scope,
            ..SnapshotPackRequest::default()
        };
        let built = workspace
            .snapshot_pack(&request, &PackOptions::default())
            .unwrap_or_else(|e| panic!("{goal}: {e}"));
        out.push(pack_json(&built.pack, View::Full).to_string());
    }
    let log = workspace.log(10).expect("the ledger reads");
    for entry in &log.entries {
        let shown = workspace.show(&entry.id).expect("every record replays");
        out.push(pack_json(&shown.pack, View::Full).to_string());
    }
    out.push(format!(
        "{:?}",
        workspace.artifacts(None).expect("artifacts")
    ));
    let documents = Workspace::for_store(store, Access::ReadOnly).expect("store");
    let mut found = String::new();
    documents
        .find_documents(
            &FindRequest {
                collection: "notes".into(),
                ..FindRequest::default()
            },
            &mut |body| found.push_str(body),
        )
        .expect("documents");
    out.push(found);
    let pack = documents
        .document_pack(
            &DocumentPackRequest {
                collection: "notes".into(),
                field: "text".into(),
                query: "database search".into(),
                ..DocumentPackRequest::default()
            },
            None,
        )
        .expect("a document pack");
    out.push(pack.pack.to_json_line());
    out
}

#[test]
fn a_format_1_store_is_read_as_it_is_and_migrated_by_the_first_writer() {
    let (_dir, repo) = fixture();
    let store = repo.join(".ctxpack");
    // Read-only: nothing is written, not even a migration.
    let reader = open(&repo, Access::ReadOnly);
    let status = reader.status().expect("status");
    assert_eq!(status.snapshots.len(), 2);
    let before = everything(&reader, &store);
    assert_eq!(reader.log(10).expect("log").entries.len(), 3);
    // The first writer migrates; everything reads the same afterwards.
    let writer = open(&repo, Access::ReadWrite);
    writer
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    assert_eq!(everything(&writer, &store), before);
    let report = writer
        .verify(&VerifyRequest { repair: false }, &Control::new())
        .expect("verifies");
    assert!(report.remaining.is_empty(), "{report}");
    // And it keeps working: a new pack is recorded beside the old ones.
    let json = RenderOptions {
        format: Format::Json,
        ..RenderOptions::default()
    };
    writer
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: "budget".into(),
                ..SnapshotPackRequest::default()
            },
            &PackOptions {
                record: Some(&json),
                index_if_missing: false,
                rendering: None,
            },
        )
        .expect("packs");
    assert_eq!(writer.log(10).expect("log").entries.len(), 4);
}
