//! The store interfaces both backends implement — a server registry's rows and the ledger —
//! checked by one conformance suite against the embedded store and against PostgreSQL: a
//! throwaway database on the server `CTXPACK_TEST_DATABASE` names (a maintenance URL of a
//! role that may create databases). `.ci/run` starts PostgreSQL 15 and sets it; under
//! `CI=true` its absence fails these tests, elsewhere they are skipped with a note.

use std::sync::Arc;

use ctxpack_api::server::{Scope, ServerRegistry, TokenRequest, now};
use ctxpack_api::{
    Control, ErrorKind, Format, IndexRequest, PackOptions, RenderOptions, SnapshotPackRequest,
    View, render,
};
use ctxpack_pg::{Database, SCHEMA_VERSION, Scratch};
use ctxpack_store::registry::{Registry, RegistryRows, RepoRow, TokenRow};
use ctxpack_store::{Ledger, LedgerStore, StoreError};

use crate::fixture::project;

/// A scratch database, or `None` (with a note) when no server is configured outside CI.
fn postgres() -> Option<Scratch> {
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    match std::env::var("CTXPACK_TEST_DATABASE") {
        Ok(url) if !url.is_empty() => {
            Some(Scratch::create(&url).expect("a scratch database on CTXPACK_TEST_DATABASE"))
        }
        _ => {
            assert!(
                !in_ci,
                "CI=true but CTXPACK_TEST_DATABASE is not set: .ci/run must start PostgreSQL"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "note: skipping a PostgreSQL backend test: set CTXPACK_TEST_DATABASE to a postgres:// URL of a role that may create databases (as .ci/run does)"
                );
            }
            None
        }
    }
}

fn token(name: &str, id: &str, repo: &str) -> TokenRow {
    TokenRow {
        id: id.into(),
        name: name.into(),
        digest: vec![7; 32],
        repo: repo.into(),
        scope: "read".into(),
        created: 10,
        expires: Some(99),
        revoked: None,
    }
}

/// What every registry backend must do.
fn registry_conforms(rows: &dyn RegistryRows) {
    let app = RepoRow {
        name: "app".into(),
        path: "/srv/app".into(),
        created: 5,
    };
    let lib = RepoRow {
        name: "lib".into(),
        path: "/srv/lib".into(),
        created: 6,
    };
    assert_eq!(rows.repos().expect("empty"), vec![]);
    rows.add_repo(&lib).expect("add lib");
    rows.add_repo(&app).expect("add app");
    assert!(matches!(
        rows.add_repo(&app),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(rows.repos().expect("repos"), vec![app.clone(), lib.clone()]);
    assert_eq!(rows.repo("app").expect("one"), Some(app.clone()));
    assert_eq!(rows.repo("nope").expect("none"), None);

    rows.add_token(&token("ci", "aa", "app")).expect("token");
    rows.add_token(&token("agent", "bb", "app")).expect("token");
    rows.add_token(&token("other", "cc", "lib")).expect("token");
    assert!(matches!(
        rows.add_token(&token("ci", "dd", "app")),
        Err(StoreError::Conflict { .. })
    ));
    assert!(matches!(
        rows.add_token(&token("fresh", "aa", "app")),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        rows.token("aa").expect("read"),
        Some(token("ci", "aa", "app"))
    );
    assert_eq!(rows.token("zz").expect("read"), None);
    let names: Vec<String> = rows
        .tokens()
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["agent", "ci", "other"]);
    assert!(rows.revoke_token("ci", 50).expect("revoke"));
    assert!(!rows.revoke_token("ci", 60).expect("again"));
    assert!(!rows.revoke_token("nope", 60).expect("unknown"));
    assert_eq!(
        rows.token("aa").expect("read").expect("row").revoked,
        Some(50)
    );

    assert!(rows.remove_repo("app").expect("remove"));
    assert!(!rows.remove_repo("app").expect("twice"));
    assert_eq!(rows.repos().expect("repos"), vec![lib]);
    let names: Vec<String> = rows
        .tokens()
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["other"], "a removed repository's tokens go with it");
}

/// What every ledger backend must do, through the API: packs recorded as built, listed newest
/// first, shown as the model saw them, and kept for the next reader.
fn ledger_conforms(make: &dyn Fn() -> Arc<dyn LedgerStore>) {
    let (f, _) = project();
    let workspace = f.workspace().with_ledger(make());
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("HEAD indexes");
    let shown_as = [
        RenderOptions {
            format: Format::Markdown,
            view: View::Default,
            pretty: false,
        },
        RenderOptions {
            format: Format::Json,
            view: View::Full,
            pretty: true,
        },
        RenderOptions {
            format: Format::Text,
            view: View::Minimal,
            pretty: false,
        },
    ];
    let mut built = Vec::new();
    for (goal, rendering) in ["budget enforcement", "readme", "configuration"]
        .into_iter()
        .zip(&shown_as)
    {
        let pack = workspace
            .snapshot_pack(
                &SnapshotPackRequest {
                    goal: goal.into(),
                    index: false,
                    ..SnapshotPackRequest::default()
                },
                &PackOptions {
                    record: Some(rendering),
                    ..PackOptions::default()
                },
            )
            .expect("a pack");
        let ctxpack_api::Recorded::Stored(id) = pack.recorded else {
            panic!("recorded: {:?}", pack.recorded);
        };
        built.push((id, render(&pack.pack, rendering), *rendering));
    }
    // A second reader of the same ledger sees the same records.
    let reader = f.workspace().with_ledger(make());
    let log = reader.log(10).expect("a log");
    let ids: Vec<&str> = log.entries.iter().map(|e| e.id.as_str()).collect();
    let expected: Vec<&str> = built.iter().rev().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, expected, "newest first");
    assert!(log.torn.is_empty());
    assert_eq!(reader.log(1).expect("one").entries.len(), 1);
    for (id, text, rendering) in &built {
        let shown = reader.show(&id[..8]).expect("shown by prefix");
        assert_eq!(&render(&shown.pack, rendering), text, "{id}");
        assert_eq!(shown.rendering, *rendering);
    }
    let missing = reader.show("abcdef0123").expect_err("no such pack");
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    // Texts are content-addressed and checked.
    let record = &make().read().expect("records").records[0];
    let hash = &record.hits[0].text;
    assert!(make().text(hash).expect("a text").len() > 10);
    assert!(make().text(&"0".repeat(64)).is_err());
}

