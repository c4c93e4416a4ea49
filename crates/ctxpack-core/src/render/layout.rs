//! The presentation text, Markdown and XML share: hits grouped by file, adjacent or
//! overlapping spans of one file merged into one range, the drop summary, and what an empty
//! or under-filled pack says about itself.
//!
//! All of it is presentation: the pack's hits, citations and counters are what they are; only
//! how they are printed changes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::View;
use crate::model::{Candidate, DropReason, Dropped, Hit};
use crate::pack::{Enclosing, Pack};

/// The dropped candidates a summary names when the output need not be brief (at least, in
/// the full view).
pub const FIRST_DROPPED: usize = 5;

/// Budget units per dropped candidate a brief summary names (none below 4,000, at most
/// [`FIRST_DROPPED`]): an entry takes about 25 tokens, so the summary stays a small share of
/// what the output adds around the evidence.
pub const BRIEF_BUDGET_PER_NAMED_DROP: u64 = 4000;

/// Budget units per dropped candidate the full view names: about 20 tokens each, so the
/// named list stays near a tenth of the budget, whatever the pool held (the JSON output lists
/// every one).
pub const BUDGET_PER_NAMED_DROP: u64 = 200;

/// Whether `pack` is shown briefly: its budget covers its printed output (every token of the
/// header and drop summary is taken from the evidence) and the view is not the full one. A
/// pack whose budget covers its content alone (as `context pack` and `select` build them)
/// keeps the seed's counter lines in text and names the first [`FIRST_DROPPED`] dropped.
pub(super) fn brief(pack: &Pack, view: View) -> bool {
    view != View::Full && pack.presentation.fitted.is_some()
}

/// The hits of one file (or one hit without a file), in line order.
pub(super) struct Group<'a> {
    /// The file, when the hits are spans of one.
    pub path: Option<&'a str>,
    /// The file's ranges, in line order.
    pub ranges: Vec<Range<'a>>,
}

/// One hit, or adjacent or overlapping hits of one file merged.
pub(super) struct Range<'a> {
    /// The hits it shows, in line order.
    pub hits: Vec<&'a Hit>,
    /// First and last line, for spans of a file.
    pub lines: Option<(u32, u32)>,
    /// The hit's citation, or for merged hits the citation of the merged range.
    pub citation: Cow<'a, str>,
    /// Every symbol its hits name, in line order, once each.
    pub symbols: Vec<&'a str>,
    /// The text shown: the hits' lines, each line once.
    pub text: Cow<'a, str>,
    /// The sum of its hits' costs.
    pub cost: u64,
    /// The line opening the definition its first line is inside, if known.
    pub enclosing: Option<&'a Enclosing>,
}

impl Range<'_> {
    /// The first hit (lowest line).
    pub fn first(&self) -> &Candidate {
        &self.hits[0].candidate
    }

    /// Whether it shows one line of a file (a glimpse, or a one-line hit).
    pub fn is_one_line(&self) -> bool {
        self.lines.is_some_and(|(start, end)| start == end)
            && !self
                .text
                .trim_end_matches(['\n', '\r'])
                .contains(['\n', '\r'])
    }

    /// The family, when it says more than the file does (it is not `document:<path>`).
    pub fn family(&self) -> Option<&str> {
        let c = self.first();
        let family = c.family.as_str();
        match &c.location {
            Some(loc) if family.strip_prefix("document:") == Some(loc.path.as_str()) => None,
            _ => Some(family),
        }
    }
}

/// The pack's hits grouped by file, files in the order of their best (first) hit, and each
/// file's adjacent or overlapping spans merged.
pub(super) fn groups(pack: &Pack) -> Vec<Group<'_>> {
    let mut order: Vec<(Option<&str>, Vec<&Hit>)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for hit in pack.hits.iter().filter(|h| !is_reference(h)) {
        match &hit.candidate.location {
            Some(loc) => match index.get(loc.path.as_str()) {
                Some(&i) => order[i].1.push(hit),
                None => {
                    index.insert(&loc.path, order.len());
                    order.push((Some(&loc.path), vec![hit]));
                }
            },
            None => order.push((None, vec![hit])),
        }
    }
    order
        .into_iter()
        .map(|(path, mut hits)| {
            hits.sort_by_key(|h| {
                let loc = h.candidate.location.as_ref();
                (
                    loc.map_or(0, |l| l.start_line),
                    loc.map_or(0, |l| l.end_line),
                    h.rank,
                )
            });
            Group {
                path,
                ranges: merge(hits, pack),
            }
        })
        .collect()
}

