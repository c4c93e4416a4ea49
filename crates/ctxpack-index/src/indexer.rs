//! Indexing a commit: tree → file versions → chunks → store, incrementally.
//!
//! File versions are content-addressed by (path, blob id, chunker version): a version the
//! store has seen is reused as is, so indexing the next commit reads, chunks and costs only
//! the blobs it changed. New versions are chunked in parallel, written to SQLite, then to the
//! lexical index; the snapshot and its manifest are committed last.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ctxpack_core::Masker;
use ctxpack_meter::Meter;
use ctxpack_store::{NewChunk, NewFile, SnapshotStats, Store};

use crate::chunk::{CHUNKER_VERSION, ChunkOptions, chunk};
use crate::error::IndexError;
use crate::git::{EntryKind, Repo};
use crate::ignore::{DEFAULT_PATTERNS, IgnoreRules};

/// The meters a store computes at index time; others are counted when a pack needs them.
pub const DEFAULT_METERS: [Meter; 4] = [Meter::O200k, Meter::Words, Meter::Chars, Meter::Approx];

/// The version stored with each file: chunk boundaries and masked text depend on both.
pub const STORED_CHUNKER: u32 = CHUNKER_VERSION * 1000 + ctxpack_core::MASK_RULES_VERSION;

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
    /// Files skipped, by reason.
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
    let (mut rules, _) = IgnoreRules::parse(DEFAULT_PATTERNS);
    if let Some(entry) = entries.iter().find(|e| e.path == ".ctxpackignore") {
        let text = repo.read_blob(&entry.id)?;
        let (custom, _invalid) = IgnoreRules::parse(&String::from_utf8_lossy(&text));
        rules.extend(custom);
    }

    let mut summary = IndexReport {
        sha: sha.to_owned(),
        files: entries.len() as u64,
        ..IndexReport::default()
    };
    let mut plans = Vec::with_capacity(entries.len());
    let mut new_files: Vec<NewFile> = Vec::new();
    let mut to_chunk: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut pending_lexical = store.pending_files()?;
    let total = entries.len();
    for (n, entry) in entries.iter().enumerate() {
        if n % PROGRESS_EVERY == 0 {
            report(IndexPhase::Reading, n, total)?;
        }
        if let Some(version) = store.file_version(&entry.path, &entry.id, STORED_CHUNKER)? {
            summary.reused += 1;
            if !version.ready && !pending_lexical.contains(&version.id) {
                pending_lexical.push(version.id);
            }
            plans.push(Plan::Reuse(version.id));
            continue;
        }
        let mut file = NewFile {
            path: entry.path.clone(),
            blob: entry.id.clone(),
            bytes: 0,
            skip_reason: None,
            chunks: Vec::new(),
        };
        let skip = match entry.kind {
            EntryKind::Symlink => Some("symlink"),
            EntryKind::Submodule => Some("submodule"),
            EntryKind::File if rules.is_ignored(&entry.path) => Some("ignored"),
            EntryKind::File => {
                file.bytes = repo.blob_size(&entry.id)?;
                if file.bytes > options.max_file_bytes {
                    Some("too_large")
                } else {
                    None
                }
            }
        };
        file.skip_reason = skip.map(str::to_owned);
        if skip.is_none() {
            to_chunk.push((new_files.len(), repo.read_blob(&entry.id)?));
        }
        plans.push(Plan::New(new_files.len()));
        new_files.push(file);
    }
    report(IndexPhase::Reading, total, total)?;
    summary.processed = new_files.len() as u64;

    chunk_all(&mut new_files, to_chunk, options, &mut |done, total| {
        report(IndexPhase::Chunking, done, total).is_ok()
    })?;

    // Write new versions in batches, then their lexical entries, then the snapshot.
    let writes = new_files.len();
    let mut new_ids = Vec::with_capacity(writes);
    for batch in new_files.chunks(PROGRESS_EVERY) {
        report(IndexPhase::Writing, new_ids.len(), writes)?;
        new_ids.extend(store.insert_files(batch, STORED_CHUNKER)?);
    }
    let mut lexical: Vec<i64> = new_files
        .iter()
        .zip(&new_ids)
        .filter(|(f, _)| f.skip_reason.is_none())
        .map(|(_, &id)| id)
        .collect();
    lexical.extend(pending_lexical);
    store.index_lexical(&lexical)?;

    let manifest: Vec<(String, i64)> = entries
        .iter()
        .zip(&plans)
        .map(|(e, plan)| {
            let id = match plan {
                Plan::Reuse(id) => *id,
                Plan::New(i) => new_ids[*i],
            };
            (e.path.clone(), id)
        })
        .collect();
    let stats = store.manifest_stats(&manifest)?;
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
    Ok(summary)
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
