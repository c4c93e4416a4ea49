//! The full check of a store (`ctxpack verify`) and the repairs it can make from what the
//! store holds. Opening a store makes only cheap checks (the format, the lexical index's
//! presence and size); this reads everything: the database's own integrity check, every
//! chunk's and embedding's checksum, every file of the lexical index against its checksum and
//! its size against the chunks, and the ledger's records and texts.

use std::path::Path;

use rusqlite::params;

use crate::db::{Store, checksum, sql_error};
use crate::error::StoreError;
use crate::ledger::Ledger;

/// One thing `verify` found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// What part of the store: `database`, `lexical`, `chunk`, `embedding`, `vectors`,
    /// `ledger`.
    pub part: &'static str,
    /// What is wrong, naming the row, file or record.
    pub detail: String,
    /// The file version whose chunks are wrong, when a chunk is (repairable from git).
    pub file_id: Option<i64>,
}

impl Problem {
    fn new(part: &'static str, detail: impl Into<String>) -> Problem {
        Problem {
            part,
            detail: detail.into(),
            file_id: None,
        }
    }
}

/// A file version some snapshot lists, with what it was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedVersion {
    /// Its id.
    pub id: i64,
    /// Its path.
    pub path: String,
    /// Its blob id.
    pub blob: String,
    /// The chunker version that made its chunks.
    pub chunker: u32,
    /// Why it was skipped, if it was.
    pub skip_reason: Option<String>,
}

impl Store {
    /// Checks everything the store holds; returns what is wrong (nothing for a sound store).
    pub fn verify(&self) -> Result<Vec<Problem>, StoreError> {
        let mut problems = Vec::new();
        let e = |err| sql_error(&self.dir, err);
        let report: Vec<String> = {
            let mut stmt = self.conn.prepare("PRAGMA integrity_check").map_err(e)?;
            stmt.query_map([], |r| r.get(0))
                .map_err(e)?
                .collect::<Result<_, _>>()
                .map_err(e)?
        };
        if report != ["ok"] {
            problems.push(Problem::new("database", report.join("; ")));
            return Ok(problems);
        }
        if self.format_version() >= 2 {
            self.verify_checksums(&mut problems)?;
        }
        self.verify_lexical(&mut problems)?;
        self.verify_vectors(&mut problems)?;
        if self.format_version() >= 5 {
            self.verify_collections(&mut problems)?;
        }
        verify_ledger(&self.dir, &mut problems)?;
        Ok(problems)
    }

