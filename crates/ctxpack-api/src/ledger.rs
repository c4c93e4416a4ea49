//! The ledger: what every recorded pack showed a model, listed and replayed.

use std::collections::BTreeSet;
use std::sync::Arc;

use ctxpack_core::{Format, Pack, RenderOptions, View};
use ctxpack_store::{Ledger, LedgerRecord, LedgerStore};
use serde::Serialize;

use crate::config::EffectiveConfig;
use crate::error::{Error, Hint, Result};
use crate::workspace::Workspace;

/// One recorded pack, as `log` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    /// The pack id (a SHA-256 of the record).
    pub id: String,
    /// Unix seconds when it was built.
    pub time: u64,
    /// The surface that built it.
    pub surface: String,
    /// Its goal or purpose.
    pub goal: String,
    /// The commit, for snapshot packs.
    pub snapshot: Option<String>,
    /// The budget.
    pub budget: u64,
    /// The meter's name.
    pub meter: String,
    /// The selector's name.
    pub selector: String,
    /// Budget used.
    pub used_tokens: u64,
    /// Hits selected.
    pub selected_hits: usize,
    /// Candidates left out.
    pub dropped: usize,
    /// The record it is a new version of.
    pub parent: Option<String>,
    /// Whether it packed the working tree (`--worktree`): some hit is cited `@worktree`.
    pub worktree: bool,
}

impl From<&LedgerRecord> for LogEntry {
    fn from(r: &LedgerRecord) -> LogEntry {
        LogEntry {
            id: r.id.clone(),
            time: r.time,
            surface: r.surface.clone(),
            goal: r.goal.clone(),
            snapshot: r.snapshot.as_ref().map(|s| s.resolved_sha.clone()),
            budget: r.budget,
            meter: r.meter.name().to_owned(),
            selector: r.selector.clone(),
            used_tokens: r.used,
            selected_hits: r.hits.len(),
            dropped: r.dropped.len(),
            parent: r.parent.clone(),
            worktree: r
                .hits
                .iter()
                .any(|h| ctxpack_core::Citation::is_worktree(&h.citation)),
        }
    }
}

/// The ledger's packs, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Log {
    /// The entries, newest first.
    pub entries: Vec<LogEntry>,
    /// 1-based line numbers of records torn by a crashed writer (skipped; the others are
    /// intact).
    pub torn: Vec<usize>,
}

/// A recorded pack, replayed.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// The record.
    pub record: LedgerRecord,
    /// The pack as it was built, texts included.
    pub pack: Pack,
    /// The exact output, for surfaces whose output is not a rendering of the pack (seed 001's
    /// document-pack JSON).
    pub exact_output: Option<String>,
    /// How the pack was shown when it was built.
    pub rendering: RenderOptions,
    /// The effective configuration it was built with, each value with its source (records
    /// of callers that gave none, and older records, have none).
    pub config: Option<EffectiveConfig>,
    /// Torn records skipped while reading.
    pub torn: Vec<usize>,
}

/// Which recorded packs a listing shows, and which page of them.
pub use ctxpack_store::LedgerQuery as LogFilter;

/// A page of the recorded packs that match a filter.
#[derive(Clone, Debug, PartialEq)]
pub struct LogPage {
    /// The packs of the page, newest first.
    pub entries: Vec<LogEntry>,
    /// How many packs match in all.
    pub total: usize,
}

/// How many packs a log lists when the caller does not say: `ctxpack log` and the server's
/// ledger route alike.
pub const DEFAULT_LOG_LIMIT: usize = 20;

/// The most packs one log lists ([`Workspace::log`] refuses more).
pub const MAX_LOG_LIMIT: usize = 1000;

impl Workspace {
    /// A page of the recorded packs that match `filter`, newest first.
    pub fn log_page(&self, filter: &LogFilter) -> Result<LogPage> {
        let page = self.ledger()?.page(filter)?;
        let total = page.total;
        let entries = page.records.iter().map(LogEntry::from).collect();
        Ok(LogPage { entries, total })
    }

    /// Where this workspace records packs: the ledger it was given, or its store's.
    pub(crate) fn ledger(&self) -> Result<Arc<dyn LedgerStore>> {
        match &self.ledger {
            Some(ledger) => Ok(ledger.clone()),
            None => Ok(Arc::new(Ledger::new(self.store_root()?))),
        }
    }

    /// The recorded packs, newest first, at most `limit` of them (1 to [`MAX_LOG_LIMIT`]; read
    /// through the ledger's index: the records of the page alone).
    pub fn log(&self, limit: usize) -> Result<Log> {
        if !(1..=MAX_LOG_LIMIT).contains(&limit) {
            return Err(Error::invalid_field(
                "limit",
                format!("must be 1 to {MAX_LOG_LIMIT}"),
            ));
        }
        let page = self.ledger()?.page(&LogFilter {
            limit,
            ..LogFilter::default()
        })?;
        Ok(Log {
            entries: page.records.iter().map(LogEntry::from).collect(),
            torn: page.torn,
        })
    }

    /// The recorded pack whose id starts with `id` (at least 4 hex digits).
    pub fn show(&self, id: &str) -> Result<Shown> {
        if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::invalid_field(
                "id",
                format!("`{id}` is not a pack id: give at least 4 hex digits of one"),
            )
            .with_hint(Hint::ListPacks));
        }
        let ledger = self.ledger()?;
        let prefix = id.to_ascii_lowercase();
        let contents = ledger.find(&prefix)?;
        let matching: Vec<&LedgerRecord> = contents.records.iter().collect();
        let distinct: BTreeSet<&str> = matching.iter().map(|r| r.id.as_str()).collect();
        if distinct.len() > 1 {
            return Err(Error::invalid_field(
                "id",
                format!("`{id}` matches {} packs", distinct.len()),
            )
            .with_hint(Hint::MoreDigits));
        }
        let Some(record) = matching.last() else {
            return Err(Error::not_found(format!("no pack `{id}` in the ledger"))
                .with_hint(Hint::ListPacks));
        };
        let exact_output = record
            .output
            .as_deref()
            .map(|hash| ledger.text(hash))
            .transpose()?;
        let pack = ledger.replay(record)?;
        let config = record
            .config
            .as_deref()
            .map(EffectiveConfig::from_ledger)
            .transpose()?;
        Ok(Shown {
            config,
            rendering: RenderOptions {
                format: record.rendered.0.parse().unwrap_or(Format::Text),
                view: record.rendered.1.parse().unwrap_or(View::Default),
                pretty: record.pretty,
            },
            record: (*record).clone(),
            pack,
            exact_output,
            torn: contents.torn,
        })
    }
}
