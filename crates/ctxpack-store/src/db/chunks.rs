//! File versions and their chunks: written in one transaction, read by id with their
//! checksums checked, exported whole.

use std::collections::{BTreeMap, HashMap};

use ctxpack_meter::LineCounts;
use rusqlite::{OptionalExtension, params};

use crate::error::StoreError;
use crate::lexical::LexicalDoc;

use super::rows::{
    ChunkHead, ChunkRow, FileVersion, NewChunk, NewFile, inside_from_json, inside_json,
    stored_line_counts,
};
use super::schema::test_marked;
use super::{Store, checksum, sql_error};

/// Inserts a file version's chunks, with their checksums, in order.
pub(crate) fn insert_chunks(
    tx: &rusqlite::Transaction<'_>,
    file_id: i64,
    chunks: &[NewChunk],
) -> rusqlite::Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(chunks.len());
    let mut stmt = tx.prepare_cached(
        "INSERT INTO chunks (file_id, ordinal, start_line, end_line, symbol, text, \
         cost_o200k, cost_cl100k, cost_words, cost_chars, cost_approx, redactions, checksum, \
         enclosing_line, enclosing_text, inside, o200k_lines) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?;
    for (ordinal, c) in chunks.iter().enumerate() {
        let redactions = (!c.redactions.is_empty())
            .then(|| serde_json::to_string(&c.redactions).expect("a map of counts serializes"));
        let cost = |i: usize| c.costs[i].map(|v| v as i64);
        stmt.execute(params![
            file_id,
            ordinal as i64,
            c.start_line,
            c.end_line,
            c.symbol,
            c.text,
            cost(0),
            cost(1),
            cost(2),
            cost(3),
            cost(4),
            redactions,
            checksum(c.text.as_bytes()),
            c.enclosing.as_ref().map_or(0, |(line, _)| *line),
            c.enclosing.as_ref().map(|(_, text)| text),
            c.inside
                .as_deref()
                .map(|inside| inside_json(c.start_line, inside)),
            c.o200k_lines.as_ref().map(LineCounts::to_bytes),
        ])?;
        ids.push(tx.last_insert_rowid());
    }
    Ok(ids)
}

