//! XML for prompts that prefer tags: the hits grouped by file, one `<file path="…"
//! lines="…">` element per range (a file's ranges consecutive, files in the order of their
//! best hit), text escaped, then the drop summary.

use std::fmt::Write;

use ctxpack_meter::Meter;

use super::layout::{Group, Range, drop_summary, empty_reason, groups, pool_ran_dry};
use super::{View, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<context_pack goal=\"{}\" budget=\"{}\" meter=\"{}\" used=\"{}\" strategy=\"{}\"",
        attr(&pack.goal),
        pack.budget,
        pack.meter,
        pack.used,
        pack.selector.strategy()
    );
    if let Some(s) = &pack.snapshot {
        let _ = write!(out, " snapshot=\"{}\"", attr(&s.resolved_sha));
    }
    let c = &pack.counters;
    let _ = writeln!(
        out,
        " candidate_hits=\"{}\" unique_citations=\"{}\" selected_sources=\"{}\" duplicate_citations_skipped=\"{}\" budget_rejected_hits=\"{}\">",
        c.candidate_hits,
        c.unique_citations,
        c.selected_sources,
        c.duplicate_citations_skipped,
        c.budget_rejected_hits
    );
    for warning in &pack.warnings {
        let _ = writeln!(out, "<warning>{}</warning>", text(&warning.to_string()));
    }
    if let Some(reason) = empty_reason(pack) {
        let _ = writeln!(out, "<no_hits>{}</no_hits>", text(&reason));
    }
    if let Some(note) = pool_ran_dry(pack) {
        let _ = writeln!(out, "<note>{}</note>", text(&note));
    }
    for group in groups(pack) {
        write_group(&mut out, &group, pack.meter, view);
    }
    if view != View::Minimal
        && let Some(summary) = drop_summary(pack, view == View::Full)
    {
        let total: usize = summary.by_reason.iter().map(|(_, n)| n).sum();
        let _ = write!(out, "<dropped count=\"{total}\"");
        for (reason, n) in &summary.by_reason {
            let _ = write!(out, " {reason}=\"{n}\"");
        }
        if summary.more > 0 {
            let _ = write!(out, " unlisted=\"{}\"", summary.more);
        }
        out.push_str(">\n");
        for d in summary.named {
            let _ = write!(
                out,
                "<candidate citation=\"{}\" reason=\"{}\" tokens=\"{}\"",
                attr(d.citation.as_str()),
                d.reason,
                d.cost
            );
            if view == View::Full
                && let Some(remaining) = d.remaining
            {
                let _ = write!(out, " remaining=\"{remaining}\"");
            }
            out.push_str("/>\n");
        }
        out.push_str("</dropped>\n");
    }
    out.push_str("</context_pack>\n");
    out
}

/// One file's ranges, each a `<file>` element (or a `<hit>` element for a hit without a
/// file).
pub(super) fn write_group(out: &mut String, group: &Group<'_>, _meter: Meter, view: View) {
    for range in &group.ranges {
        write_range(out, range, group.path, view);
    }
}

fn write_range(out: &mut String, range: &Range<'_>, path: Option<&str>, view: View) {
    let element = match (path, range.lines) {
        (Some(path), Some((start, end))) => {
            let _ = write!(
                out,
                "<file path=\"{}\" lines=\"{start}-{end}\" citation=\"{}\"",
                attr(path),
                attr(&range.citation)
            );
            "file"
        }
        _ => {
            let _ = write!(out, "<hit citation=\"{}\"", attr(&range.citation));
            "hit"
        }
    };
    if view != View::Minimal {
        if !range.symbols.is_empty() {
            let _ = write!(out, " symbols=\"{}\"", attr(&range.symbols.join(", ")));
        }
        if let Some(family) = range.family() {
            let _ = write!(out, " family=\"{}\"", attr(family));
        }
        let _ = write!(out, " tokens=\"{}\"", range.cost);
    }
    if view == View::Full {
        let ranks: Vec<String> = range.hits.iter().map(|h| h.rank.to_string()).collect();
        let _ = write!(
            out,
            " rank=\"{}\" tier=\"{}\"",
            ranks.join(" "),
            range.first().tier.name()
        );
        let titles: Vec<&str> = range
            .hits
            .iter()
            .filter_map(|h| h.candidate.title.as_deref())
            .collect();
        if !titles.is_empty() {
            let _ = write!(out, " title=\"{}\"", attr(&titles.join("; ")));
        }
    }
    out.push_str(">\n");
    if let Some(e) = range.enclosing {
        let _ = writeln!(
            out,
            "<inside line=\"{}\">{}</inside>",
            e.line,
            text(e.text.trim())
        );
    }
    out.push_str(&text(&range.text));
    if !range.text.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "</{element}>");
}

/// Escapes element text. Control characters become visible ones first, as in every
/// terminal-facing format (see the `render` module docs), which also keeps the document
/// well-formed: XML 1.0 cannot carry most C0 controls at all. The two noncharacters it
/// cannot carry either, U+FFFE and U+FFFF, become U+FFFD.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in visible(s).chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Escapes an attribute value.
fn attr(s: &str) -> String {
    text(s)
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;")
}
