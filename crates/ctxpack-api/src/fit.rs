//! Output that fits the budget: markup costs counted with the content they wrap.
//!
//! A budget that covers the output ([`BudgetCovers::Output`]) holds for the whole printed
//! pack in the format it is shown in ([`Format::fitted`]): header, headings, citations,
//! fences, notes and the drop summary, measured in the pack's meter. Fitting has two steps:
//!
//! 1. **Selection with markup.** Each candidate costs its content plus the markup it adds
//!    when shown on its own ([`ctxpack_core::markup`]), and the fixed part of the output (the
//!    header, a drop summary, a warning) is reserved from the budget first. Selection is the
//!    request's selector, unchanged, over those costs; the hits then carry their content costs
//!    again, so `used` is still the sum of the hits' content costs.
//! 2. **Measure and trim.** The pack, assembled (snapshot, warnings, context lines), is
//!    rendered and measured. While it exceeds the budget, the lowest-value hits (visible before
//!    pinned, the worst-ranked first) whose estimated size covers the excess are moved to the
//!    dropped list (`over_budget`, nothing remaining) and the pack is measured again. Each
//!    round removes at least one hit, so it ends; it is a function of the pack alone, so it is
//!    deterministic.
//!
//! When the output without any hit still exceeds the budget, the budget is refused: an
//! invalid-input error on `budget` naming the smallest budget that fits.

use std::collections::{BTreeMap, BTreeSet};

use ctxpack_core::{
    Budget, Candidate, Citation, DropReason, Dropped, Enclosing, Fitted, Format, Hit, Meter, Pack,
    PackRequest, RedactionSummary, RenderOptions, SnapshotInfo, Warning, evidence_tokens, markup,
    render,
};
use ctxpack_index::chunk::{enclosing_from, enclosing_lines};
use ctxpack_index::git::Repo;
use ctxpack_index::indexer::STORED_CHUNKER;
use ctxpack_store::{ChunkStart, Store};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mask;

/// The rendering a pack is fitted to when the caller does not say how it shows the pack:
/// Markdown in the default view, what the MCP tool shows and what JSON's `renderedTokens`
/// counts.
pub const DEFAULT_RENDERING: RenderOptions = RenderOptions {
    format: Format::Markdown,
    view: ctxpack_core::View::Default,
    pretty: false,
};

/// What a pack's budget is spent on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BudgetCovers {
    /// The whole printed output: the hits' text and the markup, headers and citations the
    /// chosen format wraps them in, so what a model reads fits the budget.
    #[default]
    Output,
    /// The hits' content alone (seed 000's unit: complete hit text, not the serialized
    /// payload); the printed output is larger than the budget.
    Content,
}

impl BudgetCovers {
    /// `output` or `content`.
    pub fn name(self) -> &'static str {
        match self {
            BudgetCovers::Output => "output",
            BudgetCovers::Content => "content",
        }
    }
}

impl std::fmt::Display for BudgetCovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BudgetCovers {
    type Err = Error;

    fn from_str(s: &str) -> Result<BudgetCovers> {
        match s {
            "output" => Ok(BudgetCovers::Output),
            "content" => Ok(BudgetCovers::Content),
            other => Err(Error::invalid_field(
                "budget_covers",
                format!("unknown value `{other}`: expected output or content"),
            )),
        }
    }
}

/// What a pack's budget is fitted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fit {
    /// The hits' content alone: selection as the engine does it.
    Content,
    /// The printed output in this rendering (its format already a text format).
    Output(RenderOptions),
}

impl Fit {
    /// The fit for a budget covering `covers`, for a pack shown as `shown` (the
    /// [default rendering](DEFAULT_RENDERING) when `None`).
    pub(crate) fn new(covers: BudgetCovers, shown: Option<&RenderOptions>) -> Fit {
        match covers {
            BudgetCovers::Content => Fit::Content,
            BudgetCovers::Output => {
                let shown = shown.copied().unwrap_or(DEFAULT_RENDERING);
                Fit::Output(RenderOptions {
                    format: shown.format.fitted(),
                    ..shown
                })
            }
        }
    }

