//! The pack: what a model is shown, with everything needed to account for it.

use std::collections::BTreeMap;
use std::fmt;

use ctxpack_meter::Meter;

use crate::budget::Budget;
use crate::model::{Candidate, Citation, Dropped, Hit};
use crate::render::options::{Format, View};
use crate::select::{Counters, Selection, Selector, select};

/// A warning carried by a pack. Its text is part of the output contract.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Warning {
    /// Candidates existed but none fit whole.
    NoCompleteHitFits,
    /// The worktree has uncommitted changes that the pack does not include.
    DirtyWorktree,
    /// A surface-specific notice (for example a field embedded on the fly).
    Notice(String),
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NoCompleteHitFits => {
                f.write_str("context pack budget admitted no complete hit")
            }
            Warning::DirtyWorktree => f.write_str(
                "worktree has uncommitted changes; the pack reads the committed snapshot and excludes them",
            ),
            Warning::Notice(text) => f.write_str(text),
        }
    }
}

/// How many secrets were masked in the candidates, by kind of secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedactionSummary {
    /// Count per rule kind, ordered by kind.
    pub by_kind: BTreeMap<String, u64>,
}

impl RedactionSummary {
    /// Total number of masked secrets.
    pub fn total(&self) -> u64 {
        self.by_kind.values().sum()
    }

    /// Records `n` redactions of `kind`.
    pub fn add(&mut self, kind: &str, n: u64) {
        if n > 0 {
            *self.by_kind.entry(kind.to_owned()).or_default() += n;
        }
    }
}

/// Which snapshot a pack was built from and how it was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The reference as the caller gave it (`HEAD`, a SHA or a prefix).
    pub requested_ref: String,
    /// The full SHA it resolved to.
    pub resolved_sha: String,
    /// How the snapshot was chosen (`exact`).
    pub selection: String,
    /// The snapshot's state in the store (`indexed`).
    pub status: String,
    /// The checked-out branch, if any.
    pub branch: Option<String>,
    /// Whether HEAD is detached.
    pub detached: bool,
    /// Whether the worktree had uncommitted changes.
    pub worktree_dirty: bool,
}

/// The line that opens the function or type a hit starts inside, shown above the hit so a
/// span cut from the middle of a definition says what it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enclosing {
    /// The line's 1-based number in its file.
    pub line: u32,
    /// The line's text, without its line break.
    pub text: String,
}

/// The rendering a pack's budget was fitted to, and what that rendering measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fitted {
    /// The text format the printed output was measured in (`text`, `markdown` or `xml`).
    pub format: Format,
    /// The view it was measured in.
    pub view: View,
    /// The printed output's size in the pack's meter; at most the budget.
    pub tokens: u64,
}

/// What a pack's printed output shows beyond its hits, and what it measured. Presentation
/// only: hits, citations and counters do not depend on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Presentation {
    /// The enclosing definition's opening line, by the citation of a hit that starts inside
    /// one.
    pub enclosing: BTreeMap<Citation, Enclosing>,
    /// The rendering the budget covered, when the budget covers the printed output; `None`
    /// when it covers the hits' content alone.
    pub fitted: Option<Fitted>,
}

/// What a pack is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackRequest {
    /// The goal or purpose the pack serves.
    pub goal: String,
    /// The hard budget.
    pub budget: Budget,
    /// The unit the budget and every cost are measured in.
    pub meter: Meter,
    /// The selection policy.
    pub selector: Selector,
}

/// A finished pack.
#[derive(Clone, Debug, PartialEq)]
pub struct Pack {
    /// The goal or purpose.
    pub goal: String,
    /// The snapshot, for packs built from one.
    pub snapshot: Option<SnapshotInfo>,
    /// The hard budget.
    pub budget: Budget,
    /// The unit of budget and costs.
    pub meter: Meter,
    /// Sum of the selected hits' costs; `used <= budget`.
    pub used: u64,
    /// The selection policy.
    pub selector: Selector,
    /// The counters.
    pub counters: Counters,
    /// The selected hits, in pack order.
    pub hits: Vec<Hit>,
    /// What was left out and why.
    pub dropped: Vec<Dropped>,
    /// Warnings, in the order they arose.
    pub warnings: Vec<Warning>,
    /// What masking removed from what the pack shows: its goal and its hits.
    pub redactions: RedactionSummary,
    /// What masking removed from every candidate (and the goal), shown or not.
    pub candidate_redactions: RedactionSummary,
    /// Ids of the artifacts whose chunks are in the pack.
    pub artifacts: Vec<String>,
    /// Context lines shown with the hits and, for a pack fitted to its output, what the
    /// output measured.
    pub presentation: Presentation,
    /// The session the pack was built in, when the request named one: hits it had shown
    /// before carry [`Seen`](crate::Seen).
    pub session: Option<String>,
}

impl Pack {
    /// Selects from `candidates` (in retrieval rank order, costs in `request.meter`) and
    /// assembles the pack, warning when candidates existed but none fit.
    pub fn build(request: PackRequest, candidates: Vec<Candidate>) -> Pack {
        let Selection {
            selector,
            hits,
            dropped,
            used,
            counters,
            ..
        } = select(candidates, request.budget, request.selector);
        let mut warnings = Vec::new();
        if counters.candidate_hits > 0 && hits.is_empty() {
            warnings.push(Warning::NoCompleteHitFits);
        }
        Pack {
            goal: request.goal,
            snapshot: None,
            budget: request.budget,
            meter: request.meter,
            used,
            selector,
            counters,
            hits,
            dropped,
            warnings,
            redactions: RedactionSummary::default(),
            candidate_redactions: RedactionSummary::default(),
            artifacts: Vec::new(),
            presentation: Presentation::default(),
            session: None,
        }
    }

    /// Records what masking removed from the candidates and the goal (`masked`), and counts
    /// what of it the pack shows ([`Pack::recount_redactions`]).
    pub fn set_redactions(&mut self, masked: RedactionSummary) {
        self.candidate_redactions = masked;
        self.recount_redactions();
    }

    /// Counts the masks the goal and the hits show now (after hits were cut, widened or left
    /// out): the markers of each kind in their text, no more than the candidates had of it (a
    /// repository's text may spell a marker itself).
    pub fn recount_redactions(&mut self) {
        let mut shown = RedactionSummary::default();
        for (kind, masked) in &self.candidate_redactions.by_kind {
            let marker = crate::mask::marker(kind);
            let found = self.goal.matches(&marker).count()
                + self
                    .hits
                    .iter()
                    .map(|h| h.candidate.text.matches(&marker).count())
                    .sum::<usize>();
            shown.add(kind, u64::try_from(found).unwrap_or(u64::MAX).min(*masked));
        }
        self.redactions = shown;
    }

    /// Whether any unique candidate was left out for budget reasons.
    pub fn truncated(&self) -> bool {
        self.counters.budget_rejected_hits > 0
    }
}
