//! Markdown for pasting into a chat: a short header, then the hits grouped by file under a
//! `## path` heading, each range fenced (in its language) under its citation, then the drop
//! summary.

use std::fmt::Write;

use ctxpack_meter::Meter;

use super::layout::{
    Group, Range, drop_summary, empty_reason, fence_for, groups, language_of, pool_ran_dry,
};
use super::{View, one_line, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Context pack\n");
    let _ = writeln!(out, "**Goal:** {}\n", one_line(&pack.goal));
    let mut summary = format!(
        "{} of {} {} used · {} {} · {}",
        pack.used,
        pack.budget,
        pack.meter,
        pack.hits.len(),
        if pack.hits.len() == 1 { "hit" } else { "hits" },
        pack.selector.strategy()
    );
    if let Some(s) = &pack.snapshot {
        let _ = write!(summary, " · snapshot `{}`", one_line(&s.resolved_sha));
    }
    if pack.counters.budget_rejected_hits > 0 {
        let _ = write!(
            summary,
            " · {} left out for budget",
            pack.counters.budget_rejected_hits
        );
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
        write_group(&mut out, &group, pack.meter, view);
    }
    if view != View::Minimal
        && let Some(summary) = drop_summary(pack, view == View::Full)
    {
        let _ = writeln!(out, "\n## Dropped\n\n{}\n", summary.counts());
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

/// One file's ranges (or one hit without a file).
pub(super) fn write_group(out: &mut String, group: &Group<'_>, meter: Meter, view: View) {
    let heading = group.path.unwrap_or(&group.ranges[0].citation);
    let _ = writeln!(out, "\n## `{}`", one_line(heading).replace('`', "'"));
    for range in &group.ranges {
        write_range(out, range, group.path.is_some(), meter, view);
    }
}

fn write_range(out: &mut String, range: &Range<'_>, in_file: bool, meter: Meter, view: View) {
    let mut meta: Vec<String> = Vec::new();
    if in_file {
        meta.push(format!("`{}`", one_line(&range.citation).replace('`', "'")));
    }
    if view != View::Minimal {
        if !range.symbols.is_empty() {
            let symbols: Vec<String> = range
                .symbols
                .iter()
                .map(|s| format!("`{}`", one_line(s).replace('`', "'")))
                .collect();
            meta.push(symbols.join(", "));
        }
        if let Some(family) = range.family() {
            meta.push(one_line(family));
        }
        meta.push(format!("{} {meter}", range.cost));
        if view == View::Full {
            let ranks: Vec<String> = range.hits.iter().map(|h| h.rank.to_string()).collect();
            meta.push(format!("rank {}", ranks.join(", ")));
            meta.push(range.first().tier.name().to_owned());
            for hit in &range.hits {
                if let Some(title) = &hit.candidate.title {
                    meta.push(format!("“{}”", one_line(title)));
                }
            }
        }
    }
    out.push('\n');
    if !meta.is_empty() {
        let _ = writeln!(out, "{}\n", meta.join(" · "));
    }
    if let Some(e) = range.enclosing {
        let _ = writeln!(
            out,
            "_inside_ `{}` _(line {})_\n",
            one_line(e.text.trim()).replace('`', "'"),
            e.line
        );
    }
    let text = visible(&range.text);
    let fence = fence_for(&text);
    let lang = range
        .first()
        .location
        .as_ref()
        .map_or("", |l| language_of(&l.path));
    let _ = writeln!(out, "{fence}{lang}");
    out.push_str(&text);
    if !range.text.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "{fence}");
}
