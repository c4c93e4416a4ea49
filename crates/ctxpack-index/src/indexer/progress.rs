//! Progress of an index run: its phases, reported at a pace that costs nothing to a fast run,
//! and the caller's answer to stop it.

use std::ops::ControlFlow;

use crate::error::IndexError;

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
pub(super) struct Reporter<'p> {
    progress: Progress<'p>,
    phase: IndexPhase,
    total: usize,
    done: usize,
    last: Option<usize>,
    pace: Pace,
}

impl<'p> Reporter<'p> {
    pub(super) fn new(progress: Progress<'p>) -> Self {
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
    pub(super) fn start(&mut self, phase: IndexPhase, total: usize) -> Result<(), IndexError> {
        (self.phase, self.total, self.done, self.last) = (phase, total, 0, None);
        self.pace = Pace::new();
        self.at(0)
    }

    /// One more file of `bytes` is done; reports when one is due.
    pub(super) fn step(&mut self, bytes: u64) -> Result<(), IndexError> {
        self.done += 1;
        if self.pace.tick(bytes) {
            self.at(self.done)
        } else {
            Ok(())
        }
    }

    /// Reports that `done` files of the phase are done.
    pub(super) fn at(&mut self, done: usize) -> Result<(), IndexError> {
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
    pub(super) fn finish(&mut self) -> Result<(), IndexError> {
        self.at(self.total)
    }
}
