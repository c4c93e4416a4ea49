//! A pack's page: where its budget went by file, each hit with its citation and source, what
//! was dropped and why; and a file's lines at a snapshot.

use ctxpack_api::LogEntry;
use maud::{Markup, html};
use serde_json::Value;

use super::{FileBudget, array, files, hit_path, number, text};
use crate::web::html::{highlighted_lines, page, thousands, time, url};

/// What the pack page shows besides the pack itself.
pub(crate) struct PackView<'a> {
    pub(crate) repo: &'a str,
    pub(crate) id: &'a str,
    pub(crate) entry: &'a LogEntry,
    /// The pack's canonical JSON.
    pub(crate) pack: &'a Value,
    /// The pack as Markdown, for the copy button.
    pub(crate) markdown: &'a str,
}

/// The budget bar: one segment per file its hits use, then the unused budget; and below it
/// the dropped tokens per file.
fn budget_chart(files: &[FileBudget], budget: u64, used: u64, markup: u64) -> Markup {
    const WIDTH: f64 = 1000.0;
    fn scale(tokens: u64, total: u64) -> f64 {
        tokens as f64 / total.max(1) as f64 * WIDTH
    }
    // The files with tokens of one kind, laid end to end on a bar of `total` tokens: each with
    // its tokens, start and width.
    fn lay(
        files: &[FileBudget],
        tokens: fn(&FileBudget) -> u64,
        total: u64,
    ) -> Vec<(&FileBudget, u64, String, String)> {
        let mut x = 0.0;
        files
            .iter()
            .filter(|f| tokens(f) > 0)
            .map(|file| {
                let w = scale(tokens(file), total);
                x += w;
                (
                    file,
                    tokens(file),
                    format!("{:.2}", x - w),
                    format!("{w:.2}"),
                )
            })
            .collect()
    }
    let kept = lay(files, |f| f.kept, budget);
    let kept_width = scale(files.iter().map(|f| f.kept).sum(), budget);
    let unused = budget.saturating_sub(used + markup);
    let dropped = lay(files, |f| f.dropped, files.iter().map(|f| f.dropped).sum());
    let width = |w: f64| format!("{w:.2}");
    html! {
        svg.budget #budget viewBox="0 0 1000 64" preserveAspectRatio="none" role="img"
            aria-label="Budget by file" {
            @for (i, (file, tokens, x, w)) in kept.iter().enumerate() {
                rect class={ "file kept c" (i % 8) } data-kind="kept" data-path=(file.path)
                    data-tokens=(tokens) x=(x) y="0" width=(w) height="28" {
                    title { (file.path) " — " (thousands(*tokens)) " tokens kept" }
                }
            }
            @if markup > 0 {
                rect.markup x=(width(kept_width)) y="0" width=(width(scale(markup, budget)))
                    height="28" {
                    title { (thousands(markup)) " tokens of markup: headers, citations, fences" }
                }
            }
            @if unused > 0 {
                rect.unused x=(width(kept_width + scale(markup, budget))) y="0"
                    width=(width(scale(unused, budget))) height="28" {
                    title { (thousands(unused)) " tokens unused" }
                }
            }
            @for (file, tokens, x, w) in &dropped {
                rect class="file dropped" data-kind="dropped" data-path=(file.path)
                    data-tokens=(tokens) x=(x) y="36" width=(w) height="28" {
                    title { (file.path) " — " (thousands(*tokens)) " tokens dropped" }
                }
            }
        }
    }
}

