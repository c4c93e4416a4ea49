//! Plain text: `key: value` header lines, then the hits grouped by file under `==> path <==`
//! lines, each range under its `[citation]` line, then the drop summary. No line the renderer
//! writes starts with `+`, `-` or `@`, so the output cannot be mistaken for a diff.

use std::fmt::Write;

use ctxpack_meter::Meter;

use super::layout::{Group, Range, drop_summary, empty_reason, groups, pool_ran_dry};
use super::{View, one_line, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    let c = &pack.counters;
    // Writing to a String cannot fail.
    let _ = writeln!(out, "goal: {}", one_line(&pack.goal));
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
        write_group(&mut out, &group, pack.meter, view);
    }
    if view != View::Minimal
        && let Some(summary) = drop_summary(pack, view == View::Full)
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

/// One file's ranges (or one hit without a file).
pub(super) fn write_group(out: &mut String, group: &Group<'_>, meter: Meter, view: View) {
    out.push('\n');
    if let Some(path) = group.path {
        let _ = writeln!(out, "==> {} <==", one_line(path));
    }
    for (i, range) in group.ranges.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_range(out, range, meter, view);
    }
}

fn write_range(out: &mut String, range: &Range<'_>, meter: Meter, view: View) {
    let _ = write!(out, "[{}]", one_line(&range.citation));
    if view != View::Minimal {
        if !range.symbols.is_empty() {
            let _ = write!(out, " {}", one_line(&range.symbols.join(", ")));
        }
        let mut meta: Vec<String> = Vec::new();
        if view == View::Full {
            let ranks: Vec<String> = range.hits.iter().map(|h| h.rank.to_string()).collect();
            meta.push(format!("rank {}", ranks.join(", ")));
            meta.push(range.first().tier.name().to_owned());
        }
        if let Some(family) = range.family() {
            meta.push(one_line(family));
        }
        meta.push(format!("{} {meter}", range.cost));
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
    out.push_str(&visible(&range.text));
    if !range.text.ends_with('\n') {
        out.push('\n');
    }
}
