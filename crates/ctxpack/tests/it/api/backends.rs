//! The store interface both backends implement, checked by one conformance suite against the
//! embedded store and against PostgreSQL: the registry's rows and the ledger directly, and the
//! whole store — snapshots, artifacts, the ledger, document collections with their field
//! indexes and vectors — by one script of writes and reads through two processes that share a
//! system of record, whose every answer must be the same on both backends. PostgreSQL is a
//! throwaway database on the server `CTXPACK_TEST_DATABASE` names (a maintenance URL of a role
//! that may create databases). `.ci/run` starts PostgreSQL 15 and sets it; under `CI=true` its
//! absence fails these tests, elsewhere they are skipped with a note.

use std::sync::Arc;

use ctxpack_api::server::{Scope, ServerRegistry, TokenRequest, now};
use ctxpack_api::{
    Control, ErrorKind, Format, IndexRequest, LogFilter, PackOptions, RenderOptions,
    SnapshotPackRequest, View, render,
};
use ctxpack_pg::{Database, SCHEMA_VERSION, Scratch};
use ctxpack_store::registry::{Registry, RegistryRows, RepoRow, TokenRow};
use ctxpack_store::{Ledger, LedgerStore, StoreError};

use crate::api::fixture::{Workspaces, project, project_script};

/// A scratch database, or `None` (with a note) when no server is configured outside CI.
pub(crate) fn postgres() -> Option<Scratch> {
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
        url: None,
        git_dir: Some("/srv/app/.git".into()),
        common_dir: Some("/srv/app/.git".into()),
    };
    let lib = RepoRow {
        name: "lib".into(),
        path: std::path::PathBuf::new(),
        created: 6,
        url: Some("https://git.example/lib.git".into()),
        git_dir: None,
        common_dir: None,
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
    // Pages: newest first, counted in all, filtered by goal (case-insensitively) and time.
    let page = |filter: LogFilter| {
        let page = reader.log_page(&filter).expect("a page");
        let ids: Vec<String> = page.entries.into_iter().map(|e| e.id).collect();
        (ids, page.total)
    };
    let all = LogFilter {
        limit: 50,
        ..LogFilter::default()
    };
    assert_eq!(page(all.clone()), (owned(&expected), 3));
    let second = LogFilter {
        offset: 1,
        limit: 1,
        ..all.clone()
    };
    assert_eq!(page(second), (owned(&expected[1..2]), 3));
    let past_the_end = LogFilter {
        offset: 3,
        ..all.clone()
    };
    assert_eq!(page(past_the_end), (Vec::new(), 3));
    let readme = LogFilter {
        goal: Some("ReadMe".into()),
        ..all.clone()
    };
    assert_eq!(page(readme), (owned(&expected[1..2]), 1));
    let future = LogFilter {
        from: Some(u64::MAX),
        ..all.clone()
    };
    assert_eq!(page(future), (Vec::new(), 0));
    let until_now = LogFilter {
        until: Some(u64::MAX),
        ..all.clone()
    };
    assert_eq!(page(until_now), (owned(&expected), 3));
    // Appends from four writers at once, sharing texts, all land whole.
    let writers: Vec<_> = (0..4).map(|_| f.workspace().with_ledger(make())).collect();
    std::thread::scope(|s| {
        for writer in &writers {
            s.spawn(move || {
                for _ in 0..5 {
                    writer
                        .snapshot_pack(
                            &SnapshotPackRequest {
                                goal: "budget enforcement".into(),
                                index: false,
                                ..SnapshotPackRequest::default()
                            },
                            &PackOptions {
                                record: Some(&shown_as[0]),
                                ..PackOptions::default()
                            },
                        )
                        .expect("a pack recorded by one of four writers");
                }
            });
        }
    });
    let contents = make().read().expect("records");
    assert_eq!(contents.records.len(), 23);
    assert!(contents.torn.is_empty(), "{:?}", contents.torn);
    assert_eq!(page(all).1, 23);
    // Texts are content-addressed and checked.
    let record = &make().read().expect("records").records[0];
    let hash = &record.hits[0].text;
    assert!(make().text(hash).expect("a text").len() > 10);
    assert!(make().text(&"0".repeat(64)).is_err());
}

