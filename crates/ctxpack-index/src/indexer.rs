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
use std::sync::mpsc;
use std::time::Instant;

use ctxpack_core::Masker;
use ctxpack_meter::Meter;
use ctxpack_store::{Manifest, NewChunk, NewFile, NewSnapshot, SnapshotStats, Store, failpoint};

use crate::chunk::{CHUNKER_VERSION, ChunkOptions, chunk};
use crate::error::IndexError;
use crate::git::{EntryKind, ObjectReader, Repo, TreeChange, TreeEntry};
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
    /// Walking the commit's tree (or its diff against the indexed parent) and deciding each
    /// file.
    Reading,
    /// Reading, chunking, masking and costing new file versions (on every core), and writing
    /// them, their chunks and their lexical entries as they are done.
    Chunking,
    /// Adding the entries of versions an earlier, stopped run left out of the lexical index,
    /// then committing it (new versions' entries are added as chunking writes them).
    Lexical,
    /// Counting the snapshot's files and chunks, then committing it in one transaction.
    Committing,
}

impl IndexPhase {
    /// A lower-case name for progress displays: `reading`, `chunking`, `lexical`,
    /// `committing`.
    pub fn name(self) -> &'static str {
        match self {
            IndexPhase::Reading => "reading",
            IndexPhase::Chunking => "chunking",
            IndexPhase::Lexical => "lexical",
            IndexPhase::Committing => "committing",
        }
    }
}

/// The most files a phase handles between two progress reports.
pub const PROGRESS_FILES: u64 = 256;

/// The most bytes of file content a phase handles between two progress reports (8 MiB), give
/// or take the file that crosses the line.
pub const PROGRESS_BYTES: u64 = 8 * 1024 * 1024;

/// When a phase reports progress: counts files and their bytes, and says a report is due once
/// [`PROGRESS_FILES`] files or [`PROGRESS_BYTES`] bytes were handled since the last one.
/// Counting, not a clock, decides, so the reports of a run are the same on every machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pace {
    files: u64,
    bytes: u64,
}

impl Pace {
    /// Nothing handled yet.
    pub fn new() -> Pace {
        Pace::default()
    }

    /// Counts one file of `bytes`; true when a report is due (the count then starts again).
    pub fn tick(&mut self, bytes: u64) -> bool {
        self.files += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        let due = self.files >= PROGRESS_FILES || self.bytes >= PROGRESS_BYTES;
        if due {
            *self = Pace::default();
        }
        due
    }
}

/// Splits work items of the given sizes into consecutive batches that each end when a report
/// is due ([`Pace`]), so that one report after each batch keeps to the pace.
pub fn paced_batches(sizes: impl IntoIterator<Item = u64>) -> Vec<std::ops::Range<usize>> {
    let mut batches = Vec::new();
    let (mut start, mut end) = (0, 0);
    let mut pace = Pace::new();
    for size in sizes {
        end += 1;
        if pace.tick(size) {
            batches.push(start..end);
            start = end;
        }
    }
    if start < end {
        batches.push(start..end);
    }
    batches
}

/// What an index run reports as it goes: `(phase, done, total)` in files. Returning
/// [`ControlFlow::Break`] cancels the run at the next unit of work; the snapshot is then not
/// committed (nothing a reader can see changes) and the run ends with
/// [`IndexError::Cancelled`].
pub type Progress<'a> = &'a mut dyn FnMut(IndexPhase, u64, u64) -> ControlFlow<()>;

/// Reports the phases of one run: each phase once when it starts, at the pace of [`Pace`],
/// and once when it ends, never the same count twice in a row.
struct Reporter<'p> {
    progress: Progress<'p>,
    phase: IndexPhase,
    total: usize,
    done: usize,
    last: Option<usize>,
    pace: Pace,
}

impl<'p> Reporter<'p> {
    fn new(progress: Progress<'p>) -> Self {
        Reporter {
            progress,
            phase: IndexPhase::Reading,
            total: 0,
            done: 0,
            last: None,
            pace: Pace::new(),
        }
    }