/// Whether `hit` is a reference to lines its session was shown before: listed by
/// [`references`], never merged into a range of text.
fn is_reference(hit: &Hit) -> bool {
    hit.seen.as_ref().is_some_and(|s| s.whole)
}

/// The hits that stand for lines the pack's session was shown before, in pack order, each
/// with the short id of the pack that showed them: a reference is a line of its own after
/// the evidence, since it has no text to merge with a neighbouring range.
pub(super) fn references(pack: &Pack) -> Vec<(&Hit, &str)> {
    pack.hits
        .iter()
        .filter_map(|h| match &h.seen {
            Some(seen) if seen.whole => Some((h, short_pack_id(&seen.pack))),
            _ => None,
        })
        .collect()
}

/// Characters of a pack id a reference prints: enough to name it among a ledger's packs
/// (`show` takes any unique prefix of four or more).
pub const SHORT_PACK_ID: usize = 12;

/// The first [`SHORT_PACK_ID`] characters of `id`.
pub fn short_pack_id(id: &str) -> &str {
    id.char_indices()
        .nth(SHORT_PACK_ID)
        .map_or(id, |(at, _)| &id[..at])
}

/// One range per hit, with no merging: what a candidate's markup is measured on.
pub(super) fn single<'a>(hit: &'a Hit, pack: Option<&'a Pack>) -> Group<'a> {
    let c = &hit.candidate;
    Group {
        path: c.location.as_ref().map(|l| l.path.as_str()),
        ranges: vec![range_of(hit, pack)],
    }
}

fn range_of<'a>(hit: &'a Hit, pack: Option<&'a Pack>) -> Range<'a> {
    let c = &hit.candidate;
    let lines = c.location.as_ref().map(|l| (l.start_line, l.end_line));
    let enclosing = pack
        .and_then(|p| p.presentation.enclosing.get(&c.citation))
        .filter(|e| lines.is_some_and(|(start, _)| e.line < start));
    Range {
        hits: vec![hit],
        lines,
        citation: Cow::Borrowed(c.citation.as_str()),
        symbols: c
            .location
            .as_ref()
            .and_then(|l| l.symbol.as_deref())
            .into_iter()
            .collect(),
        text: Cow::Borrowed(&c.text),
        cost: c.cost,
        enclosing,
    }
}

/// Merges a file's hits (in line order) where they touch or overlap and their texts have
/// exactly the lines their spans name (masking can fold a multi-line secret; such a hit is
/// shown on its own rather than merged wrongly).
fn merge<'a>(hits: Vec<&'a Hit>, pack: &'a Pack) -> Vec<Range<'a>> {
    let mut out: Vec<Range<'a>> = Vec::new();
    for hit in hits {
        let next = range_of(hit, Some(pack));
        if let Some(cur) = out.last_mut()
            && let Some(merged) = merged(cur, &next)
        {
            *cur = merged;
            continue;
        }
        out.push(next);
    }
    out
}

