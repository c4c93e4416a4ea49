//! Snapshots in PostgreSQL, the system of record: every file version (its chunks, exactly as
//! the indexer stored them) once per repository, and each snapshot's manifest — whole, or as
//! the changes from its parent, with at most [`MAX_DEPTH`] links to walk. A process indexes
//! into its own store, which is a cache, and publishes the snapshot here in one transaction;
//! another process copies a published snapshot into its cache before it packs it. One writer
//! per repository across every process holds a session advisory lock, which PostgreSQL
//! releases when the session ends, however it ends.
//!
//! Each snapshot records what its whole manifest was when it was published (schema version
//! 7): how many paths it lists and their [`ManifestDigest`] (rows `path NUL blob NUL chunker
//! LF`). Reading a manifest checks both, so a manifest changed in the database is damage,
//! never a file silently missing from the caches filled from it. A manifest is read only to
//! fill a cache or to publish a child, never per pack, and the fold that reads it costs more
//! than hashing what it folded.

use std::collections::{BTreeMap, HashMap};

use ctxpack_store::artifacts::{Added, ArtifactRow, NewArtifact};
use ctxpack_store::{ManifestDigest, NewChunk, NewFile, SnapshotStats, StoreError};
use serde_json::{Value, json};

use crate::{Database, RepoLock};

/// The most manifests of changes between a snapshot and the whole manifest it builds on.
pub const MAX_DEPTH: i32 = 32;

/// File versions written or read per statement.
const BATCH: usize = 256;

/// One file of a manifest: path, blob and the chunker version of the file version.
pub type Entry = (String, String, u32);

/// The digest of a whole manifest.
fn digest(entries: &[Entry]) -> ManifestDigest {
    let mut digest = ManifestDigest::default();
    for (path, blob, chunker) in entries {
        digest.add(&[
            path.as_bytes(),
            b"\0",
            blob.as_bytes(),
            b"\0",
            chunker.to_string().as_bytes(),
            b"\n",
        ]);
    }
    digest
}

/// A published snapshot's row.
#[derive(Clone, Debug, PartialEq)]
pub struct Published {
    /// The commit.
    pub sha: String,
    /// The published snapshot its manifest is stored against, if any.
    pub parent: Option<String>,
    /// Its counts.
    pub stats: SnapshotStats,
    /// The indexer's basis, as the store records it.
    pub basis: Option<String>,
}

/// Reads the file versions of the manifest entries at these indexes, in their order.
pub type ReadFiles<'a> = dyn FnMut(&[usize]) -> Result<Vec<NewFile>, StoreError> + 'a;

/// What to publish: the snapshot, and its files with a way to read each version.
pub struct Publish<'a> {
    /// The commit.
    pub sha: &'a str,
    /// Its counts.
    pub stats: &'a SnapshotStats,
    /// The indexer's basis.
    pub basis: Option<&'a str>,
    /// Its files, by path.
    pub manifest: &'a [Entry],
    /// The nearest published ancestor to store the manifest against, if any.
    pub parent: Option<&'a str>,
}

/// One repository's snapshots in the database.
#[derive(Clone, Debug)]
pub struct PgSnapshots {
    pub(crate) db: Database,
    pub(crate) repo: String,
}

fn chunk_json(chunk: &NewChunk) -> Value {
    json!({
        "s": chunk.start_line,
        "e": chunk.end_line,
        "y": chunk.symbol,
        "t": chunk.text,
        "c": chunk.costs,
        "r": chunk.redactions,
        "n": chunk.enclosing,
        "i": chunk.inside,
    })
}

fn chunk_from(value: &Value) -> Option<NewChunk> {
    let costs: Vec<Option<u64>> = serde_json::from_value(value.get("c")?.clone()).ok()?;
    Some(NewChunk {
        start_line: u32::try_from(value.get("s")?.as_u64()?).ok()?,
        end_line: u32::try_from(value.get("e")?.as_u64()?).ok()?,
        symbol: value.get("y")?.as_str().map(str::to_owned),
        text: value.get("t")?.as_str()?.to_owned(),
        costs: costs.try_into().ok()?,
        redactions: serde_json::from_value::<BTreeMap<String, u64>>(value.get("r")?.clone())
            .ok()?,
        enclosing: serde_json::from_value(value.get("n")?.clone()).ok()?,
        // Chunks published before enclosing lines inside them were recorded have none.
        inside: value
            .get("i")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        // Line counts are not published: a pack of a published snapshot counts its cuts.
        o200k_lines: None,
    })
}

