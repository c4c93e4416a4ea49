//! Field indexes: a filter answered from a declared index finds exactly the documents, in the
//! same order, that a scan of every body finds; the index follows inserts, replaces, imports
//! and deletes; an exact plan reads no body it does not return; bad declarations are refused.

use std::path::PathBuf;

use ctxpack_api::docs::{
    DeleteRequest, FieldRequest, FindRequest, ImportRequest, ImportSource, InsertRequest,
    VsearchRequest,
};
use ctxpack_api::{Access, Control, ErrorKind, Workspace};
use serde_json::{Value, json};

struct Fixture {
    dir: tempfile::TempDir,
    workspace: Workspace,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = Workspace::for_store(&dir.path().join("app.ctxpack"), Access::ReadWrite)
            .expect("a workspace");
        workspace.create_store(false).expect("store");
        Fixture { dir, workspace }
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("app.ctxpack")
    }

    fn insert(&self, document: Value, replace: bool) {
        self.workspace
            .insert_document(&InsertRequest {
                collection: "c".into(),
                document,
                replace,
                wait: false,
            })
            .expect("insert");
    }

    fn find(&self, filter: &Value) -> Vec<String> {
        let mut out = Vec::new();
        self.workspace
            .find_documents(
                &FindRequest {
                    collection: "c".into(),
                    filter: Some(filter.clone()),
                    limit: None,
                },
                &mut |body| out.push(body.to_owned()),
            )
            .expect("find");
        out
    }

    fn vsearch(&self, filter: &Value) -> Vec<String> {
        let outcome = self
            .workspace
            .vsearch(&VsearchRequest {
                collection: "c".into(),
                field: "text".into(),
                query: "alpha beta".into(),
                k: 50,
                filter: Some(filter.clone()),
                exact: false,
            })
            .expect("vsearch");
        outcome.hits.into_iter().map(|h| h.id_key).collect()
    }

    fn index(&self, field: &str) -> bool {
        self.workspace
            .create_field_index(&request(field))
            .unwrap_or_else(|e| panic!("indexing {field}: {e}"))
    }

    fn drop_index(&self, field: &str) -> bool {
        self.workspace
            .drop_field_index(&request(field))
            .expect("drop index")
    }
}

fn request(field: &str) -> FieldRequest {
    FieldRequest {
        collection: "c".into(),
        field: field.into(),
        wait: false,
    }
}

const FIELDS: [&str; 5] = ["status", "n", "tags", "meta.kind", "_id"];

/// Documents of every shape the filter rules distinguish: scalars of each type, numbers
/// spelled as integers and floats, leaf arrays, arrays of objects, ObjectIds, missing fields.
fn document(i: u64) -> Value {
    let status = ["published", "draft", "Published", "1"][(i % 4) as usize];
    let n: Value = match i % 5 {
        0 => json!(i % 7),
        1 => json!((i % 7) as f64),
        2 => json!(format!("{}", i % 7)),
        3 => json!([i % 7, "x"]),
        _ => Value::Null,
    };
    let text = ["alpha", "beta", "gamma", "alpha beta"][(i % 4) as usize];
    let mut doc = json!({
        "_id": i,
        "status": status,
        "n": n,
        "tags": (0..(i % 4)).map(|t| format!("t{}", (i + t) % 5)).collect::<Vec<_>>(),
        "meta": if i.is_multiple_of(3) {
            json!([{"kind": "a"}, {"kind": i.is_multiple_of(2)}])
        } else {
            json!({"kind": {"$oid": format!("{:024x}", i % 3)}})
        },
        "text": text,
    });
    if i.is_multiple_of(11) {
        doc.as_object_mut().expect("object").remove("status");
    }
    doc
}

/// Filters the planner answers exactly, answers in part, or cannot answer.
fn filters() -> Vec<Value> {
    vec![
        json!({"status": "published"}),
        json!({"status": {"$eq": "draft"}}),
        json!({"status": {"$in": ["published", "Published", 1]}}),
        json!({"status": {"$in": []}}),
        json!({"n": 3}),
        json!({"n": 3.0}),
        json!({"n": "3"}),
        json!({"n": {"$in": [0, 6.0, "x"]}}),
        json!({"tags": "t2"}),
        json!({"tags": "t2", "status": "published"}),
        json!({"meta.kind": "a"}),
        json!({"meta.kind": true}),
        json!({"meta.kind": {"$oid": "000000000000000000000001"}}),
        json!({"_id": 42}),
        json!({"_id": {"$in": [1, 2.0, 3, 999]}}),
        json!({"$and": [{"status": "draft"}, {"n": 1}]}),
        // In part: the lookups narrow, the rest is checked on each body.
        json!({"status": "published", "n": {"$gte": 3}}),
        json!({"status": "draft", "$or": [{"n": 1}, {"tags": "t0"}]}),
        json!({"tags": "t1", "text": "alpha"}),
        // Not at all: a scan.
        json!({"status": null}),
        json!({"status": {"$ne": "draft"}}),
        json!({"n": {"$gt": 2}}),
        json!({"$or": [{"status": "draft"}, {"n": 2}]}),
        json!({"text": "beta"}),
        json!({}),
    ]
}

