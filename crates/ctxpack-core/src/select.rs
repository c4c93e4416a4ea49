//! Selectors: the policies that choose whole hits under a budget. This is where budgets are
//! enforced: a candidate is admitted only when its whole cost fits the budget that remains.
//!
//! Every selector starts the same way: exact duplicate citation ids are removed (the first
//! occurrence stays eligible), then the pinned tier is admitted in rank order, drop-and-continue,
//! before any visible candidate is looked at. What differs is how visible candidates compete
//! for the budget that is left. Whatever the policy, hits are whole, `used <= budget`, and every
//! candidate ends up either selected or dropped with a reason.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use crate::budget::Budget;
use crate::model::{Candidate, Citation, DropReason, Dropped, Family, Hit, Tier};

/// A selection policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Selector {
    /// citation-diverse-v2: a diversity pass that takes the first fitting hit of each source
    /// family in rank order, then a fill pass over the rest in rank order. Representatives are
    /// listed first, then fill hits.
    Diverse,
    /// Best-first; stops at the first hit that does not fit, which marks the pack truncated.
    Prefix,
    /// Drop-and-continue in rank order: a hit that does not fit is dropped and packing goes on.
    Skip,
    /// ctxpack's own: greedy relevance-per-cost with diminishing returns for repeated source
    /// families, listed in rank order.
    Coverage,
}

impl Selector {
    /// Every selector.
    pub const ALL: [Selector; 4] = [
        Selector::Diverse,
        Selector::Prefix,
        Selector::Skip,
        Selector::Coverage,
    ];

    /// The name accepted by `--selector`.
    pub fn name(self) -> &'static str {
        match self {
            Selector::Diverse => "diverse",
            Selector::Prefix => "prefix",
            Selector::Skip => "skip",
            Selector::Coverage => "coverage",
        }
    }

    /// The strategy identifier reported in a pack's `selection.strategy`.
    pub fn strategy(self) -> &'static str {
        match self {
            Selector::Diverse => "citation-diverse-v2",
            Selector::Prefix => "greedy-prefix",
            Selector::Skip => "drop-and-continue",
            Selector::Coverage => "coverage-v4",
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Selector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Selector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl FromStr for Selector {
    type Err = crate::ValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::ALL
            .into_iter()
            .find(|sel| sel.name() == s)
            .ok_or_else(|| crate::ValueError::UnknownSelector(s.to_owned()))
    }
}

/// The selection counters of a pack. They always satisfy
/// `unique_citations = selected_hits + budget_rejected_hits` and
/// `candidate_hits = unique_citations + duplicate_citations_skipped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Candidates offered.
    pub candidate_hits: usize,
    /// Candidates after exact-citation deduplication.
    pub unique_citations: usize,
    /// Distinct source families among the selected hits.
    pub selected_sources: usize,
    /// Candidates removed because an earlier one had the same citation id.
    pub duplicate_citations_skipped: usize,
    /// Unique candidates not selected: those the budget did not admit, and those a snapshot
    /// pack left out as [weak](crate::DropReason::Weak).
    pub budget_rejected_hits: usize,
}

/// The outcome of a selection.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// The policy that made it.
    pub selector: Selector,
    /// Selected hits, in the order the policy lists them.
    pub hits: Vec<Hit>,
    /// Every candidate not selected, in rank order, with its reason.
    pub dropped: Vec<Dropped>,
    /// Sum of the selected hits' costs; never above the budget.
    pub used: u64,
    /// The counters.
    pub counters: Counters,
    /// How much work the policy did: candidates looked at plus heap operations. It grows as
    /// O(n) for every policy but `coverage`, which is O(n log n); tests hold it to that bound.
    pub work: u64,
}

impl Selection {
    /// Whether any unique candidate was left out for budget reasons.
    pub fn truncated(&self) -> bool {
        self.counters.budget_rejected_hits > 0
    }
}

/// A unique candidate awaiting a decision.
struct Slot {
    rank: usize,
    candidate: Candidate,
}