    /// Selects from `candidates` under the request's budget, less `1 / withhold` of what the
    /// hits may spend (none withheld for 0), and returns the pack (hits and `used` in content
    /// costs) with what it spends of the budget as selection counted it (content plus markup
    /// plus the reserved fixed part, for an output budget).
    pub(crate) fn select(
        &self,
        request: PackRequest,
        candidates: Vec<Candidate>,
        withhold: u64,
    ) -> (Pack, u64) {
        let less = |room: u64| {
            let kept = room - room.checked_div(withhold).unwrap_or(0);
            Budget::new(kept.max(1)).expect("a value in 1 ..= budget is a valid budget")
        };
        let Fit::Output(rendering) = self else {
            let budget = request.budget;
            let mut pack = Pack::build(
                PackRequest {
                    budget: less(budget.get()),
                    ..request
                },
                candidates,
            );
            pack.budget = budget;
            let used = pack.used;
            return (pack, used);
        };
        let meter = request.meter;
        let budget = request.budget;
        let reserve = meter.count(&render(
            &skeleton(&request, &candidates, rendering),
            rendering,
        ));
        let content: Vec<u64> = candidates.iter().map(|c| c.cost).collect();
        // Each candidate's markup, counted on both cores: a large pool has hundreds.
        let extras = crate::cores::map(&candidates, MAP_BESIDE_FROM, |c| {
            meter.count(&markup(c, rendering, meter))
        });
        let inflated: Vec<Candidate> = candidates
            .into_iter()
            .zip(extras)
            .map(|(mut c, extra)| {
                c.cost = c.cost.saturating_add(extra);
                c
            })
            .collect();
        // With no room left after the fixed part, selection still runs (on a budget of one)
        // so every candidate is accounted for; measuring then refuses the budget.
        let room = less(budget.get().saturating_sub(reserve));
        let mut pack = Pack::build(
            PackRequest {
                budget: room,
                ..request
            },
            inflated,
        );
        let spent = reserve.saturating_add(pack.used);
        let content_of = |rank: usize| content.get(rank.wrapping_sub(1)).copied();
        for hit in &mut pack.hits {
            hit.candidate.cost = content_of(hit.rank).unwrap_or(hit.candidate.cost);
        }
        for d in &mut pack.dropped {
            if let Some(cost) = d.rank.and_then(content_of) {
                d.cost = cost;
            }
        }
        pack.budget = budget;
        pack.used = pack.hits.iter().map(|h| h.candidate.cost).sum();
        pack.presentation.fitted = Some(fitting(rendering));
        (pack, spent.min(budget.get()))
    }

    /// What showing `candidate` on its own adds around its evidence: its markup, less its
    /// citation (0 for a content budget).
    pub(crate) fn framing(&self, candidate: &Candidate, meter: Meter) -> u64 {
        match self {
            Fit::Content => 0,
            Fit::Output(rendering) => meter
                .count(&markup(candidate, rendering, meter))
                .saturating_sub(meter.count(candidate.citation.as_str())),
        }
    }

    /// Leaves out the hits the selector listed last while `pack`'s output adds more than its
    /// share around the evidence (pinned hits and the first hit stay), so the budget they held
    /// goes to depth instead. Returns what they spent of the budget, as [`cost`](Fit::cost)
    /// counts it, and what the output may still add around its evidence (everything but the
    /// ranges' citations and source lines), within [`AROUND_SHARE`] of the budget: `None` when
    /// that is not held, for a budget covering the content or one below [`AROUND_FROM`].
    pub(crate) fn hold_around(&self, pack: &mut Pack) -> (u64, Option<u64>) {
        let Fit::Output(rendering) = self else {
            return (0, None);
        };
        let meter = pack.meter;
        let allowance = around_allowance(pack.budget.get());
        let mut freed = 0u64;
        loop {
            let extra = around_and_printed(pack, rendering).0;
            if !over_share(pack, extra) {
                let left =
                    (pack.budget.get() >= AROUND_FROM).then(|| allowance.saturating_sub(extra));
                return (freed, left);
            }
            let excess = extra - allowance;
            // The last listed visible hits whose markup covers the excess.
            let mut victims = Vec::new();
            let mut saved = 0u64;
            for (i, hit) in pack.hits.iter().enumerate().skip(1).rev() {
                let c = &hit.candidate;
                if c.tier == ctxpack_core::Tier::Pinned {
                    continue;
                }
                victims.push(i);
                freed = freed.saturating_add(self.cost(c, meter));
                saved = saved.saturating_add(self.framing(c, meter));
                if saved >= excess {
                    break;
                }
            }
            if victims.is_empty() {
                return (freed, Some(0));
            }
            leave_out(pack, victims);
        }
    }

