//! The full check of a store (`ctxpack verify`) and the repairs it can make from what the
//! store holds. Opening a store makes only cheap checks (the format, the lexical index's
//! presence and size); this reads everything: the database's own integrity check, every
//! chunk's and embedding's checksum, every snapshot's manifest against its record (count, sum
//! of ids and digest) and its file list against its rows, every manifest row's file version,
//! every file of the lexical index
//! against its checksum and its size against the chunks, and the ledger's records and texts.

use std::collections::HashSet;
use std::path::Path;

use rusqlite::params;

use crate::db::{Store, checksum, sql_error};
use crate::error::StoreError;
use crate::file_list::write_file_list;
use crate::ledger::Ledger;
use crate::manifest::Record;

/// One thing `verify` found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// What part of the store: `database`, `manifest`, `lexical`, `chunk`, `embedding`,
    /// `vectors`, `ledger`.
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
        let orphans = self.orphan_chunks()?;
        if let Some((chunk, file)) = orphans.first() {
            problems.push(Problem::new(
                "chunk",
                format!(
                    "{} chunks belong to file versions that are missing (chunk {chunk} to version {file})",
                    orphans.len()
                ),
            ));
        }
        for (sha, detail) in self.damaged_manifests()? {
            problems.push(Problem::new(
                "manifest",
                format!("snapshot {sha}: {detail}"),
            ));
        }
        self.verify_lexical(&mut problems)?;
        self.verify_vectors(&mut problems)?;
        if self.format_version() >= 5 {
            self.verify_collections(&mut problems)?;
        }
        verify_ledger(&self.dir, &mut problems)?;
        Ok(problems)
    }

    /// Checks every snapshot's manifest: each row's file version exists, and the whole
    /// manifest, folded, matches the snapshot's record (count, sum of ids, digest) when it
    /// has one. A snapshot whose chain cannot be read (a missing base) is damaged too.
    /// Returns the damaged snapshots, `(sha, what is wrong)`, most recent first: their
    /// commits can be indexed again from git.
    pub fn damaged_manifests(&self) -> Result<Vec<(String, String)>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let _batch = self.read_batch().map_err(e)?;
        let mut damaged = Vec::new();
        // Every stored row naming a file version that is not there, once for all snapshots:
        // a snapshot listing one of them is damaged whichever snapshot stores the row.
        let missing: HashSet<i64> = self
            .query_ids(
                "SELECT DISTINCT file_id FROM manifest m WHERE file_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM files f WHERE f.id = m.file_id)",
                [],
            )?
            .into_iter()
            .collect();
        for snapshot in self.snapshots()? {
            match self.manifest_damage(&snapshot.sha, &missing) {
                Ok(None) => {}
                Ok(Some(wrong)) | Err(StoreError::Corrupt { detail: wrong, .. }) => {
                    damaged.push((snapshot.sha, wrong));
                }
                Err(other) => return Err(other),
            }
        }
        Ok(damaged)
    }

    /// What is wrong with snapshot `sha`'s manifest, if anything, given the file versions
    /// manifest rows name that are `missing`.
    fn manifest_damage(
        &self,
        sha: &str,
        missing: &HashSet<i64>,
    ) -> Result<Option<String>, StoreError> {
        let listing = self.listing(sha)?;
        if let Some((path, id)) = listing.iter().find(|(_, id)| missing.contains(id)) {
            return Ok(Some(format!(
                "its manifest lists file version {id} for {path}, which is missing"
            )));
        }
        if let Some(record) = self.record(sha)? {
            let found = Record::of(listing.iter().map(|(p, id)| (p.as_str(), *id)));
            if found.files != record.files {
                return Ok(Some(format!(
                    "its manifest lists {} files where {} were committed",
                    found.files, record.files
                )));
            }
            if found.ids != record.ids || found.digest != record.digest {
                return Ok(Some(
                    "its manifest's rows differ from those committed".to_owned(),
                ));
            }
        }
        // A search reads a snapshot's file list instead of its rows: the two must agree.
        match self.file_list(sha) {
            Ok(Some(list)) => {
                let mut listed: Vec<i64> = listing.iter().map(|(_, id)| *id).collect();
                listed.sort_unstable();
                Ok((listed != list)
                    .then(|| "its file list differs from its manifest's rows".to_owned()))
            }
            Ok(None) => Ok(None),
            Err(StoreError::Corrupt { detail, .. }) => Ok(Some(detail)),
            Err(other) => Err(other),
        }
    }

    /// Chunks whose file version is missing, `(chunk id, file version id)`: `gc` deletes a
    /// version's chunks with it, so only a change outside ctxpack leaves them, and a version
    /// stored later may be given the missing one's id and with it these chunks.
    fn orphan_chunks(&self) -> Result<Vec<(i64, i64)>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.id, c.file_id FROM chunks c \
                 WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.id = c.file_id) ORDER BY c.id",
            )
            .map_err(e)?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)
    }

    /// Deletes the chunks whose file version is missing, and their lexical entries first (as
    /// `gc` does: a run stopped in between leaves chunks the next repair finds again);
    /// returns how many.
    pub fn drop_orphan_chunks(&mut self) -> Result<u64, StoreError> {
        self.require_writable()?;
        let orphans = self.orphan_chunks()?;
        let mut versions: Vec<i64> = orphans.iter().map(|(_, file)| *file).collect();
        versions.sort_unstable();
        versions.dedup();
        if versions.is_empty() {
            return Ok(0);
        }
        self.delete_lexical(&versions)?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let mut dropped = 0;
        {
            let mut delete = tx
                .prepare("DELETE FROM chunks WHERE file_id = ?1 AND NOT EXISTS (SELECT 1 FROM files f WHERE f.id = ?1)")
                .map_err(e)?;
            for id in &versions {
                dropped += delete.execute([id]).map_err(e)? as u64;
            }
        }
        tx.commit().map_err(e)?;
        Ok(dropped)
    }

    /// The snapshots with no record of their manifest (committed before format 7): only
    /// their rows' file versions can be checked. [`Store::record_manifests`] records them.
    pub fn unrecorded_manifests(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for snapshot in self.snapshots()? {
            match self.record(&snapshot.sha) {
                Ok(None) => out.push(snapshot.sha),
                // A record that cannot be read is damage, which `damaged_manifests` reports.
                Ok(Some(_)) | Err(StoreError::Corrupt { .. }) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(out)
    }

    /// Records the manifest of every snapshot that has no record, as it stands (what a
    /// store written before format 7 lacks), in one transaction; returns their SHAs. A
    /// snapshot whose manifest cannot be folded is left without one.
    pub fn record_manifests(&mut self) -> Result<Vec<String>, StoreError> {
        self.require_writable()?;
        let mut records = Vec::new();
        {
            let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
            for snapshot in self.snapshots()? {
                match self.record(&snapshot.sha) {
                    Ok(None) => {}
                    Ok(Some(_)) | Err(StoreError::Corrupt { .. }) => continue,
                    Err(other) => return Err(other),
                }
                let listing = match self.listing(&snapshot.sha) {
                    Ok(listing) => listing,
                    Err(StoreError::Corrupt { .. }) => continue,
                    Err(other) => return Err(other),
                };
                let record = Record::of(listing.iter().map(|(p, id)| (p.as_str(), *id)));
                // A snapshot stored whole keeps its file list as its rows stand too.
                let whole = (self.chain(&snapshot.sha)?.len() == 1)
                    .then(|| listing.iter().map(|(_, id)| *id).collect::<Vec<_>>());
                records.push((snapshot.sha, record, whole));
            }
        }
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut update = tx
                .prepare(
                    "UPDATE snapshots SET manifest_files = ?2, manifest_ids = ?3, \
                     manifest_digest = ?4 WHERE sha = ?1",
                )
                .map_err(e)?;
            for (sha, record, whole) in &records {
                // A writer's store is of the current format: it has file lists.
                write_file_list(&tx, sha, whole.clone()).map_err(e)?;
                update
                    .execute(params![
                        sha,
                        record.files as i64,
                        record.ids.cast_signed(),
                        record.digest.to_hex()
                    ])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(records.into_iter().map(|(sha, ..)| sha).collect())
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

/// The part of the problems with the ledger's index, which `verify --repair` writes again.
pub const LEDGER_INDEX: &str = "ledger index";

/// Every ledger record must be intact and every text it names must match its hash, and the
/// ledger's index must agree with the records.
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
    match ledger.index_problems() {
        Ok(found) => {
            problems.extend(found.into_iter().map(|p| Problem::new(LEDGER_INDEX, p)));
        }
        Err(e) => problems.push(Problem::new(LEDGER_INDEX, e.to_string())),
    }
    Ok(())
}
