//! Documents' embeddings: stored per field beside the documents, read back as vectors by
//! rowid or by document, and scanned in rowid order for the vector files and searches.

use rusqlite::types::ValueRef;
use rusqlite::{OptionalExtension, params};

use super::{EmbeddingState, NewEmbedding, StoredDocument, VectorRef, text_ref, vectors};
use crate::db::{Store, sql_error};
use crate::error::StoreError;

impl Store {
    /// The fields of a document that have an embedding stored (or a marker saying the field
    /// has no string).
    pub fn embedded_fields(
        &self,
        collection: &str,
        id_key: &str,
    ) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT field FROM embeddings WHERE collection = ?1 AND id_key = ?2 \
                 ORDER BY field",
            )
            .map_err(self.sql())?;
        stmt.query_map([collection, id_key], |r| r.get(0))
            .map_err(self.sql())?
            .collect::<Result<_, _>>()
            .map_err(self.sql())
    }

    /// What is stored for every embedding of a collection's field (without the vectors),
    /// orphans included.
    pub fn embedding_states(
        &self,
        collection: &str,
        field: &str,
    ) -> Result<Vec<EmbeddingState>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id_key, embedder, text_hash FROM embeddings \
                 WHERE collection = ?1 AND field = ?2",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([collection, field], |r| {
                Ok(EmbeddingState {
                    id_key: r.get(0)?,
                    embedder: r.get(1)?,
                    text_hash: r.get(2)?,
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// The stored embedding of one document's field: its state and vector bytes.
    pub fn embedding(
        &self,
        collection: &str,
        id_key: &str,
        field: &str,
    ) -> Result<Option<(EmbeddingState, Vec<u8>)>, StoreError> {
        let row: Option<(EmbeddingState, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT embedder, text_hash, vector FROM embeddings \
                 WHERE collection = ?1 AND id_key = ?2 AND field = ?3",
            )
            .and_then(|mut s| {
                s.query_row([collection, id_key, field], |r| {
                    Ok((
                        EmbeddingState {
                            id_key: id_key.to_owned(),
                            embedder: r.get(0)?,
                            text_hash: r.get(1)?,
                        },
                        r.get(2)?,
                    ))
                })
                .optional()
            })
            .map_err(self.sql())?;
        row.map(|(state, blob)| {
            Ok((
                state,
                self.vector_of(collection, field, &blob)?.into_owned(),
            ))
        })
        .transpose()
    }

    /// The vector bytes a stored blob of `collection`.`field` holds (see [`crate::vector_blob`]).
    fn vector_of<'b>(
        &self,
        collection: &str,
        field: &str,
        blob: &'b [u8],
    ) -> Result<std::borrow::Cow<'b, [u8]>, StoreError> {
        crate::vector_blob::decode(blob).map_err(|why| StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!("an embedding of `{collection}`.{field} cannot be read: {why}"),
        })
    }

    /// Stores (replacing) embeddings of one field, all computed by `embedder`, in one
    /// transaction.
    pub fn put_embeddings(
        &mut self,
        collection: &str,
        field: &str,
        embedder: &str,
        rows: &[NewEmbedding],
    ) -> Result<(), StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        write_embeddings(&tx, collection, field, embedder, rows).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(())
    }

    /// Deletes the embeddings of a field whose document is no longer stored (none are left by
    /// this API; a store written otherwise may have some); returns how many.
    pub fn delete_orphan_embeddings(
        &mut self,
        collection: &str,
        field: &str,
    ) -> Result<u64, StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let n = tx
            .execute(
                "DELETE FROM embeddings WHERE collection = ?1 AND field = ?2 AND NOT EXISTS \
                 (SELECT 1 FROM documents d WHERE d.collection = ?1 AND d.id_key = embeddings.id_key)",
                [collection, field],
            )
            .map_err(e)?;
        if n > 0 {
            vectors::bump_generation(&tx, collection, Some(field)).map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(n as u64)
    }

    /// Calls `f` with every embedding row of a field (markers and rows of other embedders
    /// included), in rowid order. Only the embeddings table is read, through SQLite's memory
    /// map: no document is touched, a raw vector is borrowed from the mapped page and a counted
    /// one (`vector_blob`) is decoded.
    pub fn scan_vectors<E: From<StoreError>>(
        &self,
        collection: &str,
        field: &str,
        f: impl FnMut(VectorRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        // Reading through a memory map saves a copy per page.
        self.scan_vectors_mapped(collection, field, crate::db::READ_MAP_BYTES, f)
    }

    /// [`Store::scan_vectors`] with SQLite's memory map limited to `mmap_size` bytes: a writer
    /// that scans a large table once reads it through the page cache instead (0), so the pages
    /// it passes over do not count towards its memory.
    pub(crate) fn scan_vectors_mapped<E: From<StoreError>>(
        &self,
        collection: &str,
        field: &str,
        mmap_size: i64,
        mut f: impl FnMut(VectorRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.conn
            .pragma_update(None, "mmap_size", mmap_size)
            .map_err(self.sql())?;
        // A full scan in rowid order streams the table; the primary-key index would visit it
        // in `_id` order, one random page at a time.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT rowid, id_key, embedder, vector FROM embeddings NOT INDEXED \
                 WHERE collection = ?1 AND field = ?2",
            )
            .map_err(self.sql())?;
        let mut rows = stmt.query([collection, field]).map_err(self.sql())?;
        while let Some(row) = rows.next().map_err(self.sql())? {
            let vector = match row.get_ref(3).map_err(self.sql())? {
                ValueRef::Blob(bytes) => bytes,
                other => {
                    return Err(E::from(StoreError::Corrupt {
                        dir: self.dir.clone(),
                        detail: format!(
                            "an embedding of `{collection}`.{field} is {:?}, not a blob",
                            other.data_type()
                        ),
                    }));
                }
            };
            let vector = self.vector_of(collection, field, vector)?;
            f(VectorRef {
                rowid: row.get(0).map_err(self.sql())?,
                id_key: text_ref(row, 1).map_err(self.sql())?,
                embedder: text_ref(row, 2).map_err(self.sql())?,
                vector: &vector,
            })?;
        }
        Ok(())
    }

    /// The documents whose embeddings have these rowids, in the order asked (rowids that are
    /// gone are left out).
    pub fn documents_by_embedding(
        &self,
        collection: &str,
        rowids: &[i64],
    ) -> Result<Vec<(i64, StoredDocument)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT d.seq, d.id_key, d.body FROM embeddings e JOIN documents d \
                 ON d.collection = e.collection AND d.id_key = e.id_key \
                 WHERE e.rowid = ?1 AND e.collection = ?2",
            )
            .map_err(self.sql())?;
        let _batch = self.read_batch().map_err(self.sql())?;
        let mut out = Vec::with_capacity(rowids.len());
        for &rowid in rowids {
            let row = stmt
                .query_row(params![rowid, collection], |r| {
                    Ok((
                        rowid,
                        StoredDocument {
                            seq: r.get(0)?,
                            id_key: r.get(1)?,
                            body: r.get(2)?,
                        },
                    ))
                })
                .optional()
                .map_err(self.sql())?;
            out.extend(row);
        }
        Ok(out)
    }

    /// The vector bytes of the embedding rows with these rowids, of `field` by `embedder`, in
    /// the order asked; `None` for a row that is gone or belongs to something else.
    pub fn vectors_by_rowid(
        &self,
        collection: &str,
        field: &str,
        embedder: &str,
        rowids: &[i64],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT vector FROM embeddings \
                 WHERE rowid = ?1 AND collection = ?2 AND field = ?3 AND embedder = ?4",
            )
            .map_err(self.sql())?;
        let _batch = self.read_batch().map_err(self.sql())?;
        rowids
            .iter()
            .map(|&rowid| {
                let blob: Option<Vec<u8>> = stmt
                    .query_row(params![rowid, collection, field, embedder], |r| r.get(0))
                    .optional()
                    .map_err(self.sql())?;
                blob.map(|b| Ok(self.vector_of(collection, field, &b)?.into_owned()))
                    .transpose()
            })
            .collect()
    }

    /// The `seq`s of the documents that have no embedding row of a field by `embedder`, in
    /// insertion order.
    pub fn documents_without_embedding(
        &self,
        collection: &str,
        field: &str,
        embedder: &str,
    ) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT d.seq FROM documents d WHERE d.collection = ?1 AND NOT EXISTS \
                 (SELECT 1 FROM embeddings e WHERE e.collection = ?1 AND e.id_key = d.id_key \
                 AND e.field = ?2 AND e.embedder = ?3) ORDER BY d.seq",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([collection, field, embedder], |r| r.get(0))
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }
}

/// Stores (replacing) embeddings of one field inside the caller's transaction, bumping the
/// field's generation when there are any.
pub(super) fn write_embeddings(
    tx: &rusqlite::Transaction<'_>,
    collection: &str,
    field: &str,
    embedder: &str,
    rows: &[NewEmbedding],
) -> rusqlite::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO embeddings \
         (collection, id_key, field, embedder, text_hash, vector, checksum) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for row in rows {
        let stored = crate::vector_blob::encode(&row.vector);
        stmt.execute(params![
            collection,
            row.id_key,
            field,
            embedder,
            row.text_hash,
            stored.as_ref(),
            crate::db::checksum(&stored)
        ])?;
    }
    vectors::bump_generation(tx, collection, Some(field))
}
