//! Document collections in process: seed 001's worked example byte for byte, exact round
//! trips, conflicts, import atomicity (whole batches only, also when cancelled), vsync and
//! vstale, vsearch with a pre-filter, the vector file, and the kind of every bad input.

use std::path::{Path, PathBuf};

use ctxpack_api::docs::{
    DeleteRequest, DocumentPack, DocumentPackRequest, FieldRequest, FindRequest, ImportReport,
    ImportRequest, ImportSource, InsertRequest, Inserted, StaleReport, SyncReport, VsearchRequest,
};
use ctxpack_api::{
    Access, Budget, Control, Error, ErrorKind, Format, Hint, Meter, Recorded, RenderOptions,
    Selector, View, Workspace, render,
};
use serde_json::{Value, json};

/// A temporary directory with a document store path inside it, and a read-write workspace
/// over that store.
struct Docs {
    dir: tempfile::TempDir,
    workspace: Workspace,
}

impl Docs {
    /// A fixture whose store exists.
    fn new() -> Docs {
        let docs = Docs::empty();
        assert!(
            docs.workspace
                .create_store(false)
                .expect("the store is created"),
            "the store is new"
        );
        docs
    }

    /// A fixture without a store.
    fn empty() -> Docs {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = Workspace::for_store(&dir.path().join("app.ctxpack"), Access::ReadWrite)
            .expect("a workspace over a store path");
        Docs { dir, workspace }
    }

    /// The store directory.
    fn store(&self) -> PathBuf {
        self.dir.path().join("app.ctxpack")
    }

    /// Writes `bytes` to the file `name` in the temporary directory and returns its path.
    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    /// Inserts the JSON text `document` (kept exactly as given) and returns what was done.
    fn try_insert(&self, collection: &str, document: &str) -> Result<Inserted, Error> {
        self.workspace
            .insert_document(&insert(collection, document))
    }

    /// Inserts the JSON text `document` and returns its `_id`.
    fn insert(&self, collection: &str, document: &str) -> Value {
        self.try_insert(collection, document)
            .unwrap_or_else(|e| panic!("inserting {document}: {e}"))
            .id
    }

    /// Stores the JSON text `document` over the stored one with the same `_id`; returns
    /// whether one was replaced.
    fn replace(&self, collection: &str, document: &str) -> bool {
        self.workspace
            .insert_document(&InsertRequest {
                replace: true,
                ..insert(collection, document)
            })
            .unwrap_or_else(|e| panic!("replacing with {document}: {e}"))
            .replaced
    }

    /// Imports JSON Lines from `source` in batches of `batch_size`.
    fn try_import(
        &self,
        collection: &str,
        source: &ImportSource,
        batch_size: usize,
    ) -> Result<ImportReport, Error> {
        let request = ImportRequest {
            collection: collection.into(),
            batch_size,
            ..ImportRequest::default()
        };
        self.workspace
            .import_documents(&request, source, &Control::new())
    }

    /// Imports the JSON Lines `lines` with the default batch size.
    fn import(&self, collection: &str, lines: &str) -> ImportReport {
        let source = ImportSource::Bytes(lines.as_bytes().to_vec());
        self.try_import(collection, &source, ImportRequest::default().batch_size)
            .expect("the import succeeds")
    }

    /// The stored texts of the documents `request` finds, in insertion order.
    fn try_find(&self, request: &FindRequest) -> Result<Vec<String>, Error> {
        let mut found = Vec::new();
        let count = self
            .workspace
            .find_documents(request, &mut |body| found.push(body.to_owned()))?;
        assert_eq!(count, found.len() as u64, "find counts what it returns");
        Ok(found)
    }

    /// Every stored document of a collection, as stored.
    fn find(&self, collection: &str) -> Vec<String> {
        self.try_find(&FindRequest {
            collection: collection.into(),
            ..FindRequest::default()
        })
        .expect("find succeeds")
    }

    /// The document count of a collection (0 when it does not exist).
    fn count(&self, collection: &str) -> u64 {
        self.workspace
            .collections()
            .expect("the collections are listed")
            .iter()
            .find(|c| c.name == collection)
            .map_or(0, |c| c.documents)
    }

    /// Deletes the documents of `collection` matching `filter`; returns how many.
    fn delete(&self, collection: &str, filter: Value) -> u64 {
        self.workspace
            .delete_documents(&DeleteRequest {
                collection: collection.into(),
                filter,
                wait: false,
            })
            .expect("delete succeeds")
    }

    /// Syncs the embeddings of a field.
    fn vsync(&self, collection: &str, field: &str) -> SyncReport {
        self.workspace
            .vsync(&field_request(collection, field), &Control::new())
            .expect("vsync succeeds")
    }

    /// The state of the embeddings of a field.
    fn vstale(&self, collection: &str, field: &str) -> StaleReport {
        self.workspace
            .vstale(&field_request(collection, field))
            .expect("vstale succeeds")
    }

    /// The `_id`s and scores (as JSON prints them: four decimals at most) of a `vsearch`,
    /// best first.
    fn vsearch(&self, request: &VsearchRequest) -> Vec<(i64, String)> {
        self.workspace
            .vsearch(request)
            .expect("vsearch succeeds")
            .hits
            .iter()
            .map(|h| {
                let id = h.id_key.parse().expect("an integer _id");
                (id, json!(h.score).to_string())
            })
            .collect()
    }

    /// Builds a document pack without recording it.
    fn pack(&self, request: &DocumentPackRequest) -> DocumentPack {
        self.workspace
            .document_pack(request, None)
            .expect("the document pack is built")
    }
}

/// An insert of the JSON text `document` (kept exactly as given).
fn insert(collection: &str, document: &str) -> InsertRequest {
    InsertRequest {
        collection: collection.into(),
        document: Value::String(document.into()),
        replace: false,
        wait: false,
    }
}

/// A vsync or vstale request.
fn field_request(collection: &str, field: &str) -> FieldRequest {
    FieldRequest {
        collection: collection.into(),
        field: field.into(),
        ..FieldRequest::default()
    }
}

/// A `vsearch` request with the default `k` and no filter.
fn vsearch(collection: &str, field: &str, query: &str) -> VsearchRequest {
    VsearchRequest {
        collection: collection.into(),
        field: field.into(),
        query: query.into(),
        ..VsearchRequest::default()
    }
}

/// A document pack request with seed 001's defaults.
fn pack(collection: &str, field: &str, query: &str) -> DocumentPackRequest {
    DocumentPackRequest {
        collection: collection.into(),
        field: field.into(),
        query: query.into(),
        ..DocumentPackRequest::default()
    }
}

/// A budget that is valid.
fn budget(value: u64) -> Budget {
    Budget::new(value).expect("a valid budget")
}

/// The error of `result`, which must have failed.
fn failure<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> Error {
    match result {
        Ok(value) => panic!("{what} succeeded: {value:?}"),
        Err(e) => e,
    }
}

