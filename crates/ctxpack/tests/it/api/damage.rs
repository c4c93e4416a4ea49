//! No silently empty or different packs: damage to a store is detected — cheaply when a store
//! is opened, in full by `verify` — and `verify --repair` (or `index --rebuild`) restores a
//! working store from what it holds and the repository's git objects.

use std::path::{Path, PathBuf};

use ctxpack_api::docs::{DocumentPackRequest, FieldRequest, InsertRequest, VsearchRequest};
use ctxpack_api::{
    Access, Control, ErrorKind, Format, Hint, IndexRequest, PackOptions, RenderOptions,
    SnapshotPackRequest, VerifyReport, VerifyRequest, View, Workspace, pack_json,
};
use serde_json::{Value, json};

use crate::api::fixture::{Fixture, Workspaces, project, rewrite_chunk};

/// Goals whose packs are compared before and after damage and repair.
const GOALS: [&str; 3] = [
    "how are budgets enforced",
    "cakes and recipes",
    "remaining cost",
];

/// The canonical JSON of the pack of every goal at HEAD.
fn packs(workspace: &Workspace) -> Vec<String> {
    GOALS
        .iter()
        .map(|goal| {
            let request = SnapshotPackRequest {
                goal: (*goal).into(),
                ..SnapshotPackRequest::default()
            };
            let built = workspace
                .snapshot_pack(&request, &PackOptions::default())
                .unwrap_or_else(|e| panic!("{goal}: {e}"));
            pack_json(&built.pack, View::Full).to_string()
        })
        .collect()
}

fn verify(workspace: &Workspace, repair: bool) -> VerifyReport {
    workspace
        .verify(&VerifyRequest { repair }, &Control::new())
        .expect("verify runs")
}

fn parts(report: &VerifyReport) -> Vec<&str> {
    report.found.iter().map(|p| p.part.as_str()).collect()
}

/// An indexed project, its workspace and the packs of a sound store.
fn indexed() -> (Fixture, Workspace, Vec<String>) {
    let (f, _) = project();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    let before = packs(&workspace);
    assert!(
        verify(&workspace, false).found.is_empty(),
        "a fresh store is sound"
    );
    (f, workspace, before)
}

/// Packing the first goal fails as damage.
fn damage_reported(workspace: &Workspace) -> ctxpack_api::Error {
    let error = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: GOALS[0].into(),
                ..SnapshotPackRequest::default()
            },
            &PackOptions::default(),
        )
        .expect_err("damage is reported");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    error
}

/// `verify` finds one problem, in `part` and mentioning `needle`; `--repair` removes it and
/// the packs are those of `before` again.
fn found_then_repaired(workspace: &Workspace, part: &str, needle: &str, before: &[String]) {
    let report = verify(workspace, false);
    assert_eq!(parts(&report), [part], "{report}");
    assert!(report.found[0].detail.contains(needle), "{report}");
    let report = verify(workspace, true);
    assert!(report.remaining.is_empty(), "{report}");
    assert_eq!(packs(workspace), before);
}

/// The active lexical index directory of a store.
fn lexical_dir(store: &Path) -> PathBuf {
    std::fs::read_dir(store)
        .expect("store")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("lexical"))
        })
        .expect("a lexical index")
}

fn sql(store: &Path, statement: &str) {
    let conn = rusqlite::Connection::open(store.join("ctxpack.sqlite")).expect("open");
    conn.execute_batch(statement).expect(statement);
}

#[test]
fn an_emptied_lexical_index_is_damage_not_an_empty_pack() {
    let (f, workspace, before) = indexed();
    // What a rebuild killed half way used to leave: an index with no entries.
    let lexical = lexical_dir(&f.store());
    std::fs::remove_dir_all(&lexical).expect("rm");
    std::fs::create_dir_all(&lexical).expect("mkdir");
    let scratch = tempfile::tempdir().expect("tmp");
    let other = Fixture::new();
    other.write("x.rs", "fn x() {}\n");
    other.commit("x");
    other
        .workspace_with(Access::ReadWrite, Some(scratch.path()))
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    // The other store's index (one entry) stands where this store's should be.
    for entry in std::fs::read_dir(lexical_dir(scratch.path()))
        .expect("dir")
        .flatten()
    {
        std::fs::copy(entry.path(), lexical.join(entry.file_name())).expect("copy");
    }
    let error = damage_reported(&workspace);
    assert!(error.message().contains("entries"), "{error}");
    let report = verify(&workspace, true);
    assert_eq!(parts(&report), ["store"], "{report}");
    assert!(report.remaining.is_empty(), "{report}");
    assert_eq!(packs(&workspace), before);
}