    /// What selecting `candidate` spends of the budget: its content, plus, for an output
    /// budget, the markup it adds when shown.
    pub(crate) fn cost(&self, candidate: &Candidate, meter: Meter) -> u64 {
        match self {
            Fit::Content => candidate.cost,
            Fit::Output(rendering) => candidate
                .cost
                .saturating_add(meter.count(&markup(candidate, rendering, meter))),
        }
    }

    /// Measures the assembled pack's printed output and trims it until it fits; records what
    /// it measured in the pack. Nothing to do for a content budget.
    pub(crate) fn finish(&self, pack: &mut Pack) -> Result<()> {
        let Fit::Output(rendering) = self else {
            return Ok(());
        };
        let budget = pack.budget.get();
        // A pack fitted to its output is shown briefly: measure it as it will be shown.
        pack.presentation.fitted = Some(fitting(rendering));
        // Each round removes at least one hit; one more round measures the pack without any.
        for _ in 0..=pack.hits.len() {
            // The share around the evidence is held from a budget of AROUND_FROM.
            let (around, tokens) = if pack.hits.len() > 1 && budget >= AROUND_FROM {
                let (around, tokens) = around_and_printed(pack, rendering);
                (Some(around), tokens)
            } else {
                (None, pack.meter.count(&render(pack, rendering)))
            };
            if tokens <= budget {
                // Context lines and warnings come after selection held the share around the
                // evidence: while they push past it, the lowest-value hit is left out.
                if around.is_some_and(|around| over_share(pack, around)) {
                    let worst = lowest_value_first(pack).into_iter().take(1).collect();
                    leave_out(pack, worst);
                    continue;
                }
                pack.presentation.fitted = Some(Fitted {
                    tokens,
                    ..fitting(rendering)
                });
                return Ok(());
            }
            if pack.hits.is_empty() {
                return Err(too_small(pack, rendering, tokens));
            }
            trim(pack, rendering, tokens - budget);
        }
        unreachable!("every round removes a hit, and a pack without hits returns")
    }
}

/// Candidates from which [`Fit::select`] counts their markup on two threads: below it, a
/// thread costs more than it saves.
const MAP_BESIDE_FROM: usize = 64;

/// What `pack`'s printed output in `rendering` adds around its evidence, and the whole output
/// ([`ctxpack_core::around_the_evidence`]), the two counts on two threads.
fn around_and_printed(pack: &Pack, rendering: &RenderOptions) -> (u64, u64) {
    let (evidence, printed) = crate::cores::join(
        || evidence_tokens(pack),
        || pack.meter.count(&render(pack, rendering)),
    );
    (printed.saturating_sub(evidence), printed)
}

/// The error for a budget smaller than the output without any hit, which measured `tokens`.
///
/// The output states the budget, so the minimum is found as the budget at which the output
/// without any hit fits when it states that budget: a few rounds, as each only adds digits.
fn too_small(pack: &Pack, rendering: &RenderOptions, tokens: u64) -> Error {
    let mut probe = pack.clone();
    let mut minimum = tokens;
    for _ in 0..8 {
        let Ok(budget) = Budget::new(minimum) else {
            break;
        };
        probe.budget = budget;
        let measured = pack.meter.count(&render(&probe, rendering));
        if measured <= minimum {
            break;
        }
        minimum = measured;
    }
    let error = Error::invalid_field(
        "budget",
        format!(
            "a budget of {} {meter} cannot hold the {format} output's fixed part (header, notes and drop summary), which measures {tokens} {meter} without any hit; the minimum budget is {minimum}",
            pack.budget,
            meter = pack.meter,
            format = rendering.format,
        ),
    );
    // A budget given without its suffix: 8 where 8k was meant.
    let thousand = pack.budget.get().saturating_mul(1000);
    if pack.budget.get() < 1000 && thousand >= minimum {
        error.with_hint(crate::error::Hint::Advice(format!(
            "budgets count {meter}, not thousands of them: {}k is {thousand}",
            pack.budget,
            meter = pack.meter,
        )))
    } else {
        error
    }
}

/// The pack's hits, lowest value first: visible before pinned (`Pinned < Visible`), and
/// within a tier the worst rank (the largest number) first.
fn lowest_value_first(pack: &Pack) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pack.hits.len()).collect();
    order.sort_by_key(|&i| {
        let h = &pack.hits[i];
        std::cmp::Reverse((h.candidate.tier, h.rank))
    });
    order
}

