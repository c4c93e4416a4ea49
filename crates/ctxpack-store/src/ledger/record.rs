//! What a ledger record holds: made from a pack when it is recorded, and replayed into the
//! same pack from the record and its stored texts.

use std::collections::BTreeMap;
use std::path::Path;

use ctxpack_core::{
    Budget, Candidate, Citation, Counters, DropReason, Dropped, Enclosing, Family, Fitted, Hit,
    Location, Meter, Pack, Presentation, RedactionSummary, Seen, Selector, SnapshotInfo, Tier,
    Warning,
};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;

use crate::digest::sha256_hex;

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

impl LedgerRecord {
    /// The record of `pack` (its id included), built without writing anything.
    pub(crate) fn of(pack: &Pack, context: &RecordContext, time: u64) -> LedgerRecord {
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
}