/// Selects whole candidates under `budget` with `selector`. Candidates must be in retrieval
/// rank order; the result is a pure function of the arguments.
pub fn select(candidates: Vec<Candidate>, budget: Budget, selector: Selector) -> Selection {
    let candidate_hits = candidates.len();
    let mut seen: HashSet<Citation> = HashSet::with_capacity(candidates.len());
    let mut dropped = Vec::new();
    let mut pinned = Vec::new();
    let mut visible = Vec::new();
    for (i, candidate) in candidates.into_iter().enumerate() {
        let rank = i + 1;
        if !seen.insert(candidate.citation.clone()) {
            dropped.push(drop_of(rank, &candidate, DropReason::Duplicate, None));
            continue;
        }
        let slot = Slot { rank, candidate };
        match slot.candidate.tier {
            Tier::Pinned => pinned.push(slot),
            Tier::Visible => visible.push(slot),
        }
    }
    let duplicates = dropped.len();
    let unique = candidate_hits - duplicates;

    let mut state = State {
        remaining: budget.get(),
        chosen: Vec::new(),
        dropped,
    };
    // The pinned tier always goes first, drop-and-continue, whatever the policy.
    for slot in pinned {
        state.offer(slot, DropReason::OverBudget);
    }
    let work = match selector {
        Selector::Diverse => diverse(&mut state, visible),
        Selector::Prefix => prefix(&mut state, visible),
        Selector::Skip => {
            let n = visible.len() as u64;
            for slot in visible {
                state.offer(slot, DropReason::OverBudget);
            }
            n
        }
        Selector::Coverage => coverage(&mut state, visible),
    };

    let State {
        remaining,
        chosen,
        mut dropped,
    } = state;
    dropped.sort_by_key(|d| d.rank);
    let hits: Vec<Hit> = chosen
        .into_iter()
        .map(|slot| Hit {
            rank: slot.rank,
            candidate: slot.candidate,
            seen: None,
        })
        .collect();
    let selected_sources = hits
        .iter()
        .map(|h| &h.candidate.family)
        .collect::<HashSet<_>>()
        .len();
    let counters = Counters {
        candidate_hits,
        unique_citations: unique,
        selected_sources,
        duplicate_citations_skipped: duplicates,
        budget_rejected_hits: unique - hits.len(),
    };
    Selection {
        selector,
        used: budget.get() - remaining,
        hits,
        dropped,
        counters,
        work,
    }
}

struct State {
    remaining: u64,
    chosen: Vec<Slot>,
    dropped: Vec<Dropped>,
}

impl State {
    fn fits(&self, slot: &Slot) -> bool {
        slot.candidate.cost <= self.remaining
    }

    fn take(&mut self, slot: Slot) {
        self.remaining -= slot.candidate.cost;
        self.chosen.push(slot);
    }

    fn drop_slot(&mut self, slot: &Slot, reason: DropReason) {
        let remaining = Some(self.remaining);
        self.dropped
            .push(drop_of(slot.rank, &slot.candidate, reason, remaining));
    }

    /// Takes the slot if it fits, else records it as dropped for `reason`. Returns whether it
    /// was taken.
    fn offer(&mut self, slot: Slot, reason: DropReason) -> bool {
        if self.fits(&slot) {
            self.take(slot);
            true
        } else {
            self.drop_slot(&slot, reason);
            false
        }
    }
}

fn drop_of(rank: usize, c: &Candidate, reason: DropReason, remaining: Option<u64>) -> Dropped {
    Dropped {
        rank: Some(rank),
        citation: c.citation.clone(),
        family: c.family.clone(),
        cost: c.cost,
        reason,
        remaining,
    }
}

/// citation-diverse-v2 over the visible tier; returns the candidates looked at.
fn diverse(state: &mut State, visible: Vec<Slot>) -> u64 {
    let n = visible.len() as u64;
    let mut represented: HashSet<Family> = state
        .chosen
        .iter()
        .map(|s| s.candidate.family.clone())
        .collect();
    let mut rest = Vec::new();
    for slot in visible {
        if !represented.contains(&slot.candidate.family) && state.fits(&slot) {
            represented.insert(slot.candidate.family.clone());
            state.take(slot);
        } else {
            rest.push(slot);
        }
    }
    let looked = n + rest.len() as u64;
    for slot in rest {
        state.offer(slot, DropReason::OverBudget);
    }
    looked
}

/// Best-first prefix over the visible tier: the first miss ends packing. Returns the
/// candidates looked at.
fn prefix(state: &mut State, visible: Vec<Slot>) -> u64 {
    let n = visible.len() as u64;
    let mut stopped = false;
    for slot in visible {
        if stopped {
            state.drop_slot(&slot, DropReason::PrefixTruncated);
        } else if !state.offer(slot, DropReason::OverBudget) {
            stopped = true;
        }
    }
    n
}

/// How much a further hit from an already represented family is worth, relative to the first:
/// a strong file's second and third chunks (often where its change is) stay ahead of a weak
/// file's first (docs/quality.md, "Show the code the task changes").
const FAMILY_DECAY: f64 = 0.5;
/// The same for the family of the best-ranked candidate: the file the evidence points at most
/// gets more depth before the others get breadth, since the lines a task changes are more often
/// in its later chunks than in other files' first (docs/quality.md, "Depth for the best file"
/// and "Ranked by the chunk").
const BEST_FAMILY_DECAY: f64 = 0.85;
/// The power relevance is raised to: a chunk half as relevant as the best is worth an eighth
/// of it, so a large strong chunk is not outbid by several small weak ones that cost the same.
const RELEVANCE_POWER: i32 = 3;