#[test]
fn the_embedded_registry_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    registry_conforms(&Registry::open(dir.path(), true).expect("registry"));
}

#[test]
fn the_postgres_registry_conforms() {
    let Some(db) = postgres() else { return };
    let database = Database::connect(db.url()).expect("connects");
    registry_conforms(&database.registry());
}

#[test]
fn the_embedded_ledger_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    ledger_conforms(&move || Arc::new(Ledger::new(&path)) as Arc<dyn LedgerStore>);
}

#[test]
fn the_postgres_ledger_conforms() {
    let Some(db) = postgres() else { return };
    let database = Database::connect(db.url()).expect("connects");
    ledger_conforms(&move || Arc::new(database.ledger("app")) as Arc<dyn LedgerStore>);
    // Ledgers of two repositories are apart.
    let other = Database::connect(db.url()).expect("connects");
    assert!(other.ledger("lib").read().expect("read").records.is_empty());
}

#[test]
fn postgres_migrates_once_and_refuses_a_newer_schema() {
    let Some(db) = postgres() else { return };
    // Two servers starting at once both come up, and the schema is at this build's version.
    let url = db.url().to_owned();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Database::connect(&url).map(|d| d.schema_version()))
        })
        .collect();
    for handle in handles {
        assert_eq!(
            handle
                .join()
                .expect("a thread")
                .expect("connects")
                .expect("a version"),
            SCHEMA_VERSION
        );
    }
    // A token made through the API is checked against the database.
    let state = tempfile::tempdir().expect("tempdir");
    let repo = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo.path())
        .status()
        .expect("git");
    assert!(status.success());
    let registry = ServerRegistry::open_database(&url, state.path()).expect("opens");
    registry.add_repo("app", repo.path()).expect("registers");
    let made = registry
        .create_token(&TokenRequest {
            name: "agent".into(),
            repo: "app".into(),
            scope: Scope::Read,
            expires_in: None,
        })
        .expect("a token");
    let again = ServerRegistry::open_database(&url, state.path()).expect("opens again");
    assert_eq!(
        again
            .authenticate(&made.secret, now())
            .expect("valid")
            .token,
        "agent"
    );
    // A database written by a newer ctxpack is refused, with what to do.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("a client");
    client
        .execute("UPDATE ctxpack_schema SET version = version + 1", &[])
        .expect("bump");
    let refused = ServerRegistry::open_database(&url, state.path()).expect_err("newer");
    assert_eq!(refused.kind(), ErrorKind::Damaged, "{refused}");
    assert!(refused.message().contains("version"), "{refused}");
    assert!(
        matches!(refused.hint(), Some(ctxpack_api::Hint::Advice(a)) if a.contains("upgrade ctxpack")),
        "{:?}",
        refused.hint()
    );
    // A server that cannot be reached is an I/O error that names no password.
    let unreachable =
        ServerRegistry::open_database("postgres://u:secret@127.0.0.1:1/x", state.path())
            .expect_err("no server");
    assert_eq!(unreachable.kind(), ErrorKind::Io);
    assert!(!unreachable.message().contains("secret"), "{unreachable}");
}