/// `cur` and `next` as one range, if they can be merged.
fn merged<'a>(cur: &Range<'a>, next: &Range<'a>) -> Option<Range<'a>> {
    let (cs, ce) = cur.lines?;
    let (ns, ne) = next.lines?;
    if ns > ce.saturating_add(1) || suffix(&cur.citation) != suffix(&next.citation) {
        return None;
    }
    let cur_lines: Vec<&str> = cur.text.split_inclusive('\n').collect();
    let next_lines: Vec<&str> = next.text.split_inclusive('\n').collect();
    if !spans(&cur_lines, cs, ce) || !spans(&next_lines, ns, ne) {
        return None;
    }
    let end = ce.max(ne);
    let mut text = String::with_capacity(cur.text.len() + next.text.len());
    text.push_str(&cur.text);
    let skip = usize::try_from(ce.saturating_add(1).saturating_sub(ns)).unwrap_or(usize::MAX);
    let rest = next_lines.get(skip..).unwrap_or(&[]);
    if !rest.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for line in rest {
        text.push_str(line);
    }
    let path = cur.first().location.as_ref()?.path.as_str();
    let mut symbols = cur.symbols.clone();
    for s in &next.symbols {
        if !symbols.contains(s) {
            symbols.push(s);
        }
    }
    let mut hits = cur.hits.clone();
    hits.extend(&next.hits);
    Some(Range {
        hits,
        lines: Some((cs, end)),
        citation: Cow::Owned(format!("{path}#L{cs}-L{end}{}", suffix(&cur.citation))),
        symbols,
        text: Cow::Owned(text),
        cost: cur.cost.saturating_add(next.cost),
        enclosing: cur.enclosing,
    })
}

/// Whether `lines` are exactly the lines `start ..= end`.
fn spans(lines: &[&str], start: u32, end: u32) -> bool {
    end >= start && u64::try_from(lines.len()).ok() == Some(u64::from(end - start) + 1)
}

/// The snapshot part of a citation (`@3fa9c1e`, `@worktree`), or nothing.
fn suffix(citation: &str) -> &str {
    match citation.rfind('@') {
        Some(i) if citation[..i].contains("#L") => &citation[i..],
        _ => "",
    }
}

/// The info string of a fenced block, from the file extension.
pub(super) fn language_of(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "jsx" => "jsx",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "md" | "markdown" => "markdown",
        "toml" => "toml",
        "json" => "json",
        "yaml" | "yml" => "yaml",
        "sh" | "bash" => "bash",
        "html" => "html",
        "css" => "css",
        "sql" => "sql",
        _ => "",
    }
}

/// The longest run of backticks in `text`.
pub(super) fn longest_backtick_run(text: &str) -> usize {
    // Most texts have none, which a search for one byte answers fastest.
    if !text.as_bytes().contains(&b'`') {
        return 0;
    }
    let mut longest = 0;
    let mut run = 0;
    // A backtick is one byte, and no byte of a longer character equals it.
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// A backtick fence longer than any backtick run inside the text, so the text cannot close it.
pub(super) fn fence_for(text: &str) -> String {
    "`".repeat((longest_backtick_run(text) + 1).max(3))
}

/// The most characters of the goal a [brief](brief) output repeats: the caller wrote it, and
/// a goal pasted from a commit message or an issue can run to thousands of tokens.
pub const BRIEF_GOAL_CHARS: usize = 120;

/// The goal as a header shows it: whole, or in a [brief](brief) output its first
/// [`BRIEF_GOAL_CHARS`] characters and `…` (the JSON output and the ledger keep it whole).
pub(super) fn shown_goal(pack: &Pack, view: View) -> Cow<'_, str> {
    let goal = pack.goal.as_str();
    match goal.char_indices().nth(BRIEF_GOAL_CHARS) {
        Some((cut, _)) if brief(pack, view) => Cow::Owned(format!("{}…", goal[..cut].trim_end())),
        _ => Cow::Borrowed(goal),
    }
}

/// What was dropped, counted by reason, with the dropped candidates a printed summary names.
pub(super) struct DropSummary<'a> {
    /// Count per reason, in reason order.
    pub by_reason: Vec<(DropReason, usize)>,
    /// The dropped candidates named, best first: in a [brief](brief) output one per
    /// [`BRIEF_BUDGET_PER_NAMED_DROP`] units of the budget, in the full view one per
    /// [`BUDGET_PER_NAMED_DROP`] (at least [`FIRST_DROPPED`]), otherwise [`FIRST_DROPPED`].
    pub named: &'a [Dropped],
    /// How many are not named.
    pub more: usize,
    /// Whether the summary says how to see the rest (not in a brief output, whose counts say
    /// how many there are).
    pub says_more: bool,
}

