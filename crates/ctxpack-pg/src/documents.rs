//! Document collections in PostgreSQL, the system of record: for each document store of a
//! repository, its collections, declared field indexes, documents and embeddings as rows,
//! each row as it last stood (a deleted document or embedding, or a dropped index, stays as a
//! row without its state, so a cache that held it learns it is gone).
//!
//! A process writes into its own store, which is a cache, while it holds the store's advisory
//! lock, and publishes the rows its write touched in one transaction under a new change number
//! ([`PgDocuments::publish`]); every cache reads the rows changed since the last change it
//! applied, page by page ([`PgDocuments::page`]).

use ctxpack_store::StoreError;
use ctxpack_store::docs::replica::{
    CollectionChange, DocumentChange, DocumentChanges, EmbeddingChange, EmbeddingRow, FieldChange,
};

use crate::{Database, RepoLock};

/// Documents or embeddings read or written per statement.
const PAGE: i64 = 2_000;

/// One repository's document store in the database.
#[derive(Clone, Debug)]
pub struct PgDocuments {
    pub(crate) db: Database,
    pub(crate) repo: String,
    pub(crate) store: String,
}

/// Where the next page starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cursor {
    /// Collections and field indexes, then the first documents.
    Start,
    /// Documents after this `(change, collection, id_key)`.
    Documents(i64, String, String),
    /// Embeddings after this `(change, collection, id_key, field)`.
    Embeddings(i64, String, String, String),
}

/// A page of changed rows.
#[derive(Clone, Debug)]
pub struct DocumentPage {
    /// The rows.
    pub changes: DocumentChanges,
    /// Where the next page starts; `None` after the last.
    pub next: Option<Cursor>,
}

impl PgDocuments {
    fn error(&self, e: &postgres::Error) -> StoreError {
        self.db.error(e)
    }

    /// The store's name, as errors show it.
    pub fn label(&self) -> String {
        format!(
            "{} (documents {} of {})",
            self.db.inner.label, self.store, self.repo
        )
    }

    /// Takes the store's writer lock, waiting for another process's with `wait`; without,
    /// fails with [`StoreError::Locked`] when another process holds it.
    pub fn lock(&self, wait: bool) -> Result<RepoLock, StoreError> {
        let key = crate::lock_key("ctxpack-docs:", &format!("{}\0{}", self.repo, self.store));
        self.db
            .advisory_lock(key, wait)?
            .ok_or_else(|| StoreError::Locked {
                dir: self.label().into(),
                pid: 0,
            })
    }

