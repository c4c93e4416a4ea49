//! Removing snapshots and reclaiming what only they used.
//!
//! Three steps, each safe to stop after (`gc` is crash-safe the way indexing is):
//!
//! 1. One transaction removes the snapshots and their manifest rows, first folding the rows
//!    of each removed snapshot into the kept snapshots stored as changes against it (a kept
//!    snapshot whose chain ends at a removed one is stored whole). File versions that no kept
//!    snapshot lists and no artifact uses are marked not ready: their lexical entries may
//!    still exist, and no reader can reach them.
//! 2. Their lexical entries are deleted and the lexical index is committed.
//! 3. One transaction deletes their chunks and rows.
//!
//! A run stopped after step 1 or 2 leaves versions that nothing lists and that the next `gc`
//! reclaims; an `index` run in between may list one of them again, and then indexes its
//! lexical entries again as it does for any version that is not ready.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::params;

use crate::db::{Store, sql_error};
use crate::error::StoreError;
use crate::failpoint;
use crate::file_list::write_file_list;
use crate::manifest::{Rows, chain_in, write_rows};

/// A resolved manifest: every listed path with its file version.
type Manifest = Vec<(String, i64)>;

/// What removing snapshots reclaimed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Snapshots removed.
    pub snapshots: u64,
    /// Kept snapshots whose stored manifest was rewritten (their base was removed).
    pub rebased: u64,
    /// File versions deleted with their chunks and lexical entries.
    pub file_versions: u64,
    /// Chunks deleted.
    pub chunks: u64,
}

impl Store {
    /// Pins or unpins snapshot `sha` (a pinned snapshot is never removed by rule). False when
    /// `sha` is not indexed.
    pub fn set_pinned(&mut self, sha: &str, pinned: bool) -> Result<bool, StoreError> {
        self.require_writable()?;
        let changed = self
            .conn
            .execute(
                "UPDATE snapshots SET pinned = ?2 WHERE sha = ?1",
                params![sha, i64::from(pinned)],
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        Ok(changed > 0)
    }

    /// Removes snapshots `doomed` and reclaims the file versions, chunks and lexical entries
    /// only they used (see the module documentation for the steps). Unknown SHAs are ignored.
    pub fn remove_snapshots(&mut self, doomed: &[String]) -> Result<Reclaimed, StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let doomed: BTreeSet<&str> = doomed.iter().map(String::as_str).collect();
        let mut reclaimed = Reclaimed::default();
        // Step 1: what each kept snapshot stored against a removed base becomes.
        let all: Vec<String> = self.snapshots()?.into_iter().map(|s| s.sha).collect();
        let has_bases = self.format_version() >= 4;
        let mut rewrites: BTreeMap<String, (Option<String>, Rows)> = BTreeMap::new();
        // Kept snapshots whose chain ends at a removed one, oldest first: the first is stored
        // whole, and each later one as its changes against the newest such whole snapshot
        // numbered below it, so a gc does not turn every kept snapshot into a whole manifest.
        let mut orphans: Vec<crate::manifest::Link> = Vec::new();
        for sha in all.iter().filter(|s| !doomed.contains(s.as_str())) {
            let chain = chain_in(&self.conn, &dir, sha, has_bases)?;
            // Only a snapshot whose own base goes is rewritten: a kept base below it is
            // rewritten itself if it needs to be, and reads the same afterwards.
            if !chain
                .get(1)
                .is_some_and(|base| doomed.contains(base.sha.as_str()))
            {
                continue;
            }
            // Its own rows and those of the removed snapshots below it, down to the first
            // kept one, fold into one delta against that one.
            match (1..chain.len()).find(|&i| !doomed.contains(chain[i].sha.as_str())) {
                Some(kept) => {
                    let folded = self.folded(&chain[..kept])?;
                    rewrites.insert(
                        sha.clone(),
                        (Some(chain[kept].sha.clone()), folded.into_iter().collect()),
                    );
                }
                None => orphans.push(chain[0].clone()),
            }
        }
        orphans.sort_by(|a, b| a.seq.cmp(&b.seq).then(a.sha.cmp(&b.sha)));
        // (sequence number, SHA, manifest) of each orphan stored whole.
        let mut wholes: Vec<(i64, String, Manifest)> = Vec::new();
        for orphan in orphans {
            let manifest = self.manifest(&orphan.sha)?;
            // Bases are numbered strictly below, so chains never loop.
            let stored = match wholes.iter().rev().find(|(seq, ..)| *seq < orphan.seq) {
                Some((_, base, rows)) => {
                    (Some(base.clone()), crate::manifest::diff(rows, &manifest))
                }
                None => {
                    let rows = manifest
                        .iter()
                        .map(|(p, id)| (p.clone(), Some(*id)))
                        .collect();
                    wholes.push((orphan.seq, orphan.sha.clone(), manifest));
                    (None, rows)
                }
            };
            rewrites.insert(orphan.sha, stored);
        }
        let has_histories = self.format_version() >= 8;
        let tx = self.conn.transaction().map_err(e)?;
        for (sha, (base, stored)) in &rewrites {
            tx.execute("DELETE FROM manifest WHERE snapshot = ?1", [sha])
                .map_err(e)?;
            write_rows(&tx, sha, stored).map_err(e)?;
            let whole = base
                .is_none()
                .then(|| stored.iter().filter_map(|(_, id)| *id));
            write_file_list(&tx, sha, whole).map_err(e)?;
            if has_bases {
                tx.execute(
                    "UPDATE snapshots SET base = ?2 WHERE sha = ?1",
                    params![sha, base],
                )
                .map_err(e)?;
            }
        }
        for sha in &doomed {
            tx.execute("DELETE FROM manifest WHERE snapshot = ?1", [sha])
                .map_err(e)?;
            if has_histories {
                tx.execute("DELETE FROM histories WHERE snapshot = ?1", [sha])
                    .map_err(e)?;
            }
            reclaimed.snapshots += tx
                .execute("DELETE FROM snapshots WHERE sha = ?1", [sha])
                .map_err(e)? as u64;
        }
        reclaimed.rebased = rewrites.len() as u64;
        tx.execute(
            "UPDATE files SET ready = 0 WHERE ready = 1 \
             AND id NOT IN (SELECT file_id FROM manifest WHERE file_id IS NOT NULL) \
             AND id NOT IN (SELECT file_id FROM artifacts)",
            [],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        failpoint("gc:snapshots-removed");

        // Step 2: every version nothing lists, this run's and any an interrupted run left.
        let unlisted: Vec<i64> = self.query_ids(
            "SELECT id FROM files \
             WHERE id NOT IN (SELECT file_id FROM manifest WHERE file_id IS NOT NULL) \
             AND id NOT IN (SELECT file_id FROM artifacts) ORDER BY id",
            [],
        )?;
        self.delete_lexical(&unlisted)?;
        failpoint("gc:lexical-deleted");

        // Step 3.
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut chunks = tx
                .prepare("DELETE FROM chunks WHERE file_id = ?1")
                .map_err(e)?;
            let mut files = tx.prepare("DELETE FROM files WHERE id = ?1").map_err(e)?;
            for id in &unlisted {
                reclaimed.chunks += chunks.execute([id]).map_err(e)? as u64;
                reclaimed.file_versions += files.execute([id]).map_err(e)? as u64;
            }
        }
        tx.commit().map_err(e)?;
        // Move the freed pages out of the write-ahead log, so later writes reuse them.
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(e)?;
        Ok(reclaimed)
    }
}
