//! Markdown for pasting into a chat: a two-line header, then each range fenced (in its
//! language) under its citation (a file's ranges together, files in the order of their best
//! hit), then what was left out. Only the full view adds symbols, costs, ranks and tiers: what
//! the default view prints around the evidence stays a small share of any budget.

use std::fmt::Write;

use ctxpack_meter::Meter;

use super::layout::{
    Group, Range, drop_summary, empty_reason, fence_for, groups, language_of, longest_backtick_run,
    pool_ran_dry, references, shown_goal,
};
use super::{View, one_line, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Context pack: {}\n",
        one_line(&shown_goal(pack, view))
    );
    let mut summary = format!(
        "{} {} · {}/{} {}",
        pack.hits.len(),
        if pack.hits.len() == 1 { "hit" } else { "hits" },
        pack.used,
        pack.budget,
        pack.meter,
    );
    // The citations name the snapshot; the full view names it whole.
    if view == View::Full {
        if let Some(s) = &pack.snapshot {
            let _ = write!(summary, " · snapshot `{}`", one_line(&s.resolved_sha));
        }
        let _ = write!(summary, " · {}", pack.selector.strategy());
    }
    if pack.counters.budget_rejected_hits > 0 && view == View::Minimal {
        let _ = write!(
            summary,
            " · {} left out for budget",
            pack.counters.budget_rejected_hits
        );
    }
    let masked = pack.redactions.total();
    if masked > 0 {
        let _ = write!(summary, " · {masked} masked");
    }
    let _ = writeln!(out, "{summary}");
    for warning in &pack.warnings {
        let _ = writeln!(out, "\n> **Warning:** {}", one_line(&warning.to_string()));
    }
    if let Some(reason) = empty_reason(pack) {
        let _ = writeln!(out, "\n> **No hits:** {reason}");
    }
    if let Some(note) = pool_ran_dry(pack) {
        let _ = writeln!(out, "\n> **Note:** {note}");
    }
    for group in groups(pack) {
        write_group(&mut out, &group, pack.meter, view, true);
    }
    let shown = references(pack);
    if !shown.is_empty() {
        let _ = writeln!(out, "\nShown before in this session:");
        for (hit, id) in shown {
            let _ = writeln!(
                out,
                "- `{}` in pack `{id}`",
                one_line(hit.candidate.citation.as_str()).replace('`', "'")
            );
        }
    }
    if view != View::Minimal
        && let Some(summary) = drop_summary(pack, view)
    {
        let _ = writeln!(out, "\nLeft out: {}", summary.counts());
        for d in summary.named {
            let _ = write!(
                out,
                "- `{}` {} ({} {}",
                one_line(d.citation.as_str()).replace('`', "'"),
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
            let _ = writeln!(out, "- {more}");
        }
    }
    out
}

/// One file's ranges (or one hit without a file). Each range is under its citation, which
/// names the file; a file's ranges are consecutive, so no heading repeats the path. Without
/// `with_text`, everything but the ranges' text: the markup they add.
pub(super) fn write_group(
    out: &mut String,
    group: &Group<'_>,
    meter: Meter,
    view: View,
    with_text: bool,
) {
    for range in &group.ranges {
        write_range(out, range, meter, view, with_text);
    }
}

fn write_range(out: &mut String, range: &Range<'_>, meter: Meter, view: View, with_text: bool) {
    let mut meta: Vec<String> = vec![format!("`{}`", one_line(&range.citation).replace('`', "'"))];
    if view != View::Minimal
        && let Some(family) = range.family()
    {
        meta.push(one_line(family));
    }
    if view == View::Full {
        if !range.symbols.is_empty() {
            let symbols: Vec<String> = range
                .symbols
                .iter()
                .map(|s| format!("`{}`", one_line(s).replace('`', "'")))
                .collect();
            meta.push(symbols.join(", "));
        }
        meta.push(format!("{} {meter}", range.cost));
        let ranks: Vec<String> = range.hits.iter().map(|h| h.rank.to_string()).collect();
        meta.push(format!("rank {}", ranks.join(", ")));
        meta.push(range.first().tier.name().to_owned());
        for hit in &range.hits {
            if let Some(title) = &hit.candidate.title {
                meta.push(format!("“{}”", one_line(title)));
            }
        }
    }
    if let Some(e) = range.enclosing {
        meta.push(format!(
            "inside L{} `{}`",
            e.line,
            one_line(e.text.trim()).replace('`', "'")
        ));
    }
    let text = visible(&range.text);
    // One line of a file (a glimpse of where else to look) goes on its citation's line as
    // inline code: a fenced block would cost more than the line.
    if range.is_one_line() {
        let line = text.trim_end_matches(['\n', '\r']);
        let ticks = "`".repeat(longest_backtick_run(line) + 1);
        let pad = if line.starts_with('`') || line.ends_with('`') {
            " "
        } else {
            ""
        };
        let _ = write!(out, "\n{}: {ticks}{pad}", meta.join(" · "));
        if with_text {
            out.push_str(line);
        }
        let _ = writeln!(out, "{pad}{ticks}");
        return;
    }
    let _ = writeln!(out, "\n{}", meta.join(" · "));
    let fence = fence_for(&text);
    let lang = range
        .first()
        .location
        .as_ref()
        .map_or("", |l| language_of(&l.path));
    let _ = writeln!(out, "{fence}{lang}");
    if with_text {
        out.push_str(&text);
        if !range.text.ends_with('\n') {
            out.push('\n');
        }
    }
    let _ = writeln!(out, "{fence}");
}
