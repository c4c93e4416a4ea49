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

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use ctxpack_core::{
    Budget, Candidate, Citation, Counters, DropReason, Dropped, Enclosing, Family, Fitted, Hit,
    Location, Meter, Pack, Presentation, RedactionSummary, Seen, Selector, SnapshotInfo, Tier,
    Warning,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::guard;
use crate::ledger_index;
pub use crate::ledger_index::{INDEXED_GOAL_CHARS, indexed_goal};

/// One selected hit, with its text stored by hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerHit {
    /// 1-based retrieval rank.
    pub rank: usize,
    /// Citation id.
    pub citation: String,
    /// Source family.
    pub family: String,
    /// Cost in the pack's meter.
    pub cost: u64,
    /// `pinned` or `visible`.
    pub tier: String,
    /// File span, if any: path, first and last line, symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<(String, u32, u32, Option<String>)>,
    /// Title, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// SHA-256 of the text.
    pub text: String,
    /// In a session's pack, what of its lines the session was shown before: the pack and
    /// citation that showed them, and whether the hit is a reference to all of them (absent
    /// from other hits and from records written before sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<LedgerSeen>,
}

/// A hit's [`Seen`] as a record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerSeen {
    /// The pack that showed the lines.
    pub pack: String,
    /// The range it showed them in.
    pub citation: String,
    /// Whether the hit is a reference to all of its lines.
    pub whole: bool,
    /// What showing them again would have cost beyond the hit's cost.
    pub saved: u64,
}

/// One candidate left out, with its reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerDrop {
    /// 1-based rank, if it was a candidate.
    pub rank: Option<usize>,
    /// Citation id.
    pub citation: String,
    /// Source family.
    pub family: String,
    /// Cost in the pack's meter.
    pub cost: u64,
    /// Why it was left out.
    pub reason: DropReason,
    /// Budget remaining when it was considered.
    pub remaining: Option<u64>,
}

/// The snapshot a pack was built from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerSnapshot {
    /// As requested.
    pub requested_ref: String,
    /// Full SHA.
    pub resolved_sha: String,
    /// `exact`.
    pub selection: String,
    /// `indexed`.
    pub status: String,
    /// Branch, if any.
    pub branch: Option<String>,
    /// Detached HEAD.
    pub detached: bool,
    /// Uncommitted changes excluded.
    pub worktree_dirty: bool,
}

/// One setting of the configuration a pack was built with: its value and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerSetting {
    /// The configuration key (`budget`, `meter`, `include`, …).
    pub key: String,
    /// Its value (`null` when nothing set it and the default is decided elsewhere).
    pub value: serde_json::Value,
    /// Where the value came from: `flag`, `environment`, `repository`, `user` or `default`.
    pub source: String,
    /// The environment variable or the file it came from, for those sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// What a record says about one pack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRecord {
    /// Content hash of everything below except `time`: the pack id.
    pub id: String,
    /// Unix seconds when it was built.
    pub time: u64,
    /// The surface that built it: `pack`, `select`, `docs context`, `mcp`, `plan`, ….
    pub surface: String,
    /// Goal or purpose.
    pub goal: String,
    /// The snapshot, for snapshot packs.
    pub snapshot: Option<LedgerSnapshot>,
    /// Budget.
    pub budget: u64,
    /// Meter name.
    pub meter: Meter,
    /// Selector name.
    pub selector: String,
    /// Used budget.
    pub used: u64,
    /// Selection counters: candidate, unique, sources, duplicates, budget-rejected.
    pub counters: [usize; 5],
    /// Selected hits in pack order.
    pub hits: Vec<LedgerHit>,
    /// Everything left out.
    pub dropped: Vec<LedgerDrop>,
    /// Warnings as rendered.
    pub warnings: Vec<String>,
    /// Redactions by kind in what the pack showed (in records written before
    /// `candidateRedactions` existed, in every candidate).
    pub redactions: BTreeMap<String, u64>,
    /// Redactions by kind in every candidate, shown or not (absent from older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_redactions: Option<BTreeMap<String, u64>>,
    /// How the pack was rendered: format and view names.
    pub rendered: (String, String),
    /// Artifacts whose chunks are in the pack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The record this one is a new version of (plan `+=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Whether JSON was pretty-printed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pretty: bool,
    /// SHA-256 of the exact output, for surfaces whose output is not a rendering of the pack
    /// (seed 001's document-pack JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The effective configuration the pack was built with, when the caller gave it. Records
    /// written before configuration was recorded have none (and keep their ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Vec<LedgerSetting>>,
    /// The rendering the budget was fitted to and what it measured: `(format, view, tokens)`;
    /// absent when the budget covered the content alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted: Option<(String, String, u64)>,
    /// The enclosing definition lines shown with hits: citation → `(line, text)`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub enclosing: BTreeMap<String, (u32, String)>,
    /// The session the pack was built in, when its request named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl LedgerRecord {
    /// The SHA-256 of everything the record says but its id and time (the configuration
    /// included): what its id must be.
    pub fn content_hash(&self) -> String {
        let mut bare = self.clone();
        bare.id = String::new();
        bare.time = 0;
        sha256_hex(&serde_json::to_vec(&bare).expect("a ledger record serializes"))
    }

    /// Whether the record is what its id says it is (its content was not changed after it was
    /// written).
    pub fn is_intact(&self) -> bool {
        self.content_hash() == self.id
    }
}

