//! Indexing a commit: tree → file versions → chunks → store, incrementally.
//!
//! File versions are content-addressed by (path, blob id, chunker version): a version the
//! store has seen is reused as is, so indexing the next commit reads, chunks and costs only
//! the blobs it changed. New versions are chunked in parallel, written to SQLite, then to the
//! lexical index; the snapshot and its manifest are committed last.
//!
//! A file version records only what its bytes decide (`too_large`, `binary`, `invalid_utf8`).
//! What the commit or the repository decides is decided again for every snapshot and never
//! stored with a version, since the same (path, blob) can be treated differently elsewhere:
//! `ignored` (this commit's `.ctxpackignore` rules), `symlink` and `submodule` (this commit's
//! entry modes; a link's blob can equal a file's) and `object_not_present` (a partial clone
//! that lacks the blob now may hold it later). Such a file is left out of the snapshot's
//! manifest, so nothing retrieves it, and counted in the snapshot's skipped files.

use std::collections::BTreeMap;
use std::time::Instant;

use ctxpack_meter::Meter;
use ctxpack_store::{Manifest, NewSnapshot, SnapshotStats, Store, failpoint};

use crate::chunk::{CHUNKER_VERSION, ChunkOptions};
use crate::error::IndexError;
use crate::git::Repo;

mod chunking;
mod progress;
mod walk;

use chunking::chunk_and_write;
pub use chunking::{Chunked, prepare_text};
use progress::Reporter;
pub use progress::{IndexPhase, PROGRESS_BYTES, PROGRESS_FILES, Pace, Progress, paced_batches};
pub use walk::ANCESTOR_STEPS;
use walk::{Listing, Walked, indexed_parent, walk_changes, walk_whole};

/// The meters a store computes at index time; others are counted when a pack needs them.
pub const DEFAULT_METERS: [Meter; 4] = [Meter::O200k, Meter::Words, Meter::Chars, Meter::Approx];

/// The version stored with each file: chunk boundaries and masked text depend on the chunker
/// and the masking rules (the units and thousands), and what a version records on the
/// millions: from one million on, only what the blob's bytes decide. Versions below one
/// million also recorded per-commit decisions (`ignored`, `symlink`, `submodule`) that
/// reusing them carried into other commits, so they are never reused; they stay for the
/// snapshots that list them.
pub const STORED_CHUNKER: u32 =
    1_000_000 + CHUNKER_VERSION * 1000 + ctxpack_core::MASK_RULES_VERSION;

// The parts of STORED_CHUNKER must not overflow into each other, or versions would collide.
const _: () = assert!(CHUNKER_VERSION < 1000 && ctxpack_core::MASK_RULES_VERSION < 1000);

/// Why a file of a commit is left out of its snapshot without being read.
const OBJECT_NOT_PRESENT: &str = "object_not_present";

/// How to index.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// Files larger than this are skipped as `too_large`.
    pub max_file_bytes: u64,
    /// Chunk sizes.
    pub chunk: ChunkOptions,
    /// Meters whose costs are stored with each chunk.
    pub meters: Vec<Meter>,
    /// Worker threads for chunking and counting (0 = one per core).
    pub threads: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            max_file_bytes: 1024 * 1024,
            chunk: ChunkOptions::default(),
            meters: DEFAULT_METERS.to_vec(),
            threads: 0,
        }
    }
}

/// What an index run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexReport {
    /// The commit.
    pub sha: String,
    /// True when the snapshot was already indexed and nothing was done.
    pub already_indexed: bool,
    /// Files in the commit's tree.
    pub files: u64,
    /// File versions read and chunked in this run.
    pub processed: u64,
    /// File versions reused from earlier snapshots.
    pub reused: u64,
    /// Chunks in the snapshot's files (0 when already indexed).
    pub chunks: u64,
    /// Files skipped, by reason. Those the commit skips without reading their content
    /// (`ignored`, `symlink`, `submodule`, `object_not_present`) are neither processed nor
    /// reused.
    pub skipped: BTreeMap<String, u64>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

