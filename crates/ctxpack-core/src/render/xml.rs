//! XML for prompts that prefer tags: one `<hit>` element per hit, text escaped.

use std::fmt::Write;

use super::View;
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

/// Escapes element text. Characters XML 1.0 cannot carry at all (most C0 controls) become
/// U+FFFD so the document stays well-formed.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
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