    /// Starts `phase` with `total` files.
    fn start(&mut self, phase: IndexPhase, total: usize) -> Result<(), IndexError> {
        (self.phase, self.total, self.done, self.last) = (phase, total, 0, None);
        self.pace = Pace::new();
        self.at(0)
    }

    /// One more file of `bytes` is done; reports when one is due.
    fn step(&mut self, bytes: u64) -> Result<(), IndexError> {
        self.done += 1;
        if self.pace.tick(bytes) {
            self.at(self.done)
        } else {
            Ok(())
        }
    }

    /// Reports that `done` files of the phase are done.
    fn at(&mut self, done: usize) -> Result<(), IndexError> {
        self.done = done;
        if self.last == Some(done) {
            return Ok(());
        }
        self.last = Some(done);
        match (self.progress)(self.phase, done as u64, self.total as u64) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => Err(IndexError::Cancelled),
        }
    }

    /// Reports the phase's end.
    fn finish(&mut self) -> Result<(), IndexError> {
        self.at(self.total)
    }
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

/// What a commit's per-file decisions depended on besides each file's own bytes: the stored
/// chunker, the default ignore rules and the commit's `.ctxpackignore` files. A child whose
/// diff touches none of them decides its unchanged files as its parent did.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Basis {
    chunker: u32,
    defaults: String,
    /// `(directory's raw path, blob id)` of every ignore file, by path.
    ignore_files: Vec<(Vec<u8>, String)>,
}

impl Basis {
    fn new(ignore_files: Vec<(Vec<u8>, String)>) -> Basis {
        Basis {
            chunker: STORED_CHUNKER,
            defaults: ctxpack_store::checksum(crate::ignore::DEFAULT_PATTERNS.as_bytes()),
            ignore_files,
        }
    }

    /// One line per fact; the directory in hex, so any bytes survive.
    fn encode(&self) -> String {
        let mut out = format!("chunker {}\ndefaults {}\n", self.chunker, self.defaults);
        for (dir, blob) in &self.ignore_files {
            let hex: String = dir.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("ignore {blob} {hex}\n"));
        }
        out
    }

    /// The basis `text` records, or `None` when it is not one this build wrote.
    fn decode(text: &str) -> Option<Basis> {
        let mut lines = text.lines();
        let chunker = lines.next()?.strip_prefix("chunker ")?.parse().ok()?;
        let defaults = lines.next()?.strip_prefix("defaults ")?.to_owned();
        let mut ignore_files = Vec::new();
        for line in lines {
            let (blob, hex) = line.strip_prefix("ignore ")?.split_once(' ')?;
            if hex.len() % 2 != 0 {
                return None;
            }
            let dir = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect::<Option<Vec<u8>>>()?;
            ignore_files.push((dir, blob.to_owned()));
        }
        Some(Basis {
            chunker,
            defaults,
            ignore_files,
        })
    }

    fn rules(&self, repo: &Repo) -> Result<IgnoreRules, IndexError> {
        let contents = self
            .ignore_files
            .iter()
            .map(|(dir, blob)| Ok((dir.as_slice(), repo.read_blob(blob)?)))
            .collect::<Result<Vec<_>, IndexError>>()?;
        Ok(IgnoreRules::new(
            contents.iter().map(|(dir, text)| (*dir, text.as_slice())),
        ))
    }
}

/// The indexed snapshot of a commit's nearest first-parent ancestor.
struct Parent {
    row: ctxpack_store::SnapshotRow,
    /// The changes from it, when its decisions carry over (see [`Basis`]): `None` when the
    /// child must be walked whole (it is then still stored as changes against the parent).
    changes: Option<(Basis, Vec<TreeChange>)>,
}

/// How many first parents back indexing looks for an indexed snapshot to start from.
pub const ANCESTOR_STEPS: usize = 100;

