//! Field indexes: the documents of a collection listed by the values of one declared field.
//!
//! A field index is declared per `(collection, field)` and holds one row per document and key
//! in `field_values`. The store does not know what a key means: the caller computes a
//! document's keys (for a filter, the canonical text of every value at the field's path) and
//! passes them with the document ([`NewDocument::index_keys`]), so rows are written, replaced
//! and deleted in the same transaction as their document: an index is never behind it, as
//! long as every writer passes the keys of every declared field (the API does).
//! Declaring an index lists every stored document in that one transaction too.
//!
//! Stores older than format 5 have no field indexes; they read as having none.

use std::ops::ControlFlow;

use rusqlite::{OptionalExtension, Transaction, params};

use super::{NewDocument, StoreError, now_seconds};
use crate::db::{Store, sql_error};

/// One key of a document in the index of one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexKey {
    /// The declared field (as declared).
    pub field: String,
    /// The key, as the caller computes it.
    pub key: String,
}

/// A declared field index and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldIndexInfo {
    /// The field, as declared.
    pub field: String,
    /// Unix seconds when it was declared.
    pub created_at: i64,
    /// Its rows: one per document and distinct key.
    pub entries: u64,
}

/// Writes a document's keys (after deleting any it had) inside the caller's transaction.
pub(super) fn write_keys(
    tx: &Transaction<'_>,
    collection: &str,
    seq: i64,
    document: &NewDocument,
    replacing: bool,
) -> rusqlite::Result<()> {
    if replacing {
        tx.prepare_cached("DELETE FROM field_values WHERE seq = ?1")?
            .execute([seq])?;
    }
    if document.index_keys.is_empty() {
        return Ok(());
    }
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO field_values (collection, field, key, seq) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for key in &document.index_keys {
        insert.execute(params![collection, key.field, key.key, seq])?;
    }
    Ok(())
}

/// Lists every stored document of `collection` in the index of `field`, inside the caller's
/// transaction: `keys` computes a document's keys from its `_id` key and body.
pub(super) fn list_documents<E>(
    tx: &Transaction<'_>,
    collection: &str,
    field: &str,
    keys: &mut impl FnMut(&str, &str) -> Result<Vec<String>, E>,
    e: &impl Fn(rusqlite::Error) -> E,
) -> Result<(), E> {
    let mut scan = tx
        .prepare("SELECT seq, id_key, body FROM documents WHERE collection = ?1 ORDER BY seq")
        .map_err(e)?;
    let mut insert = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO field_values (collection, field, key, seq) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(e)?;
    let mut rows = scan.query([collection]).map_err(e)?;
    while let Some(row) = rows.next().map_err(e)? {
        let seq: i64 = row.get(0).map_err(e)?;
        let id_key = super::text_ref(row, 1).map_err(e)?;
        let body = super::text_ref(row, 2).map_err(e)?;
        for key in keys(id_key, body)? {
            insert
                .execute(params![collection, field, key, seq])
                .map_err(e)?;
        }
    }
    Ok(())
}

impl Store {
    /// Whether this store's format has field indexes (5 and later).
    fn has_field_indexes(&self) -> bool {
        self.format_version() >= 5
    }

