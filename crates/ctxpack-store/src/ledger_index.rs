//! The ledger's index, `ledger/index.jsonl`: one short line per line of `ledger/packs.jsonl`
//! (where it starts, how long it is, and the record's id, time and the start of its goal), so
//! that a page of the ledger or one pack by id reads a few records instead of parsing all of
//! them.
//!
//! The index is derived: records are written first and indexed after, under the same lock,
//! and the records file is the truth. A reader trusts the index only as far as it is
//! consistent with the records file (each entry where the one before ended, inside the file)
//! and reads whatever follows that from the records file itself; a record found at an indexed
//! place must carry the indexed id, or the reader falls back to the records file alone, and so
//! does a lookup by id that the index does not answer. An append reads only the ends of both
//! files when the index's last line is the last record; otherwise it catches the index up, or
//! rewrites it when it was damaged or written with whole goals. So a crash or an older
//! ctxpack that wrote records without indexing them costs time, never an answer. A tampered
//! index can hide records from pages, as a tampered records file could hide them from
//! everything, but never from a lookup by id, and never makes a reader look outside the
//! records file, allocate more than one line of it, or show a record under another id;
//! `verify` compares the index with the records and `verify --repair` writes it again.
//!
//! Both files are read a line at a time: a reader holds one line and what it keeps of each
//! entry (no goals), never a whole file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::guard;
use crate::ledger::record::LedgerRecord;

/// The most characters of a goal an index line keeps; a longer goal keeps this many and the
/// SHA-256 of the whole (which is in its record, once).
pub const INDEXED_GOAL_CHARS: usize = 200;

/// The longest index line read: an entry with a whole goal of this many characters, as older
/// versions wrote, is still read (and rewritten); past it the index is not followed further.
const MAX_INDEX_LINE: u64 = 1 << 20;

/// The most bytes an entry written now can take: its goal escaped at worst (`\u0000`, six
/// bytes a character), its id and digest, and its numbers and keys.
const MAX_ENTRY_BYTES: u64 = INDEXED_GOAL_CHARS as u64 * 6 + 64 * 2 + 160;

/// The index file, relative to the store.
pub(crate) fn file() -> &'static Path {
    Path::new("ledger/index.jsonl")
}

/// The start of `goal` an index keeps, and the SHA-256 of the whole when that is not all of it.
pub fn indexed_goal(goal: &str) -> (String, Option<String>) {
    match goal.char_indices().nth(INDEXED_GOAL_CHARS) {
        None => (goal.to_owned(), None),
        Some((cut, _)) => (
            goal[..cut].to_owned(),
            Some(crate::digest::sha256_hex(goal.as_bytes())),
        ),
    }
}

/// One non-empty line of the records file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Its 1-based line number.
    #[serde(rename = "l")]
    pub line: usize,
    /// Where it starts, in bytes.
    #[serde(rename = "o")]
    pub offset: u64,
    /// Its length in bytes, without its newline.
    #[serde(rename = "n")]
    pub len: u64,
    /// The record's id; none for a line that is not a whole record (torn by a crash).
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The record's time.
    #[serde(rename = "t", default)]
    pub time: u64,
    /// The record's goal, its first [`INDEXED_GOAL_CHARS`] characters.
    #[serde(rename = "g", default)]
    pub goal: String,
    /// The SHA-256 of the whole goal, when `goal` is only its start.
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl Entry {
    /// The entry of a line at `offset` of `len` bytes, holding `record` (none when torn).
    pub fn new(line: usize, offset: u64, len: u64, record: Option<&LedgerRecord>) -> Entry {
        let (goal, digest) = record.map_or((String::new(), None), |r| indexed_goal(&r.goal));
        Entry {
            line,
            offset,
            len,
            id: record.map(|r| r.id.clone()),
            time: record.map_or(0, |r| r.time),
            goal,
            digest,
        }
    }

    /// Where the line after this one starts.
    pub fn end(&self) -> u64 {
        self.offset + self.len + 1
    }

    /// Whether the record's goal contains `needle` (lowercase), when the indexed start of the
    /// goal can tell: `None` when the goal is longer and its start does not contain it.
    pub fn goal_contains(&self, needle: &str) -> Option<bool> {
        if self.goal.to_lowercase().contains(needle) {
            Some(true)
        } else if self.digest.is_none() {
            Some(false)
        } else {
            None
        }
    }

    /// Cuts a goal an older version indexed whole; returns whether it had to.
    fn cap(&mut self) -> bool {
        if self.digest.is_some() || self.goal.chars().nth(INDEXED_GOAL_CHARS).is_none() {
            return false;
        }
        let (goal, digest) = indexed_goal(&self.goal);
        (self.goal, self.digest) = (goal, digest);
        true
    }
}