/// The indexed snapshot of the commit's nearest first-parent ancestor, at most
/// [`ANCESTOR_STEPS`] back (a hook that skipped some commits still finds the last one it
/// indexed); a shallow boundary or a missing commit ends the search quietly.
fn indexed_parent(repo: &Repo, store: &Store, sha: &str) -> Result<Option<Parent>, IndexError> {
    let mut next = repo.commit_info(sha)?.parents.into_iter().next();
    let mut found = None;
    for _ in 0..ANCESTOR_STEPS {
        let Some(commit) = next else {
            break;
        };
        if let Some(row) = store.snapshot(&commit)? {
            found = Some((commit, row));
            break;
        }
        next = repo
            .commit_info(&commit)
            .ok()
            .and_then(|info| info.parents.into_iter().next());
    }
    let Some((first, row)) = found else {
        return Ok(None);
    };
    let basis = store
        .snapshot_basis(&first)?
        .and_then(|text| Basis::decode(&text))
        // Written by this chunker with these default rules.
        .filter(|b| *b == Basis::new(b.ignore_files.clone()))
        // A blob a partial clone lacked then may be there now: walk the whole tree again.
        .filter(|_| !row.skipped.contains_key(OBJECT_NOT_PRESENT));
    let changes = match basis {
        Some(basis) => {
            let changes = repo.tree_changes(&first, sha)?;
            let touches_rules = changes.iter().any(|c| {
                let name = c.raw_path.rsplit(|&b| b == b'/').next().unwrap_or_default();
                name == IGNORE_FILE.as_bytes()
            });
            (!touches_rules).then_some((basis, changes))
        }
        None => None,
    };
    Ok(Some(Parent { row, changes }))
}

/// What reading a commit found.
struct Walked {
    /// Files in the commit's tree.
    files: u64,
    listing: Listing,
    /// New file versions (those too large to chunk are skipped already).
    new_files: Vec<NewFile>,
    /// Files skipped by the commit's decisions, by reason, as a change to the parent's
    /// counts for a listing of changes.
    commit_skips: BTreeMap<String, i64>,
    /// Reused versions whose lexical entries are not committed.
    unready: Vec<i64>,
    basis: Basis,
}

enum Listing {
    /// Every listed path.
    Whole(Vec<(String, Plan)>),
    /// The paths that differ from the parent's tree: the version the parent listed there,
    /// and the plan for the path now (`None`: not listed).
    Changes(Vec<(String, Option<i64>, Option<Plan>)>),
}

/// Reads every entry of the commit's tree.
fn walk_whole(
    repo: &Repo,
    store: &Store,
    sha: &str,
    options: &IndexOptions,
    report: &mut Reporter<'_>,
) -> Result<Walked, IndexError> {
    let mut objects = ObjectReader::open(repo.source())?;
    let entries = objects.repo().tree_entries(sha)?;
    let (rules, ignore_files) = commit_rules(objects.repo(), &entries)?;
    // What the tree walk mapped is not needed again.
    objects.release()?;
    let mut ignored = rules.matcher();
    let mut walked = Walked {
        files: entries.len() as u64,
        listing: Listing::Whole(Vec::new()),
        new_files: Vec::new(),
        commit_skips: BTreeMap::new(),
        unready: Vec::new(),
        basis: Basis::new(ignore_files),
    };
    let mut listed = Vec::with_capacity(entries.len());
    report.start(IndexPhase::Reading, entries.len())?;
    // Deciding reads no content (chunking does): each entry counts as a file of no bytes.
    for entry in &entries {
        let plan = walked.read(&mut objects, store, entry, options, &mut ignored)?;
        listed.extend(plan.map(|plan| (entry.path.clone(), plan)));
        report.step(0)?;
    }
    walked.listing = Listing::Whole(listed);
    Ok(walked)
}