impl PgSnapshots {
    fn error(&self, e: &postgres::Error) -> StoreError {
        self.db.error(e)
    }

    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            dir: std::path::PathBuf::from(format!(
                "{} (snapshots of {})",
                self.db.inner.label, self.repo
            )),
            detail,
        }
    }

    /// The repository's document store `store`.
    pub fn documents(&self, store: &str) -> crate::PgDocuments {
        self.db.documents(&self.repo, store)
    }

    /// Takes the repository's writer lock, waiting for another process's to be released.
    pub fn lock(&self) -> Result<RepoLock, StoreError> {
        self.db
            .advisory_lock(crate::lock_key("ctxpack-repo:", &self.repo), true)?
            .ok_or_else(|| self.corrupt("a waiting lock was not taken".into()))
    }

    /// The published snapshot `sha`, if it is published.
    pub fn published(&self, sha: &str) -> Result<Option<Published>, StoreError> {
        let row = self.db.with(|c| {
            c.query_opt(
                "SELECT parent, files, chunks, skipped, seconds, basis FROM ctxpack_snapshots
                 WHERE repo = $1 AND sha = $2",
                &[&self.repo, &sha],
            )
            .map_err(|e| self.error(&e))
        })?;
        let Some(row) = row else { return Ok(None) };
        let skipped: String = row.get(3);
        Ok(Some(Published {
            sha: sha.to_owned(),
            parent: row.get(0),
            stats: SnapshotStats {
                files: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
                chunks: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
                skipped: serde_json::from_str(&skipped)
                    .map_err(|e| self.corrupt(format!("snapshot {sha}: skipped counts: {e}")))?,
                seconds: row.get(4),
            },
            basis: row.get(5),
        }))
    }

    /// Every published snapshot with the Unix second it was published, oldest first.
    pub fn list(&self) -> Result<Vec<(Published, i64)>, StoreError> {
        let rows = self.db.with(|c| {
            c.query(
                "SELECT sha, parent, files, chunks, skipped, seconds, basis, published
                 FROM ctxpack_snapshots WHERE repo = $1 ORDER BY published, sha",
                &[&self.repo],
            )
            .map_err(|e| self.error(&e))
        })?;
        rows.iter()
            .map(|row| {
                let sha: String = row.get(0);
                let skipped: String = row.get(4);
                let skipped = serde_json::from_str(&skipped)
                    .map_err(|e| self.corrupt(format!("snapshot {sha}: skipped counts: {e}")))?;
                Ok((
                    Published {
                        parent: row.get(1),
                        stats: SnapshotStats {
                            files: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
                            chunks: u64::try_from(row.get::<_, i64>(3)).unwrap_or(0),
                            skipped,
                            seconds: row.get(5),
                        },
                        basis: row.get(6),
                        sha,
                    },
                    row.get(7),
                ))
            })
            .collect()
    }

    /// Every published commit of the repository.
    pub fn shas(&self) -> Result<Vec<String>, StoreError> {
        self.db.with(|c| {
            let rows = c
                .query(
                    "SELECT sha FROM ctxpack_snapshots WHERE repo = $1 ORDER BY sha",
                    &[&self.repo],
                )
                .map_err(|e| self.error(&e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// The manifest of the published snapshot `sha`, by path, checked against the record
    /// published with it (snapshots published before records have none, and are not).
    pub fn manifest(&self, sha: &str) -> Result<Vec<Entry>, StoreError> {
        // Newest first: each layer's entries win over the older ones'.
        let mut layers: Vec<Value> = Vec::new();
        let mut record: Option<(Option<i64>, Option<String>)> = None;
        let mut next = Some(sha.to_owned());
        while let Some(at) = next.take() {
            if layers.len() > MAX_DEPTH as usize + 1 {
                return Err(self.corrupt(format!("the manifest chain of {sha} is too long")));
            }
            let row = self.db.with(|c| {
                c.query_opt(
                    "SELECT parent, manifest, manifest_files, manifest_digest FROM ctxpack_snapshots
                     WHERE repo = $1 AND sha = $2",
                    &[&self.repo, &at],
                )
                .map_err(|e| self.error(&e))
            })?;
            let row = row.ok_or_else(|| self.corrupt(format!("snapshot {at} is missing")))?;
            if record.is_none() {
                record = Some((row.get(2), row.get(3)));
            }
            let manifest: String = row.get(1);
            let manifest: Value = serde_json::from_str(&manifest)
                .map_err(|e| self.corrupt(format!("the manifest of {at}: {e}")))?;
            if manifest.get("changes").is_some() {
                next = row.get(0);
            }
            layers.push(manifest);
        }
        let mut files: BTreeMap<String, Option<(String, u32)>> = BTreeMap::new();
        for layer in layers.iter().rev() {
            let entries = layer
                .get("whole")
                .or_else(|| layer.get("changes"))
                .and_then(Value::as_array)
                .ok_or_else(|| self.corrupt(format!("the manifest of {sha} has no entries")))?;
            for entry in entries {
                let path = entry.get(0).and_then(Value::as_str);
                let blob = entry.get(1).and_then(Value::as_str);
                let chunker = entry.get(2).and_then(Value::as_u64);
                match (path, blob, chunker) {
                    (Some(path), Some(blob), Some(chunker)) => {
                        let chunker = u32::try_from(chunker)
                            .map_err(|_| self.corrupt(format!("a chunker of {sha}")))?;
                        files.insert(path.to_owned(), Some((blob.to_owned(), chunker)));
                    }
                    (Some(path), None, _) => {
                        files.insert(path.to_owned(), None);
                    }
                    _ => return Err(self.corrupt(format!("an entry of the manifest of {sha}"))),
                }
            }
        }
        let entries: Vec<Entry> = files
            .into_iter()
            .filter_map(|(path, key)| key.map(|(blob, chunker)| (path, blob, chunker)))
            .collect();
        if let Some((Some(files), Some(recorded))) = record {
            let wrong = if usize::try_from(files).ok() != Some(entries.len()) {
                format!(
                    "the manifest of snapshot {sha} lists {} files where {files} were published",
                    entries.len()
                )
            } else if ManifestDigest::from_hex(&recorded) != Some(digest(&entries)) {
                format!("the manifest of snapshot {sha} differs from the one published")
            } else {
                return Ok(entries);
            };
            return Err(self.corrupt(format!("{wrong}: the database was changed outside ctxpack")));
        }
        Ok(entries)
    }

    /// The file versions `entries` name, in their order.
    pub fn files(&self, entries: &[Entry]) -> Result<Vec<NewFile>, StoreError> {
        let mut out = Vec::with_capacity(entries.len());
        for batch in entries.chunks(BATCH) {
            let paths: Vec<&str> = batch.iter().map(|e| e.0.as_str()).collect();
            let blobs: Vec<&str> = batch.iter().map(|e| e.1.as_str()).collect();
            let chunkers: Vec<i64> = batch.iter().map(|e| i64::from(e.2)).collect();
            let rows = self.db.with(|c| {
                c.query(
                    "SELECT f.path, f.blob, f.chunker, f.bytes, f.skip_reason, f.chunks
                     FROM unnest($2::text[], $3::text[], $4::bigint[]) AS m(path, blob, chunker)
                     JOIN ctxpack_file_versions f
                       ON f.repo = $1 AND f.path = m.path AND f.blob = m.blob
                      AND f.chunker = m.chunker",
                    &[&self.repo, &paths, &blobs, &chunkers],
                )
                .map_err(|e| self.error(&e))
            })?;
            let mut found: HashMap<(String, String, i64), NewFile> = HashMap::new();
            for row in rows {
                let key = (
                    row.get::<_, String>(0),
                    row.get::<_, String>(1),
                    row.get::<_, i64>(2),
                );
                let chunks: String = row.get(5);
                let chunks: Value = serde_json::from_str(&chunks)
                    .map_err(|e| self.corrupt(format!("the chunks of {}: {e}", key.0)))?;
                let chunks = chunks
                    .as_array()
                    .ok_or_else(|| self.corrupt(format!("the chunks of {}", key.0)))?
                    .iter()
                    .map(|v| {
                        chunk_from(v).ok_or_else(|| self.corrupt(format!("a chunk of {}", key.0)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let file = NewFile {
                    path: key.0.clone(),
                    blob: key.1.clone(),
                    bytes: u64::try_from(row.get::<_, i64>(3)).unwrap_or(0),
                    skip_reason: row.get(4),
                    chunks,
                    // Not published: a pack works them out from the chunks.
                    imports: None,
                };
                found.insert(key, file);
            }
            for entry in batch {
                let key = (entry.0.clone(), entry.1.clone(), i64::from(entry.2));
                let file = found.remove(&key).ok_or_else(|| {
                    self.corrupt(format!(
                        "the file version {} {} is missing",
                        entry.0, entry.1
                    ))
                })?;
                out.push(file);
            }
        }
        Ok(out)
    }

    /// Publishes a snapshot in one transaction: the file versions the database lacks (read
    /// with `read`, given the indexes of the manifest entries it needs), then the snapshot row.
    /// Until it commits, no reader sees any of it. Publishing a published snapshot again
    /// changes nothing.
    pub fn publish(
        &self,
        snapshot: &Publish<'_>,
        read: &mut ReadFiles<'_>,
    ) -> Result<(), StoreError> {
        // The parent's manifest and depth decide between a whole manifest and changes.
        let parent = match snapshot.parent {
            Some(parent) => {
                let depth: Option<i32> = self.db.with(|c| {
                    let row = c
                        .query_opt(
                            "SELECT depth FROM ctxpack_snapshots WHERE repo = $1 AND sha = $2",
                            &[&self.repo, &parent],
                        )
                        .map_err(|e| self.error(&e))?;
                    Ok(row.map(|r| r.get(0)))
                })?;
                match depth {
                    Some(depth) if depth < MAX_DEPTH => {
                        Some((parent, depth, self.manifest(parent)?))
                    }
                    _ => None,
                }
            }
            None => None,
        };
        let (manifest, parent_sha, depth) = match &parent {
            Some((sha, depth, old)) => {
                let old: HashMap<&str, (&str, u32)> = old
                    .iter()
                    .map(|(p, b, c)| (p.as_str(), (b.as_str(), *c)))
                    .collect();
                let mut changes: Vec<Value> = snapshot
                    .manifest
                    .iter()
                    .filter(|(p, b, c)| old.get(p.as_str()) != Some(&(b.as_str(), *c)))
                    .map(|(p, b, c)| json!([p, b, c]))
                    .collect();
                let now: HashMap<&str, ()> = snapshot
                    .manifest
                    .iter()
                    .map(|(p, _, _)| (p.as_str(), ()))
                    .collect();
                let mut gone: Vec<&str> = old
                    .keys()
                    .filter(|p| !now.contains_key(*p))
                    .copied()
                    .collect();
                gone.sort_unstable();
                changes.extend(gone.into_iter().map(|p| json!([p])));
                (json!({ "changes": changes }), Some(*sha), depth + 1)
            }
            None => {
                let whole: Vec<Value> = snapshot
                    .manifest
                    .iter()
                    .map(|(p, b, c)| json!([p, b, c]))
                    .collect();
                (json!({ "whole": whole }), None, 0)
            }
        };
        let manifest = manifest.to_string();
        let skipped =
            serde_json::to_string(&snapshot.stats.skipped).expect("a map of counts serializes");
        let files = i64::try_from(snapshot.stats.files).unwrap_or(i64::MAX);
        let chunks = i64::try_from(snapshot.stats.chunks).unwrap_or(i64::MAX);
        let listed = i64::try_from(snapshot.manifest.len()).unwrap_or(i64::MAX);
        let manifest_digest = digest(snapshot.manifest).to_hex();
        self.db.with(|c| {
            let error = |e: postgres::Error| self.error(&e);
            let mut tx = c.transaction().map_err(error)?;
            // Which file versions are missing, a batch at a time.
            let mut missing = Vec::new();
            for (start, batch) in snapshot
                .manifest
                .chunks(BATCH)
                .enumerate()
                .map(|(i, b)| (i * BATCH, b))
            {
                let paths: Vec<&str> = batch.iter().map(|e| e.0.as_str()).collect();
                let blobs: Vec<&str> = batch.iter().map(|e| e.1.as_str()).collect();
                let chunkers: Vec<i64> = batch.iter().map(|e| i64::from(e.2)).collect();
                let rows = tx
                    .query(
                        "SELECT m.i FROM unnest($2::text[], $3::text[], $4::bigint[])
                           WITH ORDINALITY AS m(path, blob, chunker, i)
                         WHERE NOT EXISTS (SELECT 1 FROM ctxpack_file_versions f
                           WHERE f.repo = $1 AND f.path = m.path AND f.blob = m.blob
                             AND f.chunker = m.chunker)",
                        &[&self.repo, &paths, &blobs, &chunkers],
                    )
                    .map_err(error)?;
                missing.extend(
                    rows.iter()
                        .map(|r| start + usize::try_from(r.get::<_, i64>(0)).unwrap_or(1) - 1),
                );
            }
            let insert = tx
                .prepare(
                    "INSERT INTO ctxpack_file_versions
                       (repo, path, blob, chunker, bytes, skip_reason, chunks)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
                )
                .map_err(error)?;
            for batch in missing.chunks(BATCH) {
                let files = read(batch)?;
                for (i, file) in batch.iter().zip(&files) {
                    let chunker = i64::from(snapshot.manifest[*i].2);
                    let chunks: Vec<Value> = file.chunks.iter().map(chunk_json).collect();
                    let bytes = i64::try_from(file.bytes).unwrap_or(i64::MAX);
                    tx.execute(
                        &insert,
                        &[
                            &self.repo,
                            &file.path,
                            &file.blob,
                            &chunker,
                            &bytes,
                            &file.skip_reason,
                            &Value::Array(chunks).to_string(),
                        ],
                    )
                    .map_err(error)?;
                }
            }
            ctxpack_store::failpoint("publish:files-written");
            tx.execute(
                "INSERT INTO ctxpack_snapshots
                   (repo, sha, parent, depth, files, chunks, skipped, seconds, basis, manifest,
                    manifest_files, manifest_digest, published)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                         extract(epoch from now())::bigint)
                 ON CONFLICT DO NOTHING",
                &[
                    &self.repo,
                    &snapshot.sha,
                    &parent_sha,
                    &depth,
                    &files,
                    &chunks,
                    &skipped,
                    &snapshot.stats.seconds,
                    &snapshot.basis,
                    &manifest,
                    &listed,
                    &manifest_digest,
                ],
            )
            .map_err(error)?;
            tx.commit().map_err(error)
        })
    }
}

/// A file version as JSON: what an artifact row keeps of its text.
fn file_json(file: &NewFile) -> Value {
    json!({
        "path": file.path,
        "blob": file.blob,
        "bytes": file.bytes,
        "skip": file.skip_reason,
        "chunks": file.chunks.iter().map(chunk_json).collect::<Vec<_>>(),
        "imports": file.imports,
    })
}

fn file_from(value: &Value) -> Option<NewFile> {
    Some(NewFile {
        path: value.get("path")?.as_str()?.to_owned(),
        blob: value.get("blob")?.as_str()?.to_owned(),
        bytes: value.get("bytes")?.as_u64()?,
        skip_reason: value.get("skip")?.as_str().map(str::to_owned),
        chunks: value
            .get("chunks")?
            .as_array()?
            .iter()
            .map(chunk_from)
            .collect::<Option<Vec<_>>>()?,
        // Published before imports were: a pack works them out from the chunks.
        imports: value
            .get("imports")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

const ARTIFACT_COLUMNS: &str =
    "id, scope, source_id, title, family_id, content_hash, bytes, created_at";

fn artifact_row(r: &postgres::Row) -> ArtifactRow {
    ArtifactRow {
        id: r.get(0),
        scope: r.get(1),
        source_id: r.get(2),
        title: r.get(3),
        family_id: r.get(4),
        content_hash: r.get(5),
        bytes: u64::try_from(r.get::<_, i64>(6)).unwrap_or(0),
        created_at: r.get(7),
        file_id: 0,
    }
}

/// Artifacts: the repository's evidence beside its snapshots, kept whole (metadata and the
/// prepared file version) so every process's cache can hold the same ones.
impl PgSnapshots {
    /// Every published artifact, by id (`file_id` is 0: it means something only in a store).
    pub fn artifacts(&self) -> Result<Vec<ArtifactRow>, StoreError> {
        let rows = self.db.with(|c| {
            c.query(
                &format!(
                    "SELECT {ARTIFACT_COLUMNS} FROM ctxpack_artifacts WHERE repo = $1 ORDER BY id"
                ),
                &[&self.repo],
            )
            .map_err(|e| self.error(&e))
        })?;
        Ok(rows.iter().map(artifact_row).collect())
    }

    /// The published artifact `id`, whole, with the chunker version of its file.
    pub fn artifact(&self, id: &str) -> Result<Option<(NewArtifact, u32)>, StoreError> {
        let row = self.db.with(|c| {
            c.query_opt(
                &format!(
                    "SELECT {ARTIFACT_COLUMNS}, chunker, file FROM ctxpack_artifacts
                     WHERE repo = $1 AND id = $2"
                ),
                &[&self.repo, &id],
            )
            .map_err(|e| self.error(&e))
        })?;
        let Some(r) = row else { return Ok(None) };
        let file: String = r.get(9);
        let file = serde_json::from_str::<Value>(&file)
            .ok()
            .as_ref()
            .and_then(file_from)
            .ok_or_else(|| self.corrupt(format!("the text of artifact {id}")))?;
        let chunker = u32::try_from(r.get::<_, i64>(8))
            .map_err(|_| self.corrupt(format!("the chunker of artifact {id}")))?;
        Ok(Some((
            NewArtifact {
                row: artifact_row(&r),
                file,
            },
            chunker,
        )))
    }

    /// Publishes an artifact: the same id with the same content is a no-op, with other content
    /// a [`StoreError::Conflict`], as in a store.
    pub fn publish_artifact(
        &self,
        artifact: &NewArtifact,
        chunker: u32,
    ) -> Result<Added, StoreError> {
        let a = &artifact.row;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let bytes = i64::try_from(a.bytes).unwrap_or(i64::MAX);
        let file = file_json(&artifact.file).to_string();
        let inserted = self.db.with(|c| {
            c.execute(
                "INSERT INTO ctxpack_artifacts
                   (repo, id, scope, source_id, title, family_id, content_hash, bytes,
                    created_at, chunker, file)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING",
                &[
                    &self.repo,
                    &a.id,
                    &a.scope,
                    &a.source_id,
                    &a.title,
                    &a.family_id,
                    &a.content_hash,
                    &bytes,
                    &now,
                    &i64::from(chunker),
                    &file,
                ],
            )
            .map_err(|e| self.error(&e))
        })?;
        if inserted == 1 {
            return Ok(Added::Stored);
        }
        match self.artifact(&a.id)? {
            Some((existing, _)) if existing.row.content_hash == a.content_hash => {
                Ok(Added::Unchanged)
            }
            _ => Err(StoreError::Conflict {
                dir: std::path::PathBuf::new(),
                detail: format!(
                    "artifact `{}` already exists with different content; remove it first or choose another id",
                    a.id
                ),
            }),
        }
    }

    /// Removes a published artifact; whether it was there.
    pub fn remove_artifact(&self, id: &str) -> Result<bool, StoreError> {
        let removed = self.db.with(|c| {
            c.execute(
                "DELETE FROM ctxpack_artifacts WHERE repo = $1 AND id = $2",
                &[&self.repo, &id],
            )
            .map_err(|e| self.error(&e))
        })?;
        Ok(removed > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_through_json() {
        let chunk = NewChunk {
            start_line: 3,
            end_line: 9,
            symbol: Some("fn budget".into()),
            text: "fn budget() {}\n\u{1F600} \"quoted\"".into(),
            costs: [Some(5), None, Some(2), Some(30), Some(8)],
            redactions: BTreeMap::from([("aws-key".to_owned(), 2)]),
            enclosing: Some((2, "impl Budget {".into())),
            inside: Some(vec![(4, Some((3, "fn budget() {".into()))), (8, None)]),
            o200k_lines: None,
        };
        assert_eq!(chunk_from(&chunk_json(&chunk)), Some(chunk.clone()));
        let bare = NewChunk {
            symbol: None,
            redactions: BTreeMap::new(),
            enclosing: None,
            inside: None,
            ..chunk.clone()
        };
        assert_eq!(chunk_from(&chunk_json(&bare)), Some(bare.clone()));
        // A chunk published before `inside` was recorded reads as not recorded.
        let mut older = chunk_json(&chunk);
        older.as_object_mut().expect("an object").remove("i");
        assert_eq!(chunk_from(&older).and_then(|c| c.inside), None);
        assert_eq!(chunk_from(&json!({"s": 1})), None);
        let file = NewFile {
            path: "artifact:ci-log".into(),
            blob: "ab".repeat(32),
            bytes: 42,
            skip_reason: None,
            chunks: vec![bare],
            imports: Some(r#"[{"Module":["a","b"]}]"#.into()),
        };
        assert_eq!(file_from(&file_json(&file)), Some(file.clone()));
        let mut older = file_json(&file);
        older.as_object_mut().expect("an object").remove("imports");
        assert_eq!(file_from(&older).and_then(|f| f.imports), None);
    }
}
