//! Searching a chosen set of file versions: a snapshot narrowed to some paths, or overlaid
//! with chunks that are not stored (the working tree).

use rusqlite::OptionalExtension;

use crate::db::{Store, sql_error};
use crate::error::StoreError;
use crate::lexical::{ExtraDoc, FileSet, LexicalHit, QueryTerms};

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
    /// The same for its later lines, where it changes, as indexing recorded it
    /// (`NewChunk::inside`); `None` when it was not recorded (a chunk written before format 9).
    pub inside: Option<crate::db::InsideRuns>,
    /// The size of the file version, in bytes.
    pub file_bytes: u64,
    /// The version of the chunker and masking rules the file version was stored by (its
    /// recorded lines were kept only where those rules masked nothing in them).
    pub chunker: u32,
}

impl ChunkStart {
    /// The line opening the innermost definition around 1-based `line` of this chunk, as
    /// indexing recorded it (`Some(None)`: inside none); `None` when it was not recorded.
    pub fn opening_at(&self, line: u32) -> Option<Option<&(u32, String)>> {
        let start = self.enclosing.as_ref()?.as_ref();
        if line <= self.start_line {
            return Some(start);
        }
        let inside = self.inside.as_ref()?;
        Some(
            match inside
                .partition_point(|(from, _)| *from <= line)
                .checked_sub(1)
            {
                Some(i) => inside[i].1.as_ref(),
                None => start,
            },
        )
    }
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
            .prepare_cached(&self.chunk_around_sql())
            .map_err(|e| sql_error(&self.dir, e))?;
        let row = stmt
            .query_row(rusqlite::params![file_id, line], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, Option<u32>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, u32>(8)?,
                ))
            })
            .optional()
            .map_err(|e| sql_error(&self.dir, e))?;
        Ok(row.map(
            |(start_line, end_line, line, text, inside, bytes, chunk, sum, chunker)| {
                let enclosing = match (line, text) {
                    (None, _) => None,
                    (Some(0), _) => Some(None),
                    (Some(line), Some(text)) => Some(Some((line, text))),
                    (Some(_), None) => None,
                };
                ChunkStart {
                    start_line,
                    end_line,
                    // Runs are read only beside a recorded first line, which they continue, and
                    // from a chunk whose text matches its checksum (they read lines of it).
                    inside: inside
                        .filter(|_| enclosing.is_some())
                        .filter(|_| {
                            sum.is_some_and(|sum| sum == crate::db::checksum(chunk.as_bytes()))
                        })
                        .and_then(|json| {
                            crate::db::inside_from_json(&json, start_line, end_line, &chunk)
                        }),
                    enclosing,
                    file_bytes: u64::try_from(bytes).unwrap_or(0),
                    chunker,
                }
            },
        ))
    }

    /// The query of [`chunk_around`](Store::chunk_around): the chunk of file version `?1` that
    /// holds line `?2`.
    fn chunk_around_sql(&self) -> String {
        // A store before format 9 (read-only, not migrated) has no `inside` column.
        let inside = if self.format_version() >= 9 {
            "c.inside"
        } else {
            "NULL"
        };
        format!(
            "SELECT c.start_line, c.end_line, c.enclosing_line, c.enclosing_text, {inside}, \
             f.bytes, c.text, c.checksum, f.chunker FROM chunks c JOIN files f ON f.id = c.file_id \
             WHERE c.file_id = ?1 AND c.start_line <= ?2 AND c.end_line >= ?2 \
             ORDER BY c.start_line DESC, c.ordinal LIMIT 1"
        )
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
        files: &FileSet,
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

#[cfg(test)]
mod tests {
    use super::ChunkStart;
    use crate::Store;
    use crate::db::{inside_from_json, inside_json};

    #[test]
    fn the_lookup_of_a_hits_chunk_is_prepared_once_whatever_lines_it_is_asked_for() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        Store::open_or_create(dir.path()).expect("a new store");
        let store = Store::open(dir.path()).expect("the store, read-only");
        // As a pack asks for the chunk around each hit's line, through the cached statement.
        for line in 1..=5u32 {
            let mut stmt = store
                .conn
                .prepare_cached(&store.chunk_around_sql())
                .expect("the cached statement");
            let found = stmt
                .query_map(rusqlite::params![7, line], |_| Ok(()))
                .expect("a query")
                .count();
            assert_eq!(found, 0);
        }
        let stmt = store
            .conn
            .prepare_cached(&store.chunk_around_sql())
            .expect("the cached statement");
        assert_eq!(
            stmt.get_status(rusqlite::StatementStatus::RePrepare),
            0,
            "a value bound to a range over an indexed column re-prepares the statement"
        );
    }

    fn opening(line: u32, text: &str) -> Option<(u32, String)> {
        Some((line, text.to_owned()))
    }

    #[test]
    fn a_line_is_inside_what_the_last_run_at_or_before_it_says() {
        let text: String = (10..=30).map(|n| format!("line {n}\n")).collect();
        let inside = vec![
            (12, opening(11, "line 11")),
            (20, None),
            (22, opening(9, "impl A {")),
            (25, opening(10, "line 10")),
        ];
        let json = inside_json(10, &inside);
        // Lines inside the chunk are read back from its text, not stored again.
        assert!(!json.contains("line 11"), "{json}");
        assert_eq!(inside_from_json(&json, 10, 30, &text), Some(inside.clone()));
        let chunk = ChunkStart {
            start_line: 10,
            end_line: 30,
            enclosing: Some(opening(2, "mod a {")),
            inside: Some(inside),
            file_bytes: 100,
            chunker: 0,
        };
        let at = |line| chunk.opening_at(line).map(|o| o.map(|(n, _)| *n));
        assert_eq!(at(10), Some(Some(2)));
        assert_eq!(at(11), Some(Some(2)));
        assert_eq!(at(12), Some(Some(11)));
        assert_eq!(at(19), Some(Some(11)));
        assert_eq!(at(20), Some(None));
        assert_eq!(at(22), Some(Some(9)));
        assert_eq!(at(30), Some(Some(10)));
        // Nothing recorded for the later lines: the caller works them out.
        let older = ChunkStart {
            inside: None,
            ..chunk.clone()
        };
        assert_eq!(older.opening_at(10), Some(Some(&(2, "mod a {".to_owned()))));
        assert_eq!(older.opening_at(11), None);
    }

    #[test]
    fn damaged_runs_read_as_not_recorded() {
        let text: String = (10..=30).map(|n| format!("line {n}\n")).collect();
        for json in [
            "",
            "{}",
            "[[5]]",                   // not after the chunk's first line
            "[[31]]",                  // past its last
            "[[12], [12]]",            // out of order
            "[[12, 12]]",              // an opening on or after the line it is around
            "[[12, 0, \"fn a\"]]",     // no line 0
            "[[12, 3]]",               // above the chunk without its text
            "[[12, 11, \"line 11\"]]", // inside the chunk with text
            "[[12, 3, 4]]",            // text that is not text
            "[[12, 3, \"a\", 1]]",     // more than a run holds
            "[[-1]]",
        ] {
            assert_eq!(inside_from_json(json, 10, 30, &text), None, "{json}");
        }
        assert_eq!(inside_from_json("[]", 10, 30, &text), Some(Vec::new()));
        // A chunk shorter than its lines say: the line is not there to read.
        assert_eq!(inside_from_json("[[12, 11]]", 10, 30, "line 10\n"), None);
    }
}