/// Reads only the entries that differ from the parent's tree.
fn walk_changes(
    repo: &Repo,
    store: &Store,
    parent: &Parent,
    (basis, changes): &(Basis, Vec<TreeChange>),
    options: &IndexOptions,
    report: &mut Reporter<'_>,
) -> Result<Walked, IndexError> {
    let rules = basis.rules(repo)?;
    let mut ignored = rules.matcher();
    let mut objects = ObjectReader::open(repo.source())?;
    let mut walked = Walked {
        files: parent.row.files,
        listing: Listing::Whole(Vec::new()),
        new_files: Vec::new(),
        commit_skips: BTreeMap::new(),
        unready: Vec::new(),
        basis: basis.clone(),
    };
    let mut listed = Vec::with_capacity(changes.len());
    report.start(IndexPhase::Reading, changes.len())?;
    for change in changes {
        let mut removed = None;
        if let Some((kind, _)) = &change.old {
            walked.files = walked.files.saturating_sub(1);
            // What the parent decided for the path: a listed version, or a skip that only
            // the entry's kind, the (unchanged) rules or a missing blob explains.
            match store.manifest_entry(&parent.row.sha, &change.path)? {
                Some(id) => removed = Some(id),
                None => {
                    let reason = match kind {
                        EntryKind::Symlink => "symlink",
                        EntryKind::Submodule => "submodule",
                        EntryKind::File if ignored.is_ignored(&change.raw_path) => "ignored",
                        EntryKind::File => OBJECT_NOT_PRESENT,
                    };
                    *walked.commit_skips.entry(reason.to_owned()).or_default() -= 1;
                }
            }
        }
        let plan = match &change.new {
            Some((kind, id)) => {
                walked.files += 1;
                let entry = TreeEntry {
                    path: change.path.clone(),
                    raw_path: change.raw_path.clone(),
                    id: id.clone(),
                    kind: *kind,
                };
                walked.read(&mut objects, store, &entry, options, &mut ignored)?
            }
            None => None,
        };
        listed.push((change.path.clone(), removed, plan));
        report.step(0)?;
    }
    walked.listing = Listing::Changes(listed);
    Ok(walked)
}

impl Walked {
    /// Decides one entry of the commit: its plan when it is listed.
    fn read(
        &mut self,
        objects: &mut ObjectReader,
        store: &Store,
        entry: &TreeEntry,
        options: &IndexOptions,
        ignored: &mut crate::ignore::Matcher<'_>,
    ) -> Result<Option<Plan>, IndexError> {
        Ok(match read_entry(objects, store, entry, options, ignored)? {
            Read::Skip(reason) => {
                *self.commit_skips.entry(reason.to_owned()).or_default() += 1;
                None
            }
            Read::Reuse(version) => {
                if !version.ready {
                    self.unready.push(version.id);
                }
                Some(Plan::Reuse(version.id))
            }
            Read::New(file) => {
                self.new_files.push(file);
                Some(Plan::New(self.new_files.len() - 1))
            }
        })
    }
}

