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
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ctxpack_core::Masker;
use ctxpack_meter::Meter;
use ctxpack_store::{NewChunk, NewFile, SnapshotStats, Store, failpoint};

use crate::chunk::{CHUNKER_VERSION, ChunkOptions, chunk};
use crate::error::IndexError;
use crate::git::{EntryKind, Repo, TreeEntry};
use crate::ignore::{IGNORE_FILE, IgnoreRules};

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

/// The phases of an index run, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexPhase {
    /// Walking the commit's tree and reading the blobs of new file versions.
    Reading,
    /// Chunking, masking and costing new file versions (on every core).
    Chunking,
    /// Writing new file versions and their lexical entries, then the snapshot.
    Writing,
}

impl IndexPhase {
    /// A lower-case name for progress displays: `reading`, `chunking`, `writing`.
    pub fn name(self) -> &'static str {
        match self {
            IndexPhase::Reading => "reading",
            IndexPhase::Chunking => "chunking",
            IndexPhase::Writing => "writing",
        }
    }
}

/// How often the reading and writing phases report progress, in files.
pub const PROGRESS_EVERY: usize = 256;

/// What an index run reports as it goes: `(phase, done, total)` in files. Returning
/// [`ControlFlow::Break`] cancels the run at the next unit of work; the snapshot is then not
/// committed (nothing a reader can see changes) and the run ends with
/// [`IndexError::Cancelled`].
pub type Progress<'a> = &'a mut dyn FnMut(IndexPhase, u64, u64) -> ControlFlow<()>;

/// Indexes commit `sha` into `store`. The caller holds the store's writer lock.
///
/// `progress` is called at the start and end of every phase and at least every
/// [`PROGRESS_EVERY`] files (every 50 ms while chunking); it can cancel the run.
pub fn index_commit(
    repo: &Repo,
    store: &mut Store,
    sha: &str,
    options: &IndexOptions,
    progress: Progress<'_>,
) -> Result<IndexReport, IndexError> {
    let mut report = |phase: IndexPhase, done: usize, total: usize| -> Result<(), IndexError> {
        match progress(phase, done as u64, total as u64) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => Err(IndexError::Cancelled),
        }
    };
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
    report(IndexPhase::Reading, 0, 0)?;
    let entries = repo.tree_entries(sha)?;
    let rules = commit_rules(repo, &entries)?;
    let mut ignored = rules.matcher();

    let mut summary = IndexReport {
        sha: sha.to_owned(),
        files: entries.len() as u64,
        ..IndexReport::default()
    };
    // Skips this commit decides: counted for the snapshot, never stored with a version.
    let mut commit_skips: BTreeMap<String, u64> = BTreeMap::new();
    let mut skip = |reason: &str| *commit_skips.entry(reason.to_owned()).or_default() += 1;
    let mut listed: Vec<(&TreeEntry, Plan)> = Vec::with_capacity(entries.len());
    let mut new_files: Vec<NewFile> = Vec::new();
    let mut to_chunk: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut pending_lexical = store.pending_files()?;
    let total = entries.len();
    for (n, entry) in entries.iter().enumerate() {
        if n % PROGRESS_EVERY == 0 {
            report(IndexPhase::Reading, n, total)?;
        }
        match entry.kind {
            EntryKind::Symlink => {
                skip("symlink");
                continue;
            }
            EntryKind::Submodule => {
                skip("submodule");
                continue;
            }
            EntryKind::File if ignored.is_ignored(&entry.raw_path) => {
                skip("ignored");
                continue;
            }
            EntryKind::File => {}
        }
        if let Some(version) = store.file_version(&entry.path, &entry.id, STORED_CHUNKER)? {
            summary.reused += 1;
            if !version.ready && !pending_lexical.contains(&version.id) {
                pending_lexical.push(version.id);
            }
            listed.push((entry, Plan::Reuse(version.id)));
            continue;
        }
        let bytes = match repo.blob_size_if_present(&entry.id)? {
            Some(bytes) => bytes,
            // A partial clone lacks some blobs by design, and a damaged pack loses some: the
            // rest of the commit is still worth indexing. The file is counted, so the summary
            // says what is missing (`git fsck` tells why).
            None => {
                skip(OBJECT_NOT_PRESENT);
                continue;
            }
        };
        let too_large = bytes > options.max_file_bytes;
        if !too_large {
            to_chunk.push((new_files.len(), repo.read_blob(&entry.id)?));
        }
        listed.push((entry, Plan::New(new_files.len())));
        new_files.push(NewFile {
            path: entry.path.clone(),
            blob: entry.id.clone(),
            bytes,
            skip_reason: too_large.then(|| "too_large".to_owned()),
            chunks: Vec::new(),
        });
    }
    report(IndexPhase::Reading, total, total)?;
    failpoint("index:read");
    summary.processed = new_files.len() as u64;

    chunk_all(&mut new_files, to_chunk, options, &mut |done, total| {
        report(IndexPhase::Chunking, done, total).is_ok()
    })?;
    failpoint("index:chunked");

    // Write new versions in batches, then their lexical entries, then the snapshot.
    let writes = new_files.len();
    let mut new_ids = Vec::with_capacity(writes);
    for batch in new_files.chunks(PROGRESS_EVERY) {
        report(IndexPhase::Writing, new_ids.len(), writes)?;
        new_ids.extend(store.insert_files(batch, STORED_CHUNKER)?);
        failpoint("index:files-written");
    }
    let mut lexical: Vec<i64> = new_files
        .iter()
        .zip(&new_ids)
        .filter(|(f, _)| f.skip_reason.is_none())
        .map(|(_, &id)| id)
        .collect();
    lexical.extend(pending_lexical);
    store.index_lexical(&lexical)?;
    failpoint("index:lexical-committed");

    let manifest: Vec<(String, i64)> = listed
        .iter()
        .map(|(e, plan)| {
            let id = match plan {
                Plan::Reuse(id) => *id,
                Plan::New(i) => new_ids[*i],
            };
            (e.path.clone(), id)
        })
        .collect();
    let mut stats = store.manifest_stats(&manifest)?;
    // The snapshot counts every file of the commit, listed or not.
    stats.files = summary.files;
    for (reason, n) in commit_skips {
        *stats.skipped.entry(reason).or_default() += n;
    }
    summary.chunks = stats.chunks;
    summary.skipped = stats.skipped.clone();
    summary.seconds = started.elapsed().as_secs_f64();
    // The last chance to cancel: after this the snapshot exists.
    report(IndexPhase::Writing, writes, writes)?;
    store.commit_snapshot(
        sha,
        &manifest,
        &SnapshotStats {
            seconds: summary.seconds,
            ..stats
        },
    )?;
    failpoint("index:snapshot-committed");
    Ok(summary)
}

