//! Document collections as changes of rows, for a store that is the cache of another system
//! of record (a server's database).
//!
//! A writer *captures* what its writes touch: [`Store::capture_document_changes`] installs
//! temporary triggers on this connection alone (the store file is not changed), and
//! [`Store::captured_document_changes`] reads, page by page, for every collection, field
//! index, document and embedding a write touched, its row as it now stands — or that it is
//! gone. Those rows are
//! what the system of record stores. Another cache *applies* them with
//! [`Store::apply_document_changes`] in one transaction, giving rows equal to the writer's:
//! the same `seq`s, bodies, creation times and vectors, so every read answers the same.
//!
//! A cache remembers in `meta` the last change it applied ([`Mark::Applied`]), or that a local
//! write was not published yet ([`Mark::Dirty`]): a cache left dirty by a crash is not
//! trusted, and [`Store::reset_documents`] empties it so it can be filled again.

use std::collections::BTreeSet;

use rusqlite::{OptionalExtension, params};

use super::{StoreError, text_ref, validate_collection_name, vectors};
use crate::db::{Store, sql_error};

/// A collection as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionChange {
    /// Its name.
    pub name: String,
    /// Unix seconds when it was created.
    pub created_at: i64,
}

/// A declared field index, or that it was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldChange {
    /// The collection.
    pub collection: String,
    /// The field, as declared.
    pub field: String,
    /// Unix seconds when it was declared; `None` when it is not declared.
    pub created_at: Option<i64>,
}

/// A document, or that it is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentChange {
    /// The collection.
    pub collection: String,
    /// The canonical JSON of its `_id`.
    pub id_key: String,
    /// Its `seq` and body; `None` when it is deleted.
    pub state: Option<(i64, String)>,
}

/// An embedding row, or that it is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingChange {
    /// The collection.
    pub collection: String,
    /// The canonical JSON of the document's `_id`.
    pub id_key: String,
    /// The field.
    pub field: String,
    /// The row; `None` when it is deleted.
    pub state: Option<EmbeddingRow>,
}

/// An embedding row as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingRow {
    /// Its rowid, which orders a field's vectors (and so breaks ties between equal scores).
    pub rowid: i64,
    /// The embedder that computed it.
    pub embedder: String,
    /// The hash of the text it was computed from; empty for a marker.
    pub text_hash: String,
    /// The vector as the table stores it (raw `f32`s or counts, see `vector_blob`), so a cache
    /// holds the very bytes the writer stored; empty for a marker.
    pub vector: Vec<u8>,
}

/// Rows of document collections as they stand after some writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocumentChanges {
    /// Collections created.
    pub collections: Vec<CollectionChange>,
    /// Field indexes declared or dropped.
    pub fields: Vec<FieldChange>,
    /// Documents written or deleted.
    pub documents: Vec<DocumentChange>,
    /// Embeddings written or deleted.
    pub embeddings: Vec<EmbeddingChange>,
}

impl DocumentChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.collections.is_empty()
            && self.fields.is_empty()
            && self.documents.is_empty()
            && self.embeddings.is_empty()
    }

    /// The `(collection, field)`s whose embeddings changed.
    pub fn embedded_fields(&self) -> BTreeSet<(String, String)> {
        self.embeddings
            .iter()
            .map(|e| (e.collection.clone(), e.field.clone()))
            .collect()
    }
}

/// Where the next page of captured rows starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureCursor {
    /// Collections and field indexes, then the first documents.
    Start,
    /// Documents after this `(collection, id_key)`.
    Documents(String, String),
    /// Embeddings after this `(collection, id_key, field)`.
    Embeddings(String, String, String),
}

/// What a cache's document collections hold, relative to their system of record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Never filled.
    Empty,
    /// Every change up to and including this one is applied, and nothing else.
    Applied(i64),
    /// A local write may not have been published: the cache is not trusted.
    Dirty,
}

const MARK_KEY: &str = "docs_record";

