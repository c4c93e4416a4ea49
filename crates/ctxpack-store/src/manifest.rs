//! Snapshot manifests, stored as changes.
//!
//! A snapshot's manifest maps every path it lists to a file version. A snapshot with no
//! indexed parent stores its manifest whole. A child of an indexed snapshot stores only the
//! rows that differ from its *base*, another snapshot on its parent's line: a path with a
//! different file version, or a path the base lists and it does not (a row without a
//! version). A commit that changes one file then adds a row or a few, not one per file of
//! the tree.
//!
//! The base is chosen as skip deltas choose it: a snapshot's sequence number is its parent's
//! plus one (0 when stored whole), and the snapshot numbered `s` is stored against the
//! snapshot on its parent's base chain numbered `s` with its lowest set bit cleared. Reading a
//! manifest walks at most `log2(s) + 1` snapshots, and each change is stored in at most as
//! many deltas. `gc` removes snapshots from the middle of a chain by folding their rows into
//! the kept snapshots above them, so a chain only ever ends at a whole manifest.
//!
//! Stores of format 3 and older have no bases: every manifest there is whole.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{OptionalExtension, Transaction, params};

use crate::db::{SnapshotStats, Store, sql_error};
use crate::error::StoreError;

/// Manifest rows by path: a file version, or `None` for a path not listed.
pub(crate) type Rows = Vec<(String, Option<i64>)>;

/// The manifest a writer commits with a snapshot.
#[derive(Clone, Debug, PartialEq)]
pub enum Manifest {
    /// Every listed path with its file version.
    Whole(Vec<(String, i64)>),
    /// The paths whose listing differs from the parent's: the new file version, or `None`
    /// when the path is no longer listed.
    Changes(Rows),
}

/// A snapshot to commit.
#[derive(Clone, Debug)]
pub struct NewSnapshot<'a> {
    /// Full commit SHA.
    pub sha: &'a str,
    /// An indexed snapshot of an ancestor (the indexer takes the nearest on the first-parent
    /// line), if any: its manifest is stored as changes against that snapshot's line.
    pub parent: Option<&'a str>,
    /// Its manifest ([`Manifest::Changes`] needs a parent).
    pub manifest: Manifest,
    /// Counts of its files and chunks.
    pub stats: SnapshotStats,
    /// What the indexer's per-commit decisions depended on, as the indexer records it (opaque
    /// to the store): a child may reuse them only when they are unchanged.
    pub basis: Option<String>,
}

/// One snapshot on a chain: its base and sequence number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) sha: String,
    pub(crate) base: Option<String>,
    pub(crate) seq: i64,
}

/// Folds deltas given newest first into one: the first row for a path wins.
fn fold(layers: impl IntoIterator<Item = Rows>) -> BTreeMap<String, Option<i64>> {
    let mut out = BTreeMap::new();
    for layer in layers {
        for (path, id) in layer {
            out.entry(path).or_insert(id);
        }
    }
    out
}

impl Store {
    /// Whether this store keeps manifests as changes (format 4 on).
    fn has_bases(&self) -> bool {
        self.format_version() >= 4
    }

    /// The chain of `sha`: the snapshot itself, then its base, its base's base …, down to
    /// the one stored whole. Empty when `sha` is not indexed.
    pub(crate) fn chain(&self, sha: &str) -> Result<Vec<Link>, StoreError> {
        chain_in(&self.conn, &self.dir, sha, self.has_bases())
    }

    /// The rows of `links` (a chain's snapshots stored as changes, newest first) folded into
    /// one change against the snapshot below them.
    pub(crate) fn folded(
        &self,
        links: &[Link],
    ) -> Result<BTreeMap<String, Option<i64>>, StoreError> {
        Ok(fold(
            links
                .iter()
                .map(|link| rows(&self.conn, &self.dir, &link.sha))
                .collect::<Result<Vec<_>, _>>()?,
        ))
    }

    /// The manifest of snapshot `sha`: every listed path with its file version, by path.
    pub fn manifest(&self, sha: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let chain = self.chain(sha)?;
        let Some((whole, deltas)) = chain.split_last() else {
            return Ok(Vec::new());
        };
        let mut changed = self.folded(deltas)?.into_iter().peekable();
        let base = rows(&self.conn, &self.dir, &whole.sha)?;
        let mut out = Vec::with_capacity(base.len());
        // Both are ordered by path: merge them, the change winning.
        for (path, id) in base {
            while let Some((p, _)) = changed.peek()
                && *p < path
            {
                let (p, id) = changed.next().expect("peeked");
                out.extend(id.map(|id| (p, id)));
            }
            if changed.peek().is_some_and(|(p, _)| *p == path) {
                let (p, id) = changed.next().expect("peeked");
                out.extend(id.map(|id| (p, id)));
            } else if let Some(id) = id {
                out.push((path, id));
            }
        }
        out.extend(changed.filter_map(|(p, id)| id.map(|id| (p, id))));
        Ok(out)
    }