/// Every filter gives the same documents in the same order, and the same vsearch hits.
fn assert_same_as_a_scan(indexed: &Fixture, plain: &Fixture) {
    for filter in filters() {
        assert_eq!(indexed.find(&filter), plain.find(&filter), "find {filter}");
        assert_eq!(
            indexed.vsearch(&filter),
            plain.vsearch(&filter),
            "vsearch {filter}"
        );
    }
}

#[test]
fn an_index_answers_exactly_what_a_scan_finds_through_every_kind_of_write() {
    let (indexed, plain) = (Fixture::new(), Fixture::new());
    // Some documents before the indexes are declared, some after.
    for i in 0..120 {
        indexed.insert(document(i), false);
        plain.insert(document(i), false);
    }
    for field in FIELDS {
        assert!(indexed.index(field), "{field} is new");
        assert!(!indexed.index(field), "{field} is declared once");
    }
    let lines: String = (120..240).map(|i| format!("{}\n", document(i))).collect();
    let path = indexed.dir.path().join("more.jsonl");
    std::fs::write(&path, lines).expect("write");
    for fixture in [&indexed, &plain] {
        fixture
            .workspace
            .import_documents(
                &ImportRequest {
                    collection: "c".into(),
                    batch_size: 37,
                    ..ImportRequest::default()
                },
                &ImportSource::File(path.clone()),
                &Control::new(),
            )
            .expect("import");
        // A generated `_id` is listed under its ObjectId (and the ids differ between
        // stores, so the document is deleted again before the stores are compared).
        let id = fixture
            .workspace
            .insert_document(&InsertRequest {
                collection: "c".into(),
                document: json!({"status": "published", "text": "alpha"}),
                replace: false,
                wait: false,
            })
            .expect("insert")
            .id;
        assert_eq!(fixture.find(&json!({"_id": id})).len(), 1, "{id}");
        let deleted = fixture
            .workspace
            .delete_documents(&DeleteRequest {
                collection: "c".into(),
                filter: json!({"_id": id}),
                wait: false,
            })
            .expect("delete");
        assert_eq!(deleted, 1);
    }
    assert_same_as_a_scan(&indexed, &plain);

    // Replaces move a document between keys; deletes remove it from every index.
    for i in (0..240).step_by(7) {
        let mut doc = document(i + 1);
        doc["_id"] = json!(i);
        indexed.insert(doc.clone(), true);
        plain.insert(doc, true);
    }
    for fixture in [&indexed, &plain] {
        fixture
            .workspace
            .delete_documents(&DeleteRequest {
                collection: "c".into(),
                filter: json!({"status": "draft"}),
                wait: false,
            })
            .expect("delete");
        fixture
            .workspace
            .vsync(&request("text"), &Control::new())
            .expect("vsync");
    }
    assert_same_as_a_scan(&indexed, &plain);
    assert_eq!(
        indexed.find(&json!({"status": "draft"})),
        Vec::<String>::new()
    );

    // Dropped, an index answers nothing and the scan still agrees.
    assert!(indexed.drop_index("status"));
    assert!(!indexed.drop_index("status"));
    assert_same_as_a_scan(&indexed, &plain);
    let listed: Vec<String> = indexed
        .workspace
        .field_indexes("c")
        .expect("list")
        .into_iter()
        .map(|i| i.field)
        .collect();
    assert_eq!(listed, ["_id", "meta.kind", "n", "tags"]);
}

#[test]
fn an_exact_plan_reads_only_the_bodies_it_returns() {
    let fixture = Fixture::new();
    for i in 0..40 {
        fixture.insert(document(i), false);
    }
    fixture.index("status");
    // Damage a draft's body behind the store's back: a scan must read it and fails; a lookup
    // of published documents never reads it.
    let conn = rusqlite::Connection::open(fixture.store().join("ctxpack.sqlite")).expect("open db");
    conn.execute(
        "UPDATE documents SET body = 'not json' WHERE id_key = '1'",
        [],
    )
    .expect("damage");
    drop(conn);
    let published = fixture.find(&json!({"status": "published"}));
    let expected = (0..40).filter(|i| i % 4 == 0 && i % 11 != 0).count();
    assert_eq!(published.len(), expected, "{published:?}");
    let err = fixture
        .workspace
        .find_documents(
            &FindRequest {
                collection: "c".into(),
                filter: Some(json!({"status": {"$ne": "published"}})),
                limit: None,
            },
            &mut |_| {},
        )
        .expect_err("a scan reads the damaged body");
    assert_eq!(err.kind(), ErrorKind::Damaged, "{err}");
}

#[test]
fn bad_declarations_are_refused_and_write_nothing() {
    let fixture = Fixture::new();
    fixture.insert(json!({"_id": 1, "status": "a"}), false);
    let err = fixture
        .workspace
        .create_field_index(&request("a..b"))
        .expect_err("an empty segment");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    // A damaged body fails the declaration as a whole.
    let conn = rusqlite::Connection::open(fixture.store().join("ctxpack.sqlite")).expect("open db");
    conn.execute("UPDATE documents SET body = '{' WHERE id_key = '1'", [])
        .expect("damage");
    drop(conn);
    let err = fixture
        .workspace
        .create_field_index(&request("status"))
        .expect_err("a damaged body");
    assert_eq!(err.kind(), ErrorKind::Damaged, "{err}");
    assert!(
        fixture
            .workspace
            .field_indexes("c")
            .expect("list")
            .is_empty()
    );
    let err = fixture
        .workspace
        .field_indexes("missing")
        .expect_err("no such collection");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}
