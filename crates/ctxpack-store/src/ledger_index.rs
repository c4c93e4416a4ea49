//! The ledger's index, `ledger/index.jsonl`: one short line per line of `ledger/packs.jsonl`
//! (where it starts, how long it is, and the record's id, time and goal), so that a page of
//! the ledger or one pack by id reads a few records instead of parsing all of them.
//!
//! The index is derived: records are written first and indexed after, under the same lock,
//! and the records file is the truth. A reader trusts the index only as far as it is
//! consistent with the records file (each entry where the one before ended, inside the file)
//! and reads whatever follows that from the records file itself; a record found at an indexed
//! place must carry the indexed id, or the reader falls back to the records file alone. An
//! append reads only the ends of both files when the index's last line is the last record;
//! otherwise it catches the index up, or rewrites it when it was damaged. So a crash or an
//! older ctxpack that wrote records without indexing them costs time, never an answer. A
//! tampered index can hide records from pages, as a tampered records file could hide them
//! from everything, but never makes a reader look outside the records file, allocate more than
//! it holds, or show a record under another id.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::guard;
use crate::ledger::LedgerRecord;

/// The index file, relative to the store.
pub(crate) fn file() -> &'static Path {
    Path::new("ledger/index.jsonl")
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
    /// The record's goal.
    #[serde(rename = "g", default)]
    pub goal: String,
}

impl Entry {
    /// Where the line after this one starts.
    pub fn end(&self) -> u64 {
        self.offset + self.len + 1
    }
}

/// A line of the records file, with its record when it was read from the records file.
#[derive(Debug)]
pub(crate) struct Line {
    pub entry: Entry,
    pub record: Option<LedgerRecord>,
}

/// The lines of `bytes`, the records file from byte `offset` on, whose first line there is
/// line `first_line`; and the number of the line a record appended next would be on (after
/// the newline an append writes first when the file does not end with one). Empty lines are
/// skipped; a line that is not a whole record (or is last without its newline) has no id.
pub(crate) fn scan(bytes: &[u8], offset: u64, first_line: usize) -> (Vec<Line>, usize) {
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let mut lines = Vec::new();
    let mut start = offset;
    let mut number = first_line;
    let mut next = first_line;
    let mut segments = bytes.split(|&b| b == b'\n').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        if !segment.is_empty() {
            let complete = !last || ends_with_newline;
            let record = serde_json::from_slice::<LedgerRecord>(segment)
                .ok()
                .filter(|_| complete);
            lines.push(Line {
                entry: Entry {
                    line: number,
                    offset: start,
                    len: segment.len() as u64,
                    id: record.as_ref().map(|r| r.id.clone()),
                    time: record.as_ref().map_or(0, |r| r.time),
                    goal: record.as_ref().map(|r| r.goal.clone()).unwrap_or_default(),
                },
                record,
            });
        }
        if last {
            next = if segment.is_empty() {
                number
            } else {
                number + 1
            };
            break;
        }
        start += segment.len() as u64 + 1;
        number += 1;
    }
    (lines, next)
}

/// Whether something other than a regular file is where the index goes (a FIFO would block
/// whoever opened it): such an index is not read or appended to, only replaced.
pub(crate) fn is_irregular(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(file())).is_ok_and(|m| !m.is_file())
}

/// The index as far as it is consistent with a records file of `records_len` bytes.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub entries: Vec<Entry>,
    /// Whether every byte of the index file was a consistent entry.
    pub whole: bool,
}

impl Loaded {
    /// Where the records the index does not cover start, and the line number there.
    pub fn covered(&self) -> (u64, usize) {
        self.entries
            .last()
            .map_or((0, 1), |e| (e.end(), e.line + 1))
    }
}

/// Reads the index of the store at `root`, keeping the consistent entries before the first
/// line that is torn, unreadable, not contiguous with the one before or outside a records
/// file of `records_len` bytes.
pub(crate) fn load(root: &Path, records_len: u64) -> Result<Loaded, StoreError> {
    if is_irregular(root) {
        return Ok(Loaded::default());
    }
    let Some(bytes) = guard::read_regular(root, file())? else {
        return Ok(Loaded {
            entries: Vec::new(),
            whole: true,
        });
    };
    let mut entries: Vec<Entry> = Vec::new();
    let mut consumed = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        let Ok(entry) = serde_json::from_slice::<Entry>(body) else {
            break;
        };
        // Each entry starts where the one before ended, or after empty lines (one byte each):
        // as many bytes skipped as lines.
        let (after, next_line) = entries.last().map_or((0, 1), |e| (e.end(), e.line + 1));
        let contiguous = entry.offset.checked_sub(after).is_some_and(|gap| {
            entry
                .line
                .checked_sub(next_line)
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
        entries.push(entry);
        consumed += line.len();
    }
    Ok(Loaded {
        whole: consumed == bytes.len(),
        entries,
    })
}

/// The index's last entry, read from the end of the index file alone: `None` when the file
/// is missing, does not end with a whole entry, or its last line is longer than a window.
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
    let start = index.metadata().map_err(io)?.len().saturating_sub(WINDOW);
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
    Ok(serde_json::from_slice(line).ok())
}

/// Reads the record an entry points at from the records file, or `None` when what is there
/// is not that record (the index is stale).
pub(crate) fn record_at(
    records: &mut File,
    entry: &Entry,
    path: &Path,
) -> Result<Option<LedgerRecord>, StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_owned(),
        source,
    };
    // `load` kept only entries inside the records file, so this allocation is bounded by it.
    let mut bytes = vec![0; usize::try_from(entry.len).unwrap_or(usize::MAX)];
    records.seek(SeekFrom::Start(entry.offset)).map_err(io)?;
    if let Err(source) = records.read_exact(&mut bytes) {
        return match source.kind() {
            std::io::ErrorKind::UnexpectedEof => Ok(None),
            _ => Err(io(source)),
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