/// A JSON value as a page shows it: a string without its quotes, anything else as JSON.
fn shown(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// A pack: its hits by file, where the budget went, what was dropped and why.
pub(crate) fn pack(view: &PackView<'_>) -> Markup {
    let pack = view.pack;
    let repo = view.repo;
    let files = files(pack);
    let budget = number(pack, "budget");
    let used = number(pack, "usedTokens");
    // A budget that covered the printed output also paid for its markup.
    let rendered = number(pack, "renderedTokens");
    let markup = if rendered > used && rendered <= budget {
        rendered - used
    } else {
        0
    };
    let sha = text(pack, "snapshotSha");
    let hits = array(pack, "hits");
    let object = |key: &str| pack.get(key).and_then(Value::as_object);
    let redactions = pack.get("redactionSummary");
    let masked = redactions.map_or(0, |r| number(r, "total"));
    let masked_kinds: Vec<String> = redactions
        .and_then(|r| r.get("byKind"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(kind, n)| format!("{kind} × {}", n.as_u64().unwrap_or(0)))
        .collect();
    // Hits by file, numbered down the page.
    let mut by_file: Vec<(&str, Vec<&Value>)> = Vec::new();
    for hit in hits {
        let path = hit_path(hit);
        match by_file.iter_mut().find(|(p, _)| *p == path) {
            Some((_, hits)) => hits.push(hit),
            None => by_file.push((path, vec![hit])),
        }
    }
    let mut numbers = 1..;
    let by_file: Vec<(&str, Vec<(usize, &Value)>)> = by_file
        .into_iter()
        .map(|(path, hits)| (path, numbers.by_ref().zip(hits).collect()))
        .collect();
    // A swatch of the chart's colour for each file with kept tokens.
    let mut kept_files = 0..;
    let swatches: Vec<Option<usize>> = files
        .iter()
        .map(|f| (f.kept > 0).then(|| kept_files.next().unwrap_or(0)))
        .collect();
    let body = html! {
        h1 #goal { (text(pack, "goal")) }
        dl.facts {
            dt { "Pack" } dd { code #pack-id { (view.id) } }
            dt { "Built" } dd { (time(view.entry.time)) " UTC by " (view.entry.surface) }
            dt { "Snapshot" } dd {
                @if sha.is_empty() { code { "—" } } @else { code { (sha) } }
                @if !sha.is_empty() && view.entry.worktree { " and the working tree" }
            }
            dt { "Budget" } dd {
                (thousands(used)) " of " (thousands(budget)) " " (text(pack, "meter")) " used ("
                (hits.len()) @if hits.len() == 1 { " hit" } @else { " hits" } ", "
                (array(pack, "dropped").len()) " dropped)"
            }
            dt { "Selector" } dd { (view.entry.selector) }
        }
        div.actions {
            form.inline method="post" action={ "/ui/repos/" (url(repo)) "/packs/" (url(view.id)) "/again" } {
                button #again { "Pack this goal again at HEAD" }
            }
            " "
            button.copy #copy type="button" data-copy="markdown" { "Copy as Markdown" }
            textarea.hidden #markdown readonly { (view.markdown) }
        }
        h2 { "Where the budget went" }
        (budget_chart(&files, budget, used, markup))
        p.muted {
            "Above: the tokens each file's hits use, then the markup of the printed pack when the \
             budget covered it, then the unused budget. Below: the tokens of the candidates left \
             out, by file."
        }
        table.files #files {
            thead { tr { th { "File" } th { "Kept tokens" } th { "Dropped tokens" } } }
            tbody {
                @for (file, swatch) in files.iter().zip(swatches) {
                    tr {
                        td {
                            @if let Some(color) = swatch {
                                svg.swatch viewBox="0 0 10 10" {
                                    rect class={ "c" (color % 8) } width="10" height="10" {}
                                }
                                " "
                            }
                            code { (file.path) }
                        }
                        td { (thousands(file.kept)) }
                        td { (thousands(file.dropped)) }
                    }
                }
            }
        }
        h2 { "Counters" }
        dl.facts #counters {
            @for (key, value) in object("selection").into_iter().flatten() {
                dt { (key) } dd { (shown(value)) }
            }
            @for (key, value) in object("session").into_iter().flatten() {
                dt { "session " (key) } dd { (shown(value)) }
            }
        }
        h2 { "Masking" }
        p #masking {
            (thousands(masked)) " secrets masked"
            @if !masked_kinds.is_empty() { ": " (masked_kinds.join(", ")) }
            "."
        }
        @if !array(pack, "warnings").is_empty() {
            h2 { "Warnings" }
            ul.warnings { @for warning in array(pack, "warnings") { li { (shown(warning)) } } }
        }
        h2 { "Hits by file" }
        @for (path, hits) in &by_file {
            section.file data-path=(path) {
                h3 { code { (path) } }
                @for (n, hit) in hits { (hit_block(repo, sha, path, hit, *n)) }
            }
        }
        h2 { "Dropped" }
        table.dropped #dropped {
            thead { tr { th { "Citation" } th { "Reason" } th { "Tokens" } } }
            tbody {
                @for dropped in array(pack, "dropped") {
                    tr {
                        td { code { (text(dropped, "citation")) } }
                        td.reason { (text(dropped, "reason")) }
                        td { (thousands(number(dropped, "tokens"))) }
                    }
                }
            }
        }
    };
    page(text(pack, "goal"), Some(repo), body)
}

