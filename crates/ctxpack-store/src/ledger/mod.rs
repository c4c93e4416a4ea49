//! The ledger: an append-only record of every pack built, answering "what did the model see?".
//!
//! Records are JSON Lines in `ledger/packs.jsonl` inside the store; hit texts are stored once,
//! content-addressed by SHA-256, under `ledger/texts/`. Appending needs no lock on the store
//! and never touches its database or index, so read-only surfaces record too. An append holds
//! an OS lock on the records file while it writes its record (one `write` call in append mode)
//! and the record's line in the index (`ledger_index`), so concurrent writers, threads or
//! processes, never interleave; a record torn by a crash is ignored on reading and reported,
//! and the records before it are intact. A page of records or a pack by id reads the index and
//! only the records it names.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use ctxpack_core::Pack;

use crate::digest::sha256_hex;
use crate::error::StoreError;
use crate::guard;
use crate::ledger_index;
pub use crate::ledger_index::{INDEXED_GOAL_CHARS, indexed_goal};

pub(crate) mod record;
mod texts;

pub use record::{
    LedgerContents, LedgerDrop, LedgerHit, LedgerPage, LedgerQuery, LedgerRecord, LedgerSeen,
    LedgerSetting, LedgerSnapshot, RecordContext, replay,
};

/// The ledger of one store directory.
#[derive(Clone, Debug)]
pub struct Ledger {
    /// The store directory; the ledger is `ledger/` inside it, and no link below the store
    /// is ever followed.
    root: PathBuf,
    dir: PathBuf,
    /// The texts `gc` reclaimed, read once, on the first missing text.
    reclaimed: std::sync::OnceLock<HashSet<String>>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// An index entry in a few words, for `verify`.
fn describe(entry: &ledger_index::Entry) -> String {
    match &entry.id {
        Some(id) => format!(
            "record {} at byte {} ({} bytes)",
            id.chars().take(12).collect::<String>().escape_debug(),
            entry.offset,
            entry.len
        ),
        None => format!("a torn line at byte {} ({} bytes)", entry.offset, entry.len),
    }
}

/// Whether `hash` can name a text: a SHA-256 in lowercase hex, so no record can point a path
/// outside the ledger.
fn is_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What a text that `gc` reclaimed reads as: the record stays, its text is gone on purpose.
pub const RECLAIMED_TEXT: &str = "[this text was reclaimed by ctxpack gc]";

impl Ledger {
    /// Builds the record of `pack` (its id included) without writing anything.
    pub fn record(pack: &Pack, context: &RecordContext, time: u64) -> LedgerRecord {
        LedgerRecord::of(pack, context, time)
    }

    /// The ledger of the store at `store_dir` (nothing is created until the first append).
    pub fn new(store_dir: &Path) -> Ledger {
        Ledger {
            root: store_dir.to_owned(),
            dir: store_dir.join("ledger"),
            reclaimed: std::sync::OnceLock::new(),
        }
    }

    /// The records file, relative to the store.
    fn file() -> &'static Path {
        Path::new("ledger/packs.jsonl")
    }

    /// A text's file, relative to the store.
    fn text_path(hash: &str) -> PathBuf {
        let (a, b) = hash.split_at(hash.len().min(2));
        Path::new("ledger/texts").join(a).join(b)
    }