/// The drop summary of `pack` in `view`.
pub(super) fn drop_summary(pack: &Pack, view: View) -> Option<DropSummary<'_>> {
    if pack.dropped.is_empty() {
        return None;
    }
    let mut counts: BTreeMap<DropReason, usize> = BTreeMap::new();
    for d in &pack.dropped {
        *counts.entry(d.reason).or_default() += 1;
    }
    let budget = pack.budget.get();
    let brief = brief(pack, view);
    let named = if brief {
        usize::try_from(budget / BRIEF_BUDGET_PER_NAMED_DROP)
            .map_or(FIRST_DROPPED, |n| n.min(FIRST_DROPPED))
    } else if view == View::Full {
        usize::try_from(budget / BUDGET_PER_NAMED_DROP).map_or(usize::MAX, |n| n.max(FIRST_DROPPED))
    } else {
        FIRST_DROPPED
    };
    let shown = named.min(pack.dropped.len());
    Some(DropSummary {
        by_reason: counts.into_iter().collect(),
        named: &pack.dropped[..shown],
        more: pack.dropped.len() - shown,
        says_more: !brief,
    })
}

impl DropSummary<'_> {
    /// `2 over_budget, 1 duplicate`: how many were left out for each reason.
    pub fn counts(&self) -> String {
        let parts: Vec<String> = self
            .by_reason
            .iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        parts.join(", ")
    }

    /// The sentence that ends a summary that does not name every dropped candidate, unless
    /// the output is brief.
    pub fn more_text(&self) -> Option<String> {
        (self.says_more && self.more > 0)
            .then(|| format!("and {} more (the JSON output lists every one)", self.more))
    }
}

/// Why a pack with no hits has none, and what to try; `None` when it has hits.
pub(super) fn empty_reason(pack: &Pack) -> Option<String> {
    if !pack.hits.is_empty() {
        return None;
    }
    let c = &pack.counters;
    let mut out = if c.candidate_hits == 0 {
        "nothing matched the goal. Try other words for it: identifiers, file or function names, \
         an error message."
            .to_owned()
    } else {
        let smallest = pack
            .dropped
            .iter()
            .filter(|d| {
                matches!(
                    d.reason,
                    DropReason::OverBudget | DropReason::PrefixTruncated
                )
            })
            .map(|d| d.cost)
            .min();
        match smallest {
            Some(min) => format!(
                "none of the {} candidates fits the budget whole (the smallest costs {min} {}). \
                 Try a larger budget.",
                c.unique_citations, pack.meter
            ),
            None => format!(
                "all {} candidates were left out. Try another goal or a larger budget.",
                c.candidate_hits
            ),
        }
    };
    let masked = pack.candidate_redactions.total();
    if masked > 0 {
        out.push_str(&format!(
            " Masking removed {masked} secret{} from the candidates: a goal that names a \
             secret's value cannot match it.",
            if masked == 1 { "" } else { "s" }
        ));
    }
    Some(out)
}

/// Says that the pack leaves budget unused because every candidate offered is in it or was
/// far weaker than the best (the candidate pool ran dry, not the budget); `None` otherwise.
pub(super) fn pool_ran_dry(pack: &Pack) -> Option<String> {
    let budget_drops = pack.dropped.iter().any(|d| {
        matches!(
            d.reason,
            DropReason::OverBudget | DropReason::PrefixTruncated
        )
    });
    let weak = pack
        .dropped
        .iter()
        .filter(|d| d.reason == DropReason::Weak)
        .count();
    let c = &pack.counters;
    let dry = !pack.hits.is_empty()
        && c.budget_rejected_hits == weak
        && pack.used < pack.budget.get()
        && !budget_drops;
    dry.then(|| match weak {
        0 => format!(
            "every candidate offered ({}) is in the pack and budget is left: the candidate pool \
             ran dry, not the budget. A broader goal may find more.",
            c.unique_citations
        ),
        _ => format!(
            "every candidate offered ({}) is in the pack but {weak} far weaker than the best \
             (dropped as weak), and budget is left: the candidate pool ran dry, not the budget. \
             A broader goal may find more.",
            c.unique_citations
        ),
    })
}