#[test]
fn a_flipped_byte_in_the_lexical_index_is_found_and_repaired() {
    let (f, workspace, before) = indexed();
    let lexical = lexical_dir(&f.store());
    let victim = std::fs::read_dir(&lexical)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "idx" || x == "term"))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a segment file");
    let mut bytes = std::fs::read(&victim).expect("read");
    let at = bytes.len() / 3;
    bytes[at] ^= 0x5a;
    std::fs::write(&victim, bytes).expect("write");
    found_then_repaired(&workspace, "lexical", "checksum", &before);
}

#[test]
fn a_dropped_table_is_damage_and_a_rebuild_restores_the_store() {
    let (f, workspace, before) = indexed();
    sql(&f.store(), "DROP TABLE manifest;");
    damage_reported(&workspace);
    let summary = workspace
        .index(
            &IndexRequest {
                rebuild: true,
                ..IndexRequest::default()
            },
            &Control::new(),
        )
        .expect("a rebuild succeeds on a damaged database");
    assert!(
        summary.moved_aside.is_some(),
        "the damaged database was kept aside"
    );
    assert_eq!(packs(&workspace), before);
    assert!(verify(&workspace, false).found.is_empty());
}

#[test]
fn forged_chunks_are_found_from_the_git_objects_and_repaired() {
    let (f, workspace, before) = indexed();
    // A chunk whose text is changed and whose checksum is made to match: only the blob tells.
    rewrite_chunk(&f, "src/budget.rs", |text| {
        text.replace("cost <= remaining", "true // always admit")
    });
    found_then_repaired(&workspace, "chunk", "src/budget.rs", &before);
}

/// What a chunk records of the definitions around its lines (which line a cut inside it shows
/// as enclosing) is compared with what the blob gives too: a record rewritten in the store is
/// found and repaired.
#[test]
fn a_forged_record_of_the_definitions_inside_a_chunk_is_found_and_repaired() {
    let (f, workspace, before) = indexed();
    sql(
        &f.store(),
        "UPDATE chunks SET inside = '[]' WHERE inside LIKE '[[%' \
         AND file_id IN (SELECT id FROM files WHERE path = 'src/budget.rs');",
    );
    let forged: i64 = rusqlite::Connection::open(f.store().join("ctxpack.sqlite"))
        .expect("open")
        .query_row("SELECT count(*) FROM chunks WHERE inside = '[]'", [], |r| {
            r.get(0)
        })
        .expect("count");
    assert!(forged > 0, "the fixture records definitions inside a chunk");
    found_then_repaired(&workspace, "chunk", "src/budget.rs", &before);
}

#[test]
fn a_changed_chunk_fails_its_checksum() {
    let (f, workspace, before) = indexed();
    sql(
        &f.store(),
        "UPDATE chunks SET text = text || ' ' WHERE id = (SELECT min(id) FROM chunks);",
    );
    let report = verify(&workspace, false);
    assert!(
        report
            .found
            .iter()
            .any(|p| p.part == "chunk" && p.detail.contains("checksum")),
        "{report}"
    );
    assert!(verify(&workspace, true).remaining.is_empty());
    assert_eq!(packs(&workspace), before);
}

/// A chunk edited in the store (its checksum left as it was) is never served: a pack or a
/// query that reads it exits as damage, naming the chunk, until `verify --repair`.
#[test]
fn a_changed_chunk_is_never_packed_or_queried() {
    let (f, workspace, before) = indexed();
    sql(
        &f.store(),
        "UPDATE chunks SET text = replace(text, 'cost <= remaining', 'true') \
         WHERE file_id IN (SELECT id FROM files WHERE path = 'src/budget.rs');",
    );
    let error = damage_reported(&workspace);
    assert!(error.message().contains("checksum"), "{error}");
    assert!(error.message().contains("src/budget.rs"), "{error}");
    let error = workspace
        .query(&ctxpack_api::QueryRequest {
            goal: GOALS[0].into(),
            ..ctxpack_api::QueryRequest::default()
        })
        .expect_err("damage is reported");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    assert!(verify(&workspace, true).remaining.is_empty());
    assert_eq!(packs(&workspace), before);
}

