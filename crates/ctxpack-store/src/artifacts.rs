//! Artifacts: text evidence that belongs to the store, not to a snapshot (session notes,
//! harness output, CI logs).
//!
//! An artifact is stored as a file version whose path is `artifact:<id>`, so its chunks are
//! masked, costed, indexed and ranked exactly like a snapshot file's; the `artifacts` table
//! says which scope it belongs to. Packs merge the artifacts of the scopes they ask for.

use rusqlite::{OptionalExtension, params};

use crate::db::{NewFile, Store, sql_error};
use crate::error::StoreError;

/// The scopes an artifact can belong to.
pub const SCOPES: [&str; 3] = ["session", "harness", "evidence"];

/// A stored artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactRow {
    /// Its id.
    pub id: String,
    /// `session`, `harness` or `evidence`.
    pub scope: String,
    /// Where it came from, if given.
    pub source_id: Option<String>,
    /// A human title, if given.
    pub title: Option<String>,
    /// The id its source family is named after (`artifactId ?? sourceId`).
    pub family_id: String,
    /// SHA-256 of its content.
    pub content_hash: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Unix seconds when it was added.
    pub created_at: i64,
    /// Its file version id.
    pub file_id: i64,
}

/// An artifact to store: its metadata and its prepared (masked, costed) chunks.
#[derive(Clone, Debug, PartialEq)]
pub struct NewArtifact {
    /// Metadata; `file_id` and `created_at` are filled in by the store.
    pub row: ArtifactRow,
    /// The file version holding its chunks (path `artifact:<id>`).
    pub file: NewFile,
}

/// What adding an artifact did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// It was stored.
    Stored,
    /// The same id with the same content was already there.
    Unchanged,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ArtifactRow> {
    Ok(ArtifactRow {
        id: r.get(0)?,
        scope: r.get(1)?,
        source_id: r.get(2)?,
        title: r.get(3)?,
        family_id: r.get(4)?,
        content_hash: r.get(5)?,
        bytes: r.get::<_, i64>(6)? as u64,
        created_at: r.get(7)?,
        file_id: r.get(8)?,
    })
}

const COLUMNS: &str =
    "id, scope, source_id, title, family_id, content_hash, bytes, created_at, file_id";

impl Store {
    /// The artifact with this id.
    pub fn artifact(&self, id: &str) -> Result<Option<ArtifactRow>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM artifacts WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Every artifact (of one scope, if given), by scope and id.
    pub fn artifacts(&self, scope: Option<&str>) -> Result<Vec<ArtifactRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM artifacts WHERE ?1 IS NULL OR scope = ?1 ORDER BY scope, id"
            ))
            .map_err(|e| sql_error(&self.dir, e))?;
        let rows = stmt
            .query_map([scope], row)
            .map_err(|e| sql_error(&self.dir, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// The artifact that owns a file version, if any.
    pub fn artifact_of_file(&self, file_id: i64) -> Result<Option<ArtifactRow>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM artifacts WHERE file_id = ?1"),
                [file_id],
                row,
            )
            .optional()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Stores an artifact. The same id with the same content is a no-op; the same id with
    /// different content is a [`StoreError::Conflict`] and nothing is written. The caller
    /// holds the writer lock.
    pub fn add_artifact(
        &mut self,
        artifact: &NewArtifact,
        chunker: u32,
    ) -> Result<Added, StoreError> {
        self.require_writable()?;
        let a = &artifact.row;
        if let Some(existing) = self.artifact(&a.id)? {
            if existing.content_hash == a.content_hash {
                return Ok(Added::Unchanged);
            }
            return Err(StoreError::Conflict {
                dir: self.dir.clone(),
                detail: format!(
                    "artifact `{}` already exists with different content; remove it first or choose another id",
                    a.id
                ),
            });
        }
        let file_id = match self.file_version(&artifact.file.path, &artifact.file.blob, chunker)? {
            Some(version) => version.id,
            None => self.insert_files(std::slice::from_ref(&artifact.file), chunker)?[0],
        };
        self.index_lexical(&[file_id])?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let dir = self.dir.clone();
        let tx = self.conn.transaction().map_err(|e| sql_error(&dir, e))?;
        tx.execute("UPDATE files SET ready = 1 WHERE id = ?1", [file_id])
            .map_err(|e| sql_error(&dir, e))?;
        tx.execute(
            &format!(
                "INSERT INTO artifacts ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ),
            params![
                a.id,
                a.scope,
                a.source_id,
                a.title,
                a.family_id,
                a.content_hash,
                a.bytes as i64,
                now,
                file_id
            ],
        )
        .map_err(|e| sql_error(&dir, e))?;
        tx.commit().map_err(|e| sql_error(&dir, e))?;
        Ok(Added::Stored)
    }

    /// Removes an artifact; returns whether it existed. Its chunks stay stored (another
    /// artifact or a re-add may share them) but no pack can retrieve them any more.
    pub fn remove_artifact(&mut self, id: &str) -> Result<bool, StoreError> {
        self.require_writable()?;
        let n = self
            .conn
            .execute("DELETE FROM artifacts WHERE id = ?1", [id])
            .map_err(|e| sql_error(&self.dir, e))?;
        Ok(n > 0)
    }

    /// The full text of an artifact, from its chunks (line windows may overlap: each line is
    /// taken once, in order).
    pub fn artifact_text(&self, artifact: &ArtifactRow) -> Result<String, StoreError> {
        let ids = self.query_ids(
            "SELECT id FROM chunks WHERE file_id = ?1 ORDER BY ordinal",
            [artifact.file_id],
        )?;
        let mut out = String::new();
        let mut next_line = 1u32;
        for chunk in self.chunks(&ids)? {
            for (i, line) in chunk.text.split_inclusive('\n').enumerate() {
                let number = chunk.start_line + i as u32;
                if number >= next_line {
                    out.push_str(line);
                    next_line = number + 1;
                }
            }
        }
        Ok(out)
    }
}
