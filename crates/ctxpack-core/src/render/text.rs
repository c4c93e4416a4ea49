//! Plain text: a header (the seed's `key: value` counter lines, or one `pack:` line for a pack
//! whose budget covers its printed output), then each range under its `[citation]` line (a
//! file's ranges together, files in the order of their best hit), then the drop summary. No
//! line the renderer writes starts with `+`, `-` or `@`, so the output cannot be mistaken for
//! a diff.

use std::fmt::Write;

use ctxpack_meter::Meter;

use super::layout::{
    Group, Range, brief, drop_summary, empty_reason, groups, pool_ran_dry, references, shown_goal,
};
use super::{View, one_line, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "goal: {}", one_line(&shown_goal(pack, view)));
    // The compact header leaves the snapshot to the citations, which name it.
    if !brief(pack, view) {
        counter_lines(&mut out, pack);
    } else {
        let mut line = format!(
            "pack: {} of {} {} used, {} {}",
            pack.used,
            pack.budget,
            pack.meter,
            pack.hits.len(),
            if pack.hits.len() == 1 { "hit" } else { "hits" },
        );
        let masked = pack.redactions.total();
        if masked > 0 {
            let _ = write!(line, ", {masked} masked");
        }
        let _ = writeln!(out, "{line}");
    }
    for warning in &pack.warnings {
        let _ = writeln!(out, "warning: {}", one_line(&warning.to_string()));
    }
    if let Some(reason) = empty_reason(pack) {
        let _ = writeln!(out, "no hits: {reason}");
    }
    if let Some(note) = pool_ran_dry(pack) {
        let _ = writeln!(out, "note: {note}");
    }
    for group in groups(pack) {
        write_group(&mut out, &group, pack.meter, view, true);
    }
    for (hit, id) in references(pack) {
        let _ = writeln!(
            out,
            "\nshown before: {} in pack {id}",
            one_line(hit.candidate.citation.as_str())
        );
    }
    if view != View::Minimal
        && let Some(summary) = drop_summary(pack, view)
    {
        let _ = writeln!(out, "\ndropped: {}", summary.counts());
        for d in summary.named {
            let _ = write!(
                out,
                "dropped: {} {} ({} {}",
                one_line(d.citation.as_str()),
                d.reason,
                d.cost,
                pack.meter
            );
            if view == View::Full
                && let Some(remaining) = d.remaining
            {
                let _ = write!(out, ", {remaining} remaining");
            }
            out.push_str(")\n");
        }
        if let Some(more) = summary.more_text() {
            let _ = writeln!(out, "dropped: {more}");
        }
    }
    out
}

/// The seed contract's header lines: the snapshot, the budget and every counter, one
/// `key: value` line each. A [brief](brief) output says what matters of it in one line.
fn counter_lines(out: &mut String, pack: &Pack) {
    let c = &pack.counters;
    if let Some(s) = &pack.snapshot {
        let _ = writeln!(out, "snapshot: {}", one_line(&s.resolved_sha));
        let _ = writeln!(out, "requested_ref: {}", one_line(&s.requested_ref));
        let _ = writeln!(out, "worktree_dirty: {}", s.worktree_dirty);
    }
    let _ = writeln!(out, "budget: {} {}", pack.budget, pack.meter);
    let _ = writeln!(out, "used_tokens: {}", pack.used);
    let _ = writeln!(out, "selected_hits: {}", pack.hits.len());
    let _ = writeln!(out, "selection_strategy: {}", pack.selector.strategy());
    let _ = writeln!(out, "candidate_hits: {}", c.candidate_hits);
    let _ = writeln!(out, "unique_citations: {}", c.unique_citations);
    let _ = writeln!(out, "selected_sources: {}", c.selected_sources);
    let _ = writeln!(
        out,
        "duplicate_citations_skipped: {}",
        c.duplicate_citations_skipped
    );
    let _ = writeln!(out, "budget_rejected_hits: {}", c.budget_rejected_hits);
    let _ = writeln!(out, "redactions: {}", pack.redactions.total());
}

/// One file's ranges (or one hit without a file): each range under its `[citation]` line,
/// which names the file, a blank line before each. Without `with_text`, everything but the
/// ranges' text: the markup they add.
pub(super) fn write_group(
    out: &mut String,
    group: &Group<'_>,
    meter: Meter,
    view: View,
    with_text: bool,
) {
    for range in &group.ranges {
        out.push('\n');
        write_range(out, range, meter, view, with_text);
    }
}

fn write_range(out: &mut String, range: &Range<'_>, meter: Meter, view: View, with_text: bool) {
    let _ = write!(out, "[{}]", one_line(&range.citation));
    let mut meta: Vec<String> = Vec::new();
    if view == View::Full {
        if !range.symbols.is_empty() {
            let _ = write!(out, " {}", one_line(&range.symbols.join(", ")));
        }
        let ranks: Vec<String> = range.hits.iter().map(|h| h.rank.to_string()).collect();
        meta.push(format!("rank {}", ranks.join(", ")));
        meta.push(range.first().tier.name().to_owned());
    }
    if view != View::Minimal
        && let Some(family) = range.family()
    {
        meta.push(one_line(family));
    }
    if view == View::Full {
        meta.push(format!("{} {meter}", range.cost));
    }
    if !meta.is_empty() {
        let _ = write!(out, " ({})", meta.join(", "));
    }
    out.push('\n');
    if view == View::Full {
        for hit in &range.hits {
            if let Some(title) = &hit.candidate.title {
                let _ = writeln!(out, "title: {}", one_line(title));
            }
        }
    }
    if let Some(e) = range.enclosing {
        let _ = writeln!(out, "inside (line {}): {}", e.line, one_line(e.text.trim()));
    }
    if with_text {
        out.push_str(&visible(&range.text));
        if !range.text.ends_with('\n') {
            out.push('\n');
        }
    }
}