/// The context of a pack that the pack itself does not carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordContext {
    /// The surface that built it.
    pub surface: String,
    /// Format and view it was rendered with.
    pub rendered: (String, String),
    /// Parent record id.
    pub parent: Option<String>,
    /// Whether JSON was pretty-printed.
    pub pretty: bool,
    /// The exact output, when it is not one of the pack's renderings.
    pub output: Option<String>,
    /// The effective configuration the pack was built with.
    pub config: Option<Vec<LedgerSetting>>,
}

/// What reading the ledger found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LedgerContents {
    /// Whole records, oldest first.
    pub records: Vec<LedgerRecord>,
    /// 1-based line numbers of records that could not be read (torn by a crash).
    pub torn: Vec<usize>,
}

/// Which recorded packs a page of the ledger holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerQuery {
    /// Only packs whose goal contains this text (case-insensitively).
    pub goal: Option<String>,
    /// Only packs built at or after this Unix second.
    pub from: Option<u64>,
    /// Only packs built before this Unix second.
    pub until: Option<u64>,
    /// Matching packs to skip, newest first.
    pub offset: usize,
    /// At most this many packs.
    pub limit: usize,
}

impl LedgerQuery {
    /// Whether a record built at `time` is in the query's time range.
    pub fn keeps_time(&self, time: u64) -> bool {
        self.from.is_none_or(|from| time >= from) && self.until.is_none_or(|until| time < until)
    }

    /// The text goals must contain, lowercased.
    pub fn needle(&self) -> Option<String> {
        self.goal.as_deref().map(str::to_lowercase)
    }

    /// Of records given newest first by their time and goal, the positions of those on this
    /// page, and how many match in all.
    pub fn select<'a>(&self, records: impl Iterator<Item = (u64, &'a str)>) -> (Vec<usize>, usize) {
        let needle = self.needle();
        let mut total = 0;
        let mut page = Vec::with_capacity(self.limit.min(1000));
        for (position, (time, text)) in records.enumerate() {
            let matches = self.keeps_time(time)
                && needle
                    .as_deref()
                    .is_none_or(|needle| text.to_lowercase().contains(needle));
            if matches {
                if total >= self.offset && page.len() < self.limit {
                    page.push(position);
                }
                total += 1;
            }
        }
        (page, total)
    }
}

/// A page of the ledger's records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LedgerPage {
    /// The records of the page, newest first.
    pub records: Vec<LedgerRecord>,
    /// How many records match in all.
    pub total: usize,
    /// 1-based line numbers of records that could not be read (torn by a crash), where the
    /// backend knows them.
    pub torn: Vec<usize>,
}

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