/// Moves the lowest-value hits whose estimated size covers `excess` to the dropped list.
fn trim(pack: &mut Pack, rendering: &RenderOptions, excess: u64) {
    let meter = pack.meter;
    let mut victims = Vec::new();
    let mut saved = 0u64;
    for i in lowest_value_first(pack) {
        victims.push(i);
        let c = &pack.hits[i].candidate;
        saved = saved
            .saturating_add(c.cost)
            .saturating_add(meter.count(&markup(c, rendering, meter)));
        if saved >= excess {
            break;
        }
    }
    leave_out(pack, victims);
}

/// Moves the hits at `victims` (indices) to the dropped list as `over_budget`, keeping the
/// counters' identities.
fn leave_out(pack: &mut Pack, mut victims: Vec<usize>) {
    victims.sort_unstable();
    for i in victims.into_iter().rev() {
        let Hit {
            rank, candidate, ..
        } = pack.hits.remove(i);
        pack.used = pack.used.saturating_sub(candidate.cost);
        pack.counters.budget_rejected_hits += 1;
        pack.dropped.push(Dropped {
            rank: Some(rank),
            citation: candidate.citation,
            family: candidate.family,
            cost: candidate.cost,
            reason: DropReason::OverBudget,
            remaining: Some(0),
        });
    }
    let mut families: Vec<&str> = pack
        .hits
        .iter()
        .map(|h| h.candidate.family.as_str())
        .collect();
    families.sort_unstable();
    families.dedup();
    pack.counters.selected_sources = families.len();
    if pack.hits.is_empty()
        && pack.counters.candidate_hits > 0
        && !pack.warnings.contains(&Warning::NoCompleteHitFits)
    {
        pack.warnings.push(Warning::NoCompleteHitFits);
    }
}

/// A pack fitted to its output adds at most `1 / AROUND_SHARE` of its budget around its
/// evidence (from a budget of [`AROUND_FROM`]).
pub(crate) const AROUND_SHARE: u64 = 10;

/// The smallest budget whose output is held to [`AROUND_SHARE`]: below it the header alone
/// may be more.
pub(crate) const AROUND_FROM: u64 = 1000;

/// What a pack's output may add around its evidence at `budget`.
fn around_allowance(budget: u64) -> u64 {
    budget / AROUND_SHARE
}

/// Whether `pack`'s output in `rendering` adds more than its share around the evidence (never
/// below [`AROUND_FROM`]), given what it adds (`extra`).
fn over_share(pack: &Pack, extra: u64) -> bool {
    let budget = pack.budget.get();
    budget >= AROUND_FROM && extra > around_allowance(budget)
}

/// What a pack fitted to `rendering` records before it is measured: the rendering, so it is
/// shown as a fitted pack is.
fn fitting(rendering: &RenderOptions) -> Fitted {
    Fitted {
        format: rendering.format,
        view: rendering.view,
        tokens: 0,
    }
}

/// A pack with no hit standing for the fixed part of the output in `rendering`: the
/// request's goal, a snapshot (with a full SHA), the uncommitted-changes warning, and the first
/// few candidates as a drop summary. What selection reserves before any hit.
fn skeleton(request: &PackRequest, candidates: &[Candidate], rendering: &RenderOptions) -> Pack {
    let mut pack = Pack::build(
        PackRequest {
            goal: request.goal.clone(),
            ..request.clone()
        },
        Vec::new(),
    );
    pack.snapshot = Some(SnapshotInfo {
        requested_ref: "HEAD".into(),
        resolved_sha: "0".repeat(40),
        selection: "exact".into(),
        status: "indexed".into(),
        branch: None,
        detached: false,
        worktree_dirty: true,
    });
    pack.warnings.push(Warning::DirtyWorktree);
    // One empty hit, so the reserve is not an empty result's (which explains itself).
    pack.hits.push(Hit {
        rank: 1,
        candidate: Candidate::new(String::new(), String::new(), request.meter),
        seen: None,
    });
    pack.dropped = candidates
        .iter()
        .take(ctxpack_core::FIRST_DROPPED + 1)
        .enumerate()
        .map(|(i, c)| Dropped {
            rank: Some(i + 1),
            citation: c.citation.clone(),
            family: c.family.clone(),
            cost: c.cost,
            reason: DropReason::OverBudget,
            remaining: None,
        })
        .collect();
    pack.presentation.fitted = Some(fitting(rendering));
    // Counters that say candidates existed, so the reserve is not an empty result's.
    pack.counters.candidate_hits = candidates.len() + 1;
    pack.counters.unique_citations = candidates.len() + 1;
    pack.counters.budget_rejected_hits = pack.dropped.len();
    pack
}

