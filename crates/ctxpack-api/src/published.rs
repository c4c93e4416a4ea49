//! Workspaces whose snapshots' system of record is a database (a server's `--database`): the
//! embedded store is then a cache of what the database holds. Indexing takes the repository's
//! writer lock in the database (one writer across every process), indexes into the cache as
//! ever, and publishes the snapshot in one transaction; a pack reads only published snapshots,
//! copying one into the cache first when the cache lacks it. A snapshot indexed into the cache
//! but never published (its process died first) is not packed: the next index publishes it.

use std::collections::{BTreeMap, HashSet};

use ctxpack_index::git::Repo;
use ctxpack_pg::{Entry, PgSnapshots, Publish, Published};
use ctxpack_store::{Manifest, NewSnapshot, SnapshotStats, Store, WriterLock};
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::workspace::Workspace;

/// File versions copied into the cache per batch.
const BATCH: usize = 256;

impl Workspace {
    /// The same workspace with its snapshots' system of record in `snapshots`.
    pub fn with_snapshots(mut self, snapshots: PgSnapshots) -> Workspace {
        self.snapshots = Some(snapshots);
        self
    }

    /// Makes sure the cache holds the published snapshot `published`, copying what it lacks
    /// from the database. Cache upkeep, not a write the caller asked for: a read-only
    /// server workspace does it too.
    pub(crate) fn fill_cache(&self, record: &PgSnapshots, published: &Published) -> Result<()> {
        let dir = self.store_root()?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(dir, &e).context("cannot create the store directory"))?;
        if let Ok(store) = Store::open(dir)
            && store.snapshot(&published.sha)?.is_some()
        {
            return Ok(());
        }
        let _lock = WriterLock::acquire(dir, true)?;
        let mut store = Store::open_or_create(dir)?;
        if store.snapshot(&published.sha)?.is_some() {
            return Ok(());
        }
        let manifest = record.manifest(&published.sha)?;
        let mut rows: Vec<(String, i64)> = Vec::with_capacity(manifest.len());
        let mut missing: Vec<usize> = Vec::new();
        let mut unfinished: Vec<i64> = Vec::new();
        for (i, (path, blob, chunker)) in manifest.iter().enumerate() {
            match store.file_version(path, blob, *chunker)? {
                Some(version) => {
                    if !version.ready {
                        unfinished.push(version.id);
                    }
                    rows.push((path.clone(), version.id));
                }
                None => {
                    missing.push(i);
                    rows.push((path.clone(), -1));
                }
            }
        }
        // A crashed run may have left versions without their lexical entries: write them.
        let mut to_index = unfinished;
        for batch in missing.chunks(BATCH) {
            let entries: Vec<Entry> = batch.iter().map(|i| manifest[*i].clone()).collect();
            let files = record.files(&entries)?;
            // Versions of one batch may come from different chunkers.
            let mut by_chunker: BTreeMap<u32, Vec<(usize, ctxpack_store::NewFile)>> =
                BTreeMap::new();
            for (i, file) in batch.iter().zip(files) {
                by_chunker
                    .entry(manifest[*i].2)
                    .or_default()
                    .push((*i, file));
            }
            for (chunker, group) in by_chunker {
                let (indexes, files): (Vec<usize>, Vec<_>) = group.into_iter().unzip();
                let ids = store.insert_files(&files, chunker)?;
                for (i, id) in indexes.into_iter().zip(ids) {
                    rows[i].1 = id;
                    to_index.push(id);
                }
            }
        }
        store.index_lexical(&to_index)?;
        let parent = match &published.parent {
            Some(parent) if store.snapshot(parent)?.is_some() => Some(parent.as_str()),
            _ => None,
        };
        store.commit_snapshot(&NewSnapshot {
            sha: &published.sha,
            parent,
            manifest: Manifest::Whole(rows),
            stats: published.stats.clone(),
            basis: published.basis.clone(),
        })?;
        Ok(())
    }

    /// Makes the cache's artifacts those the database holds: adds what it lacks (or holds with
    /// other content) and removes what the database no longer has.
    pub(crate) fn sync_artifacts(&self, record: &PgSnapshots) -> Result<()> {
        let published: HashMap<String, String> = record
            .artifacts()?
            .into_iter()
            .map(|a| (a.id, a.content_hash))
            .collect();
        let cached = |store: &Store| -> Result<HashMap<String, String>> {
            Ok(store
                .artifacts(None)?
                .into_iter()
                .map(|a| (a.id, a.content_hash))
                .collect())
        };
        let dir = self.store_root()?;
        if let Ok(store) = Store::open(dir)
            && cached(&store)? == published
        {
            return Ok(());
        }
        if published.is_empty() && !dir.join("ctxpack.sqlite").exists() {
            return Ok(());
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(dir, &e).context("cannot create the store directory"))?;
        let _lock = WriterLock::acquire(dir, true)?;
        let mut store = Store::open_or_create(dir)?;
        let have = cached(&store)?;
        for (id, hash) in &have {
            if published.get(id) != Some(hash) {
                store.remove_artifact(id)?;
            }
        }
        for (id, hash) in &published {
            if have.get(id) == Some(hash) {
                continue;
            }
            // Removed from the database since it was listed: nothing to copy.
            let Some((artifact, chunker)) = record.artifact(id)? else {
                continue;
            };
            store.add_artifact(&artifact, chunker)?;
        }
        Ok(())
    }

    /// Publishes the cached snapshot `sha` (indexed into the cache just now), its manifest
    /// stored against the nearest published first-parent ancestor.
    pub(crate) fn publish(&self, record: &PgSnapshots, repo: &Repo, sha: &str) -> Result<()> {
        let store = self.open_store()?;
        let row = store.snapshot(sha)?.ok_or_else(|| {
            Error::internal(format!(
                "snapshot {sha} was indexed but is not in the store"
            ))
        })?;
        let basis = store.snapshot_basis(sha)?;
        let keys = store.manifest_keys(sha)?;
        let manifest: Vec<Entry> = keys
            .iter()
            .map(|(path, blob, chunker, _)| (path.clone(), blob.clone(), *chunker))
            .collect();
        let published: HashSet<String> = record.shas()?.into_iter().collect();
        let parent = repo
            .ancestors(sha, crate::snapshot::ANCESTOR_SEARCH)
            .into_iter()
            .find(|a| published.contains(a));
        let stats = SnapshotStats {
            files: row.files,
            chunks: row.chunks,
            skipped: row.skipped,
            seconds: row.seconds,
        };
        record.publish(
            &Publish {
                sha,
                stats: &stats,
                basis: basis.as_deref(),
                manifest: &manifest,
                parent: parent.as_deref(),
            },
            &mut |indexes| {
                indexes
                    .iter()
                    .map(|i| store.export_file(keys[*i].3))
                    .collect()
            },
        )?;
        Ok(())
    }
}