    /// Compares each collection's kept document count with a count of its documents (searches
    /// trust it to know whether every document has a stored vector).
    fn verify_collections(&self, problems: &mut Vec<Problem>) -> Result<(), StoreError> {
        let e = |err| crate::db::sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name, documents, (SELECT count(*) FROM documents d WHERE d.collection = c.name) \
                 FROM collections c ORDER BY name",
            )
            .map_err(e)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .map_err(e)?;
        for row in rows {
            let (name, kept, counted) = row.map_err(e)?;
            if kept != counted {
                problems.push(Problem::new(
                    "database",
                    format!("collection `{name}` records {kept} documents but holds {counted}"),
                ));
            }
        }
        Ok(())
    }

    fn verify_checksums(&self, problems: &mut Vec<Problem>) -> Result<(), StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.id, c.file_id, f.path, CAST(c.text AS BLOB), c.checksum \
                 FROM chunks c JOIN files f ON f.id = c.file_id",
            )
            .map_err(e)?;
        let mut rows = stmt.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let (id, file_id, path): (i64, i64, String) = (
                r.get(0).map_err(e)?,
                r.get(1).map_err(e)?,
                r.get(2).map_err(e)?,
            );
            let text: Vec<u8> = r.get(3).map_err(e)?;
            let stored: Option<String> = r.get(4).map_err(e)?;
            if stored.as_deref() != Some(checksum(&text).as_str()) {
                problems.push(Problem {
                    part: "chunk",
                    detail: format!("chunk {id} of {path} does not match its checksum"),
                    file_id: Some(file_id),
                });
            }
        }
        let mut stmt = self
            .conn
            .prepare("SELECT collection, id_key, field, vector, checksum FROM embeddings")
            .map_err(e)?;
        let mut rows = stmt.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let vector: Vec<u8> = r.get(3).map_err(e)?;
            let stored: Option<String> = r.get(4).map_err(e)?;
            if let Some(why) = embedding_damage(&vector, stored.as_deref()) {
                let (collection, id, field): (String, String, String) = (
                    r.get(0).map_err(e)?,
                    r.get(1).map_err(e)?,
                    r.get(2).map_err(e)?,
                );
                problems.push(Problem::new(
                    "embedding",
                    format!("the embedding of {collection}.{field} for {id} {why}"),
                ));
            }
        }
        Ok(())
    }

    fn verify_lexical(&self, problems: &mut Vec<Problem>) -> Result<(), StoreError> {
        let (ready, all) = self.lexical_bounds()?;
        let Some(lexical) = self.lexical_index() else {
            if all > 0 {
                problems.push(Problem::new("lexical", "the lexical index is missing"));
            }
            return Ok(());
        };
        for file in lexical.damaged_files() {
            problems.push(Problem::new(
                "lexical",
                format!("{file} does not match its checksum"),
            ));
        }
        let docs = lexical.num_docs();
        if docs < ready || docs > all {
            problems.push(Problem::new(
                "lexical",
                format!(
                    "the lexical index holds {docs} entries; the database has {ready} chunks ready (and {all} in all)"
                ),
            ));
        }
        Ok(())
    }

    /// Chunks whose lexical entries must exist (their file version is ready) and may exist
    /// (any file version that was not skipped).
    fn lexical_bounds(&self) -> Result<(u64, u64), StoreError> {
        self.conn
            .query_row(
                "SELECT coalesce(sum(f.ready), 0), count(*) FROM chunks c \
                 JOIN files f ON f.id = c.file_id WHERE f.skip_reason IS NULL",
                [],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .map_err(|err| sql_error(&self.dir, err))
    }

    /// Every file version some snapshot lists.
    pub fn listed_versions(&self) -> Result<Vec<ListedVersion>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT f.id, f.path, f.blob, f.chunker, f.skip_reason \
                 FROM files f JOIN manifest m ON m.file_id = f.id ORDER BY f.id",
            )
            .map_err(e)?;
        stmt.query_map([], |r| {
            Ok(ListedVersion {
                id: r.get(0)?,
                path: r.get(1)?,
                blob: r.get(2)?,
                chunker: r.get(3)?,
                skip_reason: r.get(4)?,
            })
        })
        .map_err(e)?
        .collect::<Result<_, _>>()
        .map_err(e)
    }

    /// The chunks of a file version, in order, as stored (not checked against their
    /// checksums: verifying compares them with their blobs).
    pub fn chunks_of(&self, file_id: i64) -> Result<Vec<crate::ChunkRow>, StoreError> {
        let ids = self.query_ids(
            "SELECT id FROM chunks WHERE file_id = ?1 ORDER BY ordinal",
            [file_id],
        )?;
        self.chunk_rows(&ids, false)
    }

    /// Replaces the chunks of a file version with `chunks` (derived again from its blob) and
    /// re-indexes them; the file version keeps its id, so every snapshot that lists it sees
    /// the repaired chunks.
    pub fn replace_chunks(
        &mut self,
        file_id: i64,
        chunks: &[crate::NewChunk],
    ) -> Result<(), StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute("DELETE FROM chunks WHERE file_id = ?1", [file_id])
            .map_err(e)?;
        tx.execute("UPDATE files SET ready = 0 WHERE id = ?1", [file_id])
            .map_err(e)?;
        crate::db::insert_chunks(&tx, file_id, chunks).map_err(e)?;
        tx.commit().map_err(e)?;
        self.index_lexical(&[file_id])?;
        self.conn
            .execute("UPDATE files SET ready = 1 WHERE id = ?1", [file_id])
            .map_err(e)?;
        Ok(())
    }

    /// Deletes embedding rows whose checksum does not match (`vsync` computes them again);
    /// returns how many.
    pub fn drop_damaged_embeddings(&mut self) -> Result<u64, StoreError> {
        self.require_writable()?;
        let e = |err| sql_error(&self.dir, err);
        let doomed: Vec<(String, String, String)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT collection, id_key, field, vector, checksum FROM embeddings")
                .map_err(e)?;
            let mut rows = stmt.query([]).map_err(e)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(e)? {
                let vector: Vec<u8> = r.get(3).map_err(e)?;
                let stored: Option<String> = r.get(4).map_err(e)?;
                if embedding_damage(&vector, stored.as_deref()).is_some() {
                    out.push((
                        r.get(0).map_err(e)?,
                        r.get(1).map_err(e)?,
                        r.get(2).map_err(e)?,
                    ));
                }
            }
            out
        };
        for (collection, id, field) in &doomed {
            self.conn
                .execute(
                    "DELETE FROM embeddings WHERE collection = ?1 AND id_key = ?2 AND field = ?3",
                    params![collection, id, field],
                )
                .map_err(e)?;
            crate::docs::vectors::bump_generation(&self.conn, collection, Some(field))
                .map_err(e)?;
        }
        Ok(doomed.len() as u64)
    }
}

/// What is wrong with a stored embedding blob and its checksum, if anything.
fn embedding_damage(blob: &[u8], stored: Option<&str>) -> Option<String> {
    if stored != Some(checksum(blob).as_str()) {
        return Some("does not match its checksum".into());
    }
    crate::vector_blob::decode(blob)
        .err()
        .map(|why| format!("cannot be read: {why}"))
}

/// Every ledger record must be intact and every text it names must match its hash.
fn verify_ledger(dir: &Path, problems: &mut Vec<Problem>) -> Result<(), StoreError> {
    let ledger = Ledger::new(dir);
    let contents = match ledger.read() {
        Ok(contents) => contents,
        Err(e) => {
            problems.push(Problem::new("ledger", e.to_string()));
            return Ok(());
        }
    };
    for line in &contents.torn {
        problems.push(Problem::new(
            "ledger",
            format!("line {line} is a torn record (skipped on reading)"),
        ));
    }
    for record in &contents.records {
        if let Err(e) = ledger.replay(record) {
            problems.push(Problem::new("ledger", e.to_string()));
        }
    }
    Ok(())
}
