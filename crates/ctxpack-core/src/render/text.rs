//! Plain text: `key: value` header lines, then each hit under a `---` line.

use std::fmt::Write;

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
    for hit in &pack.hits {
        let h = &hit.candidate;
        out.push('\n');
        let _ = write!(out, "--- {}", one_line(h.citation.as_str()));
        match view {
            View::Minimal => {}
            View::Default => {
                let _ = write!(
                    out,
                    " ({}, {} {})",
                    one_line(h.family.as_str()),
                    h.cost,
                    pack.meter
                );
            }
            View::Full => {
                let _ = write!(
                    out,
                    " (rank {}, {}, {}, {} {})",
                    hit.rank,
                    h.tier.name(),
                    one_line(h.family.as_str()),
                    h.cost,
                    pack.meter
                );
            }
        }
        out.push('\n');
        if view != View::Minimal
            && let Some(symbol) = h.location.as_ref().and_then(|l| l.symbol.as_ref())
        {
            let _ = writeln!(out, "symbol: {}", one_line(symbol));
        }
        if view == View::Full
            && let Some(title) = &h.title
        {
            let _ = writeln!(out, "title: {}", one_line(title));
        }
        out.push_str(&visible(&h.text));
        if !h.text.ends_with('\n') {
            out.push('\n');
        }
    }
    if view != View::Minimal && !pack.dropped.is_empty() {
        out.push('\n');
        for d in &pack.dropped {
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
    }
    out
}