impl Store {
    /// The stored version of a file, if this path, blob and chunker were seen before.
    pub fn file_version(
        &self,
        path: &str,
        blob: &str,
        chunker: u32,
    ) -> Result<Option<FileVersion>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT id, ready FROM files WHERE path = ?1 AND blob = ?2 AND chunker = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![path, blob, chunker], |r| {
                    Ok(FileVersion {
                        id: r.get(0)?,
                        ready: r.get::<_, i64>(1)? != 0,
                    })
                })
                .optional()
            })
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Stores new file versions and their chunks in one transaction; returns their ids in
    /// order. They are not part of any snapshot until [`Store::commit_snapshot`].
    pub fn insert_files(
        &mut self,
        files: &[NewFile],
        chunker: u32,
    ) -> Result<Vec<i64>, StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let mut ids = Vec::with_capacity(files.len());
        {
            let mut file_stmt = tx
                .prepare_cached(
                    "INSERT INTO files (path, blob, chunker, bytes, skip_reason, ready, imports) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                )
                .map_err(e)?;
            for file in files {
                // A skipped file has no lexical entries, so it is ready at once.
                let ready = i64::from(file.skip_reason.is_some());
                let id: i64 = file_stmt
                    .query_row(
                        params![
                            file.path,
                            file.blob,
                            chunker,
                            file.bytes as i64,
                            file.skip_reason,
                            ready,
                            file.imports
                        ],
                        |r| r.get(0),
                    )
                    .map_err(e)?;
                let chunk_ids = insert_chunks(&tx, id, &file.chunks).map_err(e)?;
                if let (Some(writer), None) = (self.open_writer.as_mut(), &file.skip_reason) {
                    writer.delete_file(id);
                    for (chunk, chunk_id) in file.chunks.iter().zip(chunk_ids) {
                        writer.add(LexicalDoc {
                            chunk_id: chunk_id as u64,
                            file_id: id as u64,
                            path: &file.path,
                            symbol: chunk.symbol.as_deref(),
                            text: &chunk.text,
                        })?;
                    }
                }
                ids.push(id);
            }
        }
        tx.commit().map_err(e)?;
        Ok(ids)
    }

    /// Chunks by id, in the order of `ids` (missing ids are left out). Each text is checked
    /// against its stored checksum (rows written before checksums have none): a chunk edited
    /// outside ctxpack is [`StoreError::Corrupt`], never packed. Every hit a pack or query
    /// returns is read here, so this is the read path's check; it hashes only the chunks
    /// retrieval asked for. A chunk whose file version is gone is damage too (`gc` deletes a
    /// version's chunks with it), not a hit without a path.
    pub fn chunks(&self, ids: &[i64]) -> Result<Vec<ChunkRow>, StoreError> {
        self.chunk_rows(ids, true)
    }

    /// The heads of chunks by id, in the order of `ids` (missing ids are left out). Nothing
    /// here is evidence: the text is neither copied nor checked against its checksum, and the
    /// chunks a caller keeps are read with [`chunks`](Store::chunks), which checks them. From
    /// format 10 the heads are read from their index and the text is not read at all (a store
    /// whose index was dropped outside ctxpack reads the text, as older formats do).
    pub fn chunk_heads(&self, ids: &[i64]) -> Result<Vec<ChunkHead>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        // The index is named, so the lookup by id (the table's own key) reads the narrow
        // index rather than each chunk's row; the expression is the index's, so the marker
        // test is read from it, not worked out from the text.
        let has_index = self.version >= 10
            && self
                .conn
                .prepare_cached(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'chunk_heads'",
                )
                .and_then(|mut s| s.exists([]))
                .map_err(e)?;
        let indexed = if has_index {
            "INDEXED BY chunk_heads"
        } else {
            ""
        };
        // One statement for all of them, the ids in order (a file's chunks lie together), and
        // then each file's path once.
        let mut chunk = self
            .conn
            .prepare_cached(&format!(
                "SELECT c.id, c.file_id, c.start_line, c.end_line, c.symbol, {} \
                 FROM json_each(?1) AS j CROSS JOIN chunks AS c {indexed} ON c.id = j.value",
                test_marked()
            ))
            .map_err(e)?;
        let json = id_array(ids.iter().copied());
        let _batch = self.read_batch().map_err(e)?;
        let mut found: HashMap<i64, (i64, u32, u32, Option<String>, bool)> =
            HashMap::with_capacity(ids.len());
        let rows = chunk
            .query_map([json], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
                ))
            })
            .map_err(e)?;
        for row in rows {
            let (id, head) = row.map_err(e)?;
            found.insert(id, head);
        }
        let paths = self.file_paths(found.iter().map(|(id, head)| (head.0, *id)))?;
        let heads = ids.iter().filter_map(|id| {
            let (file_id, start_line, end_line, symbol, test_marker) = found.get(id)?.clone();
            Some(ChunkHead {
                id: *id,
                file_id,
                path: paths.get(&file_id)?.clone(),
                start_line,
                end_line,
                symbol,
                test_marker,
            })
        });
        Ok(heads.collect())
    }

    /// The paths of the file versions of `files`, pairs of a version's id and the id of a chunk
    /// of it, each version read once, in the order of their ids. A version that is gone is
    /// damage, named by its chunk as [`chunk_heads`](Store::chunk_heads) names it.
    pub fn file_paths(
        &self,
        files: impl IntoIterator<Item = (i64, i64)>,
    ) -> Result<HashMap<i64, String>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let mut chunk_of: BTreeMap<i64, i64> = BTreeMap::new();
        for (file, chunk) in files {
            chunk_of.entry(file).or_insert(chunk);
        }
        // One statement for all of them (a pack asks for hundreds): the ids go in as one JSON
        // array, in order, so the table is read front to back.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.id, f.path FROM json_each(?1) AS j CROSS JOIN files AS f ON f.id = j.value",
            )
            .map_err(e)?;
        let ids = id_array(chunk_of.keys().copied());
        let _batch = self.read_batch().map_err(e)?;
        let mut paths = HashMap::with_capacity(chunk_of.len());
        let rows = stmt
            .query_map([ids], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(e)?;
        for row in rows {
            let (file, path) = row.map_err(e)?;
            paths.insert(file, path);
        }
        if let Some((&file, &chunk)) = chunk_of.iter().find(|(f, _)| !paths.contains_key(*f)) {
            return Err(self.orphan_chunk(chunk, file));
        }
        Ok(paths)
    }

    /// The error for chunk `chunk`, whose file version `file` is gone.
    fn orphan_chunk(&self, chunk: i64, file: i64) -> StoreError {
        StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!(
                "chunk {chunk} belongs to file version {file}, which is missing: the store was changed outside ctxpack"
            ),
        }
    }

    /// [`chunks`](Store::chunks), checked against their checksums when `check` is set (`verify`
    /// reads them unchecked, to report and repair what does not match).
    pub(crate) fn chunk_rows(&self, ids: &[i64], check: bool) -> Result<Vec<ChunkRow>, StoreError> {
        // A store of format 1, read as it is, has no checksums.
        let checksum_column = if self.format_version() >= 2 {
            "c.checksum"
        } else {
            "NULL"
        };
        let lines_column = if self.format_version() >= 11 {
            "c.o200k_lines"
        } else {
            "NULL"
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT c.id, c.file_id, f.path, c.start_line, c.end_line, c.symbol, c.text, \
                 c.cost_o200k, c.cost_cl100k, c.cost_words, c.cost_chars, c.cost_approx, \
                 c.redactions, {checksum_column}, f.chunker, {lines_column} \
                 FROM json_each(?1) AS j CROSS JOIN chunks AS c ON c.id = j.value \
                 LEFT JOIN files AS f ON f.id = c.file_id"
            ))
            .map_err(|e| sql_error(&self.dir, e))?;
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        // One statement for all of them, in the order of the table, so rows that share a page
        // are read together.
        let json = id_array(ids.iter().copied());
        let mut found: HashMap<i64, ChunkRow> = HashMap::with_capacity(ids.len());
        let rows = stmt
            .query_map([json], |r| {
                let redactions: Option<String> = r.get(12)?;
                let cost = |i: usize| -> rusqlite::Result<Option<u64>> {
                    Ok(r.get::<_, Option<i64>>(7 + i)?.map(|v| v as u64))
                };
                let Some(path) = r.get::<_, Option<String>>(2)? else {
                    return Ok(Err((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)));
                };
                let text: String = r.get(6)?;
                let o200k_lines = stored_line_counts(r.get(15)?, &text, cost(0)?);
                Ok(Ok((
                    ChunkRow {
                        id: r.get(0)?,
                        file_id: r.get(1)?,
                        path,
                        start_line: r.get(3)?,
                        end_line: r.get(4)?,
                        symbol: r.get(5)?,
                        text,
                        o200k_lines,
                        costs: [cost(0)?, cost(1)?, cost(2)?, cost(3)?, cost(4)?],
                        redactions: redactions
                            .and_then(|s| serde_json::from_str(&s).ok())
                            .unwrap_or_default(),
                        chunker: r.get(14)?,
                    },
                    r.get::<_, Option<String>>(13)?,
                )))
            })
            .map_err(|e| sql_error(&self.dir, e))?;
        for row in rows {
            let (row, sum) = match row.map_err(|e| sql_error(&self.dir, e))? {
                Ok(read) => read,
                Err((chunk, file)) => return Err(self.orphan_chunk(chunk, file)),
            };
            if check && sum.is_some_and(|sum| sum != checksum(row.text.as_bytes())) {
                return Err(StoreError::Corrupt {
                    dir: self.dir.clone(),
                    detail: format!(
                        "chunk {} ({}, lines {}-{}) does not match its checksum: the store was changed outside ctxpack",
                        row.id, row.path, row.start_line, row.end_line
                    ),
                });
            }
            found.insert(row.id, row);
        }
        // In the order asked; an id asked twice is read once and given twice.
        let mut left: HashMap<i64, usize> = HashMap::with_capacity(ids.len());
        for id in ids {
            *left.entry(*id).or_default() += 1;
        }
        Ok(ids
            .iter()
            .filter_map(|id| {
                let n = left.get_mut(id)?;
                *n -= 1;
                if *n == 0 {
                    found.remove(id)
                } else {
                    found.get(id).cloned()
                }
            })
            .collect())
    }

    /// What file version `file_id` imports, as stored with it when it was chunked by `chunker`
    /// (`NewFile::imports`); `None` for a version stored without it, by another chunker, or
    /// unknown.
    pub fn file_imports(&self, file_id: i64, chunker: u32) -> Result<Option<String>, StoreError> {
        if self.version < 14 {
            return Ok(None);
        }
        let e = |err| sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT imports FROM files WHERE id = ?1 AND chunker = ?2")
            .map_err(e)?;
        let found: Option<Option<String>> = stmt
            // Anything but text in the column (a damaged row) reads as none.
            .query_row(params![file_id, chunker], |r| {
                Ok(r.get_ref(0)?.as_str().ok().map(str::to_owned))
            })
            .optional()
            .map_err(e)?;
        Ok(found.flatten())
    }

    /// The stored (masked) texts of a file version's chunks, in order; none for an unknown id.
    pub fn chunk_texts(&self, file_id: i64) -> Result<Vec<String>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM chunks WHERE file_id = ?1 ORDER BY ordinal")
            .map_err(e)?;
        let rows = stmt.query_map([file_id], |r| r.get(0)).map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }

    /// The snapshot's files with the key of each version: `(path, blob, chunker, id)`, by
    /// path. What copying a snapshot to another store needs.
    pub fn manifest_keys(&self, sha: &str) -> Result<Vec<(String, String, u32, i64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT blob, chunker FROM files WHERE id = ?1")
            .map_err(|e| sql_error(&self.dir, e))?;
        let mut out = Vec::new();
        // The manifest and its versions from one read of the database.
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        for (path, id) in self.manifest(sha)? {
            let (blob, chunker): (String, u32) = stmt
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| sql_error(&self.dir, e))?
                .ok_or_else(|| self.missing_version(sha, &path, id))?;
            out.push((path, blob, chunker, id));
        }
        Ok(out)
    }

    /// A stored file version as it was written — its size, skip reason and chunks, every field
    /// [`Store::insert_files`] takes — for copying it to another store. Callers take `id` from
    /// a manifest or an artifact, so a version that is not there is damage.
    pub fn export_file(&self, id: i64) -> Result<NewFile, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        // A store before format 14 (read-only, not migrated) has no `imports` column.
        let imports = if self.version >= 14 {
            "imports"
        } else {
            "NULL"
        };
        let (path, blob, bytes, skip_reason, imports): (
            String,
            String,
            i64,
            Option<String>,
            Option<String>,
        ) = self
            .conn
            .prepare_cached(&format!(
                "SELECT path, blob, bytes, skip_reason, {imports} FROM files WHERE id = ?1"
            ))
            .map_err(e)?
            .query_row([id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get_ref(4)?.as_str().ok().map(str::to_owned),
                ))
            })
            .optional()
            .map_err(e)?
            .ok_or_else(|| StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!(
                    "file version {id} is missing: the store was changed outside ctxpack"
                ),
            })?;
        // A store before format 9 (read-only, not migrated) has no `inside` column.
        let inside = if self.version >= 9 { "inside" } else { "NULL" };
        let lines = if self.version >= 11 {
            "o200k_lines"
        } else {
            "NULL"
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT start_line, end_line, symbol, text, cost_o200k, cost_cl100k, cost_words, \
                 cost_chars, cost_approx, redactions, enclosing_line, enclosing_text, {inside}, \
                 {lines} FROM chunks WHERE file_id = ?1 ORDER BY ordinal"
            ))
            .map_err(e)?;
        let chunks = stmt
            .query_map([id], |r| {
                let cost = |i: usize| -> rusqlite::Result<Option<u64>> {
                    Ok(r.get::<_, Option<i64>>(4 + i)?.map(|v| v as u64))
                };
                let redactions: Option<String> = r.get(9)?;
                let line: Option<u32> = r.get(10)?;
                let text: Option<String> = r.get(11)?;
                let (start_line, end_line) = (r.get(0)?, r.get(1)?);
                let inside: Option<String> = r.get(12)?;
                let chunk_text: String = r.get(3)?;
                let o200k_lines = stored_line_counts(r.get(13)?, &chunk_text, cost(0)?);
                Ok(NewChunk {
                    o200k_lines,
                    start_line,
                    end_line,
                    symbol: r.get(2)?,
                    inside: inside.and_then(|json| {
                        inside_from_json(&json, start_line, end_line, &chunk_text)
                    }),
                    text: chunk_text,
                    costs: [cost(0)?, cost(1)?, cost(2)?, cost(3)?, cost(4)?],
                    redactions: redactions
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or_default(),
                    enclosing: match (line, text) {
                        (Some(line), Some(text)) if line > 0 => Some((line, text)),
                        _ => None,
                    },
                })
            })
            .map_err(e)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        Ok(NewFile {
            path,
            blob,
            bytes: bytes as u64,
            skip_reason,
            chunks,
            imports,
        })
    }
}

/// `ids` as the JSON array SQLite's `json_each` reads, sorted and each once: a statement that
/// joins a table to it reads that table front to back, in one step per row rather than one
/// statement per id.
fn id_array(ids: impl IntoIterator<Item = i64>) -> String {
    let mut ids: Vec<i64> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = String::with_capacity(ids.len() * 8 + 2);
    out.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&id.to_string());
    }
    out.push(']');
    out
}