/// What reading one entry of the commit's tree decided.
enum Read {
    /// Left out of the snapshot, for this reason.
    Skip(&'static str),
    /// A file version the store holds.
    Reuse(ctxpack_store::FileVersion),
    /// A new file version (skipped as `too_large` when it is too large to chunk).
    New(NewFile),
}

fn read_entry(
    objects: &mut ObjectReader,
    store: &Store,
    entry: &TreeEntry,
    options: &IndexOptions,
    ignored: &mut crate::ignore::Matcher<'_>,
) -> Result<Read, IndexError> {
    match entry.kind {
        EntryKind::Symlink => return Ok(Read::Skip("symlink")),
        EntryKind::Submodule => return Ok(Read::Skip("submodule")),
        EntryKind::File if ignored.is_ignored(&entry.raw_path) => return Ok(Read::Skip("ignored")),
        EntryKind::File => {}
    }
    if let Some(version) = store.file_version(&entry.path, &entry.id, STORED_CHUNKER)? {
        return Ok(Read::Reuse(version));
    }
    // A partial clone lacks some blobs by design, and a damaged pack loses some: the rest of
    // the commit is still worth indexing. The file is counted, so the summary says what is
    // missing (`git fsck` tells why).
    let Some(bytes) = objects.blob_size_if_present(&entry.id)? else {
        return Ok(Read::Skip(OBJECT_NOT_PRESENT));
    };
    let too_large = bytes > options.max_file_bytes;
    let file = NewFile {
        path: entry.path.clone(),
        blob: entry.id.clone(),
        bytes,
        skip_reason: too_large.then(|| "too_large".to_owned()),
        chunks: Vec::new(),
    };
    Ok(Read::New(file))
}

/// The ignore rules of a commit: the defaults and every `.ctxpackignore` file in its tree;
/// and those files, as `(directory, blob id)`.
#[allow(clippy::type_complexity)]
fn commit_rules(
    repo: &Repo,
    entries: &[TreeEntry],
) -> Result<(IgnoreRules, Vec<(Vec<u8>, String)>), IndexError> {
    let mut files = Vec::new();
    let mut ids = Vec::new();
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
            ids.push((dir.to_vec(), entry.id.clone()));
        }
    }
    let rules = IgnoreRules::new(
        files
            .iter()
            .map(|(dir, content)| (*dir, content.as_slice())),
    );
    Ok((rules, ids))
}

/// A file's chunks, or the reason it was skipped after reading it.
pub type Chunked = Result<Vec<NewChunk>, &'static str>;

/// How many files wait between two stages of the chunking pipeline, per worker thread: with
/// blobs of at most `max_file_bytes`, what the pipeline holds is bounded by this, the worker
/// count and one write batch.
const IN_FLIGHT_PER_THREAD: usize = 4;