/// The longest enclosing line shown, in characters; a longer one is cut with `…`.
const MAX_ENCLOSING_CHARS: usize = 160;

/// The largest file read for enclosing lines, in bytes.
const MAX_ENCLOSING_FILE_BYTES: u64 = 4 << 20;

/// The line opening the definition a hit starts inside: `(1-based number, text)`, or none.
type Opening = Option<(u32, String)>;

/// Adds the opening line of the definition each hit starts inside, for the hits that are
/// spans of snapshot `sha`'s files. Indexing recorded that line with each chunk; a hit cut to
/// start inside its chunk is worked out from the chunk's recorded line, parsing the file only
/// from there to the hit; a file whose chunks were stored before lines were recorded, or whose
/// hit the short parse cannot settle, is read from the snapshot and parsed whole (only the
/// packed files that need it). A line that masking would change is not shown; a file that
/// cannot be read shows none: these lines are context, never evidence.
pub(crate) fn add_enclosing(repo: &Repo, store: &Store, sha: &str, pack: &mut Pack) {
    let suffix = format!("@{}", sha.get(..7).unwrap_or(sha));
    let mut wanted: BTreeMap<String, Vec<(Citation, u32)>> = BTreeMap::new();
    for hit in &pack.hits {
        let c = &hit.candidate;
        if let Some(loc) = &c.location
            && loc.start_line > 1
            && c.citation.as_str().ends_with(&suffix)
        {
            wanted
                .entry(loc.path.clone())
                .or_default()
                .push((c.citation.clone(), loc.start_line));
        }
    }
    if wanted.is_empty() {
        return;
    }
    // A file's text, read from the snapshot's manifest (a lookup per file, not a walk of the
    // whole tree) once, when some hit of it needs a parse.
    let read = |path: &str| -> Option<String> {
        let blob = store.blob_at(sha, path).ok().flatten()?;
        if !repo
            .blob_size(&blob)
            .is_ok_and(|n| n <= MAX_ENCLOSING_FILE_BYTES)
        {
            return None;
        }
        repo.read_blob(&blob)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
    };
    // What indexing recorded or a short parse settled, per file and hit (in the order of
    // `wanted`); the rest is parsed whole below.
    let mut settled: Vec<(&str, Vec<Opening>)> = Vec::new();
    let mut files: Vec<(&str, String, Vec<u32>)> = Vec::new();
    // The hits whose line indexing recorded under today's masking rules, which kept it only
    // where they masked nothing: it needs no masking again.
    let mut masked_today: BTreeSet<&Citation> = BTreeSet::new();
    for (path, hits) in &wanted {
        let mut text: Option<Option<String>> = None;
        let mut lines = Vec::with_capacity(hits.len());
        let mut whole = false;
        for (citation, start) in hits {
            // Once the file is to be parsed whole, that parse answers every hit of it.
            if whole {
                lines.push(None);
                continue;
            }
            let around = store.chunk_around(sha, path, *start).ok().flatten();
            // The first two arms below take the line indexing recorded, which they do exactly
            // when the chunk recorded one for this line.
            let recorded_today = around
                .as_ref()
                .is_some_and(|c| c.chunker == STORED_CHUNKER && c.opening_at(*start).is_some());
            if recorded_today {
                masked_today.insert(citation);
            }
            let found = match around {
                Some(ChunkStart {
                    start_line,
                    enclosing: Some(recorded),
                    ..
                }) if start_line == *start => Some(recorded),
                // A cut inside a chunk that recorded what each of its lines is inside of: no
                // parse (and, as a parse would, nothing for a file too large to parse).
                Some(chunk) if chunk.opening_at(*start).is_some() => Some(
                    chunk
                        .opening_at(*start)
                        .flatten()
                        .filter(|_| chunk.file_bytes <= MAX_ENCLOSING_FILE_BYTES)
                        .cloned(),
                ),
                Some(ChunkStart {
                    start_line,
                    end_line,
                    enclosing: Some(recorded),
                    ..
                }) => {
                    // A cut inside the chunk: nothing opened before the definition the chunk
                    // starts in (or before the chunk, at the top level) can enclose the cut
                    // without enclosing that too. Parsed through the chunk's end, so what
                    // the chunk closes is seen closed.
                    let from = recorded.as_ref().map_or(start_line, |(line, _)| *line);
                    match text.get_or_insert_with(|| read(path)).as_deref() {
                        Some(text) => match enclosing_from(path, text, from, *start, end_line) {
                            // Nothing found past the definition the chunk starts in: one
                            // around it may still enclose the cut.
                            Some(None) if recorded.is_some() => None,
                            found => found,
                        },
                        None => Some(None),
                    }
                }
                _ => None,
            };
            whole |= found.is_none();
            lines.push(found.flatten());
        }
        if !whole {
            settled.push((path, lines));
            continue;
        }
        // A parse of the file's text answers every hit of it, recorded or not.
        for (citation, _) in hits {
            masked_today.remove(citation);
        }
        if let Some(text) = text.unwrap_or_else(|| read(path)) {
            files.push((path, text, hits.iter().map(|(_, line)| *line).collect()));
        }
    }
    // Parsing whole files is the cost: they are parsed on every core, each by one thread.
    let threads = crate::cores::available();
    let per_thread = files.len().div_ceil(threads).max(1);
    let found: Vec<Vec<Opening>> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(per_thread)
            .map(|part| {
                let handle = scope.spawn(move || {
                    part.iter()
                        .map(|(path, text, starts)| enclosing_lines(path, text, starts))
                        .collect::<Vec<_>>()
                });
                (part.len(), handle)
            })
            .collect();
        // A part whose parsing failed shows no enclosing lines, and keeps its place so the
        // other files' lines stay with their files.
        handles
            .into_iter()
            .flat_map(|(len, h)| h.join().unwrap_or_else(|_| vec![Vec::new(); len]))
            .collect()
    });
    let parsed = files.iter().map(|(path, _, _)| *path).zip(found);
    for (path, found) in settled.into_iter().chain(parsed) {
        let hits = &wanted[path];
        for ((citation, _), found) in hits.iter().zip(found) {
            let Some((line, text)) = found else { continue };
            if !masked_today.contains(citation)
                && mask::text(&text, &mut RedactionSummary::default()) != text
            {
                continue;
            }
            let text = match text.char_indices().nth(MAX_ENCLOSING_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            };
            pack.presentation
                .enclosing
                .insert(citation.clone(), Enclosing { line, text });
        }
    }
}