/// The SHA-256 of `bytes` in lowercase hex: a text's name and an index entry's goal digest.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl Ledger {
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

    /// Builds the record of `pack` (its id included) without writing anything.
    pub fn record(pack: &Pack, context: &RecordContext, time: u64) -> LedgerRecord {
        let c = pack.counters;
        let mut record = LedgerRecord {
            id: String::new(),
            time: 0,
            surface: context.surface.clone(),
            goal: pack.goal.clone(),
            snapshot: pack.snapshot.as_ref().map(|s| LedgerSnapshot {
                requested_ref: s.requested_ref.clone(),
                resolved_sha: s.resolved_sha.clone(),
                selection: s.selection.clone(),
                status: s.status.clone(),
                branch: s.branch.clone(),
                detached: s.detached,
                worktree_dirty: s.worktree_dirty,
            }),
            budget: pack.budget.get(),
            meter: pack.meter,
            selector: pack.selector.name().to_owned(),
            used: pack.used,
            counters: [
                c.candidate_hits,
                c.unique_citations,
                c.selected_sources,
                c.duplicate_citations_skipped,
                c.budget_rejected_hits,
            ],
            hits: pack
                .hits
                .iter()
                .map(|h| {
                    let c = &h.candidate;
                    LedgerHit {
                        rank: h.rank,
                        citation: c.citation.0.clone(),
                        family: c.family.0.clone(),
                        cost: c.cost,
                        tier: c.tier.name().to_owned(),
                        location: c
                            .location
                            .as_ref()
                            .map(|l| (l.path.clone(), l.start_line, l.end_line, l.symbol.clone())),
                        title: c.title.clone(),
                        text: sha256_hex(c.text.as_bytes()),
                        seen: h.seen.as_ref().map(|s| LedgerSeen {
                            pack: s.pack.clone(),
                            citation: s.citation.0.clone(),
                            whole: s.whole,
                            saved: s.saved,
                        }),
                    }
                })
                .collect(),
            dropped: pack
                .dropped
                .iter()
                .map(|d| LedgerDrop {
                    rank: d.rank,
                    citation: d.citation.0.clone(),
                    family: d.family.0.clone(),
                    cost: d.cost,
                    reason: d.reason,
                    remaining: d.remaining,
                })
                .collect(),
            warnings: pack.warnings.iter().map(ToString::to_string).collect(),
            redactions: pack.redactions.by_kind.clone(),
            candidate_redactions: Some(pack.candidate_redactions.by_kind.clone()),
            fitted: pack.presentation.fitted.map(|f| {
                (
                    f.format.name().to_owned(),
                    f.view.name().to_owned(),
                    f.tokens,
                )
            }),
            enclosing: pack
                .presentation
                .enclosing
                .iter()
                .map(|(c, e)| (c.0.clone(), (e.line, e.text.clone())))
                .collect(),
            rendered: context.rendered.clone(),
            session: pack.session.clone(),
            artifacts: pack.artifacts.clone(),
            parent: context.parent.clone(),
            pretty: context.pretty,
            output: context.output.as_deref().map(|o| sha256_hex(o.as_bytes())),
            config: context.config.clone(),
        };
        record.id = record.content_hash();
        record.time = time;
        record
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

    fn put_text(&self, hash: &str, text: &str) -> Result<(), StoreError> {
        let rel = Self::text_path(hash);
        guard::no_link(&self.root, &rel)?;
        let path = self.root.join(&rel);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(());
        }
        let parent = rel.parent().expect("text paths have a parent");
        guard::create_dirs(&self.root, parent)?;
        // Write beside, then rename: a text file is whole or absent. The temporary name is
        // created exclusively (a stale one from a crash is removed first: unlinking never
        // follows a link).
        let tmp = parent.join(guard::temp_name(hash));
        let _ = std::fs::remove_file(self.root.join(&tmp));
        let mut file = guard::create_new(&self.root, &tmp)?;
        file.write_all(text.as_bytes())
            .map_err(io(&self.root.join(&tmp)))?;
        drop(file);
        std::fs::rename(self.root.join(&tmp), &path).map_err(io(&path))?;
        Ok(())
    }

    /// The list of texts `gc` reclaimed, relative to the store.
    fn reclaimed_file() -> &'static Path {
        Path::new("ledger/reclaimed")
    }

    /// The hashes of the texts `gc` reclaimed, read once per `Ledger` (a replay or a `verify`
    /// of many records with reclaimed texts reads the list once).
    fn reclaimed(&self) -> Result<&HashSet<String>, StoreError> {
        if let Some(set) = self.reclaimed.get() {
            return Ok(set);
        }
        let bytes = guard::read_regular(&self.root, Self::reclaimed_file())?.unwrap_or_default();
        let set = String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| is_hash(line))
            .map(str::to_owned)
            .collect();
        Ok(self.reclaimed.get_or_init(|| set))
    }

    /// Deletes the texts that only packs of snapshots outside `indexed` name (and reports how
    /// many; `dry_run` deletes nothing). Packs of no snapshot (documents, `select`) keep theirs. Their records stay, and each such text reads as
    /// [`RECLAIMED_TEXT`]: the hashes are listed in `ledger/reclaimed` (and flushed) before any
    /// file is deleted, so a run stopped part way leaves texts that are listed and still there,
    /// never texts that are gone and unlisted.
    pub fn reclaim_texts(
        &mut self,
        indexed: &HashSet<&str>,
        dry_run: bool,
    ) -> Result<u64, StoreError> {
        let contents = self.read()?;
        let mut keep: HashSet<&str> = HashSet::new();
        let mut doomed: BTreeSet<&str> = BTreeSet::new();
        for record in &contents.records {
            let gone = record
                .snapshot
                .as_ref()
                .is_some_and(|s| !indexed.contains(s.resolved_sha.as_str()));
            let texts = record
                .hits
                .iter()
                .map(|h| h.text.as_str())
                .chain(record.output.as_deref());
            for text in texts.filter(|t| is_hash(t)) {
                if gone {
                    doomed.insert(text);
                } else {
                    keep.insert(text);
                }
            }
        }
        let doomed: Vec<&str> = doomed
            .into_iter()
            .filter(|t| !keep.contains(t))
            .filter(|t| std::fs::symlink_metadata(self.root.join(Self::text_path(t))).is_ok())
            .collect();
        if dry_run || doomed.is_empty() {
            return Ok(doomed.len() as u64);
        }
        guard::create_dirs(&self.root, Path::new("ledger"))?;
        let list = self.root.join(Self::reclaimed_file());
        let mut file = guard::open(
            &self.root,
            Self::reclaimed_file(),
            OpenOptions::new().create(true).append(true),
        )?;
        let mut lines = String::new();
        for text in &doomed {
            lines.push_str(text);
            lines.push('\n');
        }
        // A line torn by a crash is not a hash, and is skipped on reading.
        file.write_all(format!("\n{lines}").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io(&list))?;
        // Read again on the next missing text.
        self.reclaimed = std::sync::OnceLock::new();
        for text in &doomed {
            let rel = Self::text_path(text);
            guard::no_link(&self.root, &rel)?;
            let path = self.root.join(&rel);
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
        Ok(doomed.len() as u64)
    }

    /// A stored text by hash. Only a SHA-256 in lowercase hex names a text, so a tampered
    /// record cannot point outside the ledger; the content must match its hash. A text that
    /// `gc` reclaimed reads as [`RECLAIMED_TEXT`].
    pub fn text(&self, hash: &str) -> Result<String, StoreError> {
        if !is_hash(hash) {
            return Err(StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!("a ledger record names the text `{hash}`, which is not a SHA-256"),
            });
        }
        let unreadable = |why: String| StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!("ledger text {hash} cannot be read: {why}"),
        };
        let bytes = match guard::read_regular(&self.root, &Self::text_path(hash)) {
            Ok(Some(bytes)) => bytes,
            Ok(None) if self.reclaimed()?.contains(hash) => return Ok(RECLAIMED_TEXT.to_owned()),
            Ok(None) => return Err(unreadable("it is missing".into())),
            Err(e @ StoreError::Symlink { .. }) => return Err(e),
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let text = String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8".into()))?;
        if sha256_hex(text.as_bytes()) != hash {
            return Err(StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!("ledger text {hash} does not match its hash"),
            });
        }
        Ok(text)
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

