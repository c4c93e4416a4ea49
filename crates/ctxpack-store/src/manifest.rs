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
//!
//! Since format 7 each snapshot also records what its whole manifest was when it was
//! committed ([`Record`]): how many paths it lists, a sum over the file versions it lists, and
//! a digest of its rows. Every read that folds a manifest compares the count and the sum with
//! the record (the fold has both in hand, so this costs a pass over integers), so a row deleted,
//! added or pointed at another or a missing file version is damage, never a file silently
//! missing from a pack; `verify` compares the digest too. A child's record is its parent's
//! updated by the child's changes, so committing a one-file change never reads the whole
//! manifest. Snapshots committed before format 7 have no record and are read as they are.
//!
//! Since format 13 a snapshot stored whole also keeps its file versions as one list
//! ([`crate::file_list`]), which a search reads instead of walking the rows; what it reads is
//! checked against the record the same way, and `verify` compares the list with the rows.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{OptionalExtension, Transaction, params};

use crate::db::{SnapshotStats, Store, sql_error};
use crate::error::StoreError;
use crate::file_list::write_file_list;

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

/// A digest of a set of manifest rows that neither depends on their order nor needs them all to
/// be updated: the sum, modulo 2^256, of the SHA-256 of each row (an additive multiset hash).
/// Adding a row adds its hash and removing one subtracts it, so a snapshot stored as a few
/// changed rows gets the digest of its whole manifest from its parent's in as many steps. Like
/// [`checksum`](crate::checksum) it detects damage, not forgery. A store hashes a row as
/// `path NUL id LF` (the file version's id in decimal: ids are the store's own), the
/// PostgreSQL backend as `path NUL blob NUL chunker LF`; git paths hold no NUL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManifestDigest([u64; 4]);

impl ManifestDigest {
    /// The SHA-256 of the concatenated `parts`, as a 256-bit number (least significant limb
    /// first).
    fn hash(parts: &[&[u8]]) -> [u64; 4] {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part);
        }
        let bytes = hasher.finalize();
        let mut limbs = [0u64; 4];
        for (limb, eight) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            *limb = u64::from_le_bytes(eight.try_into().expect("chunks of eight bytes"));
        }
        limbs
    }

    /// Adds the row whose bytes are the concatenated `parts`.
    pub fn add(&mut self, parts: &[&[u8]]) {
        let mut carry = false;
        for (limb, term) in self.0.iter_mut().zip(Self::hash(parts)) {
            let (sum, over) = limb.overflowing_add(term);
            let (sum, over_carry) = sum.overflowing_add(u64::from(carry));
            *limb = sum;
            carry = over || over_carry;
        }
    }

    /// Removes the row whose bytes are the concatenated `parts` (added before).
    pub fn remove(&mut self, parts: &[&[u8]]) {
        let mut borrow = false;
        for (limb, term) in self.0.iter_mut().zip(Self::hash(parts)) {
            let (difference, under) = limb.overflowing_sub(term);
            let (difference, under_borrow) = difference.overflowing_sub(u64::from(borrow));
            *limb = difference;
            borrow = under || under_borrow;
        }
    }

    /// 64 lowercase hex digits, most significant first: how the digest is stored.
    pub fn to_hex(&self) -> String {
        self.0
            .iter()
            .rev()
            .map(|limb| format!("{limb:016x}"))
            .collect()
    }

    /// The digest [`to_hex`](ManifestDigest::to_hex) wrote; `None` for any other text.
    pub fn from_hex(text: &str) -> Option<ManifestDigest> {
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut limbs = [0u64; 4];
        for (i, limb) in limbs.iter_mut().rev().enumerate() {
            *limb = u64::from_str_radix(&text[i * 16..(i + 1) * 16], 16).ok()?;
        }
        Some(ManifestDigest(limbs))
    }
}

/// A snapshot's record of its whole manifest as committed (format 7).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    /// The paths it lists (skipped files included).
    pub(crate) files: u64,
    /// The wrapping sum of [`mix`] over the ids of the file versions it lists: what a read
    /// that has only the ids in hand (a search's) can check, with no path to hash. Mixed, so
    /// that rows changed together do not cancel out as plain ids moved up and down by one
    /// would.
    pub(crate) ids: u64,
    /// The digest of its rows.
    pub(crate) digest: ManifestDigest,
}