#[cfg(test)]
mod tests {
    use ctxpack_core::{Meter, Selector, Tier};

    use super::*;

    /// A pack of `hits` candidates of 10 words each, every one selected.
    fn pack_of(tiers: &[Tier]) -> Pack {
        let candidates = tiers
            .iter()
            .enumerate()
            .map(|(i, tier)| {
                let mut c = Candidate::new(
                    format!("src/f{i}.rs#L1-L1@abcdef0"),
                    "one two three four five six seven eight nine ten\n",
                    Meter::Words,
                );
                c.tier = *tier;
                c
            })
            .collect();
        Pack::build(
            PackRequest {
                goal: "g".into(),
                budget: Budget::new(1000).expect("valid"),
                meter: Meter::Words,
                selector: Selector::Skip,
            },
            candidates,
        )
    }

    fn kept(pack: &Pack) -> Vec<usize> {
        pack.hits.iter().map(|h| h.rank).collect()
    }

    #[test]
    fn trimming_drops_the_worst_ranked_visible_hit_first() {
        let rendering = DEFAULT_RENDERING;
        let mut pack = pack_of(&[Tier::Visible; 4]);
        assert_eq!(kept(&pack), [1, 2, 3, 4]);
        trim(&mut pack, &rendering, 1);
        assert_eq!(kept(&pack), [1, 2, 3]);
        let dropped: Vec<Option<usize>> = pack.dropped.iter().map(|d| d.rank).collect();
        assert_eq!(dropped, [Some(4)]);
        assert_eq!(pack.counters.budget_rejected_hits, 1);
        // Pinned hits go last, whatever their rank.
        let mut pack = pack_of(&[Tier::Pinned, Tier::Visible, Tier::Pinned, Tier::Visible]);
        trim(&mut pack, &rendering, 25);
        let kept_tiers: Vec<Tier> = pack.hits.iter().map(|h| h.candidate.tier).collect();
        assert_eq!(
            kept_tiers,
            [Tier::Pinned, Tier::Pinned],
            "{:?}",
            kept(&pack)
        );
    }
}