/// Reads, decodes, chunks, masks and costs the new file versions, and writes them to the
/// database in batches as they complete, in their order (so their ids are the same on every
/// run). One thread reads blobs, worker threads chunk them, and this thread writes them (and
/// their lexical entries, to the writer the store holds open) and reports the `chunking`
/// phase; each stage waits for the next when it is a bounded number of files ahead, so memory
/// holds a window of the commit, never all of it. Returns the id of each version.
fn chunk_and_write(
    repo: &Repo,
    store: &mut Store,
    files: &mut [NewFile],
    options: &IndexOptions,
    report: &mut Reporter<'_>,
) -> Result<Vec<i64>, IndexError> {
    // Only a file too large to chunk is skipped before it is read.
    let to_read: Vec<(usize, String)> = (0..files.len())
        .filter(|&i| files[i].skip_reason.is_none())
        .map(|i| (i, files[i].blob.clone()))
        .collect();
    report.start(IndexPhase::Chunking, to_read.len())?;
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, to_read.len().max(1));
    let masker = Masker::new();
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let mut ids: Vec<i64> = Vec::with_capacity(files.len());
    // Results wait here until every file before them is done; `done[i]` once file i is.
    let mut done: Vec<bool> = files.iter().map(|f| f.skip_reason.is_some()).collect();
    let mut outcome: Result<(), IndexError> = Ok(());
    // Writes the versions from the last one written up to `upto` (all of them done).
    let mut flush =
        |files: &mut [NewFile], ids: &mut Vec<i64>, upto: usize| -> Result<(), IndexError> {
            let from = ids.len();
            if upto == from {
                return Ok(());
            }
            let batch: Vec<NewFile> = files[from..upto]
                .iter_mut()
                .map(|f| NewFile {
                    chunks: std::mem::take(&mut f.chunks),
                    ..f.clone()
                })
                .collect();
            ids.extend(store.insert_files(&batch, STORED_CHUNKER)?);
            failpoint("index:files-written");
            Ok(())
        };
    std::thread::scope(|scope| {
        let cap = threads * IN_FLIGHT_PER_THREAD;
        let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Vec<u8>)>(cap);
        let (done_tx, done_rx) =
            mpsc::sync_channel::<(usize, u64, Result<Chunked, IndexError>)>(cap);
        // Dropped with the last worker, so the reader stops when they do.
        let work_rx = std::sync::Arc::new(std::sync::Mutex::new(work_rx));
        let source = repo.source();
        let reader_done = done_tx.clone();
        scope.spawn(move || {
            let mut reader = match ObjectReader::open(source) {
                Ok(reader) => reader,
                Err(e) => {
                    let _ = reader_done.send((0, 0, Err(e)));
                    return;
                }
            };
            for (index, blob) in to_read {
                match reader.read_blob(&blob) {
                    Ok(bytes) => {
                        if work_tx.send((index, bytes)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = reader_done.send((index, 0, Err(e)));
                        break;
                    }
                }
            }
        });
        for _ in 0..threads {
            let (work_rx, done_tx, paths, masker) =
                (work_rx.clone(), done_tx.clone(), &paths, &masker);
            scope.spawn(move || {
                loop {
                    let next = work_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((index, bytes))) = next else {
                        break;
                    };
                    let chunked = chunk_file(&paths[index], &bytes, options, masker);
                    if done_tx
                        .send((index, bytes.len() as u64, Ok(chunked)))
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop((work_rx, done_tx));
        let mut next = 0;
        let mut pace = Pace::new();
        // Every result counts one file; the loop ends when the last worker has finished, or
        // at the first failure (dropping the receiver stops the workers and the reader).
        for (index, bytes, result) in done_rx {
            let step = result.and_then(|chunked| {
                match chunked {
                    Ok(chunks) => files[index].chunks = chunks,
                    Err(reason) => files[index].skip_reason = Some(reason.to_owned()),
                }
                let text_bytes: u64 = files[index]
                    .chunks
                    .iter()
                    .map(|c| c.text.len() as u64)
                    .sum();
                done[index] = true;
                while next < files.len() && done[next] {
                    next += 1;
                }
                if pace.tick(text_bytes) {
                    flush(files, &mut ids, next)?;
                }
                report.step(bytes)
            });
            if step.is_err() {
                outcome = step;
                break;
            }
        }
    });
    outcome?;
    flush(files, &mut ids, files.len())?;
    report.finish()?;
    Ok(ids)
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
            let mut o200k_lines = None;
            for (i, meter) in Meter::ALL.iter().enumerate() {
                if !options.meters.contains(meter) {
                    continue;
                }
                // `o200k` is counted line by line (one count), so a pack that cuts the chunk
                // to some of its lines need not count them again.
                costs[i] = Some(
                    if *meter == Meter::O200k
                        && let Some(lines) = meter.count_lines(&text)
                    {
                        let total = lines.total();
                        o200k_lines = Some(lines);
                        total
                    } else {
                        meter.count(&text)
                    },
                );
            }
            // An enclosing line is shown only as it is: one that masking would change is not
            // kept.
            let shown = |opening: Option<(u32, String)>| {
                opening.filter(|(_, line)| masker.mask(line).1.is_empty())
            };
            // An opening line inside the chunk is read back from its stored text, so it is
            // kept only when that text shows it as it is.
            let stored_line = |at: u32| {
                text.split_inclusive('\n')
                    .nth(usize::try_from(at - c.start_line).unwrap_or(usize::MAX))
                    .map(|l| l.trim_end_matches(['\n', '\r']))
            };
            let inside = c
                .inside
                .into_iter()
                .map(|i| {
                    let opening = shown(i.opening).filter(|(at, line)| {
                        *at < c.start_line || stored_line(*at) == Some(line.as_str())
                    });
                    (i.line, opening)
                })
                .collect();
            NewChunk {
                start_line: c.start_line,
                end_line: c.end_line,
                symbol: c.symbol,
                text,
                costs,
                redactions,
                enclosing: shown(c.enclosing),
                inside: Some(inside),
                o200k_lines,
            }
        })
        .collect())
}