/// A line of the records file, with its record when it was read from the records file.
#[derive(Debug)]
pub(crate) struct Line {
    pub entry: Entry,
    pub record: Option<LedgerRecord>,
}

/// Reads the records file from `reader`, which is at byte `offset`, whose first line there is
/// line `first_line`, a line at a time; gives each non-empty line to `visit` and returns the
/// number of the line a record appended next would be on (after the newline an append writes
/// first when the file does not end with one). A line that is not a whole record (or is last
/// without its newline) has no id.
pub(crate) fn scan(
    mut reader: impl BufRead,
    offset: u64,
    first_line: usize,
    path: &Path,
    mut visit: impl FnMut(Line) -> Result<(), StoreError>,
) -> Result<usize, StoreError> {
    let mut buffer = Vec::new();
    let mut start = offset;
    let mut number = first_line;
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|source| StoreError::Io {
                path: path.to_owned(),
                source,
            })?;
        if read == 0 {
            return Ok(number);
        }
        let complete = buffer.last() == Some(&b'\n');
        let segment = buffer.strip_suffix(b"\n").unwrap_or(&buffer);
        if !segment.is_empty() {
            let record = serde_json::from_slice::<LedgerRecord>(segment)
                .ok()
                .filter(|_| complete);
            visit(Line {
                entry: Entry::new(number, start, segment.len() as u64, record.as_ref()),
                record,
            })?;
        }
        if !complete {
            return Ok(number + 1);
        }
        start += read as u64;
        number += 1;
    }
}

/// Whether something other than a regular file is where the index goes (a FIFO would block
/// whoever opened it): such an index is not read or appended to, only replaced.
pub(crate) fn is_irregular(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(file())).is_ok_and(|m| !m.is_file())
}

/// How far the index holds for a records file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Coverage {
    /// Where the records the index does not cover start.
    pub end: u64,
    /// The line number there.
    pub next_line: usize,
    /// Whether every byte of the index file was a consistent entry.
    pub whole: bool,
    /// Whether some entry held a whole goal longer than an entry keeps now (an older index).
    pub oversized: bool,
}

impl Default for Coverage {
    fn default() -> Coverage {
        Coverage {
            end: 0,
            next_line: 1,
            whole: false,
            oversized: false,
        }
    }
}