enum Plan {
    Reuse(i64),
    New(usize),
}

/// Indexes commit `sha` into `store`. The caller holds the store's writer lock.
///
/// `progress` is called when each phase starts (reading also once before the tree is walked,
/// with a total of 0) and ends, and in between whenever the phase has handled
/// [`PROGRESS_FILES`] files or [`PROGRESS_BYTES`] bytes since its last report; it can cancel
/// the run. New versions are written to the database in batches of that size as chunking
/// finishes them. The last report of `committing` comes just before the one transaction that commits the
/// snapshot: the last chance to cancel.
pub fn index_commit(
    repo: &Repo,
    store: &mut Store,
    sha: &str,
    options: &IndexOptions,
    progress: Progress<'_>,
) -> Result<IndexReport, IndexError> {
    let started = Instant::now();
    if let Some(existing) = store.snapshot(sha)? {
        return Ok(IndexReport {
            sha: sha.to_owned(),
            already_indexed: true,
            files: existing.files,
            chunks: existing.chunks,
            skipped: existing.skipped,
            seconds: started.elapsed().as_secs_f64(),
            ..IndexReport::default()
        });
    }
    let mut report = Reporter::new(progress);
    report.start(IndexPhase::Reading, 0)?;
    let parent = indexed_parent(repo, store, sha)?;
    let pending_lexical = store.pending_files()?;
    let walked = match parent
        .as_ref()
        .and_then(|p| p.changes.as_ref().map(|c| (p, c)))
    {
        Some((parent, changes)) => {
            walk_changes(repo, store, parent, changes, options, &mut report)?
        }
        None => walk_whole(repo, store, sha, options, &mut report)?,
    };
    report.finish()?;
    failpoint("index:read");
    let Walked {
        files,
        listing,
        mut new_files,
        commit_skips,
        unready,
        basis,
    } = walked;
    // Versions stored before this run whose entries were never committed (a run stopped part
    // way): those the store knows of, and reused ones found not ready.
    let pending_lexical: Vec<i64> = pending_lexical
        .into_iter()
        .chain(unready)
        .collect::<std::collections::BTreeSet<i64>>()
        .into_iter()
        .collect();
    let mut summary = IndexReport {
        sha: sha.to_owned(),
        files,
        processed: new_files.len() as u64,
        ..IndexReport::default()
    };

    // Read, chunk and write the new versions as a stream, so memory holds a bounded window
    // of them, whatever the size of the commit.
    store.begin_lexical()?;
    let new_ids = chunk_and_write(repo, store, &mut new_files, options, &mut report)?;
    failpoint("index:chunked");

    // The new versions' entries went to the lexical writer as they were written; what is
    // left are the pending versions, counted as files (their size is not at hand).
    report.start(IndexPhase::Lexical, pending_lexical.len())?;
    // One writer for the whole run, committed once here: a run stopped before then leaves
    // these versions not ready, and the next run adds their entries again.
    let mut pace = Pace::new();
    let mut stopped = Ok(());
    store.index_lexical_with(&pending_lexical, &mut |done| {
        if pace.tick(0) {
            stopped = report.at(done);
        }
        stopped.is_ok()
    })?;
    stopped?;
    report.finish()?;
    failpoint("index:lexical-committed");

    let id_of = |plan: &Plan| match plan {
        Plan::Reuse(id) => *id,
        Plan::New(i) => new_ids[*i],
    };
    // The snapshot's counts: of every listed version for a whole manifest; the parent's,
    // less the versions it no longer lists and plus those it now lists, for changes.
    let (manifest, mut stats, listed) = match listing {
        Listing::Whole(listed) => {
            let rows: Vec<(String, i64)> = listed
                .iter()
                .map(|(p, plan)| (p.clone(), id_of(plan)))
                .collect();
            let ids: Vec<i64> = rows.iter().map(|(_, id)| *id).collect();
            report.start(IndexPhase::Committing, ids.len())?;
            let mut stats = SnapshotStats::default();
            for batch in paced_batches(ids.iter().map(|_| 0)) {
                add_stats(&mut stats, &store.manifest_stats(&ids[batch.clone()])?, 1);
                report.at(batch.end)?;
            }
            let listed = ids.len() as u64;
            (Manifest::Whole(rows), stats, listed)
        }
        Listing::Changes(changes) => {
            let parent = parent
                .as_ref()
                .expect("changes are listed against a parent");
            let rows: Vec<(String, Option<i64>)> = changes
                .iter()
                .map(|(p, _, plan)| (p.clone(), plan.as_ref().map(id_of)))
                .collect();
            report.start(IndexPhase::Committing, changes.len())?;
            let mut stats = SnapshotStats {
                chunks: parent.row.chunks,
                skipped: parent.row.skipped.clone(),
                ..SnapshotStats::default()
            };
            let commit_skipped: u64 = COMMIT_SKIPS
                .iter()
                .filter_map(|r| parent.row.skipped.get(*r))
                .sum();
            // A damaged store's counts must not wrap: they are counts, and saturate.
            let mut listed = parent.row.files.saturating_sub(commit_skipped);
            for batch in paced_batches(changes.iter().map(|_| 0)) {
                let removed: Vec<i64> = changes[batch.clone()].iter().filter_map(|c| c.1).collect();
                let added: Vec<i64> = rows[batch.clone()].iter().filter_map(|r| r.1).collect();
                add_stats(&mut stats, &store.manifest_stats(&removed)?, -1);
                add_stats(&mut stats, &store.manifest_stats(&added)?, 1);
                listed = (listed + added.len() as u64).saturating_sub(removed.len() as u64);
                report.at(batch.end)?;
            }
            (Manifest::Changes(rows), stats, listed)
        }
    };
    summary.reused = listed.saturating_sub(summary.processed);
    // The snapshot counts every file of the commit, listed or not.
    stats.files = files;
    for (reason, n) in commit_skips {
        let count = stats.skipped.entry(reason.clone()).or_default();
        *count = count.checked_add_signed(n).unwrap_or(0);
        if *count == 0 {
            stats.skipped.remove(&reason);
        }
    }
    summary.chunks = stats.chunks;
    summary.skipped = stats.skipped.clone();
    summary.seconds = started.elapsed().as_secs_f64();
    // The last chance to cancel: after this the snapshot exists.
    report.finish()?;
    store.commit_snapshot(&NewSnapshot {
        sha,
        parent: parent.as_ref().map(|p| p.row.sha.as_str()),
        manifest,
        stats: SnapshotStats {
            seconds: summary.seconds,
            ..stats
        },
        basis: Some(basis.encode()),
    })?;
    failpoint("index:snapshot-committed");
    // The snapshot's past, which its packs read for the history signals, is a function of the
    // snapshot alone: derived once, here. A shallow clone's past ends at its boundary and may
    // grow when it is deepened, so none is stored for it and its packs read git as it is then.
    if !repo.is_shallow() {
        let past = crate::history::History::load(repo, sha, crate::history::HISTORY_COMMITS);
        store.set_history(sha, &past.to_stored())?;
    }
    Ok(summary)
}

/// Why a commit leaves a file out of its snapshot without storing a version for it.
const COMMIT_SKIPS: [&str; 4] = ["ignored", "symlink", "submodule", OBJECT_NOT_PRESENT];

/// Adds (`sign` 1) or takes away (`sign` -1) the chunk and skip counts of `part`.
fn add_stats(stats: &mut SnapshotStats, part: &SnapshotStats, sign: i64) {
    let apply = |n: u64, d: u64| {
        if sign < 0 { n.saturating_sub(d) } else { n + d }
    };
    stats.chunks = apply(stats.chunks, part.chunks);
    for (reason, n) in &part.skipped {
        let count = stats.skipped.entry(reason.clone()).or_default();
        *count = apply(*count, *n);
        if *count == 0 {
            stats.skipped.remove(reason);
        }
    }
}