impl Record {
    /// The record of a whole manifest.
    pub(crate) fn of<'a>(rows: impl IntoIterator<Item = (&'a str, i64)>) -> Record {
        let mut record = Record::default();
        for (path, id) in rows {
            record.add(path, id);
        }
        record
    }

    /// Lists `path` with file version `id`.
    pub(crate) fn add(&mut self, path: &str, id: i64) {
        self.files += 1;
        self.ids = self.ids.wrapping_add(mix(id));
        self.digest
            .add(&[path.as_bytes(), b"\0", id.to_string().as_bytes(), b"\n"]);
    }

    /// No longer lists `path` with file version `id`.
    pub(crate) fn remove(&mut self, path: &str, id: i64) {
        self.files = self.files.wrapping_sub(1);
        self.ids = self.ids.wrapping_sub(mix(id));
        self.digest
            .remove(&[path.as_bytes(), b"\0", id.to_string().as_bytes(), b"\n"]);
    }
}

/// Spreads a file version id over 64 bits (the SplitMix64 finalizer), for [`Record::ids`].
pub(crate) fn mix(id: i64) -> u64 {
    let mut z = id.cast_unsigned().wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The sum a [`Record`] keeps of these file version ids.
fn sum_ids(ids: impl IntoIterator<Item = i64>) -> u64 {
    ids.into_iter()
        .fold(0u64, |sum, id| sum.wrapping_add(mix(id)))
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
    /// Checked against the snapshot's record: a manifest changed since it was committed is
    /// [`StoreError::Corrupt`].
    pub fn manifest(&self, sha: &str) -> Result<Vec<(String, i64)>, StoreError> {
        // The chain, its rows and the record from one read of the database: a `gc` committing
        // in between would otherwise be read half before and half after.
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        let listing = self.listing(sha)?;
        self.check_listing(sha, listing.len(), || listing.iter().map(|(_, id)| *id))?;
        Ok(listing)
    }

    /// [`Store::manifest`] as the rows stand, unchecked: what `verify` compares with the
    /// record, and what a record is made from.
    pub(crate) fn listing(&self, sha: &str) -> Result<Vec<(String, i64)>, StoreError> {
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
    /// Checked against the snapshot's record as [`Store::manifest`] is.
    pub fn manifest_ids(&self, sha: &str) -> Result<Vec<i64>, StoreError> {
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        let ids = self.listed_ids(sha)?;
        self.check_listing(sha, ids.len(), || ids.iter().copied())?;
        Ok(ids)
    }

    /// [`Store::manifest_ids`], unchecked.
    fn listed_ids(&self, sha: &str) -> Result<Vec<i64>, StoreError> {
        let chain = self.chain(sha)?;
        let Some((whole, deltas)) = chain.split_last() else {
            return Ok(Vec::new());
        };
        let changed = self.folded(deltas)?;
        if let Some(ids) = self.listed_from_file_list(&whole.sha, &changed)? {
            return Ok(ids);
        }
        let e = |err| sql_error(&self.dir, err);
        let mut out: Vec<i64> = changed.values().filter_map(|id| *id).collect();
        // The whole snapshot's rows come in path order (its key's), as the changed paths do
        // (bytes compared alike): one walk over both finds the paths a change replaced, with
        // a comparison a row and no copy or decoding of the path.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, file_id FROM manifest WHERE snapshot = ?1 ORDER BY snapshot, path",
            )
            .map_err(e)?;
        let mut rows = stmt.query([&whole.sha]).map_err(e)?;
        let mut changed_paths = changed.keys().map(String::as_bytes).peekable();
        while let Some(row) = rows.next().map_err(e)? {
            let Some(id) = row.get::<_, Option<i64>>(1).map_err(e)? else {
                continue;
            };
            if changed_paths.peek().is_some() {
                let path = row
                    .get_ref(0)
                    .map_err(e)?
                    .as_bytes()
                    .map_err(|err| e(err.into()))?;
                while changed_paths.next_if(|&changed| changed < path).is_some() {}
                if changed_paths.next_if(|&changed| changed == path).is_some() {
                    continue;
                }
            }
            out.push(id);
        }
        Ok(out)
    }

    /// The file version snapshot `sha` lists for `path`, if it lists the path.
    pub fn manifest_entry(&self, sha: &str, path: &str) -> Result<Option<i64>, StoreError> {
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        self.entry_on(&self.chain(sha)?, path)
    }

    /// The file version the snapshot at the top of `chain` lists for `path`, if any.
    fn entry_on(&self, chain: &[Link], path: &str) -> Result<Option<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT file_id FROM manifest WHERE snapshot = ?1 AND path = ?2")
            .map_err(|e| sql_error(&self.dir, e))?;
        for link in chain {
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

    /// The record of snapshot `sha`'s manifest; `None` when it has none (committed before
    /// format 7, or not indexed).
    pub(crate) fn record(&self, sha: &str) -> Result<Option<Record>, StoreError> {
        if self.format_version() < 7 {
            return Ok(None);
        }
        let row: Option<(Option<i64>, Option<i64>, Option<String>)> = self
            .conn
            .prepare_cached(
                "SELECT manifest_files, manifest_ids, manifest_digest FROM snapshots WHERE sha = ?1",
            )
            .and_then(|mut s| {
                s.query_row([sha], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .map_err(|e| sql_error(&self.dir, e))?;
        let Some((Some(files), Some(ids), Some(digest))) = row else {
            return Ok(None);
        };
        let corrupt = || StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!("the manifest record of snapshot {sha} is not one ctxpack writes"),
        };
        Ok(Some(Record {
            files: u64::try_from(files).map_err(|_| corrupt())?,
            ids: ids.cast_unsigned(),
            digest: ManifestDigest::from_hex(&digest).ok_or_else(corrupt)?,
        }))
    }

    /// Compares a fold of snapshot `sha`'s manifest — `files` paths listing the versions
    /// `ids` gives — with its record, if it has one. Only the count and the sum of the ids: a
    /// fold has both in hand, while the digest would hash every path (that is `verify`'s).
    fn check_listing<I: Iterator<Item = i64>>(
        &self,
        sha: &str,
        files: usize,
        ids: impl FnOnce() -> I,
    ) -> Result<(), StoreError> {
        let Some(record) = self.record(sha)? else {
            return Ok(());
        };
        let detail = if record.files != files as u64 {
            format!(
                "the manifest of snapshot {sha} lists {files} files where {} were committed",
                record.files
            )
        } else if record.ids != sum_ids(ids()) {
            match self.missing_reference(sha)? {
                Some((path, id)) => format!(
                    "the manifest of snapshot {sha} lists file version {id} for {path}, which is missing"
                ),
                None => format!(
                    "the manifest of snapshot {sha} lists other file versions than were committed"
                ),
            }
        } else {
            return Ok(());
        };
        Err(StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!("{detail}: the store was changed outside ctxpack"),
        })
    }

    /// A row of snapshot `sha`'s chain naming a file version that does not exist, if there
    /// is one: what a damaged manifest's error names (never read on the way to a pack).
    fn missing_reference(&self, sha: &str) -> Result<Option<(String, i64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, file_id FROM manifest m WHERE snapshot = ?1 AND file_id IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM files f WHERE f.id = m.file_id) ORDER BY path LIMIT 1",
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        for link in self.chain(sha)? {
            let row = stmt
                .query_row([&link.sha], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| sql_error(&self.dir, e))?;
            if row.is_some() {
                return Ok(row);
            }
        }
        Ok(None)
    }

    /// The error for a manifest row of snapshot `sha` naming file version `id`, which is not
    /// in the store.
    pub(crate) fn missing_version(&self, sha: &str, path: &str, id: i64) -> StoreError {
        StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!(
                "the manifest of snapshot {sha} lists file version {id} for {path}, which is missing: the store was changed outside ctxpack"
            ),
        }
    }

    /// The record of the manifest that `changes` make of the manifest of `parent`'s top:
    /// the parent's record updated row by row, or, when the parent has none (it was committed
    /// before format 7), the whole manifest's.
    fn record_after(&self, parent: &[Link], changes: &Rows) -> Result<Record, StoreError> {
        let Some(top) = parent.first() else {
            // Changes against nothing: they list what they list.
            return Ok(Record::of(
                changes
                    .iter()
                    .filter_map(|(path, id)| id.map(|id| (path.as_str(), id))),
            ));
        };
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        if let Some(mut record) = self.record(&top.sha)? {
            for (path, id) in changes {
                if let Some(old) = self.entry_on(parent, path)? {
                    record.remove(path, old);
                }
                if let Some(id) = id {
                    record.add(path, *id);
                }
            }
            return Ok(record);
        }
        let mut whole: BTreeMap<String, i64> = self.listing(&top.sha)?.into_iter().collect();
        for (path, id) in changes {
            match id {
                Some(id) => whole.insert(path.clone(), *id),
                None => whole.remove(path),
            };
        }
        Ok(Record::of(
            whole.iter().map(|(path, id)| (path.as_str(), *id)),
        ))
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
                .optional()
                .map_err(|e| sql_error(&self.dir, e))?
                .ok_or_else(|| StoreError::Corrupt {
                    dir: self.dir.clone(),
                    detail: format!(
                        "file version {id} is missing: the store was changed outside ctxpack"
                    ),
                })?;
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
        // What the whole manifest is, recorded with the snapshot.
        let record = match &snapshot.manifest {
            Manifest::Whole(rows) => Record::of(rows.iter().map(|(p, id)| (p.as_str(), *id))),
            Manifest::Changes(changes) => self.record_after(&parent, changes)?,
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
                "INSERT INTO snapshots (sha, indexed_at, files, chunks, skipped, seconds, base, seq, basis, \
                 manifest_files, manifest_ids, manifest_digest) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
                    record.files as i64,
                    record.ids.cast_signed(),
                    record.digest.to_hex(),
                ],
            )
            .map_err(e)?;
            for id in listed {
                ready.execute([id]).map_err(e)?;
            }
            write_rows(&tx, snapshot.sha, &stored).map_err(e)?;
            let whole = base
                .is_none()
                .then(|| stored.iter().filter_map(|(_, id)| *id));
            write_file_list(&tx, snapshot.sha, whole).map_err(e)?;
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::db::NewFile;

    #[test]
    fn a_digest_ignores_order_and_a_removal_undoes_an_addition() {
        let rows: [&[&[u8]]; 3] = [
            &[b"a.rs\0", b"1\n"],
            &[b"b.rs\0", b"2\n"],
            &[b"c.rs\0", b"3\n"],
        ];
        let mut forward = ManifestDigest::default();
        rows.iter().for_each(|row| forward.add(row));
        let mut backward = ManifestDigest::default();
        rows.iter().rev().for_each(|row| backward.add(row));
        assert_eq!(forward, backward);
        assert_ne!(forward, ManifestDigest::default());
        let mut two = forward;
        two.remove(rows[1]);
        let mut expected = ManifestDigest::default();
        expected.add(rows[0]);
        expected.add(rows[2]);
        assert_eq!(two, expected);
        // A sum that wraps round 2^256 comes back: every row removed is the empty digest.
        rows.iter().for_each(|row| forward.remove(row));
        assert_eq!(forward, ManifestDigest::default());
        let hex = expected.to_hex();
        assert_eq!(hex.len(), 64);
        assert_eq!(ManifestDigest::from_hex(&hex), Some(expected));
        for bad in ["", "zz", &hex[1..], &format!("+{}", &hex[1..])] {
            assert_eq!(ManifestDigest::from_hex(bad), None, "{bad}");
        }
    }

    /// A store with `n` skipped file versions `f0.rs` … (skipped, so nothing is chunked or
    /// indexed); their ids in order.
    fn store_with_files(n: usize) -> (tempfile::TempDir, Store, Vec<i64>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open_or_create(&dir.path().join("s")).expect("create");
        let files: Vec<NewFile> = (0..n)
            .map(|i| NewFile {
                path: format!("f{}.rs", i % 8),
                blob: format!("{i:040x}"),
                bytes: 1,
                skip_reason: Some("binary".into()),
                chunks: Vec::new(),
                imports: None,
            })
            .collect();
        let ids = store.insert_files(&files, 1).expect("files");
        (dir, store, ids)
    }

    fn commit(store: &mut Store, sha: &str, parent: Option<&str>, manifest: Manifest) {
        store
            .commit_snapshot(&NewSnapshot {
                sha,
                parent,
                manifest,
                stats: SnapshotStats::default(),
                basis: None,
            })
            .expect("commits");
    }

    /// The record kept with the snapshot is the record of its whole manifest.
    fn assert_recorded(store: &Store, sha: &str) {
        let listing = store.listing(sha).expect("a manifest");
        assert_eq!(
            store.record(sha).expect("reads"),
            Some(Record::of(listing.iter().map(|(p, id)| (p.as_str(), *id)))),
            "{sha}"
        );
        assert_eq!(store.manifest(sha).expect("checked"), listing);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Records kept change by change (the parent's record updated row by row, down chains
        /// of skip deltas) equal the record of each whole manifest, and still do after `gc`
        /// removes snapshots from the middle of the chains.
        #[test]
        fn records_kept_by_changes_are_those_of_the_whole_manifests(
            steps in prop::collection::vec(prop::collection::vec((0usize..8, 0usize..5), 1..4), 1..12),
            doomed in prop::collection::vec(any::<bool>(), 12),
        ) {
            // Five versions of each of eight paths; version 4 of a path means "not listed".
            let (_dir, mut store, ids) = store_with_files(40);
            let id = |path: usize, version: usize| ids[version * 8 + path];
            let whole: Vec<(String, i64)> =
                (0..8).map(|p| (format!("f{p}.rs"), id(p, 0))).collect();
            commit(&mut store, "s0", None, Manifest::Whole(whole));
            assert_recorded(&store, "s0");
            let mut shas = vec!["s0".to_owned()];
            for (n, step) in steps.iter().enumerate() {
                let sha = format!("s{}", n + 1);
                let mut changes: BTreeMap<String, Option<i64>> = BTreeMap::new();
                for &(path, version) in step {
                    changes.insert(format!("f{path}.rs"), (version < 4).then(|| id(path, version)));
                }
                let parent = shas.last().cloned();
                commit(&mut store, &sha, parent.as_deref(), Manifest::Changes(changes.into_iter().collect()));
                assert_recorded(&store, &sha);
                shas.push(sha);
            }
            let before: Vec<_> = shas.iter().map(|s| store.listing(s).expect("reads")).collect();
            let removed: Vec<String> = shas
                .iter()
                .zip(&doomed)
                .filter(|(_, gone)| **gone)
                .map(|(sha, _)| sha.clone())
                .collect();
            store.remove_snapshots(&removed).expect("gc");
            for (sha, listing) in shas.iter().zip(&before) {
                if !removed.contains(sha) {
                    prop_assert_eq!(&store.listing(sha).expect("reads"), listing);
                    assert_recorded(&store, sha);
                }
            }
            prop_assert!(store.damaged_manifests().expect("verifies").is_empty());
        }
    }

    #[test]
    fn a_changed_manifest_is_damage_on_every_read_that_folds_it() {
        let (_dir, mut store, ids) = store_with_files(16);
        let whole: Vec<(String, i64)> = (0..8).map(|p| (format!("f{p}.rs"), ids[p])).collect();
        commit(&mut store, "s0", None, Manifest::Whole(whole));
        commit(
            &mut store,
            "s1",
            Some("s0"),
            Manifest::Changes(vec![("f1.rs".into(), Some(ids[9]))]),
        );
        let committed: Vec<Vec<i64>> = ["s0", "s1"]
            .iter()
            .map(|sha| sorted(store.manifest_ids(sha).expect("reads")))
            .collect();
        let corrupt = |result: Result<(), StoreError>, needle: &str| match result {
            Err(StoreError::Corrupt { detail, .. }) => assert!(detail.contains(needle), "{detail}"),
            other => panic!("{other:?}"),
        };
        // A search reads the base's file list and no row of it but those the delta changes:
        // what it is scoped to is what was committed, while the rows read fail.
        let rows_fail = |store: &Store, needle: &str| {
            for (sha, ids) in ["s0", "s1"].iter().zip(&committed) {
                corrupt(store.manifest(sha).map(|_| ()), needle);
                assert_eq!(&sorted(store.manifest_ids(sha).expect("the list")), ids);
            }
        };
        // A row of the base deleted: both snapshots list one file fewer than they recorded.
        store
            .conn
            .execute(
                "DELETE FROM manifest WHERE snapshot = 's0' AND path = 'f5.rs'",
                [],
            )
            .expect("tamper");
        rows_fail(&store, "lists 7 files where 8 were committed");
        let damaged = store.damaged_manifests().expect("verifies");
        assert_eq!(damaged.len(), 2, "{damaged:?}");
        // Put back, then pointed at a version that does not exist (as a tool that does not
        // enforce foreign keys may leave it): named in the error.
        store
            .conn
            .pragma_update(None, "foreign_keys", "OFF")
            .expect("pragma");
        store
            .conn
            .execute(
                "INSERT INTO manifest (snapshot, path, file_id) VALUES ('s0', 'f5.rs', 999)",
                [],
            )
            .expect("tamper");
        rows_fail(&store, "lists file version 999 for f5.rs, which is missing");
        // Pointed at another version that exists: the sum of the ids tells.
        store
            .conn
            .execute(
                "UPDATE manifest SET file_id = ?1 WHERE snapshot = 's0' AND path = 'f5.rs'",
                [ids[13]],
            )
            .expect("tamper");
        rows_fail(&store, "lists other file versions than were committed");
        // As committed again: sound.
        store
            .conn
            .execute(
                "UPDATE manifest SET file_id = ?1 WHERE snapshot = 's0' AND path = 'f5.rs'",
                [ids[5]],
            )
            .expect("restore");
        assert!(store.manifest("s1").is_ok());
        assert!(store.damaged_manifests().expect("verifies").is_empty());
        // The file list changed instead: what a search reads fails, and `verify` names it.
        let list: Vec<u8> = store
            .conn
            .query_row("SELECT file_ids FROM snapshots WHERE sha = 's0'", [], |r| {
                r.get(0)
            })
            .expect("a list");
        for (tampered, needle) in [
            (
                crate::file_list::encode(committed[0][1..].iter().copied()),
                "lists 7 files where 8",
            ),
            (
                crate::file_list::encode(committed[0].iter().map(|id| id + 1)),
                "lists other file versions",
            ),
            (
                vec![0x80],
                "file list of snapshot s0 is not one ctxpack writes",
            ),
        ] {
            store
                .conn
                .execute(
                    "UPDATE snapshots SET file_ids = ?1 WHERE sha = 's0'",
                    [&tampered],
                )
                .expect("tamper");
            for sha in ["s0", "s1"] {
                corrupt(store.manifest_ids(sha).map(|_| ()), needle);
                assert!(store.manifest(sha).is_ok());
            }
            let damaged = store.damaged_manifests().expect("verifies");
            assert_eq!(damaged.len(), 1, "{damaged:?}");
            assert_eq!(damaged[0].0, "s0", "{damaged:?}");
        }
        store
            .conn
            .execute(
                "UPDATE snapshots SET file_ids = ?1 WHERE sha = 's0'",
                [&list],
            )
            .expect("restore");
        assert!(store.damaged_manifests().expect("verifies").is_empty());
        // A snapshot without a record (as a store before format 7 left it) is read as it is,
        // and recording it makes its manifest as it stands the one checked.
        store
            .conn
            .execute(
                "UPDATE snapshots SET manifest_files = NULL, manifest_ids = NULL, manifest_digest = NULL",
                [],
            )
            .expect("forget");
        store
            .conn
            .execute(
                "DELETE FROM manifest WHERE snapshot = 's0' AND path = 'f6.rs'",
                [],
            )
            .expect("tamper");
        assert_eq!(store.manifest("s1").expect("unchecked").len(), 7);
        assert_eq!(store.unrecorded_manifests().expect("reads"), ["s1", "s0"]);
        assert_eq!(store.record_manifests().expect("records").len(), 2);
        assert!(store.unrecorded_manifests().expect("reads").is_empty());
        assert_recorded(&store, "s1");
        assert_eq!(store.manifest_ids("s1").expect("as recorded").len(), 7);
        assert!(store.damaged_manifests().expect("verifies").is_empty());
    }

    fn sorted(mut ids: Vec<i64>) -> Vec<i64> {
        ids.sort_unstable();
        ids
    }
}