    /// The file versions snapshot `sha` lists, in no particular order: [`Store::manifest`]
    /// without the paths, which a search needs and which it reads without copying them.
    pub fn manifest_ids(&self, sha: &str) -> Result<Vec<i64>, StoreError> {
        let chain = self.chain(sha)?;
        let Some((whole, deltas)) = chain.split_last() else {
            return Ok(Vec::new());
        };
        let changed = self.folded(deltas)?;
        let e = |err| sql_error(&self.dir, err);
        let mut out: Vec<i64> = changed.values().filter_map(|id| *id).collect();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, file_id FROM manifest WHERE snapshot = ?1")
            .map_err(e)?;
        let mut rows = stmt.query([&whole.sha]).map_err(e)?;
        while let Some(row) = rows.next().map_err(e)? {
            let Some(id) = row.get::<_, Option<i64>>(1).map_err(e)? else {
                continue;
            };
            if !changed.is_empty() {
                let path = row
                    .get_ref(0)
                    .map_err(e)?
                    .as_str()
                    .map_err(|err| e(err.into()))?;
                if changed.contains_key(path) {
                    continue;
                }
            }
            out.push(id);
        }
        Ok(out)
    }

    /// The file version snapshot `sha` lists for `path`, if it lists the path.
    pub fn manifest_entry(&self, sha: &str, path: &str) -> Result<Option<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT file_id FROM manifest WHERE snapshot = ?1 AND path = ?2")
            .map_err(|e| sql_error(&self.dir, e))?;
        for link in self.chain(sha)? {
            let row: Option<Option<i64>> = stmt
                .query_row([&link.sha, path], |r| r.get(0))
                .optional()
                .map_err(|e| sql_error(&self.dir, e))?;
            if let Some(id) = row {
                return Ok(id);
            }
        }
        Ok(None)
    }

    /// The rows stored for snapshot `sha` itself (its whole manifest, or its changes against
    /// its base): what a snapshot costs in the manifest table.
    pub fn manifest_rows(&self, sha: &str) -> Result<u64, StoreError> {
        self.conn
            .query_row(
                "SELECT count(*) FROM manifest WHERE snapshot = ?1",
                [sha],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// What the indexer recorded its per-commit decisions depended on, for snapshot `sha`.
    pub fn snapshot_basis(&self, sha: &str) -> Result<Option<String>, StoreError> {
        if !self.has_bases() {
            return Ok(None);
        }
        self.conn
            .query_row("SELECT basis FROM snapshots WHERE sha = ?1", [sha], |r| {
                r.get(0)
            })
            .optional()
            .map(Option::flatten)
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Counts of a set of file versions: files, chunks, and skipped files by reason.
    pub fn manifest_stats(&self, ids: &[i64]) -> Result<SnapshotStats, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT skip_reason, (SELECT count(*) FROM chunks WHERE file_id = f.id) \
                 FROM files f WHERE id = ?1",
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        let mut stats = SnapshotStats {
            files: ids.len() as u64,
            ..SnapshotStats::default()
        };
        for id in ids {
            let (skip, chunks): (Option<String>, i64) = stmt
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| sql_error(&self.dir, e))?;
            stats.chunks += chunks as u64;
            if let Some(reason) = skip {
                *stats.skipped.entry(reason).or_default() += 1;
            }
        }
        Ok(stats)
    }

    /// Commits a snapshot: marks its file versions ready and writes the snapshot row and its
    /// manifest in one transaction. Until this returns, readers do not see the snapshot.
    pub fn commit_snapshot(&mut self, snapshot: &NewSnapshot<'_>) -> Result<(), StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let parent = match snapshot.parent {
            Some(parent) if parent != snapshot.sha => self.chain(parent)?,
            _ => Vec::new(),
        };
        // Rows to store against `base`, and the listed versions to mark ready.
        let (base, seq, stored, listed) = match (&snapshot.manifest, parent.first()) {
            (Manifest::Whole(rows), None) => (
                None,
                0,
                rows.iter()
                    .map(|(p, id)| (p.clone(), Some(*id)))
                    .collect::<Rows>(),
                rows.iter().map(|(_, id)| *id).collect::<Vec<i64>>(),
            ),
            (Manifest::Changes(_), None) => {
                return Err(StoreError::Corrupt {
                    dir: dir.clone(),
                    detail: format!(
                        "the parent snapshot of {} is not indexed, so its changes cannot be stored",
                        snapshot.sha
                    ),
                });
            }
            (manifest, Some(top)) => {
                let changes = match manifest {
                    Manifest::Changes(changes) => changes.clone(),
                    Manifest::Whole(rows) => diff(&self.manifest(&top.sha)?, rows),
                };
                let listed = changes.iter().filter_map(|(_, id)| *id).collect();
                let seq = top.seq + 1;
                let target = seq & (seq - 1);
                // The parent's chain down to the first snapshot numbered at most
                // `target` (or stored whole): its deltas and the changes, newest first.
                let mut layers = vec![changes];
                let mut base = None;
                for link in &parent {
                    if link.seq <= target || link.base.is_none() {
                        base = Some(link.sha.clone());
                        break;
                    }
                    layers.push(rows(&self.conn, &dir, &link.sha)?);
                }
                let stored: Rows = fold(layers).into_iter().collect();
                (base, seq, stored, listed)
            }
        };
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut ready = tx
                .prepare_cached("UPDATE files SET ready = 1 WHERE id = ?1 AND ready = 0")
                .map_err(e)?;
            tx.execute("DELETE FROM manifest WHERE snapshot = ?1", [snapshot.sha])
                .map_err(e)?;
            tx.execute("DELETE FROM snapshots WHERE sha = ?1", [snapshot.sha])
                .map_err(e)?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let stats = &snapshot.stats;
            tx.execute(
                "INSERT INTO snapshots (sha, indexed_at, files, chunks, skipped, seconds, base, seq, basis) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    snapshot.sha,
                    now,
                    stats.files as i64,
                    stats.chunks as i64,
                    serde_json::to_string(&stats.skipped).expect("a map of counts serializes"),
                    stats.seconds,
                    base,
                    seq,
                    snapshot.basis,
                ],
            )
            .map_err(e)?;
            for id in listed {
                ready.execute([id]).map_err(e)?;
            }
            write_rows(&tx, snapshot.sha, &stored).map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(())
    }
}

