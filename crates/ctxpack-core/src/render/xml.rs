//! XML for prompts that prefer tags: one `<hit>` element per hit, text escaped.

use std::fmt::Write;

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
    for hit in &pack.hits {
        let h = &hit.candidate;
        let _ = write!(out, "<hit citation=\"{}\"", attr(h.citation.as_str()));
        if view != View::Minimal {
            let _ = write!(
                out,
                " family=\"{}\" tokens=\"{}\"",
                attr(h.family.as_str()),
                h.cost
            );
            if let Some(symbol) = h.location.as_ref().and_then(|l| l.symbol.as_ref()) {
                let _ = write!(out, " symbol=\"{}\"", attr(symbol));
            }
        }
        if view == View::Full {
            let _ = write!(out, " rank=\"{}\" tier=\"{}\"", hit.rank, h.tier.name());
            if let Some(title) = &h.title {
                let _ = write!(out, " title=\"{}\"", attr(title));
            }
        }
        out.push_str(">\n");
        out.push_str(&text(&h.text));
        if !h.text.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("</hit>\n");
    }
    if view == View::Full {
        for d in &pack.dropped {
            let _ = writeln!(
                out,
                "<dropped citation=\"{}\" reason=\"{}\" tokens=\"{}\"/>",
                attr(d.citation.as_str()),
                d.reason,
                d.cost
            );
        }
    }
    out.push_str("</context_pack>\n");
    out
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
