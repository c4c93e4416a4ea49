//! The lexical index beside the database: opened and checked against it, written as file
//! versions are stored, and searched.

use std::path::Path;

use super::{Store, sql_error};
use crate::error::StoreError;
use crate::guard::LEXICAL_DEFAULT;
use crate::lexical::{FileSet, Lexical, LexicalDoc, LexicalHit, QueryTerms};

/// Removes the lexical directories the database does not point at (best effort: a reader
/// may still have one open, which Unix allows).
pub(super) fn remove_stale_lexical(dir: &Path, active: &str, old: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let lexical = name == LEXICAL_DEFAULT || name.starts_with("lexical-");
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if lexical && is_dir && name != active && (name == old || name.starts_with("lexical-")) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Store {
    /// The open lexical index, if there is one.
    pub(crate) fn lexical_index(&self) -> Option<&Lexical> {
        self.lexical.as_ref()
    }

    /// The directory of the lexical index the database points at.
    pub(super) fn lexical_name(&self) -> Result<String, StoreError> {
        Ok(self
            .meta("lexical")?
            .unwrap_or_else(|| LEXICAL_DEFAULT.to_owned()))
    }

    /// Cheap checks that the lexical index is the one the database last committed: present
    /// when there are snapshots, and holding at least as many entries as the database
    /// recorded after its last commit (fewer means entries were lost: every pack would
    /// silently miss them).
    pub(super) fn check_lexical(&self) -> Result<(), StoreError> {
        let corrupt = |detail: String| StoreError::Corrupt {
            dir: self.dir.clone(),
            detail,
        };
        let Some(lexical) = &self.lexical else {
            if self.snapshots()?.is_empty() {
                return Ok(());
            }
            return Err(corrupt("the lexical index directory is missing".into()));
        };
        let expected: u64 = self
            .meta("lexical_docs")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let found = lexical.num_docs();
        if found < expected {
            return Err(corrupt(format!(
                "the lexical index holds {found} entries where {expected} were committed"
            )));
        }
        Ok(())
    }

    /// Records how many entries the lexical index holds after a commit.
    fn set_lexical_docs(&mut self) -> Result<(), StoreError> {
        let docs = self.lexical.as_ref().map_or(0, Lexical::num_docs);
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES ('lexical_docs', ?1) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [docs.to_string()],
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        Ok(())
    }

    /// Writes the lexical entries of these file versions (replacing any a crashed run left)
    /// and commits the lexical index.
    pub fn index_lexical(&mut self, file_ids: &[i64]) -> Result<(), StoreError> {
        self.index_lexical_with(file_ids, &mut |_| true).map(|_| ())
    }

    /// Opens a lexical writer that [`Store::insert_files`] adds each new file version's
    /// entries to as it stores them, and that the next [`Store::index_lexical_with`] uses and
    /// commits: a run then indexes text it has in hand while it chunks more, instead of
    /// reading it back afterwards. Nothing it adds is committed before that call.
    pub fn begin_lexical(&mut self) -> Result<(), StoreError> {
        self.require_writable()?;
        if self.open_writer.is_none() {
            let lexical = self.lexical.as_ref().ok_or_else(|| StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: "the lexical index is not open".into(),
            })?;
            self.open_writer = Some(lexical.writer()?);
        }
        Ok(())
    }

    /// [`Store::index_lexical`], calling `tick` with the number of file versions done after
    /// each one; when it returns false, nothing is committed and this returns `Ok(false)`.
    /// Commits what an open writer ([`Store::begin_lexical`]) holds too.
    pub fn index_lexical_with(
        &mut self,
        file_ids: &[i64],
        tick: &mut dyn FnMut(usize) -> bool,
    ) -> Result<bool, StoreError> {
        self.require_writable()?;
        if !self.write_lexical(file_ids, tick)? {
            return Ok(false);
        }
        self.set_lexical_docs()?;
        Ok(true)
    }

    pub(super) fn write_lexical(
        &mut self,
        file_ids: &[i64],
        tick: &mut dyn FnMut(usize) -> bool,
    ) -> Result<bool, StoreError> {
        let mut writer = match self.open_writer.take() {
            Some(writer) => writer,
            None => {
                let lexical = self.lexical.as_ref().ok_or_else(|| StoreError::Corrupt {
                    dir: self.dir.clone(),
                    detail: "the lexical index is not open".into(),
                })?;
                lexical.writer()?
            }
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.id, f.path, c.symbol, c.text FROM chunks c JOIN files f ON f.id = c.file_id \
                 WHERE c.file_id = ?1 ORDER BY c.ordinal",
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        for (done, &file_id) in file_ids.iter().enumerate() {
            writer.delete_file(file_id);
            let rows = stmt
                .query_map([file_id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(|e| sql_error(&self.dir, e))?;
            for row in rows {
                let (chunk_id, path, symbol, text) = row.map_err(|e| sql_error(&self.dir, e))?;
                writer.add(LexicalDoc {
                    chunk_id: chunk_id as u64,
                    file_id: file_id as u64,
                    path: &path,
                    symbol: symbol.as_deref(),
                    text: &text,
                })?;
            }
            if !tick(done + 1) {
                return Ok(false);
            }
        }
        writer.commit()?;
        Ok(true)
    }

    /// Deletes the lexical entries of these file versions and commits the lexical index.
    pub(crate) fn delete_lexical(&mut self, file_ids: &[i64]) -> Result<(), StoreError> {
        let Some(lexical) = self.lexical.as_ref() else {
            return Ok(());
        };
        let mut writer = lexical.writer()?;
        for &id in file_ids {
            writer.delete_file(id);
        }
        writer.commit()?;
        self.set_lexical_docs()
    }

    /// File versions whose lexical entries were never committed (left by a crashed run).
    pub fn pending_files(&self) -> Result<Vec<i64>, StoreError> {
        self.query_ids("SELECT id FROM files WHERE ready = 0", [])
    }

    /// BM25 retrieval over the chunks of one snapshot and the artifacts of `scopes`: the top
    /// `k` chunk ids with scores, with statistics of those chunks alone.
    pub fn search(
        &self,
        sha: &str,
        scopes: &[&str],
        terms: &QueryTerms,
        k: usize,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        let files: FileSet = self
            .manifest_ids(sha)?
            .into_iter()
            .chain(self.artifact_files(scopes)?)
            .map(|id| id as u64)
            .collect();
        self.search_files(&files, &[], terms, k)
    }
}