/// The ignore rules of a commit: the defaults and every `.ctxpackignore` file in its tree.
fn commit_rules(repo: &Repo, entries: &[TreeEntry]) -> Result<IgnoreRules, IndexError> {
    let mut files = Vec::new();
    for entry in entries {
        let (dir, name) = match entry.raw_path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&entry.raw_path[..slash], &entry.raw_path[slash + 1..]),
            None => (&entry.raw_path[..0], &entry.raw_path[..]),
        };
        // Like git, which does not follow a symbolic link to an ignore file in a tree.
        if entry.kind == EntryKind::File && name == IGNORE_FILE.as_bytes() {
            // The rules decide what the snapshot holds: a commit whose rules cannot be read
            // (even in a partial clone) is not indexed with a guess at them.
            files.push((dir, repo.read_blob(&entry.id)?));
        }
    }
    Ok(IgnoreRules::new(
        files
            .iter()
            .map(|(dir, content)| (*dir, content.as_slice())),
    ))
}

/// A file's chunks, or the reason it was skipped after reading it.
pub type Chunked = Result<Vec<NewChunk>, &'static str>;

/// Decodes, chunks, masks and costs files on worker threads. `progress(done, total)` is
/// called every 50 ms; when it returns `false` the workers stop taking files and the run is
/// cancelled.
fn chunk_all(
    files: &mut [NewFile],
    work: Vec<(usize, Vec<u8>)>,
    options: &IndexOptions,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<(), IndexError> {
    let total = work.len();
    if total == 0 {
        return if progress(0, 0) {
            Ok(())
        } else {
            Err(IndexError::Cancelled)
        };
    }
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(total);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Chunked)>> = Mutex::new(Vec::with_capacity(total));
    let masker = Masker::new();
    let paths: Vec<String> = work.iter().map(|(i, _)| files[*i].path.clone()).collect();
    let mut cancelled = false;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some((index, bytes)) = work.get(k) else {
                        break;
                    };
                    let outcome = chunk_file(&paths[k], bytes, options, &masker);
                    results
                        .lock()
                        .expect("no worker panics while holding the lock")
                        .push((*index, outcome));
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // Report progress from this thread while workers run.
        loop {
            let d = done.load(Ordering::Relaxed);
            if !progress(d, total) {
                // Workers finish the file they hold and take no other.
                next.store(total, Ordering::Relaxed);
                cancelled = true;
                break;
            }
            if d >= total {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    if cancelled {
        return Err(IndexError::Cancelled);
    }
    for (index, outcome) in results.into_inner().expect("workers finished") {
        match outcome {
            Ok(chunks) => files[index].chunks = chunks,
            Err(reason) => files[index].skip_reason = Some(reason.to_owned()),
        }
    }
    Ok(())
}

/// Decodes, chunks, masks and costs one text the way indexing does (for artifacts): the reason
/// it cannot be indexed (`binary`, `invalid_utf8`) otherwise.
pub fn prepare_text(name: &str, bytes: &[u8], options: &IndexOptions) -> Chunked {
    chunk_file(name, bytes, options, &Masker::new())
}

fn chunk_file(path: &str, bytes: &[u8], options: &IndexOptions, masker: &Masker) -> Chunked {
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return Err("binary");
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "invalid_utf8")?;
    let chunks = chunk(path, text, &options.chunk);
    Ok(chunks
        .into_iter()
        .map(|c| {
            let (masked, redactions) = masker.mask(&c.text);
            let text = masked.into_owned();
            let mut costs = [None; 5];
            for (i, meter) in Meter::ALL.iter().enumerate() {
                if options.meters.contains(meter) {
                    costs[i] = Some(meter.count(&text));
                }
            }
            NewChunk {
                start_line: c.start_line,
                end_line: c.end_line,
                symbol: c.symbol,
                text,
                costs,
                redactions,
            }
        })
        .collect())
}