/// Rebuilds the pack `record` describes with the texts `text` reads; `dir` names the ledger in
/// errors.
pub fn replay(
    record: &LedgerRecord,
    dir: &Path,
    text: impl Fn(&str) -> Result<String, StoreError>,
) -> Result<Pack, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        dir: dir.to_owned(),
        detail,
    };
    // A record is replayed only as it was written: its id is the hash of its content.
    if !record.is_intact() {
        return Err(corrupt(format!(
            "ledger record {} was changed after it was written (its content no longer matches its id)",
            record.id
        )));
    }
    let hits = record
        .hits
        .iter()
        .map(|h| {
            Ok(Hit {
                rank: h.rank,
                candidate: Candidate {
                    citation: Citation(h.citation.clone()),
                    family: Family(h.family.clone()),
                    text: text(&h.text)?,
                    cost: h.cost,
                    tier: if h.tier == "pinned" {
                        Tier::Pinned
                    } else {
                        Tier::Visible
                    },
                    score: None,
                    location: h
                        .location
                        .as_ref()
                        .map(|(path, start, end, symbol)| Location {
                            path: path.clone(),
                            start_line: *start,
                            end_line: *end,
                            symbol: symbol.clone(),
                        }),
                    title: h.title.clone(),
                },
                seen: h.seen.as_ref().map(|s| Seen {
                    pack: s.pack.clone(),
                    citation: Citation(s.citation.clone()),
                    whole: s.whole,
                    saved: s.saved,
                }),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let [
        candidate_hits,
        unique_citations,
        selected_sources,
        duplicate_citations_skipped,
        budget_rejected_hits,
    ] = record.counters;
    let mut pack = Pack {
        goal: record.goal.clone(),
        snapshot: record.snapshot.as_ref().map(|s| SnapshotInfo {
            requested_ref: s.requested_ref.clone(),
            resolved_sha: s.resolved_sha.clone(),
            selection: s.selection.clone(),
            status: s.status.clone(),
            branch: s.branch.clone(),
            detached: s.detached,
            worktree_dirty: s.worktree_dirty,
        }),
        budget: Budget::new(record.budget)
            .map_err(|e| corrupt(format!("record {}: {e}", record.id)))?,
        meter: record.meter,
        used: record.used,
        selector: record
            .selector
            .parse::<Selector>()
            .map_err(|e| corrupt(format!("record {}: {e}", record.id)))?,
        counters: Counters {
            candidate_hits,
            unique_citations,
            selected_sources,
            duplicate_citations_skipped,
            budget_rejected_hits,
        },
        hits,
        dropped: record
            .dropped
            .iter()
            .map(|d| Dropped {
                rank: d.rank,
                citation: Citation(d.citation.clone()),
                family: Family(d.family.clone()),
                cost: d.cost,
                reason: d.reason,
                remaining: d.remaining,
            })
            .collect(),
        warnings: record
            .warnings
            .iter()
            .cloned()
            .map(Warning::Notice)
            .collect(),
        // Counted again from the hits below: what they show is in their text.
        redactions: RedactionSummary::default(),
        candidate_redactions: RedactionSummary {
            by_kind: record
                .candidate_redactions
                .clone()
                .unwrap_or_else(|| record.redactions.clone()),
        },
        artifacts: record.artifacts.clone(),
        session: record.session.clone(),
        presentation: Presentation {
            enclosing: record
                .enclosing
                .iter()
                .map(|(c, (line, text))| {
                    (
                        Citation(c.clone()),
                        Enclosing {
                            line: *line,
                            text: text.clone(),
                        },
                    )
                })
                .collect(),
            fitted: match &record.fitted {
                Some((format, view, tokens)) => Some(Fitted {
                    format: format
                        .parse()
                        .map_err(|e| corrupt(format!("record {}: {e}", record.id)))?,
                    view: view
                        .parse()
                        .map_err(|e| corrupt(format!("record {}: {e}", record.id)))?,
                    tokens: *tokens,
                }),
                None => None,
            },
        },
    };
    pack.recount_redactions();
    Ok(pack)
}