    /// The declared field indexes of a collection, by field.
    pub fn field_indexes(&self, collection: &str) -> Result<Vec<FieldIndexInfo>, StoreError> {
        if !self.has_field_indexes() {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT i.field, i.created_at, \
                 (SELECT count(*) FROM field_values v WHERE v.collection = i.collection AND v.field = i.field) \
                 FROM field_indexes i WHERE i.collection = ?1 ORDER BY i.field",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([collection], |r| {
                Ok(FieldIndexInfo {
                    field: r.get(0)?,
                    created_at: r.get(1)?,
                    entries: r.get::<_, i64>(2)?.max(0) as u64,
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// The names of the declared field indexes of a collection, by field (without counting
    /// their rows).
    pub fn indexed_fields(&self, collection: &str) -> Result<Vec<String>, StoreError> {
        if !self.has_field_indexes() {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT field FROM field_indexes WHERE collection = ?1 ORDER BY field")
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([collection], |r| r.get(0))
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// Declares an index of `field` and lists every stored document of the collection in it,
    /// in one transaction: `keys` computes a document's keys from its body (an error from it
    /// writes nothing). Returns false, writing nothing, when the index was already declared.
    pub fn create_field_index<E: From<StoreError>>(
        &mut self,
        collection: &str,
        field: &str,
        mut keys: impl FnMut(&str, &str) -> Result<Vec<String>, E>,
    ) -> Result<bool, E> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| E::from(sql_error(&dir, err));
        let tx = self.conn.transaction().map_err(e)?;
        let declared = tx
            .execute(
                "INSERT OR IGNORE INTO field_indexes (collection, field, created_at) VALUES (?1, ?2, ?3)",
                params![collection, field, now_seconds()],
            )
            .map_err(e)?
            > 0;
        if !declared {
            return Ok(false);
        }
        list_documents(&tx, collection, field, &mut keys, &e)?;
        tx.commit().map_err(e)?;
        Ok(true)
    }

    /// Removes the index of `field` and its rows; returns whether one was declared.
    pub fn drop_field_index(&mut self, collection: &str, field: &str) -> Result<bool, StoreError> {
        self.require_writable()?;
        if !self.has_field_indexes() {
            return Ok(false);
        }
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let dropped = tx
            .execute(
                "DELETE FROM field_indexes WHERE collection = ?1 AND field = ?2",
                [collection, field],
            )
            .map_err(e)?
            > 0;
        tx.execute(
            "DELETE FROM field_values WHERE collection = ?1 AND field = ?2",
            [collection, field],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(dropped)
    }

    /// The index rows of `field` under any of `keys`, counting no further than `cap + 1` (so
    /// a planner can ask "more than `cap`?" cheaply). A document listed under two of the keys
    /// counts twice, so this bounds the matching documents from above.
    pub fn count_indexed(
        &self,
        collection: &str,
        field: &str,
        keys: &[String],
        cap: u64,
    ) -> Result<u64, StoreError> {
        let mut total = 0u64;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM (SELECT 1 FROM field_values \
                 WHERE collection = ?1 AND field = ?2 AND key = ?3 LIMIT ?4)",
            )
            .map_err(self.sql())?;
        for key in keys {
            let left = cap.saturating_add(1).saturating_sub(total);
            if left == 0 {
                break;
            }
            let n: i64 = stmt
                .query_row(
                    params![
                        collection,
                        field,
                        key,
                        i64::try_from(left).unwrap_or(i64::MAX)
                    ],
                    |r| r.get(0),
                )
                .map_err(self.sql())?;
            total = total.saturating_add(n.max(0) as u64);
        }
        Ok(total.min(cap.saturating_add(1)))
    }

    /// Calls `f` with the seq of every document that has any of `keys` in the index of
    /// `field`, grouped by key (a document with two of the keys is visited twice), until it
    /// breaks.
    pub fn scan_indexed(
        &self,
        collection: &str,
        field: &str,
        keys: &[String],
        mut f: impl FnMut(i64) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq FROM field_values WHERE collection = ?1 AND field = ?2 AND key = ?3 ORDER BY seq",
            )
            .map_err(self.sql())?;
        for key in keys {
            let mut rows = stmt
                .query(params![collection, field, key])
                .map_err(self.sql())?;
            while let Some(row) = rows.next().map_err(self.sql())? {
                if f(row.get(0).map_err(self.sql())?).is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The `_id` keys of the documents with these `seq`s, in the order asked (seqs not in the
    /// collection are left out). Reads the primary key only, never a body.
    pub fn id_keys_by_seq(
        &self,
        collection: &str,
        seqs: &[i64],
    ) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id_key FROM documents WHERE rowid = ?1 AND collection = ?2")
            .map_err(self.sql())?;
        let _batch = self.read_batch().map_err(self.sql())?;
        let mut out = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            let row: Option<String> = stmt
                .query_row(params![seq, collection], |r| r.get(0))
                .optional()
                .map_err(self.sql())?;
            out.extend(row);
        }
        Ok(out)
    }
}
