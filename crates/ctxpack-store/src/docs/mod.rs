//! JSON document collections in the store: documents with `_id`, and their embeddings.
//!
//! The store keeps documents as text and knows nothing about JSON beyond that: parsing,
//! `_id` rules, filters and embedding live with the callers (`ctxpack-docs` and the CLI).
//!
//! - **Collections** are rows of `collections`; inserting into a collection creates it.
//! - **Documents** are rows of `documents`, keyed by `(collection, id_key)` where `id_key` is
//!   the canonical JSON of the `_id`. A document's `seq` is also its rowid: a store-wide counter
//!   that grows with insertion, so "in seq order" is "in insertion order", and the vector scan
//!   can learn a document's position from the primary-key index without reading its body.
//!   [`Store::insert_documents`] writes a batch in one transaction: a duplicate `_id` (against
//!   the store or inside the batch) is a [`StoreError::DuplicateId`] and nothing of the
//!   batch is written.
//! - **Embeddings** are keyed by `(collection, id_key, field)` and validated by the embedder
//!   id and the hash of the text they were computed from. A row with an empty `text_hash` and
//!   an empty vector is a *marker*: the document had no string at the field when it was
//!   synced, so a search need not read it again. Deleting a document deletes its embeddings in
//!   the same transaction, so every embedding row belongs to a stored document and a vector
//!   scan never needs to look at `documents`. Replacing a document
//!   ([`Store::replace_document`]) keeps its embeddings, which are then stale until the caller
//!   recomputes them.
//! - **Vector files** ([`vectors`]) are flat, derived copies of one field's embeddings beside
//!   the database, which searches read instead of the table while they are current. Every
//!   write that changes a field's embedding rows bumps the field's generation in the same
//!   transaction, and a file is only used when it was made from the current generation.
//!
//! Writes require a store opened with [`Store::open_or_create`] and, by convention, the
//! writer lock; reads work on a read-only store.
//!
//! ```no_run
//! use ctxpack_store::Store;
//! use ctxpack_store::docs::NewDocument;
//!
//! let dir = std::path::Path::new("app.ctxpack");
//! let _lock = ctxpack_store::WriterLock::acquire(dir, false)?;
//! let mut store = Store::open_or_create(dir)?;
//! store.insert_documents(
//!     "docs",
//!     &[NewDocument {
//!         id_key: "1".into(),
//!         body: r#"{"_id":1,"text":"hello"}"#.into(),
//!         index_keys: Vec::new(),
//!     }],
//! )?;
//! store.scan_documents("docs", |doc| {
//!     assert_eq!(doc.body, r#"{"_id":1,"text":"hello"}"#);
//!     Ok::<_, ctxpack_store::StoreError>(std::ops::ControlFlow::Continue(()))
//! })?;
//! # Ok::<(), ctxpack_store::StoreError>(())
//! ```

use std::ops::ControlFlow;

use rusqlite::types::ValueRef;
use rusqlite::{ErrorCode, OptionalExtension, params};

use crate::db::{Store, sql_error};
use crate::error::StoreError;

pub mod ann;
mod embeddings;
pub mod fields;
pub mod replica;
pub mod vectors;

pub use fields::{FieldIndexInfo, IndexKey};

pub use vectors::VectorFileSummary;

use embeddings::write_embeddings;

/// A document to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewDocument {
    /// The canonical JSON of its `_id`.
    pub id_key: String,
    /// The document text, stored and returned byte for byte.
    pub body: String,
    /// Its keys in the collection's declared field indexes ([`Store::indexed_fields`]); a
    /// field left out has no key for this document.
    pub index_keys: Vec<IndexKey>,
}

/// A stored document, borrowed from a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentRef<'a> {
    /// Its insertion position (its rowid).
    pub seq: i64,
    /// The canonical JSON of its `_id`.
    pub id_key: &'a str,
    /// The document text as stored.
    pub body: &'a str,
}

/// A stored document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDocument {
    /// Its insertion position (its rowid).
    pub seq: i64,
    /// The canonical JSON of its `_id`.
    pub id_key: String,
    /// The document text as stored.
    pub body: String,
}

/// A collection and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionInfo {
    /// The name.
    pub name: String,
    /// Unix seconds when it was created.
    pub created_at: i64,
    /// How many documents it holds.
    pub documents: u64,
}

/// An embedding row, borrowed from a scan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VectorRef<'a> {
    /// The row's id, stable until the row is replaced.
    pub rowid: i64,
    /// The canonical JSON of the document's `_id`.
    pub id_key: &'a str,
    /// The embedder that computed it.
    pub embedder: &'a str,
    /// The vector bytes; empty for a marker.
    pub vector: &'a [u8],
}