/// The rows that turn manifest `old` into `new` (both ordered by path).
pub(crate) fn diff(old: &[(String, i64)], new: &[(String, i64)]) -> Rows {
    let old: HashMap<&str, i64> = old.iter().map(|(p, id)| (p.as_str(), *id)).collect();
    let mut out: Rows = new
        .iter()
        .filter(|(p, id)| old.get(p.as_str()) != Some(id))
        .map(|(p, id)| (p.clone(), Some(*id)))
        .collect();
    let kept: HashSet<&str> = new.iter().map(|(p, _)| p.as_str()).collect();
    out.extend(
        old.keys()
            .filter(|p| !kept.contains(*p))
            .map(|p| ((*p).to_owned(), None)),
    );
    out.sort();
    out
}

/// The chain of `sha` in `conn`: itself, its base, … down to the snapshot stored whole.
pub(crate) fn chain_in(
    conn: &rusqlite::Connection,
    dir: &std::path::Path,
    sha: &str,
    has_bases: bool,
) -> Result<Vec<Link>, StoreError> {
    let e = |err| sql_error(dir, err);
    if !has_bases {
        let found: Option<String> = conn
            .query_row("SELECT sha FROM snapshots WHERE sha = ?1", [sha], |r| {
                r.get(0)
            })
            .optional()
            .map_err(e)?;
        return Ok(found
            .map(|sha| Link {
                sha,
                base: None,
                seq: 0,
            })
            .into_iter()
            .collect());
    }
    let mut stmt = conn
        .prepare_cached("SELECT sha, base, seq FROM snapshots WHERE sha = ?1")
        .map_err(e)?;
    let mut out: Vec<Link> = Vec::new();
    let mut next = Some(sha.to_owned());
    while let Some(sha) = next {
        let Some(link) = stmt
            .query_row([&sha], |r| {
                Ok(Link {
                    sha: r.get(0)?,
                    base: r.get(1)?,
                    seq: r.get(2)?,
                })
            })
            .optional()
            .map_err(e)?
        else {
            if out.is_empty() {
                return Ok(out);
            }
            return Err(StoreError::Corrupt {
                dir: dir.to_owned(),
                detail: format!("snapshot {sha}, the base of another, is missing"),
            });
        };
        // Bases are strictly lower in sequence, so a chain cannot loop; a damaged store that
        // says otherwise is refused rather than followed.
        if out.last().is_some_and(|prev| prev.seq <= link.seq) {
            return Err(StoreError::Corrupt {
                dir: dir.to_owned(),
                detail: format!("snapshot {} has a base that is not older", link.sha),
            });
        }
        next = link.base.clone();
        out.push(link);
    }
    Ok(out)
}

/// The manifest rows stored for one snapshot, by path.
pub(crate) fn rows(
    conn: &rusqlite::Connection,
    dir: &std::path::Path,
    sha: &str,
) -> Result<Rows, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT path, file_id FROM manifest WHERE snapshot = ?1 ORDER BY path")
        .map_err(|e| sql_error(dir, e))?;
    let rows = stmt
        .query_map([sha], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|e| sql_error(dir, e))?;
    rows.collect::<Result<_, _>>()
        .map_err(|e| sql_error(dir, e))
}

/// Writes the manifest rows of one snapshot.
pub(crate) fn write_rows(
    tx: &Transaction<'_>,
    sha: &str,
    rows: &[(String, Option<i64>)],
) -> rusqlite::Result<()> {
    let mut entry =
        tx.prepare_cached("INSERT INTO manifest (snapshot, path, file_id) VALUES (?1, ?2, ?3)")?;
    for (path, id) in rows {
        entry.execute(params![sha, path, id])?;
    }
    Ok(())
}
