//! XML for prompts that prefer tags: one `<file citation="…">` element per range (a file's
//! ranges consecutive, files in the order of their best hit), text escaped, then the drop
//! summary. Only the full view adds paths, line numbers, symbols, costs, ranks and counters.

use std::fmt::Write;

use ctxpack_meter::Meter;

use super::layout::{
    Group, Range, drop_summary, empty_reason, groups, pool_ran_dry, references, shown_goal,
};
use super::{View, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<context_pack goal=\"{}\" budget=\"{} {}\"",
        attr(&shown_goal(pack, view)),
        pack.budget,
        pack.meter,
    );
    let masked = pack.redactions.total();
    if masked > 0 {
        let _ = write!(out, " masked=\"{masked}\"");
    }
    // The citations name the snapshot; the full view names it whole, with the counters.
    if view == View::Full {
        let _ = write!(out, " used=\"{}\"", pack.used);
        if let Some(s) = &pack.snapshot {
            let _ = write!(out, " snapshot=\"{}\"", attr(&s.resolved_sha));
        }
        let c = &pack.counters;
        let _ = write!(
            out,
            " strategy=\"{}\" candidate_hits=\"{}\" unique_citations=\"{}\" selected_sources=\"{}\" duplicate_citations_skipped=\"{}\" budget_rejected_hits=\"{}\"",
            pack.selector.strategy(),
            c.candidate_hits,
            c.unique_citations,
            c.selected_sources,
            c.duplicate_citations_skipped,
            c.budget_rejected_hits
        );
    }
    out.push_str(">\n");
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
        write_group(&mut out, &group, pack.meter, view, true);
    }
    for (hit, id) in references(pack) {
        let _ = writeln!(
            out,
            "<shown_before citation=\"{}\" pack=\"{}\"/>",
            attr(hit.candidate.citation.as_str()),
            attr(id)
        );
    }
    if view != View::Minimal
        && let Some(summary) = drop_summary(pack, view)
    {
        out.push_str("<dropped");
        for (reason, n) in &summary.by_reason {
            let _ = write!(out, " {reason}=\"{n}\"");
        }
        if summary.more_text().is_some() {
            let _ = write!(out, " unlisted=\"{}\"", summary.more);
        }
        if summary.named.is_empty() {
            out.push_str("/>\n");
        } else {
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
    }
    out.push_str("</context_pack>\n");
    out
}

/// One file's ranges, each a `<file>` element (or a `<hit>` element for a hit without a
/// file).
/// Without `with_text`, everything but the ranges' text: the markup they add.
pub(super) fn write_group(
    out: &mut String,
    group: &Group<'_>,
    _meter: Meter,
    view: View,
    with_text: bool,
) {
    for range in &group.ranges {
        write_range(out, range, group.path, view, with_text);
    }
}

fn write_range(
    out: &mut String,
    range: &Range<'_>,
    path: Option<&str>,
    view: View,
    with_text: bool,
) {
    let element = match (path, range.lines) {
        (Some(path), Some((start, end))) => {
            let _ = write!(out, "<file citation=\"{}\"", attr(&range.citation));
            if view == View::Full {
                let _ = write!(out, " path=\"{}\" lines=\"{start}-{end}\"", attr(path));
            }
            "file"
        }
        _ => {
            let _ = write!(out, "<hit citation=\"{}\"", attr(&range.citation));
            "hit"
        }
    };
    if view != View::Minimal
        && let Some(family) = range.family()
    {
        let _ = write!(out, " family=\"{}\"", attr(family));
    }
    if view == View::Full {
        if !range.symbols.is_empty() {
            let _ = write!(out, " symbols=\"{}\"", attr(&range.symbols.join(", ")));
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
    if let Some(e) = range.enclosing {
        let _ = write!(out, " inside=\"L{} {}\"", e.line, attr(e.text.trim()));
    }
    out.push('>');
    // One line goes inside its element's line, more start on a line of their own.
    if !range.is_one_line() {
        out.push('\n');
    }
    let body = Body::of(&range.text);
    out.push_str(body.open());
    if with_text {
        body.write(out, &range.text);
    }
    out.push_str(body.close());
    if !range.text.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "</{element}>");
}

/// How a range's text is carried: escaped, or (when escaping would add more than a CDATA
/// section's two delimiters, as in code full of `&` and `<`) raw in a CDATA section.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Escaped,
    Cdata,
}

impl Body {
    /// What a CDATA section's delimiters cost, in tokens (about).
    const CDATA_COST: usize = 5;

    /// Escaped when that costs no more than a CDATA section: `&amp;` is about one token more
    /// than `&`, `&lt;` two more than `<`.
    fn of(s: &str) -> Body {
        let escapes = s.matches('&').count() + 2 * s.matches('<').count();
        if escapes > Body::CDATA_COST {
            Body::Cdata
        } else {
            Body::Escaped
        }
    }

    fn open(self) -> &'static str {
        match self {
            Body::Escaped => "",
            Body::Cdata => "<![CDATA[",
        }
    }

    fn close(self) -> &'static str {
        match self {
            Body::Escaped => "",
            Body::Cdata => "]]>",
        }
    }

    /// Writes `s`, escaped or raw. Raw text is made visible as element text is, and C0
    /// characters XML cannot carry are replaced the same way; a `]]>` inside it ends the
    /// section and opens another, so the section cannot be closed early.
    fn write(self, out: &mut String, s: &str) {
        match self {
            Body::Escaped => out.push_str(&text(s)),
            Body::Cdata => {
                let raw: String = visible(s)
                    .chars()
                    .map(|c| match c {
                        '\u{FFFE}' | '\u{FFFF}' => '\u{FFFD}',
                        c => c,
                    })
                    .collect();
                out.push_str(&raw.replace("]]>", "]]]]><![CDATA[>"));
            }
        }
    }
}

/// Escapes element text. Control characters become visible ones first, as in every
/// terminal-facing format (see the `render` module docs), which also keeps the document
/// well-formed: XML 1.0 cannot carry most C0 controls at all. The two noncharacters it
/// cannot carry either, U+FFFE and U+FFFF, become U+FFFD. Only `&` and `<` are escaped, and
/// `>` where it would close `]]>`: the only escapes XML requires, and each costs tokens (code
/// is full of `->` and `Vec<T>`).
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in visible(s).chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' if out.ends_with("]]") => out.push_str("&gt;"),
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
