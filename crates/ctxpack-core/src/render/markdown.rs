//! Markdown for pasting into a chat: a short header, then each hit fenced under its citation.

use std::fmt::Write;

use super::{View, one_line, visible};
use crate::pack::Pack;

pub(super) fn render(pack: &Pack, view: View) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Context pack\n");
    let _ = writeln!(out, "**Goal:** {}\n", one_line(&pack.goal));
    let mut summary = format!(
        "{} of {} {} used · {} hits · {}",
        pack.used,
        pack.budget,
        pack.meter,
        pack.hits.len(),
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
    for hit in &pack.hits {
        let h = &hit.candidate;
        let _ = writeln!(out, "\n## `{}`\n", one_line(h.citation.as_str()));
        if view != View::Minimal {
            let mut meta = format!(
                "{} · {} {}",
                one_line(h.family.as_str()),
                h.cost,
                pack.meter
            );
            if let Some(symbol) = h.location.as_ref().and_then(|l| l.symbol.as_ref()) {
                let _ = write!(meta, " · `{}`", one_line(symbol));
            }
            if view == View::Full {
                let _ = write!(meta, " · rank {} · {}", hit.rank, h.tier.name());
            }
            let _ = writeln!(out, "_{meta}_\n");
        }
        let text = visible(&h.text);
        let fence = fence_for(&text);
        let lang = h.location.as_ref().map_or("", |l| language_of(&l.path));
        let _ = writeln!(out, "{fence}{lang}");
        out.push_str(&text);
        if !h.text.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{fence}");
    }
    out
}

/// A backtick fence longer than any backtick run inside the text, so the text cannot close it.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in text.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// The info string for a fenced block, from the file extension.
fn language_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "rs" => "rust",
        "py" => "python",
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
