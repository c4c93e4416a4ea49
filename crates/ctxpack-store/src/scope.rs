//! Searching a chosen set of file versions: a snapshot narrowed to some paths, or overlaid
//! with chunks that are not stored (the working tree).

use std::collections::HashSet;

use rusqlite::OptionalExtension;

use crate::db::{Store, sql_error};
use crate::error::StoreError;
use crate::lexical::{ExtraDoc, LexicalHit, QueryTerms};

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

    /// The line opening the definition that the chunk of `path` starting on `start_line` in
    /// snapshot `sha` starts inside of, as indexing recorded it: `Some(None)` when it starts
    /// inside none, `None` when it was not recorded (a chunk written before format 3, or no
    /// such chunk), so the caller must work it out.
    pub fn enclosing_at(
        &self,
        sha: &str,
        path: &str,
        start_line: u32,
    ) -> Result<Option<Option<(u32, String)>>, StoreError> {
        if self.format_version() < 3 {
            return Ok(None);
        }
        let Some(file_id) = self.manifest_entry(sha, path)? else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT enclosing_line, enclosing_text FROM chunks \
                 WHERE file_id = ?1 AND start_line = ?2 ORDER BY ordinal LIMIT 1",
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        let mut rows = stmt
            .query_map(rusqlite::params![file_id, start_line], |r| {
                Ok((r.get::<_, Option<u32>>(0)?, r.get::<_, Option<String>>(1)?))
            })
            .map_err(|e| sql_error(&self.dir, e))?;
        let Some(row) = rows
            .next()
            .transpose()
            .map_err(|e| sql_error(&self.dir, e))?
        else {
            return Ok(None);
        };
        Ok(match row {
            (None, _) => None,
            (Some(0), _) => Some(None),
            (Some(line), Some(text)) => Some(Some((line, text))),
            (Some(_), None) => None,
        })
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