#[test]
fn published_manifests_equal_the_indexed_ones_along_a_long_history() {
    let Some(db) = postgres() else { return };
    let (f, _) = project();
    let state = tempfile::tempdir().expect("tempdir");
    let registry = ServerRegistry::open_database(db.url(), state.path()).expect("opens");
    registry.add_repo("app", &f.path()).expect("registers");
    let grant = ctxpack_api::server::Grant {
        token: "ci".into(),
        repo: "app".into(),
        scope: Scope::Write,
    };
    let roots = [f.path().canonicalize().expect("canonical")];
    let workspace = registry.workspace(&grant, &roots).expect("a workspace");
    // More commits than a chain of changes may hold, with files added, changed and removed.
    let mut shas = Vec::new();
    for n in 0..(ctxpack_pg::MAX_DEPTH + 8) {
        f.write(
            &format!("src/mod_{}.rs", n % 5),
            &format!("pub fn step_{n}() -> u32 {{ {n} }}\n"),
        );
        if n % 7 == 3 {
            f.git(&["rm", "-q", "README.md"]);
        }
        if n % 7 == 4 {
            f.write("README.md", &format!("# Project, revision {n}\n"));
        }
        let sha = f.commit(&format!("step {n}"));
        workspace
            .index(
                &IndexRequest {
                    at: sha.clone(),
                    ..IndexRequest::default()
                },
                &Control::new(),
            )
            .expect("indexes and publishes");
        shas.push(sha);
    }
    let record = Database::connect(db.url())
        .expect("connects")
        .snapshots("app");
    let cache = ctxpack_store::Store::open(&state.path().join("stores/app")).expect("the cache");
    for sha in &shas {
        let published = record.manifest(sha).expect("a published manifest");
        let indexed: Vec<(String, String, u32)> = cache
            .manifest_keys(sha)
            .expect("an indexed manifest")
            .into_iter()
            .map(|(path, blob, chunker, _)| (path, blob, chunker))
            .collect();
        assert_eq!(published, indexed, "{sha}");
    }
    // A process with an empty cache packs the last commit as the indexer's cache does.
    let other_state = tempfile::tempdir().expect("tempdir");
    let other = ServerRegistry::open_database(db.url(), other_state.path())
        .expect("opens")
        .workspace(&grant, &roots)
        .expect("a workspace");
    let request = SnapshotPackRequest {
        goal: "step function".into(),
        at: shas.last().expect("commits").clone(),
        index: false,
        ..SnapshotPackRequest::default()
    };
    let rendering = RenderOptions::default();
    let a = workspace
        .snapshot_pack(&request, &PackOptions::default())
        .expect("packs");
    let b = other
        .snapshot_pack(&request, &PackOptions::default())
        .expect("packs from the record");
    assert_eq!(render(&a.pack, &rendering), render(&b.pack, &rendering));
}

#[test]
fn artifacts_added_and_removed_anywhere_are_seen_everywhere() {
    let Some(db) = postgres() else { return };
    let (f, _) = project();
    let grant = ctxpack_api::server::Grant {
        token: "ci".into(),
        repo: "app".into(),
        scope: Scope::Write,
    };
    let roots = [f.path().canonicalize().expect("canonical")];
    let state_a = tempfile::tempdir().expect("tempdir");
    let state_b = tempfile::tempdir().expect("tempdir");
    let registry = ServerRegistry::open_database(db.url(), state_a.path()).expect("opens");
    registry.add_repo("app", &f.path()).expect("registers");
    let a = registry.workspace(&grant, &roots).expect("a workspace");
    let b = ServerRegistry::open_database(db.url(), state_b.path())
        .expect("opens")
        .workspace(&grant, &roots)
        .expect("a workspace");
    let request = ctxpack_api::ArtifactAddRequest {
        id: Some("notes".into()),
        ..ctxpack_api::ArtifactAddRequest::new(ctxpack_api::ArtifactScope::Session)
    };
    a.add_artifact(
        &request,
        b"The overflow happens when a pinned member is larger than the budget.\n",
    )
    .expect("added");
    let ids = |w: &ctxpack_api::Workspace| -> Vec<String> {
        w.artifacts(None)
            .expect("listed")
            .into_iter()
            .map(|i| i.id)
            .collect()
    };
    assert_eq!(ids(&b), ["notes"]);
    let (_, text) = b.artifact("notes").expect("shown");
    assert!(text.contains("pinned member"));
    let conflict = b
        .add_artifact(&request, b"other text\n")
        .expect_err("other content");
    assert_eq!(conflict.kind(), ErrorKind::Conflict);
    b.remove_artifact("notes").expect("removed");
    assert!(ids(&a).is_empty());
    assert_eq!(
        a.remove_artifact("notes").expect_err("gone").kind(),
        ErrorKind::NotFound
    );
}