fn owned(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|&id| id.to_owned()).collect()
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
    let repo = crate::api::fixture::Fixture::new();
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
    // More commits than a chain of changes may hold, with files added, changed and removed.
    let mut script = project_script();
    for n in 0..(ctxpack_pg::MAX_DEPTH + 8) {
        script.write(
            &format!("src/mod_{}.rs", n % 5),
            format!("pub fn step_{n}() -> u32 {{ {n} }}\n"),
        );
        if n % 7 == 3 {
            script.remove("README.md");
        }
        if n % 7 == 4 {
            script.write("README.md", format!("# Project, revision {n}\n"));
        }
        script.commit(&format!("step {n}"));
    }
    let repo = script.build();
    let f = repo.checkout();
    let state = tempfile::tempdir().expect("tempdir");
    let registry = ServerRegistry::open_database(db.url(), state.path()).expect("opens");
    registry.add_repo("app", f.path()).expect("registers");
    let grant = ctxpack_api::server::Grant {
        token: "ci".into(),
        repo: "app".into(),
        scope: Scope::Write,
    };
    let roots = [f.path().canonicalize().expect("canonical")];
    let workspace = registry.workspace(&grant, &roots).expect("a workspace");
    let mut shas = Vec::new();
    for sha in &repo.commits()[1..] {
        let sha = sha.clone();
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
    registry.add_repo("app", f.path()).expect("registers");
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

/// Two workspaces of one repository that share a system of record, as two server processes
/// do: on one state directory (embedded), or each with its own cache on one database.
fn two_processes(
    db: Option<&Scratch>,
    repo: &std::path::Path,
) -> (Vec<tempfile::TempDir>, [ctxpack_api::Workspace; 2]) {
    let grant = ctxpack_api::server::Grant {
        token: "ci".into(),
        repo: "app".into(),
        scope: Scope::Write,
    };
    let roots = [repo.canonicalize().expect("canonical")];
    let states = [
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    ];
    let open = |state: &std::path::Path| match db {
        Some(db) => ServerRegistry::open_database(db.url(), state).expect("opens"),
        None => ServerRegistry::open(state, true).expect("opens"),
    };
    let first = open(states[0].path());
    first.add_repo("app", repo).expect("registers");
    let second = match db {
        Some(_) => open(states[1].path()),
        None => open(states[0].path()),
    };
    let a = first.workspace(&grant, &roots).expect("a workspace");
    let b = second.workspace(&grant, &roots).expect("a workspace");
    (states.into(), [a, b])
}

/// Runs one script of writes and reads over every part of the store interface — snapshots,
/// artifacts, the ledger, and document collections with their field indexes and vectors —
/// writing through one process and reading through both, and returns every answer. Answers
/// that depend on the clock (creation times, ledger ids) are checked equal between the two
/// processes here and left out of the transcript.
fn store_transcript(db: Option<&Scratch>) -> Vec<String> {
    use ctxpack_api::docs::{
        DeleteRequest, DocumentPackRequest, FieldRequest, FindRequest, ImportRequest, ImportSource,
        InsertRequest, VsearchRequest,
    };
    use serde_json::json;

    // Fixed dates: the two runs compared have the same commits.
    let f = crate::api::fixture::Fixture::new();
    f.write(
        "src/budget.rs",
        "/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n",
    );
    f.write("README.md", "# app\n\nBudgets are enforced per hit.\n");
    let first = f.commit("first");
    f.write(
        "src/budget.rs",
        "pub fn spend(budget: u64, cost: u64) -> Option<u64> { budget.checked_sub(cost) }\n",
    );
    let second = f.commit("second");
    let (_states, [a, b]) = two_processes(db, f.path());
    let both = [&a, &b];
    let control = Control::new();
    let mut out = Vec::new();
    let rendering = RenderOptions {
        format: Format::Json,
        view: View::Default,
        ..RenderOptions::default()
    };
    // Snapshots: indexed by one, packed by both.
    for (writer, sha) in [(&a, &first), (&b, &second)] {
        writer
            .index(
                &IndexRequest {
                    at: sha.clone(),
                    ..IndexRequest::default()
                },
                &control,
            )
            .expect("indexes");
        for w in both {
            let request = SnapshotPackRequest {
                goal: "spend the budget".into(),
                at: sha.clone(),
                ..SnapshotPackRequest::default()
            };
            let packed = w
                .snapshot_pack(&request, &PackOptions::default())
                .expect("packs");
            out.push(render(&packed.pack, &rendering));
        }
    }
    // Artifacts.
    a.add_artifact(
        &ctxpack_api::ArtifactAddRequest {
            id: Some("notes".into()),
            ..ctxpack_api::ArtifactAddRequest::new(ctxpack_api::ArtifactScope::Session)
        },
        b"Spending past the budget returns None.\n",
    )
    .expect("added");
    for w in both {
        out.push(format!("{:?}", w.artifacts(None).expect("listed").len()));
    }
    // Document collections, written through both processes in turn.
    let kb: Vec<ctxpack_api::Workspace> = both
        .iter()
        .map(|w| w.document_store("path", "kb").expect("a document store"))
        .collect();
    let read = |out: &mut Vec<String>, step: &str| {
        let mut seen: Vec<Vec<String>> = Vec::new();
        for w in &kb {
            let mut answers = vec![step.to_owned()];
            let mut bodies = Vec::new();
            w.find_documents(
                &FindRequest {
                    collection: "notes".into(),
                    ..FindRequest::default()
                },
                &mut |body| bodies.push(body.to_owned()),
            )
            .expect("finds");
            answers.push(bodies.join("\n"));
            let collections = w.collections().expect("collections");
            answers.push(format!(
                "{:?}",
                collections
                    .iter()
                    .map(|c| (c.name.clone(), c.documents, c.created_at))
                    .collect::<Vec<_>>()
            ));
            answers.push(format!("{:?}", w.field_indexes("notes").expect("indexes")));
            let found = w
                .vsearch(&VsearchRequest {
                    collection: "notes".into(),
                    field: "text".into(),
                    query: "budget overflow".into(),
                    k: 5,
                    filter: Some(json!({"status": "published"})),
                    exact: false,
                })
                .expect("searches");
            answers.push(
                found
                    .hits
                    .iter()
                    .map(|h| h.to_json_line())
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            let packed = w
                .document_pack(
                    &DocumentPackRequest {
                        collection: "notes".into(),
                        field: "text".into(),
                        query: "budget overflow".into(),
                        ..DocumentPackRequest::default()
                    },
                    Some(&rendering),
                )
                .expect("packs");
            answers.push(packed.pack.to_json_line());
            seen.push(answers);
        }
        assert_eq!(seen[0], seen[1], "the two processes answer alike");
        // Creation times come from the clock: the same on both processes, not across runs.
        out.extend(seen.remove(0).iter().map(|a| without_times(a)));
    };
    let status = |n: u32| {
        if n.is_multiple_of(3) {
            "draft"
        } else {
            "published"
        }
    };
    kb[0]
        .insert_document(&InsertRequest {
            collection: "notes".into(),
            document: json!({"_id": 1, "text": "the budget overflows", "status": "published"}),
            replace: false,
            wait: true,
        })
        .expect("inserts");
    read(&mut out, "one document");
    kb[1]
        .create_field_index(&FieldRequest {
            collection: "notes".into(),
            field: "status".into(),
            wait: true,
        })
        .expect("declares");
    let lines: String = (2..40)
        .map(|n| {
            format!(
                "{}\n",
                json!({"_id": n, "text": format!("note {n} on budget {} and overflow {}", n * 7, n % 5), "status": status(n)})
            )
        })
        .collect();
    kb[0]
        .import_documents(
            &ImportRequest {
                collection: "notes".into(),
                embed: vec!["text".into()],
                batch_size: 7,
                wait: true,
            },
            &ImportSource::Bytes(lines.into_bytes()),
            &control,
        )
        .expect("imports");
    read(&mut out, "imported with embeddings");
    kb[1]
        .insert_document(&InsertRequest {
            collection: "notes".into(),
            document: json!({"_id": 2, "text": "replaced: a budget overflow, again", "status": "published"}),
            replace: true,
            wait: true,
        })
        .expect("replaces");
    let deleted = kb[0]
        .delete_documents(&DeleteRequest {
            collection: "notes".into(),
            filter: json!({"status": "draft"}),
            wait: true,
        })
        .expect("deletes");
    out.push(format!("deleted {deleted}"));
    read(&mut out, "replaced and deleted");
    // The newest document is deleted, so the next insert takes its place in seq order.
    kb[1]
        .delete_documents(&DeleteRequest {
            collection: "notes".into(),
            filter: json!({"_id": 38}),
            wait: true,
        })
        .expect("deletes");
    kb[1]
        .insert_document(&InsertRequest {
            collection: "notes".into(),
            document: json!({"_id": 38, "text": "budget overflow, written last", "status": "published"}),
            replace: false,
            wait: true,
        })
        .expect("inserts");
    let synced = kb[0]
        .vsync(
            &FieldRequest {
                collection: "notes".into(),
                field: "text".into(),
                wait: true,
            },
            &control,
        )
        .expect("vsync");
    out.push(synced.to_json().to_string());
    read(&mut out, "re-inserted and synced");
    kb[1]
        .drop_field_index(&FieldRequest {
            collection: "notes".into(),
            field: "status".into(),
            wait: true,
        })
        .expect("drops");
    read(&mut out, "index dropped");
    // The ledger: every recorded pack above (the document packs), from both processes, in
    // one order on both.
    let logs: Vec<Vec<(String, String, u64)>> = both
        .iter()
        .map(|w| {
            w.log(1000)
                .expect("log")
                .entries
                .into_iter()
                .map(|e| (e.surface, e.goal, e.used_tokens))
                .collect()
        })
        .collect();
    assert_eq!(logs[0], logs[1]);
    assert_eq!(logs[0].len(), 5 * 2, "{:?}", logs[0]);
    out.push(format!("{:?}", logs[0]));
    out
}

/// `text` with every Unix time of this era (ten digits from `17`) as `<time>`.
fn without_times(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let boundary = i == 0 || !bytes[i - 1].is_ascii_digit();
        if boundary && digits == 10 && bytes[i..].starts_with(b"17") {
            out.push_str("<time>");
            i += digits;
        } else {
            let next = if digits > 0 { digits } else { 1 };
            let end = (i + next..=text.len())
                .find(|&e| text.is_char_boundary(e))
                .unwrap_or(text.len());
            out.push_str(&text[i..end]);
            i = end;
        }
    }
    out
}

#[test]
fn the_embedded_store_answers_alike_in_two_processes() {
    let transcript = store_transcript(None);
    let all = transcript.join("\n");
    // Spot checks that the script did what it says.
    assert!(all.contains("deleted 13"), "{all}");
    assert!(all.contains("replaced: a budget overflow"), "{all}");
    assert!(all.contains("written last"), "{all}");
}

#[test]
fn postgres_answers_what_the_embedded_store_answers() {
    let Some(db) = postgres() else { return };
    let embedded = store_transcript(None);
    let postgres = store_transcript(Some(&db));
    assert_eq!(embedded.len(), postgres.len());
    for (i, (e, p)) in embedded.iter().zip(&postgres).enumerate() {
        assert_eq!(e, p, "answer {i} differs");
    }
}

#[test]
fn a_document_write_publishes_only_what_it_changed_and_only_from_where_it_synced() {
    use ctxpack_api::docs::{FieldRequest, InsertRequest};
    use serde_json::json;

    let Some(db) = postgres() else { return };
    let (f, _) = project();
    let (_states, [a, b]) = two_processes(Some(&db), f.path());
    let record = Database::connect(db.url())
        .expect("connects")
        .documents("app", "kb");
    let kb = a.document_store("path", "kb").expect("a store");
    let insert = |w: &ctxpack_api::Workspace, id: u32| {
        w.insert_document(&InsertRequest {
            collection: "notes".into(),
            document: json!({"_id": id, "text": "budget notes"}),
            replace: false,
            wait: true,
        })
    };
    // A write that fails before writing anything creates nothing, here or there.
    let refused = kb.insert_document(&InsertRequest {
        collection: "notes".into(),
        document: json!("not an object"),
        replace: false,
        wait: true,
    });
    assert!(refused.is_err());
    assert_eq!(record.latest().expect("reads"), None);
    insert(&kb, 1).expect("inserts");
    let first = record.latest().expect("reads").expect("published");
    // A duplicate `_id` and dropping an index that was never declared change nothing.
    assert_eq!(
        insert(&kb, 1).expect_err("duplicate").kind(),
        ErrorKind::Conflict
    );
    let dropped = kb
        .drop_field_index(&FieldRequest {
            collection: "notes".into(),
            field: "status".into(),
            wait: true,
        })
        .expect("drops nothing");
    assert!(!dropped);
    assert_eq!(record.latest().expect("reads"), Some(first));
    // The other process sees the one document.
    let other = b.document_store("path", "kb").expect("a store");
    assert_eq!(other.collections().expect("lists")[0].documents, 1);
    // A publication from a writer that did not sync to the store's change is refused.
    let stale = record.publish(now(), Some(first - 1), &mut || Ok(None));
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    assert_eq!(record.latest().expect("reads"), Some(first));
}