    /// Appends the record of `pack`, storing hit texts first. Returns the record.
    pub fn append(&self, pack: &Pack, context: &RecordContext) -> Result<LedgerRecord, StoreError> {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let record = Ledger::record(pack, context, time);
        for (hit, ledger_hit) in pack.hits.iter().zip(&record.hits) {
            self.put_text(&ledger_hit.text, &hit.candidate.text)?;
        }
        if let (Some(hash), Some(output)) = (&record.output, &context.output) {
            self.put_text(hash, output)?;
        }
        let mut line = serde_json::to_vec(&record).expect("a ledger record serializes");
        line.push(b'\n');
        guard::create_dirs(&self.root, Path::new("ledger"))?;
        let path = self.root.join(Self::file());
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            return Err(StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!("{} is not a regular file", path.display()),
            });
        }
        let mut file = guard::open(
            &self.root,
            Self::file(),
            OpenOptions::new().create(true).append(true).read(true),
        )?;
        // One append at a time, in this process and across processes: the last byte checked,
        // the record and its index line go together.
        file.lock().map_err(io(&path))?;
        let len = file.metadata().map_err(io(&path))?.len();
        // The index is derived: if it cannot be brought up to date, the record is still
        // written, and the next append tries again.
        let number = self.index_up_to(&file, len).ok();
        // A crash may have left a torn last line without its newline: start on a fresh line
        // so this record stays readable.
        let mut offset = len;
        if len > 0 {
            let mut last = [0u8; 1];
            file.read_exact_at(&mut last, len - 1).map_err(io(&path))?;
            if last[0] != b'\n' {
                line.insert(0, b'\n');
                offset += 1;
            }
        }
        file.write_all(&line).map_err(io(&path))?;
        if let Some(number) = number {
            let len = (len + line.len() as u64) - offset - 1;
            let entry = ledger_index::Entry::new(number, offset, len, Some(&record));
            let _ = self.append_index(&ledger_index::text(&[entry]));
        }
        Ok(record)
    }

    /// Brings the index up to the `len` bytes of the records file `file` (reading what it
    /// does not cover, rewriting it when it is damaged or holds whole goals) and returns the
    /// line number the next record goes on.
    fn index_up_to(&self, file: &File, len: u64) -> Result<usize, StoreError> {
        let path = self.root.join(Self::file());
        // The usual case, read from the ends of both files: the index's last line is the
        // records file's last record, where it says.
        if let Some(last) = ledger_index::last(&self.root)?
            && last.id.is_some()
            && last.end() == len
        {
            let mut newline = [0u8; 1];
            file.read_exact_at(&mut newline, len - 1)
                .map_err(io(&path))?;
            if newline[0] == b'\n' && ledger_index::record_at(file, &last, &path)?.is_some() {
                return Ok(last.line + 1);
            }
        }
        let mut entries = Vec::new();
        let mut coverage = ledger_index::each(&self.root, len, |entry| {
            entries.push(entry);
            Ok(())
        })?;
        // An index of records that were rewritten since (its last line not where it says) is
        // made again from the records.
        if let Some(last) = entries.last().filter(|e| e.id.is_some())
            && ledger_index::record_at(file, last, &path)?.is_none()
        {
            entries.clear();
            coverage = ledger_index::Coverage::default();
        }
        let mut added = Vec::new();
        let next = self.scan_from(file, len, coverage.end, coverage.next_line, |line| {
            added.push(line.entry);
            Ok(())
        })?;
        if coverage.whole && !coverage.oversized {
            if !added.is_empty() {
                self.append_index(&ledger_index::text(&added))?;
            }
        } else {
            entries.extend(added);
            self.replace_index(&ledger_index::text(&entries))?;
        }
        Ok(next)
    }

    fn append_index(&self, text: &[u8]) -> Result<(), StoreError> {
        // Not a file to append to: the next append replaces it whole.
        if ledger_index::is_irregular(&self.root) {
            return Ok(());
        }
        let rel = ledger_index::file();
        let mut index = guard::open(
            &self.root,
            rel,
            OpenOptions::new().create(true).append(true),
        )?;
        index.write_all(text).map_err(io(&self.root.join(rel)))
    }

    /// Writes the whole index beside and renames it into place.
    fn replace_index(&self, text: &[u8]) -> Result<(), StoreError> {
        let tmp = Path::new("ledger").join(format!(".index.{}", std::process::id()));
        let _ = std::fs::remove_file(self.root.join(&tmp));
        let mut file = guard::create_new(&self.root, &tmp)?;
        file.write_all(text).map_err(io(&self.root.join(&tmp)))?;
        drop(file);
        guard::no_link(&self.root, ledger_index::file())?;
        let target = self.root.join(ledger_index::file());
        std::fs::rename(self.root.join(&tmp), &target).map_err(io(&target))
    }

    /// The records file opened for reading, and its length; `None` when nothing was recorded.
    fn records(&self) -> Result<Option<(File, u64)>, StoreError> {
        let Some(file) = guard::open_regular(&self.root, Self::file())? else {
            return Ok(None);
        };
        let len = file
            .metadata()
            .map_err(io(&self.root.join(Self::file())))?
            .len();
        Ok(Some((file, len)))
    }

    /// Reads the records file `file` of `len` bytes a line at a time from byte `offset`,
    /// which is line `line`; returns the number of the line a record appended next goes on.
    fn scan_from(
        &self,
        file: &File,
        len: u64,
        offset: u64,
        line: usize,
        visit: impl FnMut(ledger_index::Line) -> Result<(), StoreError>,
    ) -> Result<usize, StoreError> {
        let path = self.root.join(Self::file());
        let mut reader = file;
        reader.seek(SeekFrom::Start(offset)).map_err(io(&path))?;
        let reader = BufReader::new(reader.take(len.saturating_sub(offset)));
        ledger_index::scan(reader, offset, line, &path, visit)
    }

    /// Gives `visit` every line of the records file `file` of `len` bytes, in order, with its
    /// record when it was read from the records file: from the index as far as it is
    /// consistent (when `use_index`), then from the records file a line at a time.
    fn walk(
        &self,
        file: &File,
        len: u64,
        use_index: bool,
        mut visit: impl FnMut(ledger_index::Entry, Option<LedgerRecord>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let coverage = if use_index {
            ledger_index::each(&self.root, len, |entry| visit(entry, None))?
        } else {
            ledger_index::Coverage::default()
        };
        self.scan_from(file, len, coverage.end, coverage.next_line, |line| {
            visit(line.entry, line.record)
        })?;
        Ok(())
    }

    /// A page of the records that match `query`, newest first.
    pub fn page(&self, query: &LedgerQuery) -> Result<LedgerPage, StoreError> {
        let Some((file, len)) = self.records()? else {
            return Ok(LedgerPage::default());
        };
        if let Some(page) = self.page_of(&file, len, query, true)? {
            return Ok(page);
        }
        // The index named a place that does not hold its record: the records file alone.
        Ok(self.page_of(&file, len, query, false)?.unwrap_or_default())
    }

    /// A page of the records that match `query`, or `None` when a line the walk named does
    /// not hold its record.
    fn page_of(
        &self,
        file: &File,
        len: u64,
        query: &LedgerQuery,
        use_index: bool,
    ) -> Result<Option<LedgerPage>, StoreError> {
        let path = self.root.join(Self::file());
        let needle = query.needle();
        let mut matching = Vec::new();
        let mut torn = Vec::new();
        let mut stale = false;
        self.walk(file, len, use_index, |mut entry, record| {
            if entry.id.is_none() {
                torn.push(entry.line);
                return Ok(());
            }
            if !query.keeps_time(entry.time) {
                return Ok(());
            }
            let contains =
                |record: &LedgerRecord, needle: &str| record.goal.to_lowercase().contains(needle);
            let keep = match (&needle, &record) {
                (None, _) => true,
                (Some(needle), Some(record)) => contains(record, needle),
                (Some(needle), None) => match entry.goal_contains(needle) {
                    Some(found) => found,
                    // Only the start of a long goal is indexed: its record tells.
                    None => match ledger_index::record_at(file, &entry, &path)? {
                        Some(record) => contains(&record, needle),
                        None => {
                            stale = true;
                            false
                        }
                    },
                },
            };
            if keep {
                entry.goal = String::new();
                matching.push(entry);
            }
            Ok(())
        })?;
        if stale {
            return Ok(None);
        }
        let mut records = Vec::new();
        for entry in matching.iter().rev().skip(query.offset).take(query.limit) {
            match ledger_index::record_at(file, entry, &path)? {
                Some(record) => records.push(record),
                None => return Ok(None),
            }
        }
        Ok(Some(LedgerPage {
            records,
            total: matching.len(),
            torn,
        }))
    }

    /// The records whose id starts with `prefix`, oldest first, and the lines that were torn.
    /// A prefix the index does not find is looked for in the records file too: a damaged
    /// index never hides a record from a lookup.
    pub fn find(&self, prefix: &str) -> Result<LedgerContents, StoreError> {
        let Some((file, len)) = self.records()? else {
            return Ok(LedgerContents::default());
        };
        if let Some(contents) = self.find_in(&file, len, prefix, true)?
            && !contents.records.is_empty()
        {
            return Ok(contents);
        }
        Ok(self.find_in(&file, len, prefix, false)?.unwrap_or_default())
    }

    /// The records whose id starts with `prefix`, or `None` when a line the walk named does
    /// not hold its record.
    fn find_in(
        &self,
        file: &File,
        len: u64,
        prefix: &str,
        use_index: bool,
    ) -> Result<Option<LedgerContents>, StoreError> {
        let path = self.root.join(Self::file());
        let mut contents = LedgerContents::default();
        let mut stale = false;
        self.walk(file, len, use_index, |entry, record| {
            match &entry.id {
                None => contents.torn.push(entry.line),
                Some(id) if id.starts_with(prefix) && !stale => {
                    match record.map_or_else(
                        || ledger_index::record_at(file, &entry, &path),
                        |r| Ok(Some(r)),
                    )? {
                        Some(record) => contents.records.push(record),
                        None => stale = true,
                    }
                }
                Some(_) => {}
            }
            Ok(())
        })?;
        Ok((!stale).then_some(contents))
    }

    /// The index's lines as they should be: one per non-empty line of the records file.
    fn expected_index(
        &self,
        file: &File,
        len: u64,
    ) -> Result<Vec<ledger_index::Entry>, StoreError> {
        let mut expected = Vec::new();
        self.scan_from(file, len, 0, 1, |line| {
            expected.push(line.entry);
            Ok(())
        })?;
        Ok(expected)
    }

    /// What is wrong with the index, compared with the records: lines that are damaged, name
    /// another line or record than the records file holds, or keep whole goals (an older
    /// version's index). An index that stops before the last records (a crash between a record
    /// and its index line, or a ledger older than the index) is caught up by the next append
    /// and is not a problem.
    pub fn index_problems(&self) -> Result<Vec<String>, StoreError> {
        let Some((file, len)) = self.records()? else {
            return Ok(Vec::new());
        };
        let expected = self.expected_index(&file, len)?;
        let mut listed = Vec::new();
        let coverage = ledger_index::each(&self.root, len, |entry| {
            listed.push(entry);
            Ok(())
        })?;
        let mut problems = Vec::new();
        if let Some((have, want)) = listed.iter().zip(&expected).find(|(h, w)| h != w) {
            problems.push(format!(
                "the index's entry for line {} says {}, where the records file holds {}",
                have.line,
                describe(have),
                describe(want)
            ));
        }
        if listed.len() > expected.len() {
            problems.push(format!(
                "the index lists {} lines, the records file holds {}",
                listed.len(),
                expected.len()
            ));
        }
        if !coverage.whole {
            problems.push(format!(
                "the index cannot be read after its entry {}",
                listed.len()
            ));
        }
        if coverage.oversized {
            problems.push("the index holds whole goals, as older versions wrote them".into());
        }
        Ok(problems)
    }

    /// Writes the index again from the records (`verify --repair`), holding the lock appends
    /// hold.
    pub fn rebuild_index(&self) -> Result<(), StoreError> {
        let Some((file, _)) = self.records()? else {
            return Ok(());
        };
        let path = self.root.join(Self::file());
        file.lock().map_err(io(&path))?;
        let len = file.metadata().map_err(io(&path))?.len();
        let expected = self.expected_index(&file, len)?;
        self.replace_index(&ledger_index::text(&expected))
    }

    /// Every whole record, oldest first, and the lines that were torn.
    pub fn read(&self) -> Result<LedgerContents, StoreError> {
        let Some((file, len)) = self.records()? else {
            return Ok(LedgerContents::default());
        };
        let mut contents = LedgerContents::default();
        self.scan_from(&file, len, 0, 1, |line| {
            match line.record {
                Some(record) => contents.records.push(record),
                None => contents.torn.push(line.entry.line),
            }
            Ok(())
        })?;
        Ok(contents)
    }

    /// Rebuilds the pack a record describes, texts included.
    pub fn replay(&self, record: &LedgerRecord) -> Result<Pack, StoreError> {
        replay(record, &self.dir, |hash| self.text(hash))
    }
}