    /// The last change published, or `None` when the store was never written.
    pub fn latest(&self) -> Result<Option<i64>, StoreError> {
        self.db.with(|c| {
            let row = c
                .query_opt(
                    "SELECT change FROM ctxpack_doc_stores WHERE repo = $1 AND store = $2",
                    &[&self.repo, &self.store],
                )
                .map_err(|e| self.error(&e))?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Publishes, in one transaction (creating the store), the rows `pages` gives until it
    /// gives `None`, under a new change number, which it returns. The caller holds
    /// [`PgDocuments::lock`] and brought its cache up to `base` (the change it last saw;
    /// `None` when the store had none): if the store is at another change, the lock was lost
    /// (its session ended) and another process wrote meanwhile, so nothing is published.
    pub fn publish(
        &self,
        now: i64,
        base: Option<i64>,
        pages: &mut dyn FnMut() -> Result<Option<DocumentChanges>, StoreError>,
    ) -> Result<i64, StoreError> {
        let (repo, store) = (&self.repo, &self.store);
        self.db.with(|c| {
            let e = |err: postgres::Error| self.error(&err);
            let mut tx = c.transaction().map_err(e)?;
            let current: Option<i64> = tx
                .query_opt(
                    "SELECT change FROM ctxpack_doc_stores WHERE repo = $1 AND store = $2 FOR UPDATE",
                    &[repo, store],
                )
                .map_err(e)?
                .map(|r| r.get(0));
            if current != base {
                return Err(StoreError::Conflict {
                    dir: self.label().into(),
                    detail: "another process wrote this document store while this write held its lock (the lock's session ended); the write was not published: repeat it".into(),
                });
            }
            let change: i64 = tx
                .query_one("SELECT nextval('ctxpack_doc_change')", &[])
                .map_err(e)?
                .get(0);
            tx.execute(
                "INSERT INTO ctxpack_doc_stores (repo, store, created, change) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (repo, store) DO UPDATE SET change = excluded.change",
                &[repo, store, &now, &change],
            )
            .map_err(e)?;
            while let Some(changes) = pages()? {
                for chunk in changes.collections.chunks(PAGE as usize) {
                    let names: Vec<&str> = chunk.iter().map(|c| c.name.as_str()).collect();
                    let created: Vec<i64> = chunk.iter().map(|c| c.created_at).collect();
                    tx.execute(
                        "INSERT INTO ctxpack_doc_collections (repo, store, name, created_at, change)
                         SELECT $1, $2, n, t, $5 FROM UNNEST($3::text[], $4::bigint[]) AS u(n, t)
                         ON CONFLICT (repo, store, name)
                         DO UPDATE SET created_at = excluded.created_at, change = excluded.change",
                        &[repo, store, &names, &created, &change],
                    )
                    .map_err(e)?;
                }
                for chunk in changes.fields.chunks(PAGE as usize) {
                    let collections: Vec<&str> = chunk.iter().map(|f| f.collection.as_str()).collect();
                    let fields: Vec<&str> = chunk.iter().map(|f| f.field.as_str()).collect();
                    let created: Vec<Option<i64>> = chunk.iter().map(|f| f.created_at).collect();
                    tx.execute(
                        "INSERT INTO ctxpack_doc_fields (repo, store, collection, field, created_at, change)
                         SELECT $1, $2, c, f, t, $6 FROM UNNEST($3::text[], $4::text[], $5::bigint[]) AS u(c, f, t)
                         ON CONFLICT (repo, store, collection, field)
                         DO UPDATE SET created_at = excluded.created_at, change = excluded.change",
                        &[repo, store, &collections, &fields, &created, &change],
                    )
                    .map_err(e)?;
                }
                for chunk in changes.documents.chunks(PAGE as usize) {
                    let collections: Vec<&str> = chunk.iter().map(|d| d.collection.as_str()).collect();
                    let ids: Vec<&str> = chunk.iter().map(|d| d.id_key.as_str()).collect();
                    let seqs: Vec<Option<i64>> =
                        chunk.iter().map(|d| d.state.as_ref().map(|s| s.0)).collect();
                    let bodies: Vec<Option<&str>> = chunk
                        .iter()
                        .map(|d| d.state.as_ref().map(|s| s.1.as_str()))
                        .collect();
                    tx.execute(
                        "INSERT INTO ctxpack_documents (repo, store, collection, id_key, seq, body, change)
                         SELECT $1, $2, c, i, s, b, $7
                         FROM UNNEST($3::text[], $4::text[], $5::bigint[], $6::text[]) AS u(c, i, s, b)
                         ON CONFLICT (repo, store, collection, id_key)
                         DO UPDATE SET seq = excluded.seq, body = excluded.body, change = excluded.change",
                        &[repo, store, &collections, &ids, &seqs, &bodies, &change],
                    )
                    .map_err(e)?;
                }
                for chunk in changes.embeddings.chunks(PAGE as usize) {
                    let collections: Vec<&str> = chunk.iter().map(|m| m.collection.as_str()).collect();
                    let ids: Vec<&str> = chunk.iter().map(|m| m.id_key.as_str()).collect();
                    let fields: Vec<&str> = chunk.iter().map(|m| m.field.as_str()).collect();
                    let rowids: Vec<Option<i64>> =
                        chunk.iter().map(|m| m.state.as_ref().map(|s| s.rowid)).collect();
                    let embedders: Vec<Option<&str>> = chunk
                        .iter()
                        .map(|m| m.state.as_ref().map(|s| s.embedder.as_str()))
                        .collect();
                    let hashes: Vec<Option<&str>> = chunk
                        .iter()
                        .map(|m| m.state.as_ref().map(|s| s.text_hash.as_str()))
                        .collect();
                    let vectors: Vec<Option<&[u8]>> = chunk
                        .iter()
                        .map(|m| m.state.as_ref().map(|s| s.vector.as_slice()))
                        .collect();
                    tx.execute(
                        "INSERT INTO ctxpack_doc_embeddings
                             (repo, store, collection, id_key, field, row, embedder, text_hash, vector, change)
                         SELECT $1, $2, c, i, f, r, m, h, v, $10
                         FROM UNNEST($3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[],
                                     $8::text[], $9::bytea[])
                             AS u(c, i, f, r, m, h, v)
                         ON CONFLICT (repo, store, collection, id_key, field)
                         DO UPDATE SET row = excluded.row, embedder = excluded.embedder,
                                       text_hash = excluded.text_hash, vector = excluded.vector,
                                       change = excluded.change",
                        &[
                            repo, store, &collections, &ids, &fields, &rowids, &embedders, &hashes,
                            &vectors, &change,
                        ],
                    )
                    .map_err(e)?;
                }
            }
            tx.commit().map_err(e)?;
            Ok(change)
        })
    }

    /// A page of the rows changed after change `after` up to `through` (a value of
    /// [`PgDocuments::latest`]), starting at `cursor`: collections and field indexes first,
    /// then documents, then embeddings, each page at most a few thousand rows.
    pub fn page(
        &self,
        after: i64,
        through: i64,
        cursor: &Cursor,
    ) -> Result<DocumentPage, StoreError> {
        let (repo, store) = (&self.repo, &self.store);
        self.db.with(|c| {
            let e = |err: postgres::Error| self.error(&err);
            let mut changes = DocumentChanges::default();
            let (from_change, from_collection, from_id) = match cursor {
                Cursor::Start => {
                    changes.collections = c
                        .query(
                            "SELECT name, created_at FROM ctxpack_doc_collections
                             WHERE repo = $1 AND store = $2 AND change > $3 AND change <= $4
                             ORDER BY name",
                            &[repo, store, &after, &through],
                        )
                        .map_err(e)?
                        .iter()
                        .map(|r| CollectionChange {
                            name: r.get(0),
                            created_at: r.get(1),
                        })
                        .collect();
                    changes.fields = c
                        .query(
                            "SELECT collection, field, created_at FROM ctxpack_doc_fields
                             WHERE repo = $1 AND store = $2 AND change > $3 AND change <= $4
                             ORDER BY collection, field",
                            &[repo, store, &after, &through],
                        )
                        .map_err(e)?
                        .iter()
                        .map(|r| FieldChange {
                            collection: r.get(0),
                            field: r.get(1),
                            created_at: r.get(2),
                        })
                        .collect();
                    (after, String::new(), String::new())
                }
                Cursor::Documents(change, collection, id) => {
                    (*change, collection.clone(), id.clone())
                }
                Cursor::Embeddings(change, collection, id, field) => {
                    let rows = c
                        .query(
                            "SELECT change, collection, id_key, field, row, embedder, text_hash, vector
                             FROM ctxpack_doc_embeddings
                             WHERE repo = $1 AND store = $2 AND change > $9 AND change <= $3
                               AND (change, collection, id_key, field) > ($4, $5, $6, $7)
                             ORDER BY change, collection, id_key, field LIMIT $8",
                            &[repo, store, &through, change, collection, id, field, &PAGE, &after],
                        )
                        .map_err(e)?;
                    let next = (rows.len() as i64 == PAGE).then(|| {
                        let last = &rows[rows.len() - 1];
                        Cursor::Embeddings(last.get(0), last.get(1), last.get(2), last.get(3))
                    });
                    changes.embeddings = rows
                        .iter()
                        .map(|r| {
                            let rowid: Option<i64> = r.get(4);
                            EmbeddingChange {
                                collection: r.get(1),
                                id_key: r.get(2),
                                field: r.get(3),
                                state: rowid.map(|rowid| EmbeddingRow {
                                    rowid,
                                    embedder: r.get::<_, Option<String>>(5).unwrap_or_default(),
                                    text_hash: r.get::<_, Option<String>>(6).unwrap_or_default(),
                                    vector: r.get::<_, Option<Vec<u8>>>(7).unwrap_or_default(),
                                }),
                            }
                        })
                        .collect();
                    return Ok(DocumentPage { changes, next });
                }
            };
            let rows = c
                .query(
                    "SELECT change, collection, id_key, seq, body FROM ctxpack_documents
                     WHERE repo = $1 AND store = $2 AND change > $8 AND change <= $3
                       AND (change, collection, id_key) > ($4, $5, $6)
                     ORDER BY change, collection, id_key LIMIT $7",
                    &[repo, store, &through, &from_change, &from_collection, &from_id, &PAGE, &after],
                )
                .map_err(e)?;
            let next = if rows.len() as i64 == PAGE {
                let last = &rows[rows.len() - 1];
                Cursor::Documents(last.get(0), last.get(1), last.get(2))
            } else {
                // Embeddings start after `after`: an empty key sorts before every key.
                Cursor::Embeddings(after, String::new(), String::new(), String::new())
            };
            changes.documents = rows
                .iter()
                .map(|r| {
                    let seq: Option<i64> = r.get(3);
                    let body: Option<String> = r.get(4);
                    DocumentChange {
                        collection: r.get(1),
                        id_key: r.get(2),
                        state: seq.zip(body),
                    }
                })
                .collect();
            Ok(DocumentPage {
                changes,
                next: Some(next),
            })
        })
    }
}
