//! Searching a chosen set of file versions: a snapshot narrowed to some paths, or overlaid
//! with chunks that are not stored (the working tree).

use std::collections::HashSet;

use rusqlite::OptionalExtension;

use crate::db::{Store, sql_error};
use crate::error::StoreError;
use crate::lexical::{ExtraDoc, LexicalHit, QueryTerms};

/// Where a stored chunk starts, and what its first line is inside of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkStart {
    /// The chunk's first line (1-based).
    pub start_line: u32,
    /// The chunk's last line (1-based, inclusive).
    pub end_line: u32,
    /// The line opening the definition the first line is inside of, as indexing recorded it:
    /// `(1-based number, text)`; `Some(None)` when it is inside none; `None` when it was not
    /// recorded (a chunk written before its store was migrated to format 3), so the caller
    /// must work it out.
    pub enclosing: Option<Option<(u32, String)>>,
}

impl Store {
    /// The git blob id of `path` in snapshot `sha`, when the snapshot lists that path.
    pub fn blob_at(&self, sha: &str, path: &str) -> Result<Option<String>, StoreError> {
        let Some(file_id) = self.manifest_entry(sha, path)? else {
            return Ok(None);
        };
        self.conn
            .prepare_cached("SELECT blob FROM files WHERE id = ?1")
            .and_then(|mut s| s.query_row([file_id], |r| r.get(0)).optional())
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// The chunk of `path` in snapshot `sha` that holds `line` (the last to start at or before
    /// it); `None` for no such chunk, or a store of a format before 3, whose chunks record no
    /// enclosing line (and which a read-only open has not migrated).
    pub fn chunk_around(
        &self,
        sha: &str,
        path: &str,
        line: u32,
    ) -> Result<Option<ChunkStart>, StoreError> {
        if self.format_version() < 3 {
            return Ok(None);
        }
        let Some(file_id) = self.manifest_entry(sha, path)? else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT start_line, end_line, enclosing_line, enclosing_text FROM chunks \
                 WHERE file_id = ?1 AND start_line <= ?2 AND end_line >= ?2 \
                 ORDER BY start_line DESC, ordinal LIMIT 1",
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        let row = stmt
            .query_row(rusqlite::params![file_id, line], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, Option<u32>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .optional()
            .map_err(|e| sql_error(&self.dir, e))?;
        Ok(row.map(|(start_line, end_line, line, text)| {
            let enclosing = match (line, text) {
                (None, _) => None,
                (Some(0), _) => Some(None),
                (Some(line), Some(text)) => Some(Some((line, text))),
                (Some(_), None) => None,
            };
            ChunkStart {
                start_line,
                end_line,
                enclosing,
            }
        }))
    }

    /// The file versions of the stored artifacts of `scopes`.
    pub fn artifact_files(&self, scopes: &[&str]) -> Result<Vec<i64>, StoreError> {
        let mut ids = Vec::new();
        for scope in scopes {
            ids.extend(self.query_ids("SELECT file_id FROM artifacts WHERE scope = ?1", [scope])?);
        }
        Ok(ids)
    }

    /// BM25 over the chunks of the file versions `files` and the `extra` chunks beside them,
    /// with statistics of exactly those: the top `k` hits. Equal scores across the cut are
    /// ordered by path and position, which every store agrees on, so the same chunks make the
    /// cut whatever ids the store gave them.
    pub fn search_files(
        &self,
        files: &HashSet<u64>,
        extra: &[ExtraDoc],
        terms: &QueryTerms,
        k: usize,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        let Some(lexical) = self.lexical_index() else {
            return Ok(Vec::new());
        };
        let mut hits = lexical.search(terms, files, extra, k)?;
        if hits.len() > k && k > 0 {
            let edge = hits[k - 1].score;
            let first = hits.partition_point(|h| h.score > edge);
            let last = hits.partition_point(|h| h.score >= edge);
            if last > k {
                let mut tied = Vec::with_capacity(last - first);
                for hit in &hits[first..last] {
                    let place = match extra.iter().find(|d| d.id == hit.chunk_id) {
                        Some(d) => (d.path.clone(), d.start_line.into(), d.end_line.into()),
                        None => self.chunk_place(hit.chunk_id)?,
                    };
                    tied.push((place, *hit));
                }
                tied.sort_by(|a, b| a.0.cmp(&b.0));
                hits.splice(first..last, tied.into_iter().map(|(_, hit)| hit));
            }
        }
        hits.truncate(k);
        Ok(hits)
    }

    /// Where a stored chunk sits: its path and first and last line.
    fn chunk_place(&self, id: i64) -> Result<(String, i64, i64), StoreError> {
        self.conn
            .prepare_cached(
                "SELECT f.path, c.start_line, c.end_line \
                 FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ?1",
            )
            .and_then(|mut stmt| stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
            .map_err(|e| sql_error(&self.dir, e))
    }
}