/// Replaces every ObjectId hex string in `text` with `...`, in order of appearance, returning
/// the text and the distinct ids.
fn mask_oids(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("{\"$oid\":\"") {
        let start = at + "{\"$oid\":\"".len();
        let hex = &rest[start..start + 24];
        if !ids.iter().any(|i| i == hex) {
            ids.push(hex.to_owned());
        }
        out.push_str(&rest[..start]);
        out.push_str("...");
        rest = &rest[start + 24..];
    }
    out.push_str(rest);
    (out, ids)
}

/// The 24 hex digits of a generated `_id`.
fn oid_hex(id: &Value) -> String {
    id["$oid"]
        .as_str()
        .expect("a generated ObjectId")
        .to_owned()
}

#[test]
fn seed_001_worked_example() {
    let f = Docs::new();
    let inserted = [
        f.insert("docs", r#"{"text":"database search and indexing"}"#),
        f.insert("docs", r#"{"text":"chocolate cake recipe"}"#),
    ]
    .map(|id| oid_hex(&id));
    assert_ne!(inserted[0], inserted[1], "two distinct generated ids");
    let expected = concat!(
        r#"{"query":"database search","budgetTokens":500,"usedTokens":13,"truncated":false,"#,
        r#""chunks":[{"id":{"$oid":"..."},"score":0.7071,"tokens":7,"text":"database search and indexing"},"#,
        r#"{"id":{"$oid":"..."},"score":0.0,"tokens":6,"text":"chocolate cake recipe"}],"#,
        r#""citations":[{"$oid":"..."},{"$oid":"..."}]}"#,
    );
    let request = DocumentPackRequest {
        budget: budget(500),
        ..pack("docs", "text", "database search")
    };
    let json = RenderOptions {
        format: Format::Json,
        view: View::Default,
        pretty: false,
    };
    let build = || {
        f.workspace
            .document_pack(&request, Some(&json))
            .expect("the pack is built")
    };
    // Never synced (embedded on the fly), then synced: the same bytes.
    let before = build();
    assert_eq!(before.embedded_on_the_fly, 2);
    f.vsync("docs", "text");
    let after = build();
    assert_eq!(after.embedded_on_the_fly, 0);
    let line = after.pack.to_json_line();
    assert_eq!(before.pack.to_json_line(), line);
    let (masked, ids) = mask_oids(&line);
    assert_eq!(masked, expected);
    // Chunks then citations, in the inserted order.
    assert_eq!(ids, inserted);
    // Each pack is in the store's ledger, which gives back the exact line.
    let log = f
        .workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger is read");
    assert_eq!(log.entries.len(), 2);
    assert_eq!(log.entries[0].surface, "docs context");
    let id = after.recorded.id().expect("the pack was recorded");
    assert_eq!(log.entries[0].id, id);
    let shown = f.workspace.show(id).expect("the record is shown");
    assert_eq!(shown.exact_output, Some(format!("{line}\n")));
    // Without a rendering to record, nothing is recorded.
    assert_eq!(f.pack(&request).recorded, Recorded::NotAsked);
    let log = f
        .workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger is read");
    assert_eq!(log.entries.len(), 2);
}

/// The prefix selector stops at the first document that does not fit, and every ranked
/// document it did not pack is in `dropped` (the next 30 past the stop; lower ones are not
/// candidates): none is in neither list.
#[test]
fn a_prefix_pack_lists_what_it_did_not_pack() {
    let f = Docs::new();
    for text in [
        "budget search one",
        "budget search two and a much longer text that does not fit",
        "budget search three",
    ] {
        f.insert("docs", &json!({ "text": text }).to_string());
    }
    let request = DocumentPackRequest {
        budget: budget(5),
        ..pack("docs", "text", "budget search")
    };
    let built = f.pack(&request).pack.pack;
    let c = &built.counters;
    assert_eq!(
        (built.hits.len(), built.dropped.len(), c.candidate_hits),
        (1, 2, 3),
        "{built:?}"
    );
    let reasons: Vec<_> = built.dropped.iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons,
        [
            ctxpack_api::DropReason::OverBudget,
            ctxpack_api::DropReason::PrefixTruncated
        ]
    );
    // A collection ranked deeper is listed 30 past the stop.
    for i in 0..40 {
        f.insert(
            "docs",
            &json!({ "text": format!("budget search {i}") }).to_string(),
        );
    }
    let built = f.pack(&request).pack.pack;
    assert_eq!(built.counters.candidate_hits, built.hits.len() + 1 + 30);
    assert_eq!(
        built.counters.unique_citations,
        built.hits.len() + built.dropped.len()
    );
}

/// What the command line prints for a document pack in `format`: seed 001's JSON line (or its
/// pretty form), else a rendering of the engine's pack.
fn shown(built: &DocumentPack, format: Format, pretty: bool) -> String {
    match format {
        Format::Json if pretty => built.pack.to_json_pretty(),
        Format::Json => built.pack.to_json_line(),
        _ => render(
            &built.pack.pack,
            &RenderOptions {
                format,
                view: View::Default,
                pretty,
            },
        ),
    }
}

#[test]
fn document_pack_options_and_warning() {
    let f = Docs::new();
    for text in ["database search and indexing", "chocolate cake recipe"] {
        f.insert("docs", &json!({ "text": text }).to_string());
    }
    let warning = "embedded on the fly";
    /// A change to the default request, the output format, whether pretty, what the output
    /// must contain and what it must not.
    type Case<'a> = (fn(&mut DocumentPackRequest), Format, bool, &'a str, &'a str);
    let cases: &[Case<'_>] = &[
        (|_| {}, Format::Text, false, warning, "\"query\""),
        // Every rendering but seed 001's JSON says what happened.
        (|_| {}, Format::Markdown, false, warning, "\"query\""),
        (|_| {}, Format::Xml, false, warning, "\"query\""),
        (
            |_| {},
            Format::Json,
            false,
            "\"budgetTokens\":1000",
            warning,
        ),
        (
            |_| {},
            Format::Json,
            true,
            "\n  \"query\": \"database search\",\n",
            warning,
        ),
        // The seed's prefix stops at the first chunk that does not fit.
        (
            |r| r.budget = budget(6),
            Format::Json,
            false,
            "\"usedTokens\":0,\"truncated\":true,\"chunks\":[]",
            "cake",
        ),
        // Skip drops the first and takes the second.
        (
            |r| {
                r.budget = budget(6);
                r.selector = Selector::Skip;
            },
            Format::Json,
            false,
            "\"usedTokens\":6,\"truncated\":true",
            "indexing",
        ),
        (
            |r| r.meter = Meter::Words,
            Format::Json,
            false,
            "\"usedTokens\":7",
            warning,
        ),
        // A filter, as an object or as its JSON text.
        (
            |r| r.filter = Some(json!({"text": {"$regex": "^choc"}})),
            Format::Json,
            false,
            "\"usedTokens\":6,",
            "indexing",
        ),
        (
            |r| r.filter = Some(json!(r#"{"text":{"$regex":"^choc"}}"#)),
            Format::Json,
            false,
            "\"usedTokens\":6,",
            "indexing",
        ),
        (
            |r| r.top_k = Some(1),
            Format::Json,
            false,
            "\"citations\":[{",
            "cake",
        ),
        (
            |r| r.top_k = Some(0),
            Format::Json,
            false,
            "\"usedTokens\":0,\"truncated\":false,\"chunks\":[]",
            "database search and",
        ),
    ];
    for (i, (change, format, pretty, has, lacks)) in cases.iter().enumerate() {
        let mut request = pack("docs", "text", "database search");
        change(&mut request);
        let out = shown(&f.pack(&request), *format, *pretty);
        assert!(out.contains(has), "case {i}: no {has:?} in\n{out}");
        assert!(!out.contains(lacks), "case {i}: {lacks:?} in\n{out}");
    }
    // Once synced, nothing is embedded on the fly and text output no longer warns.
    f.vsync("docs", "text");
    let built = f.pack(&pack("docs", "text", "database search"));
    assert_eq!(built.embedded_on_the_fly, 0);
    assert!(built.pack.pack.warnings.is_empty());
    assert!(!shown(&built, Format::Text, false).contains(warning));
}

#[test]
fn documents_round_trip_exactly() {
    let f = Docs::new();
    let docs = [
        r#"{"z":1,"_id":"mid","a":2,"m":{"y":true,"b":null}}"#,
        r#"{"_id":"k","big":123456789012345678901234567890,"f":1.50,"e":1E+3,"neg":-0.0}"#,
        r#"{"s":"café \u00e9 日本語 😀 \"q\" \\ \n\t","_id":7}"#,
        r#"{"arr":[1,[2,[3]],{"x":[]}],"empty":{},"_id":{"$oid":"65A1F0C2A1B2C3D4E5F60001"}}"#,
    ];
    for doc in docs {
        f.insert("c", doc);
    }
    // Whitespace between tokens is not part of a document.
    f.insert("c", "{ \"_id\" : 8 ,\n \"t\" : [ 1 , 2 ] }");
    let found = f.find("c");
    assert_eq!(found.len(), 5);
    for (stored, given) in found.iter().zip(docs) {
        assert_eq!(stored, given);
    }
    assert_eq!(found[4], r#"{"_id":8,"t":[1,2]}"#);
    // A generated `_id` goes first; the rest stays as written.
    let id = f.insert("g", r#"{"b":1,"a":"é"}"#);
    let stored = &f.find("g")[0];
    let (masked, _) = mask_oids(stored);
    assert_eq!(masked, r#"{"_id":{"$oid":"..."},"b":1,"a":"é"}"#);
    assert!(stored.starts_with(&format!("{{\"_id\":{id}")), "{stored}");
    // A document given as an object is stored as its JSON text.
    f.workspace
        .insert_document(&InsertRequest {
            collection: "o".into(),
            document: json!({"_id": "obj", "n": [1, 2]}),
            replace: false,
            wait: false,
        })
        .expect("an object is a document");
    assert_eq!(f.find("o"), [r#"{"_id":"obj","n":[1,2]}"#]);
    // The same documents through import, from a file and from bytes, blank lines skipped.
    let lines = format!("{}\n\n", docs.join("\n"));
    let sources = [
        (
            "from_file",
            ImportSource::File(f.write("docs.jsonl", &lines)),
        ),
        (
            "from_bytes",
            ImportSource::Bytes(lines.clone().into_bytes()),
        ),
    ];
    for (collection, source) in &sources {
        let report = f
            .try_import(collection, source, 3)
            .expect("the import succeeds");
        assert_eq!(
            report,
            ImportReport {
                collection: (*collection).into(),
                imported: 4,
                batches: 2,
                embedded: 0,
            }
        );
        assert_eq!(f.find(collection), docs, "{collection}");
    }
}

#[test]
fn insert_returns_the_canonical_id() {
    let f = Docs::new();
    // (document, canonical JSON of the returned id)
    let cases: &[(&str, &str)] = &[
        (r#"{"_id":1}"#, "1"),
        (r#"{"_id":"1"}"#, "\"1\""),
        (r#"{"_id":2.0}"#, "2"),
        (
            r#"{"_id":{"$oid":"65A1F0C2A1B2C3D4E5F60001"}}"#,
            r#"{"$oid":"65a1f0c2a1b2c3d4e5f60001"}"#,
        ),
        (r#"{"_id":null}"#, "null"),
    ];
    for (doc, id) in cases {
        let inserted = f.try_insert("c", doc).expect("the insert succeeds");
        assert_eq!(inserted.id.to_string(), *id, "{doc}");
        assert_eq!(inserted.collection, "c");
        assert!(!inserted.replaced);
    }
    let generated = f.insert("c", "{}");
    let (masked, ids) = mask_oids(&generated.to_string());
    assert_eq!(masked, "{\"$oid\":\"...\"}");
    assert!(
        ids[0]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{}",
        ids[0]
    );
}

/// A write that must conflict.
enum Write<'a> {
    /// Insert this document.
    Insert(&'a str),
    /// Import these JSON Lines from the file `name` in batches of `batch_size`.
    Import {
        name: &'a str,
        lines: &'a str,
        batch_size: usize,
    },
}

#[test]
fn duplicate_ids_conflict_and_write_nothing() {
    let f = Docs::new();
    f.insert("c", r#"{"_id":1,"v":"first"}"#);
    let dup_in_file = "{\"_id\":2}\n{\"_id\":3}\n{\"_id\":2}\n";
    let dup_stored = "{\"_id\":4}\n{\"_id\":1.0}\n";
    // (write, message must contain)
    let cases: &[(Write<'_>, &str)] = &[
        (
            Write::Insert(r#"{"_id":1,"v":"second"}"#),
            "duplicate _id 1",
        ),
        (Write::Insert(r#"{"_id":1.0}"#), "duplicate _id 1"),
        (
            Write::Import {
                name: "dup.jsonl",
                lines: dup_in_file,
                batch_size: 1000,
            },
            "dup.jsonl:3: duplicate _id 2 (first at line 1)",
        ),
        (
            Write::Import {
                name: "stored.jsonl",
                lines: dup_stored,
                batch_size: 1000,
            },
            "stored.jsonl:2: duplicate _id 1: already in collection `c`",
        ),
        (
            Write::Import {
                name: "dup.jsonl",
                lines: dup_in_file,
                batch_size: 1,
            },
            "dup.jsonl:3:",
        ),
    ];
    for (i, (write, message)) in cases.iter().enumerate() {
        let result = match write {
            Write::Insert(doc) => f.try_insert("c", doc).map(drop),
            Write::Import {
                name,
                lines,
                batch_size,
            } => {
                let source = ImportSource::File(f.write(name, lines));
                f.try_import("c", &source, *batch_size).map(drop)
            }
        };
        let e = failure(result, &format!("case {i}"));
        assert_eq!(e.kind(), ErrorKind::Conflict, "case {i}: {e}");
        assert!(e.message().contains(message), "case {i}: {e}");
        assert_eq!(f.find("c"), [r#"{"_id":1,"v":"first"}"#], "case {i}");
    }
}

#[test]
fn import_errors_name_the_line_and_write_nothing() {
    let f = Docs::new();
    // (content, message after `NAME:`)
    let cases: &[(&[u8], &str)] = &[
        (
            b"{\"a\":1}\n{\"a\":\n",
            "2: invalid JSON: EOF while parsing",
        ),
        (
            b"{\"a\":1}\n\n{\"a\" 1}\n",
            "3: invalid JSON: expected `:` at column 6",
        ),
        (
            b"{\"a\":1}\n[1,2]\n",
            "2: a document must be a JSON object, got an array",
        ),
        (
            b"{\"a\":1}\n\"s\"\n",
            "2: a document must be a JSON object, got a string",
        ),
        (b"{\"_id\":[1]}\n", "1: invalid _id [1]"),
        (b"{\"_id\":{\"$oid\":\"12\"}}\n", "1: invalid _id"),
        (b"{\"a\":1}\n{\"a\":\"\xff\"}\n", "2: not valid UTF-8"),
        (
            b"{\"a\":1}\n{\"a\":2} {\"b\":3}\n",
            "2: invalid JSON: trailing characters",
        ),
        // Deep inside a document: the check reads every value as the import does.
        (
            b"{\"_id\":1}\n{\"_id\":2,\"n\":1e400}\n",
            "2: invalid JSON: number out of range",
        ),
        (
            b"{\"a\":1}\n{\"a\":\"\\ud800\"}\n",
            "2: invalid JSON: unexpected end of hex escape",
        ),
    ];
    for (content, message) in cases {
        // A file is named by its path, standard input (bytes) as `<stdin>`.
        let sources = [
            (
                "bad.jsonl",
                ImportSource::File(f.write("bad.jsonl", content)),
            ),
            ("<stdin>", ImportSource::Bytes(content.to_vec())),
        ];
        for (name, source) in &sources {
            let e = failure(f.try_import("c", source, 1), &format!("{content:?}"));
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{content:?}: {e}");
            let expected = format!("{name}:{message}");
            assert!(e.message().contains(&expected), "{content:?}: {e}");
            assert_eq!(f.count("c"), 0, "{content:?}: nothing written");
        }
    }
    let missing = ImportSource::File(f.store().with_file_name("nope.jsonl"));
    let e = failure(f.try_import("c", &missing, 1000), "a missing file");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.message().contains("nope.jsonl"), "{e}");
    // A good import reports batches.
    let good = ImportSource::File(f.write("good.jsonl", "{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}\n"));
    assert_eq!(
        f.try_import("c", &good, 2).expect("the import succeeds"),
        ImportReport {
            collection: "c".into(),
            imported: 3,
            batches: 2,
            embedded: 0,
        }
    );
    assert_eq!(f.count("c"), 3);
}

#[test]
fn import_cancelled_mid_way_leaves_only_whole_batches() {
    const BATCH: usize = 7;
    let f = Docs::new();
    let lines: String = (0..100)
        .map(|i| format!("{{\"_id\":{i},\"text\":\"document number {i}\"}}\n"))
        .collect();
    // Cancel as soon as the first batch is reported written.
    let control = Control::new();
    let cancel = control.canceller();
    let control = control.with_progress(move |p| {
        if p.phase == "importing" {
            cancel.cancel();
        }
    });
    let request = ImportRequest {
        collection: "c".into(),
        batch_size: BATCH,
        ..ImportRequest::default()
    };
    let result =
        f.workspace
            .import_documents(&request, &ImportSource::Bytes(lines.into_bytes()), &control);
    let e = failure(result, "a cancelled import");
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    // The first batch, whole and in order; the store stays writable.
    let found = f.find("c");
    assert_eq!(found.len(), BATCH);
    for (i, doc) in found.iter().enumerate() {
        assert_eq!(
            *doc,
            format!("{{\"_id\":{i},\"text\":\"document number {i}\"}}")
        );
    }
    f.insert("c", r#"{"_id":"after"}"#);
    assert_eq!(f.count("c"), BATCH as u64 + 1);
}

/// The expected state of a field's embeddings.
fn stale(missing: &[&str], stale: &[&str], current: u64, skipped: u64, field: &str) -> StaleReport {
    let keys = |ids: &[&str]| ids.iter().map(|&i| i.to_owned()).collect();
    StaleReport {
        collection: "c".into(),
        field: field.into(),
        current,
        missing: keys(missing),
        stale: keys(stale),
        skipped,
        orphans: 0,
    }
}

/// The expected report of a vsync of `c.text`.
fn synced(missing: u64, stale: u64, current: u64, skipped: u64, removed: u64) -> SyncReport {
    SyncReport {
        collection: "c".into(),
        field: "text".into(),
        missing,
        stale,
        current,
        skipped,
        removed,
    }
}

#[test]
fn vsync_and_vstale_counts() {
    let f = Docs::new();
    f.import(
        "c",
        concat!(
            "{\"_id\":1,\"text\":\"database search\"}\n",
            "{\"_id\":2,\"text\":\"chocolate cake\"}\n",
            "{\"_id\":3,\"body\":\"no text field\"}\n",
            "{\"_id\":4,\"text\":42}\n",
            "{\"_id\":5,\"meta\":{\"summary\":\"nested field\"}}\n",
        ),
    );
    let before = f.vstale("c", "text");
    assert_eq!(before, stale(&["1", "2"], &[], 0, 3, "text"));
    assert_eq!(before.to_json()["missing"], json!([1, 2]));
    assert_eq!(before.to_json()["missingCount"], 2);
    assert_eq!(f.vsync("c", "text"), synced(2, 0, 0, 3, 0));
    assert_eq!(f.vstale("c", "text"), stale(&[], &[], 2, 3, "text"));
    // A replaced document is embedded again at once; a new one is missing.
    assert!(f.replace("c", r#"{"_id":2,"text":"chocolate cake recipe"}"#));
    assert!(!f.replace("c", r#"{"_id":6,"text":"new"}"#));
    assert_eq!(f.vstale("c", "text"), stale(&["6"], &[], 2, 3, "text"));
    // An embedding made from other text (by another writer, or an older ctxpack) is stale.
    let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("open");
    conn.execute(
        "UPDATE embeddings SET text_hash = 'other' WHERE id_key = '2'",
        [],
    )
    .expect("update");
    drop(conn);
    let after = f.vstale("c", "text");
    assert_eq!(after, stale(&["6"], &["2"], 1, 3, "text"));
    assert_eq!(after.to_json()["stale"], json!([2]));
    let sync = f.vsync("c", "text");
    assert_eq!(sync, synced(1, 1, 1, 3, 0));
    assert_eq!(sync.to_json()["embedded"], 2);
    assert_eq!(f.vstale("c", "text"), stale(&[], &[], 3, 3, "text"));
    // A document that loses its string is skipped, and its old vector is never searched.
    assert!(f.replace("c", r#"{"_id":6,"text":null}"#));
    assert_eq!(f.vstale("c", "text"), stale(&[], &[], 2, 4, "text"));
    let hits = f.vsearch(&vsearch("c", "text", "new"));
    assert!(hits.iter().all(|(id, _)| *id != 6), "{hits:?}");
    // Deleting a document deletes its embedding.
    assert_eq!(f.delete("c", json!({"_id": 1})), 1);
    assert_eq!(f.vstale("c", "text"), stale(&[], &[], 1, 4, "text"));
    assert_eq!(f.vsync("c", "text").removed, 0);
    // A dotted path.
    assert_eq!(
        f.vstale("c", "meta.summary"),
        stale(&["5"], &[], 0, 4, "meta.summary")
    );
}

#[test]
fn embeddings_are_stored_by_their_counts_and_read_back_exactly() {
    let f = Docs::new();
    let texts = [
        "database search",
        "a a b b c c",
        "Grüße aus Köln: Straße, Straße und noch eine STRASSE",
        "one two two three three three four four four four",
    ];
    let mut long = String::new();
    for i in 0..400 {
        long.push_str(&format!("word{} ", i % 97));
    }
    let mut lines = String::new();
    for (i, text) in texts.iter().chain([&long.as_str()]).enumerate() {
        lines.push_str(&json!({"_id": i, "text": text}).to_string());
        lines.push('\n');
    }
    f.import("c", &lines);
    f.vsync("c", "text");
    let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("open");
    let sizes: Vec<(String, i64)> = conn
        .prepare("SELECT id_key, length(vector) FROM embeddings ORDER BY id_key")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    drop(conn);
    assert_eq!(sizes.len(), texts.len() + 1, "{sizes:?}");
    // Every vector of the hashing embedder is stored by its counts, well under 1,024 bytes.
    assert!(
        sizes.iter().all(|(_, n)| *n < 300 && n % 4 != 0),
        "{sizes:?}"
    );
    let store = ctxpack_store::Store::open(&f.store()).expect("store");
    for (i, text) in texts.iter().chain([&long.as_str()]).enumerate() {
        let (_, vector) = store
            .embedding("c", &i.to_string(), "text")
            .expect("read")
            .expect("stored");
        assert_eq!(
            vector,
            ctxpack_docs::embed::embed(text).to_le_bytes(),
            "document {i}"
        );
    }
}

#[test]
fn vsearch_ranks_with_a_prefilter() {
    let f = Docs::new();
    f.import(
        "c",
        concat!(
            "{\"_id\":1,\"status\":\"draft\",\"text\":\"database search\"}\n",
            "{\"_id\":2,\"status\":\"published\",\"text\":\"database search and indexing\"}\n",
            "{\"_id\":3,\"status\":\"published\",\"text\":\"chocolate cake recipe\"}\n",
            "{\"_id\":4,\"status\":\"published\"}\n",
            "{\"_id\":5,\"status\":\"published\",\"text\":\"search\"}\n",
        ),
    );
    let query = || vsearch("c", "text", "database search");
    /// The request, the expected (id, score) in order; scores as printed, four decimals.
    type Case = (VsearchRequest, &'static [(i64, &'static str)]);
    let cases: Vec<Case> = vec![
        (
            query(),
            &[(1, "1.0"), (2, "0.7071"), (5, "0.7071"), (3, "0.0")],
        ),
        (
            VsearchRequest { k: 2, ..query() },
            &[(1, "1.0"), (2, "0.7071")],
        ),
        (VsearchRequest { k: 0, ..query() }, &[]),
        (
            VsearchRequest {
                filter: Some(json!({"status": "published"})),
                ..query()
            },
            &[(2, "0.7071"), (5, "0.7071"), (3, "0.0")],
        ),
        (
            VsearchRequest {
                filter: Some(json!(r#"{"status":"published"}"#)),
                k: 1,
                ..query()
            },
            &[(2, "0.7071")],
        ),
        (
            VsearchRequest {
                filter: Some(json!({"_id": {"$in": [3, 4]}})),
                ..query()
            },
            &[(3, "0.0")],
        ),
        (
            VsearchRequest {
                filter: Some(json!({"status": "gone"})),
                ..query()
            },
            &[],
        ),
    ];
    for synced in [false, true] {
        if synced {
            f.vsync("c", "text");
        }
        for (request, expected) in &cases {
            let expected: Vec<(i64, String)> = expected
                .iter()
                .map(|(id, score)| (*id, (*score).to_owned()))
                .collect();
            assert_eq!(f.vsearch(request), expected, "synced {synced}, {request:?}");
        }
        let outcome = f.workspace.vsearch(&query()).expect("vsearch succeeds");
        assert_eq!(outcome.embedded_on_the_fly, if synced { 0 } else { 4 });
    }
    // Each hit carries the document as stored.
    let outcome = f
        .workspace
        .vsearch(&VsearchRequest { k: 1, ..query() })
        .expect("vsearch succeeds");
    assert_eq!(
        outcome.hits[0].to_json_line(),
        "{\"id\":1,\"score\":1.0,\"document\":{\"_id\":1,\"status\":\"draft\",\"text\":\"database search\"}}"
    );
}

#[test]
fn find_and_delete_with_filters() {
    let f = Docs::new();
    f.import(
        "c",
        "{\"_id\":1,\"n\":1,\"tags\":[\"a\"]}\n{\"_id\":2,\"n\":5}\n{\"_id\":3,\"n\":9,\"tags\":[\"a\",\"b\"]}\n",
    );
    // (filter, limit, expected ids)
    let cases: &[(Option<Value>, Option<usize>, &[i64])] = &[
        (None, None, &[1, 2, 3]),
        (None, Some(2), &[1, 2]),
        (None, Some(0), &[]),
        (Some(json!({"n": {"$gt": 1}})), None, &[2, 3]),
        (Some(json!(r#"{"n":{"$gt":1}}"#)), None, &[2, 3]),
        (Some(json!({"tags": "a"})), Some(1), &[1]),
        (
            Some(json!({"$or": [{"n": 1}, {"tags": "b"}]})),
            None,
            &[1, 3],
        ),
    ];
    for (filter, limit, expected) in cases {
        let request = FindRequest {
            collection: "c".into(),
            filter: filter.clone(),
            limit: *limit,
        };
        let got: Vec<i64> = f
            .try_find(&request)
            .expect("find succeeds")
            .iter()
            .map(|doc| {
                serde_json::from_str::<Value>(doc).expect("JSON")["_id"]
                    .as_i64()
                    .expect("an integer _id")
            })
            .collect();
        assert_eq!(got, *expected, "{filter:?} {limit:?}");
    }
    assert_eq!(f.delete("c", json!(r#"{"tags":{"$exists":true}}"#)), 2);
    assert_eq!(f.find("c"), [r#"{"_id":2,"n":5}"#]);
    assert_eq!(f.delete("c", json!({"n": 4})), 0);
    let collections = f
        .workspace
        .collections()
        .expect("the collections are listed");
    let listed: Vec<(&str, u64)> = collections
        .iter()
        .map(|c| (c.name.as_str(), c.documents))
        .collect();
    assert_eq!(listed, [("c", 1)]);
}

/// An operation on a workspace whose result is not looked at.
type Op = fn(&Workspace) -> Result<(), Error>;

/// Builds a document pack in collection `collection` with `change` applied.
fn try_pack(
    workspace: &Workspace,
    collection: &str,
    change: impl FnOnce(&mut DocumentPackRequest),
) -> Result<(), Error> {
    let mut request = pack(collection, "text", "q");
    change(&mut request);
    workspace.document_pack(&request, None).map(drop)
}

/// Finds in `c` with a filter.
fn try_find_with(workspace: &Workspace, filter: Value) -> Result<(), Error> {
    let request = FindRequest {
        collection: "c".into(),
        filter: Some(filter),
        limit: None,
    };
    workspace.find_documents(&request, &mut |_| {}).map(drop)
}

/// Deletes from `collection` with a filter.
fn try_delete(workspace: &Workspace, collection: &str, filter: Value) -> Result<(), Error> {
    let request = DeleteRequest {
        collection: collection.into(),
        filter,
        wait: false,
    };
    workspace.delete_documents(&request).map(drop)
}

#[test]
fn bad_input_is_a_typed_error() {
    let f = Docs::new();
    f.insert("c", r#"{"_id":1,"text":"x"}"#);
    use ErrorKind::{InvalidInput, NotFound};
    // (what, operation, kind, field at fault when the error names one, message must contain)
    let cases: &[(&str, Op, ErrorKind, Option<&str>, &str)] = &[
        (
            "truncated JSON",
            |w| w.insert_document(&insert("c", "{\"a\":")).map(drop),
            InvalidInput,
            None,
            "invalid JSON",
        ),
        (
            "an array",
            |w| w.insert_document(&insert("c", "[1]")).map(drop),
            InvalidInput,
            None,
            "must be a JSON object, got an array",
        ),
        (
            "a number as the document value",
            |w| {
                let request = InsertRequest {
                    document: json!(1),
                    ..insert("c", "")
                };
                w.insert_document(&request).map(drop)
            },
            InvalidInput,
            Some("document"),
            "must be a JSON object or its JSON text",
        ),
        (
            "an object _id",
            |w| {
                w.insert_document(&insert("c", r#"{"_id":{"a":1}}"#))
                    .map(drop)
            },
            InvalidInput,
            None,
            "invalid _id",
        ),
        (
            "a bad collection name",
            |w| w.insert_document(&insert("$bad", "{}")).map(drop),
            InvalidInput,
            Some("collection"),
            "invalid collection name",
        ),
        (
            "a bad collection name to import into",
            |w| {
                let request = ImportRequest {
                    collection: "$bad".into(),
                    ..ImportRequest::default()
                };
                let source = ImportSource::Bytes(b"{}\n".to_vec());
                w.import_documents(&request, &source, &Control::new())
                    .map(drop)
            },
            InvalidInput,
            Some("collection"),
            "invalid collection name",
        ),
        (
            "an unknown operator",
            |w| try_find_with(w, json!({"a": {"$foo": 1}})),
            InvalidInput,
            Some("filter"),
            "unknown operator `$foo` at `a`",
        ),
        (
            "a regex that does not compile",
            |w| try_find_with(w, json!({"a": {"$regex": "("}})),
            InvalidInput,
            Some("filter"),
            "`$regex` at `a` does not compile",
        ),
        (
            "an empty path segment in a filter",
            |w| try_find_with(w, json!({"a..b": 1})),
            InvalidInput,
            Some("filter"),
            "field path `a..b` has an empty segment",
        ),
        (
            "a filter that is not an object",
            |w| try_find_with(w, json!([1])),
            InvalidInput,
            Some("filter"),
            "filter must be a JSON object",
        ),
        (
            "a filter that is not an object, as text",
            |w| try_find_with(w, json!("[1]")),
            InvalidInput,
            Some("filter"),
            "filter must be a JSON object",
        ),
        (
            "a filter that is not JSON",
            |w| try_find_with(w, json!("{")),
            InvalidInput,
            Some("filter"),
            "not valid JSON",
        ),
        (
            "an unknown top-level operator",
            |w| try_delete(w, "c", json!({"$where": 1})),
            InvalidInput,
            Some("filter"),
            "unknown top-level operator `$where`",
        ),
        (
            "an empty path segment in a vsearch field",
            |w| w.vsearch(&vsearch("c", "a..b", "q")).map(drop),
            InvalidInput,
            Some("field"),
            "field path `a..b` has an empty segment",
        ),
        (
            "an empty path segment in a vsync field",
            |w| {
                w.vsync(&field_request("c", ".text"), &Control::new())
                    .map(drop)
            },
            InvalidInput,
            Some("field"),
            "empty segment",
        ),
        (
            "an empty path segment in a vstale field",
            |w| w.vstale(&field_request("c", "text.")).map(drop),
            InvalidInput,
            Some("field"),
            "empty segment",
        ),
        (
            "an empty path segment in a pack field",
            |w| try_pack(w, "c", |r| r.field = "a..b".into()),
            InvalidInput,
            Some("field"),
            "empty segment",
        ),
        (
            "`$in` without an array",
            |w| try_pack(w, "c", |r| r.filter = Some(json!({"n": {"$in": 1}}))),
            InvalidInput,
            Some("filter"),
            "`$in` at `n` needs an array",
        ),
        (
            "a zero budget",
            |_| Budget::new(0).map(drop).map_err(Error::from),
            InvalidInput,
            Some("budget"),
            "budget",
        ),
        (
            "a zero batch size",
            |w| {
                let request = ImportRequest {
                    collection: "c".into(),
                    batch_size: 0,
                    ..ImportRequest::default()
                };
                let source = ImportSource::Bytes(b"{}\n".to_vec());
                w.import_documents(&request, &source, &Control::new())
                    .map(drop)
            },
            InvalidInput,
            Some("batch_size"),
            "at least 1",
        ),
        (
            "find in a missing collection",
            |w| {
                let request = FindRequest {
                    collection: "nope".into(),
                    ..FindRequest::default()
                };
                w.find_documents(&request, &mut |_| {}).map(drop)
            },
            NotFound,
            None,
            "collection `nope` does not exist",
        ),
        (
            "vsearch in a missing collection",
            |w| w.vsearch(&vsearch("nope", "text", "q")).map(drop),
            NotFound,
            None,
            "does not exist",
        ),
        (
            "vsearch for no document in a missing collection",
            |w| {
                let request = VsearchRequest {
                    k: 0,
                    ..vsearch("nope", "text", "q")
                };
                w.vsearch(&request).map(drop)
            },
            NotFound,
            None,
            "does not exist",
        ),
        (
            "vsync in a missing collection",
            |w| {
                w.vsync(&field_request("nope", "text"), &Control::new())
                    .map(drop)
            },
            NotFound,
            None,
            "does not exist",
        ),
        (
            "vstale in a missing collection",
            |w| w.vstale(&field_request("nope", "text")).map(drop),
            NotFound,
            None,
            "does not exist",
        ),
        (
            "a pack of a missing collection",
            |w| try_pack(w, "nope", |_| {}),
            NotFound,
            None,
            "does not exist",
        ),
        (
            "a pack of no document of a missing collection",
            |w| try_pack(w, "nope", |r| r.top_k = Some(0)),
            NotFound,
            None,
            "does not exist",
        ),
        (
            "delete from a missing collection",
            |w| try_delete(w, "nope", json!({})),
            NotFound,
            None,
            "does not exist",
        ),
    ];
    for (what, op, kind, field, message) in cases {
        let e = failure(op(&f.workspace), what);
        assert_eq!(e.kind(), *kind, "{what}: {e}");
        if field.is_some() {
            assert_eq!(e.field(), *field, "{what}: {e}");
        }
        assert!(e.message().contains(message), "{what}: {e}");
        if *kind == NotFound {
            assert_eq!(e.hint(), Some(&Hint::ListCollections), "{what}");
        }
    }
    assert_eq!(f.find("c"), [r#"{"_id":1,"text":"x"}"#]);
}

#[test]
fn read_only_workspaces_read_and_never_write() {
    let f = Docs::new();
    f.insert("c", r#"{"_id":1,"text":"database search"}"#);
    let read_only = Workspace::for_store(&f.store(), Access::ReadOnly).expect("a workspace");
    let writes: &[(&str, Op)] = &[
        ("create", |w| w.create_store(false).map(drop)),
        ("insert", |w| {
            w.insert_document(&insert("c", "{}")).map(drop)
        }),
        ("vsync", |w| {
            w.vsync(&field_request("c", "text"), &Control::new())
                .map(drop)
        }),
        ("delete", |w| try_delete(w, "c", json!({}))),
    ];
    for (what, op) in writes {
        let e = failure(op(&read_only), what);
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
        assert!(e.message().contains("read-only"), "{what}: {e}");
    }
    // Reads work, and a pack asked to be recorded is not.
    assert_eq!(
        read_only
            .vsearch(&vsearch("c", "text", "search"))
            .expect("vsearch")
            .hits
            .len(),
        1
    );
    let json = RenderOptions {
        format: Format::Json,
        ..RenderOptions::default()
    };
    let built = read_only
        .document_pack(&pack("c", "text", "search"), Some(&json))
        .expect("the pack is built");
    assert_eq!(built.recorded, Recorded::NotAsked);
    assert_eq!(f.find("c"), [r#"{"_id":1,"text":"database search"}"#]);
}

#[test]
fn missing_and_garbage_stores() {
    let ops: &[(&str, Op)] = &[
        ("insert", |w| {
            w.insert_document(&insert("c", "{}")).map(drop)
        }),
        ("import", |w| {
            let request = ImportRequest {
                collection: "c".into(),
                ..ImportRequest::default()
            };
            let source = ImportSource::Bytes(b"{}\n".to_vec());
            w.import_documents(&request, &source, &Control::new())
                .map(drop)
        }),
        ("find", |w| {
            let request = FindRequest {
                collection: "c".into(),
                ..FindRequest::default()
            };
            w.find_documents(&request, &mut |_| {}).map(drop)
        }),
        ("collections", |w| w.collections().map(drop)),
        ("vsearch", |w| {
            w.vsearch(&vsearch("c", "text", "q")).map(drop)
        }),
        ("vsync", |w| {
            w.vsync(&field_request("c", "text"), &Control::new())
                .map(drop)
        }),
        ("vstale", |w| {
            w.vstale(&field_request("c", "text")).map(drop)
        }),
        ("context", |w| try_pack(w, "c", |_| {})),
        ("delete", |w| try_delete(w, "c", json!({}))),
    ];
    let missing = Docs::empty();
    let garbage = Docs::empty();
    std::fs::create_dir_all(garbage.store()).expect("mkdir");
    std::fs::write(
        garbage.store().join("ctxpack.sqlite"),
        "this is not a database, just garbage bytes ".repeat(200),
    )
    .expect("write");
    for (what, op) in ops {
        let e = failure(op(&missing.workspace), what);
        assert_eq!(e.kind(), ErrorKind::NotFound, "missing, {what}: {e}");
        assert!(e.message().contains("no ctxpack store at"), "{what}: {e}");
        assert_eq!(
            e.hint(),
            Some(&Hint::CreateStore { documents: true }),
            "{what}"
        );
        assert!(!missing.store().exists(), "{what} created the store");
        let e = failure(op(&garbage.workspace), what);
        assert_eq!(e.kind(), ErrorKind::Damaged, "garbage, {what}: {e}");
        assert!(e.message().contains("corrupt"), "{what}: {e}");
    }
    let e = failure(garbage.workspace.create_store(false), "create over garbage");
    assert_eq!(e.kind(), ErrorKind::Damaged, "{e}");
    // Creating is idempotent.
    assert!(missing.workspace.create_store(false).expect("created"));
    assert!(missing.workspace.collections().expect("listed").is_empty());
    assert!(!missing.workspace.create_store(true).expect("exists"));
}

/// A search compared between the vector file and the embeddings table.
enum Query {
    /// A `vsearch`.
    Vsearch(VsearchRequest),
    /// A document pack.
    Pack(DocumentPackRequest),
}

/// The searches compared between the vector file and the embeddings table.
fn vector_queries() -> Vec<Query> {
    let search = |query: &str| vsearch("c", "text", query);
    let context = |query: &str| pack("c", "text", query);
    vec![
        Query::Vsearch(search("database search")),
        Query::Vsearch(VsearchRequest {
            k: 3,
            ..search("database search")
        }),
        Query::Vsearch(VsearchRequest {
            k: 100,
            ..search("cake search")
        }),
        Query::Vsearch(VsearchRequest {
            filter: Some(json!({"status": "published"})),
            ..search("database search")
        }),
        Query::Pack(context("database search")),
        Query::Pack(DocumentPackRequest {
            budget: budget(20),
            ..context("search")
        }),
        Query::Pack(DocumentPackRequest {
            selector: Selector::Skip,
            filter: Some(json!({"status": "draft"})),
            ..context("chocolate indexing")
        }),
    ]
}

/// A collection with many equal scores (repeated texts), documents without the field or with a
/// non-string at it, and a filterable status; synced, so its vector file exists.
fn vector_fixture() -> (Docs, PathBuf) {
    let f = Docs::new();
    let texts = [
        "database search",
        "database search and indexing",
        "chocolate cake recipe",
        "search",
    ];
    let mut lines = String::new();
    for i in 0..60 {
        let status = if i % 3 == 0 { "draft" } else { "published" };
        let line = match i % 7 {
            5 => json!({"_id": i, "status": status}),
            6 => json!({"_id": i, "status": status, "text": i}),
            _ => json!({"_id": i, "status": status, "text": texts[i % 4]}),
        };
        lines.push_str(&format!("{line}\n"));
    }
    f.import("c", &lines);
    f.vsync("c", "text");
    let path = ctxpack_store::Store::open(&f.store())
        .expect("open")
        .vector_file_path("c", "text");
    assert!(path.is_file(), "vsync wrote {}", path.display());
    (f, path)
}

impl Docs {
    /// The answers to [`vector_queries`]: each `vsearch` outcome's and each pack's canonical
    /// JSON.
    fn vector_answers(&self) -> Vec<String> {
        vector_queries()
            .iter()
            .map(|query| match query {
                Query::Vsearch(request) => self
                    .workspace
                    .vsearch(request)
                    .expect("vsearch succeeds")
                    .to_json_line(),
                Query::Pack(request) => self.pack(request).pack.to_json_line(),
            })
            .collect()
    }

    /// The answers to [`vector_queries`] computed from the embeddings table alone, with the
    /// vector file moved away meanwhile.
    fn table_answers(&self, vector_file: &Path) -> Vec<String> {
        let aside = vector_file.with_extension("aside");
        std::fs::rename(vector_file, &aside).expect("move the vector file away");
        let answers = self.vector_answers();
        std::fs::rename(&aside, vector_file).expect("move the vector file back");
        answers
    }

    /// The `_id` and score of the best `vsearch` hit for "database search".
    fn best_hit(&self) -> (i64, String) {
        let request = VsearchRequest {
            k: 1,
            ..vsearch("c", "text", "database search")
        };
        self.vsearch(&request).swap_remove(0)
    }
}

/// Zeroes the first vector of a vector file (the first document synced), keeping its length,
/// so a search that reads the file gives that document a score of 0.
fn zero_first_vector(vector_file: &Path) {
    use ctxpack_store::docs::vectors::{BLOCK_ROWS, HEADER_BYTES};
    let mut bytes = std::fs::read(vector_file).expect("read");
    // The first block is stored column by column: the first row's component `d` is the first
    // of column `d`, whose length is the block's row count.
    let count = u64::from_le_bytes(bytes[16..24].try_into().expect("eight bytes"));
    let rows = BLOCK_ROWS.min(usize::try_from(count).expect("a small count"));
    for d in 0..256 {
        let at = HEADER_BYTES + d * rows * 4;
        bytes[at..at + 4].fill(0);
    }
    std::fs::write(vector_file, bytes).expect("write");
}

#[test]
fn vector_file_gives_the_table_answers_and_only_while_current() {
    let (f, vector_file) = vector_fixture();
    let good = std::fs::read(&vector_file).expect("read");
    // Fresh: the same bytes as a scan of the table, ties in the same order.
    let answers = f.vector_answers();
    assert_eq!(answers, f.table_answers(&vector_file));
    assert_eq!(f.best_hit(), (0, "1.0".to_owned()));
    // ...and it is the file that is read: a zeroed row changes the answer.
    zero_first_vector(&vector_file);
    assert_eq!(f.best_hit(), (4, "1.0".to_owned()));
    // A vsync that changes nothing keeps a current file as it is.
    f.vsync("c", "text");
    assert_eq!(f.best_hit(), (4, "1.0".to_owned()));

    // Deleting after vsync makes the file stale: it is ignored, and the answers are right.
    assert_eq!(f.delete("c", json!({"_id": 59})), 1);
    assert_eq!(f.best_hit(), (0, "1.0".to_owned()));
    assert_eq!(f.vector_answers(), f.table_answers(&vector_file));
    // The next vsync rewrites it from the table.
    f.vsync("c", "text");
    assert_ne!(std::fs::read(&vector_file).expect("read"), good);
    assert_eq!(f.best_hit(), (0, "1.0".to_owned()));
    let answers = f.vector_answers();
    assert_eq!(answers, f.table_answers(&vector_file));

    // Inserting or replacing documents leaves the stored vectors (hence the file) as they are:
    // new documents are embedded on the fly, a replaced one keeps its old vector until the
    // next vsync, exactly as the table scan does.
    f.insert(
        "c",
        r#"{"_id":100,"status":"published","text":"database search"}"#,
    );
    assert!(f.replace("c", r#"{"_id":1,"status":"draft","text":"cake"}"#));
    assert!(f.replace("c", r#"{"_id":4,"status":"draft"}"#));
    let after_writes = f.vector_answers();
    assert_ne!(after_writes, answers);
    assert_eq!(after_writes, f.table_answers(&vector_file));
    let wide: Vec<i64> = f
        .vsearch(&VsearchRequest {
            k: 100,
            ..vsearch("c", "text", "cake search")
        })
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert!(wide.contains(&100), "{wide:?}");
    assert!(!wide.contains(&4), "{wide:?}");
    f.vsync("c", "text");
    let synced = f.vector_answers();
    assert_eq!(synced, f.table_answers(&vector_file));
    let good = std::fs::read(&vector_file).expect("read");

    // A damaged file is ignored, never a panic or a wrong answer, and vsync repairs it.
    let header = ctxpack_store::docs::vectors::HEADER_BYTES;
    let mut flipped_magic = good.clone();
    flipped_magic[0] ^= 0xff;
    let mut bad_format = good.clone();
    bad_format[8] = 99;
    let mut huge_count = good.clone();
    huge_count[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut bad_names = good.clone();
    let last = bad_names.len() - 1;
    bad_names[last] ^= 0x01;
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("header only", good[..header].to_vec()),
        ("one byte short", good[..good.len() - 1].to_vec()),
        ("one byte long", [&good[..], &[0]].concat()),
        (
            "garbage",
            (0..good.len()).map(|i| (i * 7 + 3) as u8).collect(),
        ),
        ("flipped magic", flipped_magic),
        ("unknown format", bad_format),
        ("huge count", huge_count),
        ("other names", bad_names),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&vector_file, &bytes).expect("write");
        assert_eq!(f.vector_answers(), synced, "{what}");
        f.vsync("c", "text");
        assert_eq!(
            std::fs::read(&vector_file).expect("read"),
            good,
            "vsync rewrote the {what} file"
        );
    }
    // A directory where the file should be is ignored too.
    std::fs::remove_file(&vector_file).expect("remove");
    std::fs::create_dir(&vector_file).expect("mkdir");
    assert_eq!(f.vector_answers(), synced);
}

/// A replaced document is embedded again from its new text: searches and packs rank it by
/// what it says now, and nothing is stale.
#[test]
fn a_replaced_document_is_ranked_by_its_new_text() {
    let docs = Docs::new();
    let w = &docs.workspace;
    for document in [
        r#"{"_id":1,"text":"chocolate cake recipe"}"#,
        r#"{"_id":2,"text":"database search"}"#,
    ] {
        w.insert_document(&insert("docs", document))
            .expect("inserted");
    }
    w.vsync(&field_request("docs", "text"), &Control::new())
        .expect("synced");
    let query = "database search and indexing engine";
    let top = |w: &Workspace| -> String {
        w.vsearch(&vsearch("docs", "text", query))
            .expect("searches")
            .hits[0]
            .id_key
            .clone()
    };
    assert_eq!(top(w), "2");
    let mut replace = insert(
        "docs",
        r#"{"_id":1,"text":"database search and indexing engine"}"#,
    );
    replace.replace = true;
    w.insert_document(&replace).expect("replaced");
    assert_eq!(top(w), "1", "the search follows the new text");
    let built = w
        .document_pack(&pack("docs", "text", query), None)
        .expect("packs");
    assert_eq!(built.pack.to_json()["citations"][0], json!(1));
    let stale = w.vstale(&field_request("docs", "text")).expect("vstale");
    assert!(
        stale.stale.is_empty() && stale.missing.is_empty(),
        "{stale:?}"
    );
}