/// What an embedding row records, without its vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingState {
    /// The canonical JSON of the document's `_id`.
    pub id_key: String,
    /// The embedder that computed it.
    pub embedder: String,
    /// The hash of the text it was computed from; empty for a marker (no string at the field).
    pub text_hash: String,
}

impl EmbeddingState {
    /// Whether this row says the document had no string at the field.
    pub fn is_marker(&self) -> bool {
        self.text_hash.is_empty()
    }
}

/// An embedding to store for one document and field.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEmbedding {
    /// The canonical JSON of the document's `_id`.
    pub id_key: String,
    /// The hash of the text it was computed from; empty for a marker.
    pub text_hash: String,
    /// The vector bytes (little-endian `f32`s); empty for a marker.
    pub vector: Vec<u8>,
}

impl NewEmbedding {
    /// The marker for a document without a string at the field.
    pub fn marker(id_key: String) -> NewEmbedding {
        NewEmbedding {
            id_key,
            text_hash: String::new(),
            vector: Vec::new(),
        }
    }
}

/// Checks a collection name: non-empty, at most 255 bytes, no control characters, not
/// starting with `$` (which MongoDB reserves).
pub fn validate_collection_name(name: &str) -> Result<(), StoreError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 255 {
        Some("it is longer than 255 bytes")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else if name.starts_with('$') {
        Some("it starts with `$`")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::InvalidCollectionName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

pub(crate) fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Whether an insert failed on the `(collection, id_key)` primary key.
fn is_duplicate_key(err: &rusqlite::Error) -> bool {
    match err {
        rusqlite::Error::SqliteFailure(e, _) => {
            e.code == ErrorCode::ConstraintViolation
                && matches!(
                    e.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                        | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                )
        }
        _ => false,
    }
}

/// Reads a text column without copying it.
fn text_ref<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    match row.get_ref(i)? {
        ValueRef::Text(bytes) => {
            std::str::from_utf8(bytes).map_err(|e| rusqlite::Error::Utf8Error(i, e))
        }
        other => Err(rusqlite::Error::InvalidColumnType(
            i,
            String::new(),
            other.data_type(),
        )),
    }
}

impl Store {
    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| sql_error(&self.dir, e)
    }

    /// Creates a collection if it does not exist; returns whether it was created.
    pub fn create_collection(&mut self, name: &str) -> Result<bool, StoreError> {
        self.require_writable()?;
        validate_collection_name(name)?;
        let n = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO collections (name, created_at) VALUES (?1, ?2)",
                params![name, now_seconds()],
            )
            .map_err(self.sql())?;
        Ok(n > 0)
    }

    /// Every collection with its document count, by name.
    pub fn collections(&self) -> Result<Vec<CollectionInfo>, StoreError> {
        let sql = if self.format_version() >= 5 {
            "SELECT name, created_at, documents FROM collections ORDER BY name"
        } else {
            "SELECT c.name, c.created_at, \
             (SELECT count(*) FROM documents d WHERE d.collection = c.name) \
             FROM collections c ORDER BY c.name"
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(self.sql())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(CollectionInfo {
                    name: r.get(0)?,
                    created_at: r.get(1)?,
                    documents: r.get::<_, i64>(2)?.max(0) as u64,
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// Whether the collection exists.
    pub fn has_collection(&self, name: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("SELECT 1 FROM collections WHERE name = ?1")
            .and_then(|mut s| s.exists([name]))
            .map_err(self.sql())
    }

    /// Fails with [`StoreError::UnknownCollection`] unless the collection exists.
    pub fn require_collection(&self, name: &str) -> Result<(), StoreError> {
        if self.has_collection(name)? {
            Ok(())
        } else {
            Err(StoreError::UnknownCollection {
                dir: self.dir.clone(),
                collection: name.to_owned(),
            })
        }
    }

    /// The number of documents in a collection (0 for an unknown one).
    pub fn count_documents(&self, collection: &str) -> Result<u64, StoreError> {
        let sql = if self.format_version() >= 5 {
            "SELECT coalesce((SELECT documents FROM collections WHERE name = ?1), 0)"
        } else {
            "SELECT count(*) FROM documents WHERE collection = ?1"
        };
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([collection], |r| r.get::<_, i64>(0)))
            .map(|n| n.max(0) as u64)
            .map_err(self.sql())
    }

    /// Whether a document with this `_id` is in the collection.
    pub fn contains_document(&self, collection: &str, id_key: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("SELECT 1 FROM documents WHERE collection = ?1 AND id_key = ?2")
            .and_then(|mut s| s.exists([collection, id_key]))
            .map_err(self.sql())
    }

    /// Inserts a batch of documents in one transaction, creating the collection if needed, and
    /// returns their `seq`s. A duplicate `_id` (already stored, or twice in the batch) fails
    /// with [`StoreError::DuplicateId`] and writes nothing.
    pub fn insert_documents(
        &mut self,
        collection: &str,
        documents: &[NewDocument],
    ) -> Result<Vec<i64>, StoreError> {
        self.insert_documents_embedded(collection, documents, "", &[])
    }

    /// [`Store::insert_documents`], writing in the same transaction the embeddings of some
    /// fields of those documents, computed by `embedder` (each field's rows name documents of
    /// the batch), so the batch is stored with its embeddings or not at all.
    pub fn insert_documents_embedded(
        &mut self,
        collection: &str,
        documents: &[NewDocument],
        embedder: &str,
        embeddings: &[(&str, &[NewEmbedding])],
    ) -> Result<Vec<i64>, StoreError> {
        self.require_writable()?;
        validate_collection_name(collection)?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let mut seqs = Vec::with_capacity(documents.len());
        {
            tx.execute(
                "INSERT OR IGNORE INTO collections (name, created_at) VALUES (?1, ?2)",
                params![collection, now_seconds()],
            )
            .map_err(e)?;
            // One counter for the whole store, so seq order is insertion order and the seq can
            // double as the rowid.
            let first: i64 = tx
                .query_row(
                    "SELECT coalesce(max(rowid), 0) + 1 FROM documents",
                    [],
                    |r| r.get(0),
                )
                .map_err(e)?;
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO documents (rowid, collection, id_key, seq, body) \
                     VALUES (?1, ?2, ?3, ?1, ?4)",
                )
                .map_err(e)?;
            for ((index, doc), seq) in documents.iter().enumerate().zip(first..) {
                match stmt.execute(params![seq, collection, doc.id_key, doc.body]) {
                    Ok(_) => fields::write_keys(&tx, collection, seq, doc, false).map_err(e)?,
                    Err(err) if is_duplicate_key(&err) => {
                        // Dropping the transaction rolls the whole batch back.
                        return Err(StoreError::DuplicateId {
                            collection: collection.to_owned(),
                            id_key: doc.id_key.clone(),
                            index,
                        });
                    }
                    Err(err) => return Err(e(err)),
                }
                seqs.push(seq);
            }
            tx.execute(
                "UPDATE collections SET documents = documents + ?2 WHERE name = ?1",
                params![collection, seqs.len() as i64],
            )
            .map_err(e)?;
            for (field, rows) in embeddings {
                write_embeddings(&tx, collection, field, embedder, rows).map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(seqs)
    }

    /// Calls `f` with every document of a collection in insertion order, until it returns
    /// `Break` or an error. Bodies are borrowed from SQLite, not copied.
    pub fn scan_documents<E: From<StoreError>>(
        &self,
        collection: &str,
        mut f: impl FnMut(DocumentRef<'_>) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, id_key, body FROM documents WHERE collection = ?1 ORDER BY seq",
            )
            .map_err(self.sql())?;
        let mut rows = stmt.query([collection]).map_err(self.sql())?;
        while let Some(row) = rows.next().map_err(self.sql())? {
            let doc = DocumentRef {
                seq: row.get(0).map_err(self.sql())?,
                id_key: text_ref(row, 1).map_err(self.sql())?,
                body: text_ref(row, 2).map_err(self.sql())?,
            };
            if f(doc)?.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// The `seq`s of every document of a collection, ascending. Reads only an index, never a
    /// body.
    pub fn document_seqs(&self, collection: &str) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq FROM documents WHERE collection = ?1 ORDER BY seq")
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([collection], |r| r.get(0))
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// The documents with these `seq`s, in the order asked (seqs not in the collection are
    /// left out).
    pub fn documents_by_seq(
        &self,
        collection: &str,
        seqs: &[i64],
    ) -> Result<Vec<StoredDocument>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id_key, body FROM documents WHERE rowid = ?1 AND collection = ?2",
            )
            .map_err(self.sql())?;
        let _batch = self.read_batch().map_err(self.sql())?;
        let mut out = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            let row = stmt
                .query_row(params![seq, collection], |r| {
                    Ok(StoredDocument {
                        seq,
                        id_key: r.get(0)?,
                        body: r.get(1)?,
                    })
                })
                .optional()
                .map_err(self.sql())?;
            out.extend(row);
        }
        Ok(out)
    }

    /// The document with this `_id`, if stored.
    pub fn document(
        &self,
        collection: &str,
        id_key: &str,
    ) -> Result<Option<StoredDocument>, StoreError> {
        self.conn
            .prepare_cached("SELECT seq, body FROM documents WHERE collection = ?1 AND id_key = ?2")
            .and_then(|mut s| {
                s.query_row([collection, id_key], |r| {
                    Ok(StoredDocument {
                        seq: r.get(0)?,
                        id_key: id_key.to_owned(),
                        body: r.get(1)?,
                    })
                })
                .optional()
            })
            .map_err(self.sql())
    }

    /// Deletes the documents with these `_id`s and their embeddings in one transaction;
    /// returns how many documents were stored.
    pub fn delete_documents(
        &mut self,
        collection: &str,
        id_keys: &[String],
    ) -> Result<u64, StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let mut deleted = 0;
        {
            let mut doc = tx
                .prepare_cached("DELETE FROM documents WHERE collection = ?1 AND id_key = ?2")
                .map_err(e)?;
            let mut vectors = tx
                .prepare_cached("DELETE FROM embeddings WHERE collection = ?1 AND id_key = ?2")
                .map_err(e)?;
            let mut keys = tx
                .prepare_cached(
                    "DELETE FROM field_values WHERE seq = \
                     (SELECT seq FROM documents WHERE collection = ?1 AND id_key = ?2)",
                )
                .map_err(e)?;
            let mut vectors_deleted = 0;
            for id_key in id_keys {
                keys.execute([collection, id_key]).map_err(e)?;
                deleted += doc.execute([collection, id_key]).map_err(e)? as u64;
                vectors_deleted += vectors.execute([collection, id_key]).map_err(e)?;
            }
            if vectors_deleted > 0 {
                vectors::bump_generation(&tx, collection, None).map_err(e)?;
            }
            tx.execute(
                "UPDATE collections SET documents = documents - ?2 WHERE name = ?1",
                params![collection, deleted as i64],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(deleted)
    }

    /// Stores a document, replacing the text of the one with the same `_id` (which keeps its
    /// `seq` and its embeddings, now possibly stale) or inserting it. Returns whether one was
    /// replaced.
    pub fn replace_document(
        &mut self,
        collection: &str,
        document: &NewDocument,
    ) -> Result<bool, StoreError> {
        self.require_writable()?;
        validate_collection_name(collection)?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let seq: Option<i64> = tx
            .query_row(
                "UPDATE documents SET body = ?3 WHERE collection = ?1 AND id_key = ?2 RETURNING seq",
                params![collection, document.id_key, document.body],
                |r| r.get(0),
            )
            .optional()
            .map_err(e)?;
        if let Some(seq) = seq {
            fields::write_keys(&tx, collection, seq, document, true).map_err(e)?;
        }
        let replaced = seq.is_some();
        tx.commit().map_err(e)?;
        if !replaced {
            self.insert_documents(collection, std::slice::from_ref(document))?;
        }
        Ok(replaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open_or_create(&dir.path().join("s")).expect("create");
        (dir, store)
    }

    fn doc(id: &str, body: &str) -> NewDocument {
        NewDocument {
            id_key: id.into(),
            body: body.into(),
            index_keys: Vec::new(),
        }
    }

    fn bodies(store: &Store, collection: &str) -> Vec<String> {
        let mut out = Vec::new();
        store
            .scan_documents(collection, |d| {
                out.push(d.body.to_owned());
                Ok::<_, StoreError>(ControlFlow::Continue(()))
            })
            .expect("scan");
        out
    }

    #[test]
    fn insert_then_scan_in_insertion_order() {
        let (_dir, mut store) = store();
        store
            .insert_documents("c", &[doc("2", r#"{"_id":2}"#), doc("1", r#"{"_id":1}"#)])
            .expect("insert");
        store
            .insert_documents("c", &[doc("0", r#"{"_id":0,"é":"ü"}"#)])
            .expect("insert");
        assert_eq!(
            bodies(&store, "c"),
            [r#"{"_id":2}"#, r#"{"_id":1}"#, r#"{"_id":0,"é":"ü"}"#]
        );
        assert_eq!(store.count_documents("c").expect("count"), 3);
        assert_eq!(store.document_seqs("c").expect("seqs"), [1, 2, 3]);
        let names: Vec<_> = store
            .collections()
            .expect("collections")
            .into_iter()
            .map(|c| (c.name, c.documents))
            .collect();
        assert_eq!(names, [("c".to_owned(), 3)]);
    }

    #[test]
    fn duplicates_write_nothing() {
        // (batch ids, offending index) for a collection already holding `"a"`.
        let cases: &[(&[&str], usize)] = &[(&["b", "a"], 1), (&["a"], 0), (&["c", "d", "c"], 2)];
        for (ids, at) in cases {
            let (_dir, mut store) = store();
            store
                .insert_documents("c", &[doc("a", "{}")])
                .expect("insert");
            let batch: Vec<_> = ids.iter().map(|id| doc(id, "{}")).collect();
            match store.insert_documents("c", &batch) {
                Err(StoreError::DuplicateId { index, .. }) => assert_eq!(index, *at, "{ids:?}"),
                other => panic!("{ids:?}: expected a duplicate, got {other:?}"),
            }
            assert_eq!(store.count_documents("c").expect("count"), 1, "{ids:?}");
        }
    }

    #[test]
    fn embeddings_follow_their_documents() {
        let (_dir, mut store) = store();
        store
            .insert_documents("c", &[doc("1", "{}"), doc("2", "{}"), doc("3", "{}")])
            .expect("insert");
        let row = |id: &str, embedder_hash: &str| NewEmbedding {
            id_key: id.into(),
            text_hash: embedder_hash.into(),
            vector: vec![0u8; 8],
        };
        store
            .put_embeddings(
                "c",
                "text",
                "e1",
                &[row("1", "h1"), NewEmbedding::marker("2".into())],
            )
            .expect("put");
        store
            .put_embeddings("c", "text", "e0", &[row("3", "h3")])
            .expect("put");
        let scan = |store: &Store| {
            let mut seen = Vec::new();
            store
                .scan_vectors("c", "text", |v| {
                    seen.push((v.id_key.to_owned(), v.embedder.to_owned(), v.vector.len()));
                    Ok::<_, StoreError>(())
                })
                .expect("scan");
            seen
        };
        let owned = |rows: &[(&str, &str, usize)]| -> Vec<(String, String, usize)> {
            rows.iter()
                .map(|(a, b, n)| ((*a).into(), (*b).into(), *n))
                .collect()
        };
        assert_eq!(
            scan(&store),
            owned(&[("1", "e1", 8), ("2", "e1", 0), ("3", "e0", 8)])
        );
        assert_eq!(
            store
                .documents_without_embedding("c", "text", "e1")
                .expect("missing"),
            [3]
        );
        // Replacing keeps the seq and the (now stale) embedding.
        let replaced = doc("1", r#"{"new":1}"#);
        assert!(store.replace_document("c", &replaced).expect("replace"));
        assert!(
            !store
                .replace_document("c", &doc("4", "{}"))
                .expect("insert")
        );
        assert_eq!(store.document_seqs("c").expect("seqs"), [1, 2, 3, 4]);
        assert_eq!(scan(&store).len(), 3);
        let (_, found) = &store.documents_by_embedding("c", &[1]).expect("by rowid")[0];
        assert_eq!((found.seq, found.body.as_str()), (1, r#"{"new":1}"#));
        // Deleting a document deletes its embeddings with it.
        assert_eq!(
            store.delete_documents("c", &["1".into()]).expect("delete"),
            1
        );
        assert_eq!(scan(&store), owned(&[("2", "e1", 0), ("3", "e0", 8)]));
        assert!(
            store
                .documents_by_embedding("c", &[1])
                .expect("gone")
                .is_empty()
        );
        assert_eq!(
            store
                .delete_orphan_embeddings("c", "text")
                .expect("orphans"),
            0
        );
        let (state, bytes) = store
            .embedding("c", "2", "text")
            .expect("get")
            .expect("stored");
        assert!(state.is_marker());
        assert_eq!((state.embedder.as_str(), bytes.len()), ("e1", 0));
    }

    #[test]
    fn unknown_collection_and_bad_names() {
        let (_dir, mut store) = store();
        assert!(matches!(
            store.require_collection("nope"),
            Err(StoreError::UnknownCollection { .. })
        ));
        for name in ["", "$x", "a\nb"] {
            assert!(
                matches!(
                    store.insert_documents(name, &[doc("1", "{}")]),
                    Err(StoreError::InvalidCollectionName { .. })
                ),
                "{name:?}"
            );
        }
        assert!(store.create_collection("c").expect("create"));
        assert!(!store.create_collection("c").expect("create again"));
        store.require_collection("c").expect("exists");
    }

    #[test]
    fn read_only_store_refuses_writes() {
        let (dir, store) = store();
        drop(store);
        let mut store = Store::open(&dir.path().join("s")).expect("open");
        assert!(matches!(
            store.insert_documents("c", &[doc("1", "{}")]),
            Err(StoreError::ReadOnly { .. })
        ));
    }
}