/// The temporary triggers that note what a write touches, on this connection only.
const CAPTURE: &str = "
CREATE TEMP TABLE IF NOT EXISTS captured_collections (name TEXT PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS captured_fields (collection TEXT, field TEXT, PRIMARY KEY (collection, field));
CREATE TEMP TABLE IF NOT EXISTS captured_documents (collection TEXT, id_key TEXT, PRIMARY KEY (collection, id_key));
CREATE TEMP TABLE IF NOT EXISTS captured_embeddings (collection TEXT, id_key TEXT, field TEXT, PRIMARY KEY (collection, id_key, field));
DELETE FROM captured_collections;
DELETE FROM captured_fields;
DELETE FROM captured_documents;
DELETE FROM captured_embeddings;
CREATE TEMP TRIGGER IF NOT EXISTS capture_collection AFTER INSERT ON main.collections BEGIN
    INSERT OR IGNORE INTO captured_collections VALUES (new.name);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_field_insert AFTER INSERT ON main.field_indexes BEGIN
    INSERT OR IGNORE INTO captured_fields VALUES (new.collection, new.field);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_field_delete AFTER DELETE ON main.field_indexes BEGIN
    INSERT OR IGNORE INTO captured_fields VALUES (old.collection, old.field);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_document_insert AFTER INSERT ON main.documents BEGIN
    INSERT OR IGNORE INTO captured_documents VALUES (new.collection, new.id_key);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_document_update AFTER UPDATE ON main.documents BEGIN
    INSERT OR IGNORE INTO captured_documents VALUES (new.collection, new.id_key);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_document_delete AFTER DELETE ON main.documents BEGIN
    INSERT OR IGNORE INTO captured_documents VALUES (old.collection, old.id_key);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_embedding_insert AFTER INSERT ON main.embeddings BEGIN
    INSERT OR IGNORE INTO captured_embeddings VALUES (new.collection, new.id_key, new.field);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_embedding_update AFTER UPDATE ON main.embeddings BEGIN
    INSERT OR IGNORE INTO captured_embeddings VALUES (new.collection, new.id_key, new.field);
END;
CREATE TEMP TRIGGER IF NOT EXISTS capture_embedding_delete AFTER DELETE ON main.embeddings BEGIN
    INSERT OR IGNORE INTO captured_embeddings VALUES (old.collection, old.id_key, old.field);
END;
";

impl Store {
    /// Starts noting what this connection's writes do to document collections (only this
    /// connection's; the store file is not changed). Anything noted before is forgotten.
    pub fn capture_document_changes(&mut self) -> Result<(), StoreError> {
        self.require_writable()?;
        self.conn.execute_batch(CAPTURE).map_err(self.sql())
    }

    /// Whether the writes since [`Store::capture_document_changes`] touched anything.
    pub fn captured_any(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM temp.captured_collections) \
                 OR EXISTS (SELECT 1 FROM temp.captured_fields) \
                 OR EXISTS (SELECT 1 FROM temp.captured_documents) \
                 OR EXISTS (SELECT 1 FROM temp.captured_embeddings)",
                [],
                |r| r.get(0),
            )
            .map_err(self.sql())
    }

    /// A page of the rows, as they now stand, of everything the writes since
    /// [`Store::capture_document_changes`] touched, from `cursor`: collections and field
    /// indexes first, then documents, then embeddings, at most `limit` documents or
    /// embeddings and little more than `max_bytes` of their bodies and vectors per page.
    /// Returns where the next page starts, `None` after the last.
    pub fn captured_document_changes(
        &self,
        cursor: &CaptureCursor,
        limit: usize,
        max_bytes: usize,
    ) -> Result<(DocumentChanges, Option<CaptureCursor>), StoreError> {
        let sql = self.sql();
        let mut changes = DocumentChanges::default();
        let limit = limit.max(1);
        let (collection, id_key, field) = match cursor {
            CaptureCursor::Start => {
                let mut stmt = self
                    .conn
                    .prepare(
                        "SELECT c.name, m.created_at FROM temp.captured_collections c \
                         JOIN main.collections m ON m.name = c.name ORDER BY c.name",
                    )
                    .map_err(&sql)?;
                changes.collections = stmt
                    .query_map([], |r| {
                        Ok(CollectionChange {
                            name: r.get(0)?,
                            created_at: r.get(1)?,
                        })
                    })
                    .and_then(Iterator::collect)
                    .map_err(&sql)?;
                let mut stmt = self
                    .conn
                    .prepare(
                        "SELECT c.collection, c.field, m.created_at FROM temp.captured_fields c \
                         LEFT JOIN main.field_indexes m \
                         ON m.collection = c.collection AND m.field = c.field \
                         ORDER BY c.collection, c.field",
                    )
                    .map_err(&sql)?;
                changes.fields = stmt
                    .query_map([], |r| {
                        Ok(FieldChange {
                            collection: r.get(0)?,
                            field: r.get(1)?,
                            created_at: r.get(2)?,
                        })
                    })
                    .and_then(Iterator::collect)
                    .map_err(&sql)?;
                (String::new(), String::new(), None)
            }
            CaptureCursor::Documents(collection, id_key) => {
                (collection.clone(), id_key.clone(), None)
            }
            CaptureCursor::Embeddings(collection, id_key, field) => {
                (collection.clone(), id_key.clone(), Some(field.clone()))
            }
        };
        let mut bytes = 0;
        let Some(field) = field else {
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT c.collection, c.id_key, m.seq, m.body FROM temp.captured_documents c \
                     LEFT JOIN main.documents m \
                     ON m.collection = c.collection AND m.id_key = c.id_key \
                     WHERE (c.collection, c.id_key) > (?1, ?2) \
                     ORDER BY c.collection, c.id_key LIMIT ?3",
                )
                .map_err(&sql)?;
            let mut rows = stmt
                .query(params![collection, id_key, limit as i64])
                .map_err(&sql)?;
            while let Some(row) = rows.next().map_err(&sql)? {
                let seq: Option<i64> = row.get(2).map_err(&sql)?;
                let state = match seq {
                    Some(seq) => Some((seq, text_ref(row, 3).map_err(&sql)?.to_owned())),
                    None => None,
                };
                bytes += state.as_ref().map_or(0, |s| s.1.len());
                changes.documents.push(DocumentChange {
                    collection: row.get(0).map_err(&sql)?,
                    id_key: row.get(1).map_err(&sql)?,
                    state,
                });
                if bytes >= max_bytes {
                    break;
                }
            }
            let next = match changes.documents.last() {
                Some(last) if changes.documents.len() == limit || bytes >= max_bytes => {
                    CaptureCursor::Documents(last.collection.clone(), last.id_key.clone())
                }
                _ => CaptureCursor::Embeddings(String::new(), String::new(), String::new()),
            };
            return Ok((changes, Some(next)));
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.collection, c.id_key, c.field, m.rowid, m.embedder, m.text_hash, m.vector \
                 FROM temp.captured_embeddings c LEFT JOIN main.embeddings m \
                 ON m.collection = c.collection AND m.id_key = c.id_key AND m.field = c.field \
                 WHERE (c.collection, c.id_key, c.field) > (?1, ?2, ?3) \
                 ORDER BY c.collection, c.id_key, c.field LIMIT ?4",
            )
            .map_err(&sql)?;
        let mut rows = stmt
            .query(params![collection, id_key, field, limit as i64])
            .map_err(&sql)?;
        while let Some(row) = rows.next().map_err(&sql)? {
            let rowid: Option<i64> = row.get(3).map_err(&sql)?;
            let state = match rowid {
                Some(rowid) => Some(EmbeddingRow {
                    rowid,
                    embedder: row.get(4).map_err(&sql)?,
                    text_hash: row.get(5).map_err(&sql)?,
                    vector: row.get(6).map_err(&sql)?,
                }),
                None => None,
            };
            bytes += state.as_ref().map_or(0, |s| s.vector.len());
            changes.embeddings.push(EmbeddingChange {
                collection: row.get(0).map_err(&sql)?,
                id_key: row.get(1).map_err(&sql)?,
                field: row.get(2).map_err(&sql)?,
                state,
            });
            if bytes >= max_bytes {
                break;
            }
        }
        let next = match changes.embeddings.last() {
            Some(last) if changes.embeddings.len() == limit || bytes >= max_bytes => {
                Some(CaptureCursor::Embeddings(
                    last.collection.clone(),
                    last.id_key.clone(),
                    last.field.clone(),
                ))
            }
            _ => None,
        };
        Ok((changes, next))
    }

    /// What the document collections hold relative to their system of record.
    pub fn document_mark(&self) -> Result<Mark, StoreError> {
        let value: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [MARK_KEY], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.sql())?;
        Ok(match value.as_deref() {
            None => Mark::Empty,
            Some("dirty") => Mark::Dirty,
            Some(n) => n.parse().map_or(Mark::Dirty, Mark::Applied),
        })
    }

    /// Records what the document collections hold relative to their system of record.
    pub fn set_document_mark(&mut self, mark: Mark) -> Result<(), StoreError> {
        self.require_writable()?;
        let value = match mark {
            Mark::Empty => None,
            Mark::Applied(n) => Some(n.to_string()),
            Mark::Dirty => Some("dirty".to_owned()),
        };
        match value {
            Some(value) => self.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![MARK_KEY, value],
            ),
            None => self
                .conn
                .execute("DELETE FROM meta WHERE key = ?1", [MARK_KEY]),
        }
        .map_err(self.sql())?;
        Ok(())
    }

    /// Removes every collection, document, embedding and field index, in one transaction,
    /// and marks the collections [`Mark::Empty`]. Vector files left behind are never used
    /// again: their generations are gone, and new ones are counted with new tokens.
    pub fn reset_documents(&mut self) -> Result<(), StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute_batch(
            "DELETE FROM field_values; DELETE FROM field_indexes; DELETE FROM embeddings; \
             DELETE FROM documents; DELETE FROM collections;",
        )
        .map_err(e)?;
        let generations: bool = tx
            .query_row(
                "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'vector_generations'",
                [],
                |r| r.get(0),
            )
            .map_err(e)?;
        if generations {
            tx.execute("DELETE FROM vector_generations", [])
                .map_err(e)?;
        }
        tx.execute("DELETE FROM meta WHERE key = ?1", [MARK_KEY])
            .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(())
    }

    /// Applies rows read from the system of record, in one transaction, and with `through`
    /// marks the collections as holding every change up to it (the last page of a sync).
    /// `keys` computes a document's keys for a declared field from its body (as for
    /// [`Store::create_field_index`]); an error from it applies nothing.
    ///
    /// Pages may come in any order: a document's row is its final state, and a `seq` it
    /// takes is freed first from any document still holding it here (whose own row, in a
    /// later page, puts it back where it now is).
    pub fn apply_document_changes<E: From<StoreError>>(
        &mut self,
        changes: &DocumentChanges,
        through: Option<i64>,
        mut keys: impl FnMut(&str, &str, &str, &str) -> Result<Vec<String>, E>,
    ) -> Result<(), E> {
        self.require_writable()?;
        for c in &changes.collections {
            validate_collection_name(&c.name)?;
        }
        let dir = self.dir.clone();
        let e = |err| E::from(sql_error(&dir, err));
        let tx = self.conn.transaction().map_err(e)?;
        let mut touched: BTreeSet<&str> = BTreeSet::new();
        for c in &changes.collections {
            tx.execute(
                "INSERT INTO collections (name, created_at) VALUES (?1, ?2) \
                 ON CONFLICT (name) DO UPDATE SET created_at = excluded.created_at",
                params![c.name, c.created_at],
            )
            .map_err(e)?;
        }
        // Field indexes first, listing the documents already here; documents written below
        // get the keys of every field declared by then.
        for f in &changes.fields {
            tx.execute(
                "DELETE FROM field_indexes WHERE collection = ?1 AND field = ?2",
                [&f.collection, &f.field],
            )
            .map_err(e)?;
            tx.execute(
                "DELETE FROM field_values WHERE collection = ?1 AND field = ?2",
                [&f.collection, &f.field],
            )
            .map_err(e)?;
            let Some(created_at) = f.created_at else {
                continue;
            };
            tx.execute(
                "INSERT INTO field_indexes (collection, field, created_at) VALUES (?1, ?2, ?3)",
                params![f.collection, f.field, created_at],
            )
            .map_err(e)?;
            super::fields::list_documents(
                &tx,
                &f.collection,
                &f.field,
                &mut |id_key: &str, body: &str| keys(&f.collection, &f.field, id_key, body),
                &e,
            )?;
        }
        // Every changed document leaves first, so a `seq` it held is free for the document
        // that holds it now, whatever order the changes come in.
        {
            let mut keys_of = tx
                .prepare_cached(
                    "DELETE FROM field_values WHERE seq = \
                     (SELECT seq FROM documents WHERE collection = ?1 AND id_key = ?2)",
                )
                .map_err(e)?;
            let mut delete = tx
                .prepare_cached("DELETE FROM documents WHERE collection = ?1 AND id_key = ?2")
                .map_err(e)?;
            for d in &changes.documents {
                keys_of.execute([&d.collection, &d.id_key]).map_err(e)?;
                delete.execute([&d.collection, &d.id_key]).map_err(e)?;
                touched.insert(&d.collection);
            }
        }
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO documents (rowid, collection, id_key, seq, body) \
                     VALUES (?1, ?2, ?3, ?1, ?4)",
                )
                .map_err(e)?;
            let mut key_insert = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO field_values (collection, field, key, seq) \
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(e)?;
            let mut declared = tx
                .prepare_cached("SELECT field FROM field_indexes WHERE collection = ?1")
                .map_err(e)?;
            let mut holder = tx
                .prepare_cached("DELETE FROM documents WHERE rowid = ?1 RETURNING collection")
                .map_err(e)?;
            let mut holder_keys = tx
                .prepare_cached("DELETE FROM field_values WHERE seq = ?1")
                .map_err(e)?;
            let mut moved: BTreeSet<String> = BTreeSet::new();
            for d in &changes.documents {
                let Some((seq, body)) = &d.state else {
                    continue;
                };
                holder_keys.execute([seq]).map_err(e)?;
                let held: Option<String> = holder
                    .query_row([seq], |r| r.get(0))
                    .optional()
                    .map_err(e)?;
                moved.extend(held);
                insert
                    .execute(params![seq, d.collection, d.id_key, body])
                    .map_err(e)?;
                let fields: Vec<String> = declared
                    .query_map([&d.collection], |r| r.get(0))
                    .and_then(Iterator::collect)
                    .map_err(e)?;
                for field in fields {
                    for key in keys(&d.collection, &field, &d.id_key, body)? {
                        key_insert
                            .execute(params![d.collection, field, key, seq])
                            .map_err(e)?;
                    }
                }
            }
            for collection in moved {
                recount(&tx, &collection).map_err(e)?;
            }
        }
        {
            let mut delete = tx
                .prepare_cached(
                    "DELETE FROM embeddings WHERE collection = ?1 AND id_key = ?2 AND field = ?3",
                )
                .map_err(e)?;
            let mut holder = tx
                .prepare_cached(
                    "DELETE FROM embeddings WHERE rowid = ?1 RETURNING collection, field",
                )
                .map_err(e)?;
            let mut fields = changes.embedded_fields();
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO embeddings \
                     (rowid, collection, id_key, field, embedder, text_hash, vector, checksum) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(e)?;
            for m in &changes.embeddings {
                delete
                    .execute([&m.collection, &m.id_key, &m.field])
                    .map_err(e)?;
            }
            for m in &changes.embeddings {
                if let Some(row) = &m.state {
                    // Whatever holds the rowid here has moved since (its own row says where).
                    let held: Option<(String, String)> = holder
                        .query_row([row.rowid], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(e)?;
                    fields.extend(held);
                    insert
                        .execute(params![
                            row.rowid,
                            m.collection,
                            m.id_key,
                            m.field,
                            row.embedder,
                            row.text_hash,
                            row.vector,
                            crate::db::checksum(&row.vector)
                        ])
                        .map_err(e)?;
                }
            }
            // A holder moved away may belong to another field: bump every field touched.
            for (collection, field) in fields {
                vectors::bump_generation(&tx, &collection, Some(&field)).map_err(e)?;
            }
        }
        for collection in touched {
            recount(&tx, collection).map_err(e)?;
        }
        if let Some(through) = through {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![MARK_KEY, through.to_string()],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(())
    }
}

/// Sets a collection's document count from its rows.
fn recount(tx: &rusqlite::Transaction<'_>, collection: &str) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE collections SET documents = \
         (SELECT count(*) FROM documents WHERE collection = ?1) WHERE name = ?1",
        [collection],
    )?;
    Ok(())
}