/// Where packs are recorded, whatever keeps them: the interface both backends implement (the
/// files of a store directory here, rows in PostgreSQL in `ctxpack-pg`), which the
/// conformance suite checks.
pub trait LedgerStore: Send + Sync + std::fmt::Debug {
    /// Appends the record of `pack`, its hit texts stored first (or in the same transaction).
    /// Returns the record.
    fn append(&self, pack: &Pack, context: &RecordContext) -> Result<LedgerRecord, StoreError>;
    /// Every whole record, oldest first, and what could not be read.
    fn read(&self) -> Result<LedgerContents, StoreError>;
    /// A page of the records that match `query`, newest first, and how many match.
    fn page(&self, query: &LedgerQuery) -> Result<LedgerPage, StoreError>;
    /// The records whose id starts with `prefix` (lowercase hex), oldest first, and what
    /// could not be read.
    fn find(&self, prefix: &str) -> Result<LedgerContents, StoreError>;
    /// A stored text by hash, checked against its hash.
    fn text(&self, hash: &str) -> Result<String, StoreError>;
    /// Rebuilds the pack a record describes, texts included.
    fn replay(&self, record: &LedgerRecord) -> Result<Pack, StoreError>;
}

impl LedgerStore for Ledger {
    fn append(&self, pack: &Pack, context: &RecordContext) -> Result<LedgerRecord, StoreError> {
        Ledger::append(self, pack, context)
    }

    fn read(&self) -> Result<LedgerContents, StoreError> {
        Ledger::read(self)
    }

    fn page(&self, query: &LedgerQuery) -> Result<LedgerPage, StoreError> {
        Ledger::page(self, query)
    }

    fn find(&self, prefix: &str) -> Result<LedgerContents, StoreError> {
        Ledger::find(self, prefix)
    }

    fn text(&self, hash: &str) -> Result<String, StoreError> {
        Ledger::text(self, hash)
    }

    fn replay(&self, record: &LedgerRecord) -> Result<Pack, StoreError> {
        Ledger::replay(self, record)
    }
}

/// Whether `text` is the text `hash` names.
pub fn text_matches(hash: &str, text: &str) -> bool {
    sha256_hex(text.as_bytes()) == hash
}