/// Reads the index of the store at `root` a line at a time, giving `visit` each consistent
/// entry (goals cut to what an entry keeps) before the first line that is torn, unreadable,
/// too long, not contiguous with the one before or outside a records file of `records_len`
/// bytes.
pub(crate) fn each(
    root: &Path,
    records_len: u64,
    mut visit: impl FnMut(Entry) -> Result<(), StoreError>,
) -> Result<Coverage, StoreError> {
    if is_irregular(root) {
        return Ok(Coverage::default());
    }
    let Some(index) = guard::open_regular(root, file())? else {
        return Ok(Coverage {
            whole: true,
            ..Coverage::default()
        });
    };
    let path = root.join(file());
    let io = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    let index_len = index.metadata().map_err(io)?.len();
    let mut reader = BufReader::new(index);
    let mut coverage = Coverage::default();
    let mut consumed = 0;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = (&mut reader)
            .take(MAX_INDEX_LINE + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(io)?;
        let Some(body) = buffer.strip_suffix(b"\n") else {
            break;
        };
        let Ok(mut entry) = serde_json::from_slice::<Entry>(body) else {
            break;
        };
        // Each entry starts where the one before ended, or after empty lines (one byte each):
        // as many bytes skipped as lines.
        let contiguous = entry.offset.checked_sub(coverage.end).is_some_and(|gap| {
            entry
                .line
                .checked_sub(coverage.next_line)
                .is_some_and(|lines| gap == lines as u64)
        });
        let fits = entry
            .offset
            .checked_add(entry.len)
            .and_then(|end| end.checked_add(1))
            .is_some_and(|end| end <= records_len);
        if !contiguous || !fits {
            break;
        }
        coverage.oversized |= entry.cap();
        coverage.end = entry.end();
        coverage.next_line = entry.line + 1;
        consumed += read as u64;
        visit(entry)?;
    }
    coverage.whole = consumed == index_len;
    Ok(coverage)
}

/// Whether an index file of `index_len` bytes is larger than `entries` entries written now can
/// be: an index written with whole goals, to be rewritten.
pub(crate) fn is_oversized(index_len: u64, entries: usize) -> bool {
    index_len > (entries as u64).saturating_mul(MAX_ENTRY_BYTES)
}

/// The index's last entry, read from the end of the index file alone: `None` when the file
/// is missing, does not end with a whole entry, its last line is longer than a window, or it
/// is larger than its entries can be written now (an index of whole goals, to be rewritten).
pub(crate) fn last(root: &Path) -> Result<Option<Entry>, StoreError> {
    const WINDOW: u64 = 64 * 1024;
    guard::no_link(root, file())?;
    if is_irregular(root) {
        return Ok(None);
    }
    let path = root.join(file());
    let mut index = match guard::open(root, file(), std::fs::OpenOptions::new().read(true)) {
        Ok(index) => index,
        Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let io = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    let index_len = index.metadata().map_err(io)?.len();
    let start = index_len.saturating_sub(WINDOW);
    let mut bytes = Vec::new();
    index.seek(SeekFrom::Start(start)).map_err(io)?;
    index.take(WINDOW).read_to_end(&mut bytes).map_err(io)?;
    let Some(body) = bytes.strip_suffix(b"\n") else {
        return Ok(None);
    };
    let line = match body.iter().rposition(|&b| b == b'\n') {
        Some(newline) => &body[newline + 1..],
        None if start == 0 => body,
        None => return Ok(None),
    };
    Ok(serde_json::from_slice::<Entry>(line)
        .ok()
        .filter(|last| !is_oversized(index_len, last.line)))
}

/// Reads the record an entry points at from the records file, or `None` when what is there
/// is not that record (the index is stale).
pub(crate) fn record_at(
    records: &File,
    entry: &Entry,
    path: &Path,
) -> Result<Option<LedgerRecord>, StoreError> {
    use std::os::unix::fs::FileExt;
    // `each` gives only entries inside the records file, and `scan` only lines of it, so this
    // allocation is bounded by it.
    let mut bytes = vec![0; usize::try_from(entry.len).unwrap_or(usize::MAX)];
    if let Err(source) = records.read_exact_at(&mut bytes, entry.offset) {
        return match source.kind() {
            std::io::ErrorKind::UnexpectedEof => Ok(None),
            _ => Err(StoreError::Io {
                path: path.to_owned(),
                source,
            }),
        };
    }
    Ok(serde_json::from_slice::<LedgerRecord>(&bytes)
        .ok()
        .filter(|r| Some(&r.id) == entry.id.as_ref()))
}

/// The lines of `entries` as index file text.
pub(crate) fn text(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut out, entry).expect("an index entry serializes");
        out.push(b'\n');
    }
    out
}