/// One hit (the `n`th on the page): its citation and its text, highlighted. The citation links
/// to its lines in the snapshot; a working-tree hit's, which no commit holds, to the text the
/// pack recorded, here.
fn hit_block(repo: &str, sha: &str, path: &str, hit: &Value, n: usize) -> Markup {
    let citation = text(hit, "citation");
    let start = number(hit, "startLine");
    let end = number(hit, "endLine");
    let link = if ctxpack_api::Citation::is_worktree(citation) {
        html! {
            a.citation.worktree href={ "#hit-" (n) } title="the working tree's text as packed" {
                (citation)
            }
        }
    } else if !sha.is_empty() && start > 0 && hit.get("path").is_some() {
        html! {
            a.citation href={
                "/ui/repos/" (url(repo)) "/file?at=" (url(sha)) "&path=" (url(path))
                "&start=" (start) "&end=" (end) "#L" (start)
            } { (citation) }
        }
    } else {
        html! { span.citation { (citation) } }
    };
    // A reference to lines the pack's session was shown before: no text, the pack that showed
    // them instead.
    if let Some(before) = hit.get("shownBefore")
        && before.get("whole") == Some(&Value::Bool(true))
    {
        let id = text(before, "pack");
        return html! {
            article.hit.reference id={ "hit-" (n) } {
                p {
                    (link) " shown before in pack "
                    a href={ "/ui/repos/" (url(repo)) "/packs/" (url(id)) } {
                        code { (ctxpack_api::short_pack_id(id)) }
                    }
                }
            }
        };
    }
    html! {
        article.hit id={ "hit-" (n) } {
            p { (link) " " span.tokens { (thousands(number(hit, "tokens"))) " tokens" } }
            pre.code { code {
                @for (i, line) in highlighted_lines(path, text(hit, "text")).into_iter().enumerate() {
                    span.line { span.no { (start.max(1) + i as u64) } (line) }
                }
            } }
        }
    }
}

/// A file of a snapshot, its cited lines marked.
pub(crate) fn file(
    repo: &str,
    file: &ctxpack_api::IndexedFile,
    start: Option<u64>,
    end: Option<u64>,
) -> Markup {
    let mut whole = String::new();
    for line in &file.lines {
        whole.push_str(line.as_deref().unwrap_or(""));
        whole.push('\n');
    }
    let marked = |n: u64| start.is_some_and(|s| n >= s) && end.is_some_and(|e| n <= e);
    let body = html! {
        h1 { code { (file.path) } }
        p.muted { "at " code { (file.sha) } ", as ctxpack indexed it (secrets masked)" }
        @if let Some(reason) = &file.skipped { p.problem { "Not chunked: " (reason) "." } }
        pre.code #file { code {
            @for (n, line) in (1u64..).zip(highlighted_lines(&file.path, &whole)) {
                span.line.marked[marked(n)] id={ "L" (n) } { span.no { (n) } (line) }
            }
        } }
    };
    page(&file.path, Some(repo), body)
}