/// A manifest that lost a row is never a pack without the file: a search reads the file list
/// of the snapshot its chain is stored against and only the rows its deltas change, so the
/// pack is the one committed, and `verify` finds the row gone (against the record committed
/// with each snapshot) and indexes both snapshots again. Here the row is in the base the
/// packed snapshot is stored against.
#[test]
fn a_deleted_manifest_row_is_found_by_verify_and_never_drops_the_file() {
    let (f, workspace, _) = indexed();
    f.write(
        "src/spend.rs",
        "pub fn spend(budget: u64, cost: u64) -> Option<u64> { budget.checked_sub(cost) }\n",
    );
    f.commit("second");
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes HEAD as changes against the first commit");
    let before = packs(&workspace);
    sql(
        &f.store(),
        "DELETE FROM manifest WHERE path = 'src/budget.rs';",
    );
    assert_eq!(packs(&workspace), before);
    // Both snapshots list it through the same row, and both are indexed again.
    let report = verify(&workspace, false);
    assert_eq!(parts(&report), ["manifest", "manifest"], "{report}");
    assert!(
        report.found[0]
            .detail
            .contains("lists 4 files where 5 were committed"),
        "{report}"
    );
    assert!(report.remaining.len() == 2, "{report}");
    let report = verify(&workspace, true);
    assert!(report.remaining.is_empty(), "{report}");
    assert_eq!(packs(&workspace), before);
    assert!(verify(&workspace, false).found.is_empty());
}

/// The file list a search reads changed outside ctxpack: counted against the record, it is
/// damage on the read path, never a pack of other files, until `verify --repair`.
#[test]
fn a_changed_file_list_fails_the_pack_until_repaired() {
    let (f, workspace, before) = indexed();
    for (list, needle) in [
        ("X'01'", "lists 1 files where 4 were committed"),
        ("X'80'", "is not one ctxpack writes"),
    ] {
        sql(
            &f.store(),
            &format!("UPDATE snapshots SET file_ids = {list};"),
        );
        let error = damage_reported(&workspace);
        assert!(error.message().contains(needle), "{error}");
        assert_eq!(error.hint(), Some(&Hint::RebuildStore), "{error}");
        let report = verify(&workspace, false);
        assert_eq!(parts(&report), ["manifest"], "{report}");
        assert!(
            report.found[0].detail.contains(if list == "X'80'" {
                needle
            } else {
                "file list differs from its manifest's rows"
            }),
            "{report}"
        );
        let report = verify(&workspace, true);
        assert!(report.remaining.is_empty(), "{report}");
        assert_eq!(packs(&workspace), before);
    }
}

/// A manifest row pointed at a file version that is not there (as a tool that does not enforce
/// foreign keys can leave it) is named by `verify` and repaired; packs read the file list.
#[test]
fn a_manifest_row_naming_a_missing_file_is_found_and_repaired() {
    let (f, workspace, before) = indexed();
    sql(
        &f.store(),
        "PRAGMA foreign_keys = OFF; \
         UPDATE manifest SET file_id = (SELECT max(id) + 1000 FROM files) \
         WHERE path = 'src/budget.rs';",
    );
    assert_eq!(packs(&workspace), before);
    found_then_repaired(&workspace, "manifest", "src/budget.rs", &before);
}

/// A file version deleted under a manifest that still lists it: the count and the ids still
/// match the record, but a pack that reads one of its chunks finds the chunk's file missing,
/// and `verify` names the row (and the chunks and lexical entries left without it, which
/// `--repair` removes before it indexes the snapshot again).
#[test]
fn a_file_version_deleted_under_its_manifest_fails_the_pack_and_verify() {
    let (f, workspace, before) = indexed();
    sql(
        &f.store(),
        "PRAGMA foreign_keys = OFF; DELETE FROM files WHERE path = 'src/budget.rs';",
    );
    let error = damage_reported(&workspace);
    assert!(error.message().contains("which is missing"), "{error}");
    let report = verify(&workspace, false);
    assert_eq!(parts(&report), ["chunk", "manifest", "lexical"], "{report}");
    assert!(
        report.found[1]
            .detail
            .contains("for src/budget.rs, which is missing"),
        "{report}"
    );
    let report = verify(&workspace, true);
    assert!(report.remaining.is_empty(), "{report}");
    assert_eq!(packs(&workspace), before);
}