/// Greedy budgeted coverage over the visible tier.
///
/// Each candidate has a relevance in `[0, 1]`: its score divided by the best score when every
/// visible candidate carries a non-negative finite score, else a rank discount
/// `1 / log2(rank + 1)`. Its marginal gain is that relevance cubed ([`RELEVANCE_POWER`]) times
/// [`FAMILY_DECAY`] for every hit of its family already chosen ([`BEST_FAMILY_DECAY`] for the
/// family of the first visible candidate, the best-ranked), and the candidate with the best
/// gain per square root of cost is taken next (ties by rank), until nothing left fits.
/// The cube and the square root keep a long, highly relevant chunk ahead of short, weak ones.
/// Hits are listed in rank order.
///
/// Taking a hit scales the gain of every open member of its family by the same factor, which
/// leaves their order within the family unchanged; so each family keeps its members in
/// one heap, and a second heap holds each family's best member at the family's current gain.
/// A candidate that does not fit never fits later (the remaining budget only shrinks), so it
/// leaves for good. Each candidate enters and leaves each heap O(1) times: O(n log n) in all.
fn coverage(state: &mut State, visible: Vec<Slot>) -> u64 {
    let relevance = relevance_of(&visible);
    let mut family_of: HashMap<Family, usize> = HashMap::new();
    let mut seen: Vec<i32> = Vec::new();
    let mut members: Vec<BinaryHeap<Key>> = Vec::new();
    let mut family_index =
        |family: &Family, seen: &mut Vec<i32>, members: &mut Vec<BinaryHeap<Key>>| {
            *family_of.entry(family.clone()).or_insert_with(|| {
                seen.push(0);
                members.push(BinaryHeap::new());
                seen.len() - 1
            })
        };
    for slot in &state.chosen {
        let f = family_index(&slot.candidate.family, &mut seen, &mut members);
        seen[f] += 1;
    }
    let best_family = visible.first().map(|s| s.candidate.family.clone());
    let decay: Vec<f64> = visible
        .iter()
        .map(|s| {
            if Some(&s.candidate.family) == best_family.as_ref() {
                BEST_FAMILY_DECAY
            } else {
                FAMILY_DECAY
            }
        })
        .collect();
    let density = |i: usize, seen: i32, cost: u64| {
        let gain = relevance[i].powi(RELEVANCE_POWER) * decay[i].powi(seen);
        gain / (cost.max(1) as f64).sqrt()
    };
    let mut families: Vec<usize> = Vec::with_capacity(visible.len());
    let mut work = 0u64;
    for (i, slot) in visible.iter().enumerate() {
        let f = family_index(&slot.candidate.family, &mut seen, &mut members);
        families.push(f);
        // Within a family the order at any common decay is the order at no decay.
        members[f].push(Key::new(density(i, 0, slot.candidate.cost), i));
        work += 1;
    }
    let mut open: Vec<Option<Slot>> = visible.into_iter().map(Some).collect();
    // The best member of every family, at the family's current decay.
    let head = |f: usize, members: &BinaryHeap<Key>, seen: &[i32], open: &[Option<Slot>]| {
        members.peek().map(|k| {
            let cost = open[k.index].as_ref().map_or(1, |s| s.candidate.cost);
            Key::new(density(k.index, seen[f], cost), k.index)
        })
    };
    let mut heads: BinaryHeap<Key> = (0..members.len())
        .filter_map(|f| head(f, &members[f], &seen, &open))
        .collect();
    let mut misfits = Vec::new();
    while let Some(top) = heads.pop() {
        work += 1;
        let f = families[top.index];
        members[f].pop();
        let slot = open[top.index]
            .take()
            .expect("a head points at an open slot");
        if state.fits(&slot) {
            seen[f] += 1;
            state.take(slot);
        } else {
            misfits.push(slot);
        }
        if let Some(next) = head(f, &members[f], &seen, &open) {
            heads.push(next);
        }
    }
    // Dropped with the budget left at the end, in rank order.
    misfits.sort_by_key(|s| s.rank);
    for slot in misfits {
        state.drop_slot(&slot, DropReason::OverBudget);
    }
    state.chosen.sort_by_key(|s| (s.candidate.tier, s.rank));
    work
}

/// A candidate's place in a heap: the best density first, the earliest rank on ties.
#[derive(Clone, Copy, Debug)]
struct Key {
    density: f64,
    index: usize,
}

impl Key {
    fn new(density: f64, index: usize) -> Key {
        Key { density, index }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.density
            .total_cmp(&other.density)
            .then_with(|| other.index.cmp(&self.index))
    }
}

fn relevance_of(visible: &[Slot]) -> Vec<f64> {
    let scores: Option<Vec<f64>> = visible
        .iter()
        .map(|s| s.candidate.score.filter(|v| v.is_finite() && *v >= 0.0))
        .collect();
    match scores {
        Some(scores) if scores.iter().any(|&s| s > 0.0) => {
            let max = scores.iter().copied().fold(0.0, f64::max);
            scores.into_iter().map(|s| s / max).collect()
        }
        _ => (0..visible.len())
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .collect(),
    }
}