/// A store written before snapshots recorded their manifests (format 6) packs as it always
/// did and `verify` finds nothing wrong with it; `verify --repair` records its manifests as
/// they stand, after which they are checked like any other.
#[test]
fn a_store_without_the_record_packs_as_before_and_repair_records_it() {
    let (f, workspace, before) = indexed();
    sql(
        &f.store(),
        "ALTER TABLE snapshots DROP COLUMN manifest_files; \
         ALTER TABLE snapshots DROP COLUMN manifest_ids; \
         ALTER TABLE snapshots DROP COLUMN manifest_digest; \
         DROP TABLE histories; \
         ALTER TABLE chunks DROP COLUMN inside; \
         DROP INDEX chunk_heads; \
         ALTER TABLE chunks DROP COLUMN o200k_lines; \
         DROP INDEX chunks_by_line; \
         ALTER TABLE snapshots DROP COLUMN file_ids; \
         ALTER TABLE files DROP COLUMN imports; \
         PRAGMA user_version = 6;",
    );
    let reader = f.workspace_with(Access::ReadOnly, None);
    assert_eq!(packs(&reader), before);
    let report = verify(&reader, false);
    assert!(report.found.is_empty(), "{report}");
    assert_eq!(report.unrecorded, 1, "{report}");
    assert!(
        report.to_string().contains("a repair records them"),
        "{report}"
    );
    let report = verify(&workspace, true);
    assert!(report.remaining.is_empty(), "{report}");
    assert_eq!(
        report.repaired,
        ["recorded the manifest of 1 snapshot as it stands"],
        "{report}"
    );
    assert_eq!(report.unrecorded, 0, "{report}");
    assert_eq!(packs(&workspace), before);
    // Recorded, the manifest is checked, and so is the file list the migration wrote from
    // its rows: a list changed now is damage.
    let lists: i64 = rusqlite::Connection::open(f.store().join("ctxpack.sqlite"))
        .and_then(|c| {
            c.query_row(
                "SELECT count(*) FROM snapshots WHERE length(file_ids) > 0",
                [],
                |r| r.get(0),
            )
        })
        .expect("counts");
    assert_eq!(
        lists, 1,
        "the migration writes the whole snapshot's file list"
    );
    sql(&f.store(), "UPDATE snapshots SET file_ids = X'01';");
    damage_reported(&workspace);
}

/// The PostgreSQL backend records each published manifest too: a process filling its cache
/// from a manifest changed in the database fails as damage instead of packing without a file.
#[test]
fn a_changed_published_manifest_fails_the_pack_from_a_fresh_cache() {
    use ctxpack_api::server::{Grant, Scope, ServerRegistry};
    let Some(db) = crate::api::backends::postgres() else {
        return;
    };
    let (f, _) = project();
    let state = tempfile::tempdir().expect("tempdir");
    let registry = ServerRegistry::open_database(db.url(), state.path()).expect("opens");
    registry.add_repo("app", f.path()).expect("registers");
    let grant = Grant {
        token: "ci".into(),
        repo: "app".into(),
        scope: Scope::Write,
    };
    let roots = [f.path().canonicalize().expect("canonical")];
    let workspace = registry.workspace(&grant, &roots).expect("a workspace");
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes and publishes");
    let mut client = postgres::Client::connect(db.url(), postgres::NoTls).expect("a client");
    let text: String = client
        .query_one(
            "SELECT manifest FROM ctxpack_snapshots WHERE repo = 'app'",
            &[],
        )
        .expect("one snapshot")
        .get(0);
    let mut manifest: Value = serde_json::from_str(&text).expect("JSON");
    let entries = manifest["whole"].as_array_mut().expect("a whole manifest");
    let listed = entries.len();
    entries.retain(|entry| entry[0] != "src/budget.rs");
    assert_eq!(entries.len(), listed - 1);
    client
        .execute(
            "UPDATE ctxpack_snapshots SET manifest = $1 WHERE repo = 'app'",
            &[&manifest.to_string()],
        )
        .expect("tamper");
    let other_state = tempfile::tempdir().expect("tempdir");
    let other = ServerRegistry::open_database(db.url(), other_state.path())
        .expect("opens")
        .workspace(&grant, &roots)
        .expect("a workspace");
    let error = other
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: GOALS[0].into(),
                index: false,
                ..SnapshotPackRequest::default()
            },
            &PackOptions::default(),
        )
        .expect_err("damage is reported");
    assert_eq!(error.kind(), ErrorKind::Damaged, "{error}");
    assert!(
        error.message().contains(&format!(
            "lists {} files where {listed} were published",
            listed - 1
        )),
        "{error}"
    );
}

/// A document store with vectors synced, and the bytes of a search and a pack.
fn documents() -> (tempfile::TempDir, Workspace, (String, String)) {
    let dir = tempfile::tempdir().expect("tmp");
    let store =
        Workspace::for_store(&dir.path().join("app.ctxpack"), Access::ReadWrite).expect("a store");
    store.create_store(false).expect("created");
    for (id, text) in [
        (1, "database search and indexing"),
        (2, "chocolate cake recipe"),
        (3, "search engines rank documents"),
    ] {
        store
            .insert_document(&InsertRequest {
                collection: "docs".into(),
                document: json!({"_id": id, "text": text}),
                replace: false,
                wait: false,
            })
            .expect("inserted");
    }
    let field = FieldRequest {
        collection: "docs".into(),
        field: "text".into(),
        wait: false,
    };
    store.vsync(&field, &Control::new()).expect("synced");
    let answers = document_answers(&store);
    (dir, store, answers)
}

fn document_answers(store: &Workspace) -> (String, String) {
    let search = store
        .vsearch(&VsearchRequest {
            collection: "docs".into(),
            field: "text".into(),
            query: "database search".into(),
            ..VsearchRequest::default()
        })
        .expect("searches");
    let json = RenderOptions {
        format: Format::Json,
        ..RenderOptions::default()
    };
    let pack = store
        .document_pack(
            &DocumentPackRequest {
                collection: "docs".into(),
                field: "text".into(),
                query: "database search".into(),
                ..DocumentPackRequest::default()
            },
            Some(&json),
        )
        .expect("packs");
    (search.to_json_line(), pack.pack.to_json_line())
}

#[test]
fn damaged_vectors_are_found_and_repaired() {
    let (dir, store, before) = documents();
    // A flipped byte in the vector file's rows: it still claims to be current.
    let file = walk(&dir.path().join("app.ctxpack/vectors"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|x| x == "vec"))
        .expect("a vector file");
    let mut bytes = std::fs::read(&file).expect("read");
    bytes[200] ^= 0x40;
    std::fs::write(&file, bytes).expect("write");
    let report = store
        .verify(&VerifyRequest { repair: false }, &Control::new())
        .expect("runs");
    assert_eq!(parts(&report), ["vectors"], "{report}");
    // A damaged embedding row fails its checksum.
    sql(
        &dir.path().join("app.ctxpack"),
        "UPDATE embeddings SET vector = zeroblob(length(vector)) WHERE id_key = '2';",
    );
    let report = store
        .verify(&VerifyRequest { repair: true }, &Control::new())
        .expect("runs");
    assert!(parts(&report).contains(&"embedding"), "{report}");
    assert!(report.remaining.is_empty(), "{report}");
    let field = FieldRequest {
        collection: "docs".into(),
        field: "text".into(),
        wait: false,
    };
    store.vsync(&field, &Control::new()).expect("synced again");
    assert_eq!(document_answers(&store), before);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_tampered_ledger_record_is_found() {
    let (f, workspace, _) = indexed();
    let rendering = RenderOptions::default();
    workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: GOALS[0].into(),
                ..SnapshotPackRequest::default()
            },
            &PackOptions {
                record: Some(&rendering),
                index_if_missing: false,
                rendering: None,
            },
        )
        .expect("packs");
    let path = f.store().join("ledger/packs.jsonl");
    let text = std::fs::read_to_string(&path).expect("ledger");
    let mut record: Value = serde_json::from_str(text.trim()).expect("a record");
    record["budget"] = json!(999_999);
    std::fs::write(&path, format!("{record}\n")).expect("write");
    let report = verify(&workspace, false);
    // The record's line changed length under its index entry: the index is reported too.
    assert_eq!(parts(&report), ["ledger", "ledger index"], "{report}");
    let id = record["id"].as_str().expect("id");
    assert!(report.found[0].detail.contains(id), "{report}");
    let error = workspace.show(id).expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Damaged);
}
