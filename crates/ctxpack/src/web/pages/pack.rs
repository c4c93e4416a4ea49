//! A pack's page: where its budget went by file, each hit with its citation and source, what
//! was dropped and why; and a file's lines at a snapshot.

use std::fmt::Write as _;

use ctxpack_api::LogEntry;
use serde_json::Value;

use super::{FileBudget, array, files, hit_path, number, text};
use crate::web::html::{escape, highlight, page, thousands, time, url};

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
fn budget_chart(files: &[FileBudget], budget: u64, used: u64, markup: u64) -> String {
    const WIDTH: f64 = 1000.0;
    let scale = |tokens: u64| tokens as f64 / budget.max(1) as f64 * WIDTH;
    let mut svg = String::from(
        "<svg class=\"budget\" id=\"budget\" viewBox=\"0 0 1000 64\" preserveAspectRatio=\"none\" \
         role=\"img\" aria-label=\"Budget by file\">",
    );
    let mut x = 0.0;
    for (i, file) in files.iter().filter(|f| f.kept > 0).enumerate() {
        let w = scale(file.kept);
        let _ = write!(
            svg,
            "<rect class=\"file kept c{}\" data-kind=\"kept\" data-path=\"{}\" data-tokens=\"{}\" \
             x=\"{x:.2}\" y=\"0\" width=\"{w:.2}\" height=\"28\"><title>{} — {} tokens kept</title></rect>",
            i % 8,
            escape(&file.path),
            file.kept,
            escape(&file.path),
            thousands(file.kept)
        );
        x += w;
    }
    if markup > 0 {
        let w = scale(markup);
        let _ = write!(
            svg,
            "<rect class=\"markup\" x=\"{x:.2}\" y=\"0\" width=\"{w:.2}\" height=\"28\"><title>{} tokens of markup: headers, citations, fences</title></rect>",
            thousands(markup)
        );
        x += w;
    }
    let unused = budget.saturating_sub(used + markup);
    if unused > 0 {
        let _ = write!(
            svg,
            "<rect class=\"unused\" x=\"{x:.2}\" y=\"0\" width=\"{:.2}\" height=\"28\"><title>{} tokens unused</title></rect>",
            scale(unused),
            thousands(unused)
        );
    }
    let dropped_total: u64 = files.iter().map(|f| f.dropped).sum();
    let dropped_scale = |tokens: u64| tokens as f64 / dropped_total.max(1) as f64 * WIDTH;
    let mut x = 0.0;
    for file in files.iter().filter(|f| f.dropped > 0) {
        let w = dropped_scale(file.dropped);
        let _ = write!(
            svg,
            "<rect class=\"file dropped\" data-kind=\"dropped\" data-path=\"{}\" data-tokens=\"{}\" \
             x=\"{x:.2}\" y=\"36\" width=\"{w:.2}\" height=\"28\"><title>{} — {} tokens dropped</title></rect>",
            escape(&file.path),
            file.dropped,
            escape(&file.path),
            thousands(file.dropped)
        );
        x += w;
    }
    svg.push_str("</svg>");
    svg
}

/// A pack: its hits by file, where the budget went, what was dropped and why.
pub(crate) fn pack(view: &PackView<'_>) -> String {
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
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1 id=\"goal\">{}</h1><dl class=\"facts\">\
         <dt>Pack</dt><dd><code id=\"pack-id\">{}</code></dd>\
         <dt>Built</dt><dd>{} UTC by {}</dd>\
         <dt>Snapshot</dt><dd>{}</dd>\
         <dt>Budget</dt><dd>{} of {} {} used ({} {}, {} dropped)</dd>\
         <dt>Selector</dt><dd>{}</dd></dl>",
        escape(text(pack, "goal")),
        escape(view.id),
        time(view.entry.time),
        escape(&view.entry.surface),
        match (sha.is_empty(), view.entry.worktree) {
            (true, _) => "<code>—</code>".to_owned(),
            (false, false) => format!("<code>{}</code>", escape(sha)),
            (false, true) => format!("<code>{}</code> and the working tree", escape(sha)),
        },
        thousands(used),
        thousands(budget),
        escape(text(pack, "meter")),
        array(pack, "hits").len(),
        if array(pack, "hits").len() == 1 {
            "hit"
        } else {
            "hits"
        },
        array(pack, "dropped").len(),
        escape(&view.entry.selector),
    );
    let _ = write!(
        body,
        "<div class=\"actions\">\
         <form method=\"post\" action=\"/ui/repos/{r}/packs/{id}/again\" class=\"inline\">\
         <button id=\"again\">Pack this goal again at HEAD</button></form> \
         <button type=\"button\" class=\"copy\" data-copy=\"markdown\" id=\"copy\">Copy as Markdown</button>\
         <textarea id=\"markdown\" class=\"hidden\" readonly>{}</textarea></div>",
        escape(view.markdown),
        r = url(repo),
        id = escape(view.id),
    );
    body.push_str("<h2>Where the budget went</h2>");
    body.push_str(&budget_chart(&files, budget, used, markup));
    body.push_str(
        "<p class=\"muted\">Above: the tokens each file's hits use, then the markup of the printed \
         pack when the budget covered it, then the unused budget. \
         Below: the tokens of the candidates left out, by file.</p>\
         <table class=\"files\" id=\"files\"><thead><tr><th>File</th><th>Kept tokens</th>\
         <th>Dropped tokens</th></tr></thead><tbody>",
    );
    let mut color = 0;
    for file in &files {
        let swatch = if file.kept > 0 {
            color += 1;
            format!(
                "<svg class=\"swatch\" viewBox=\"0 0 10 10\"><rect class=\"c{}\" width=\"10\" height=\"10\"></rect></svg> ",
                (color - 1) % 8
            )
        } else {
            String::new()
        };
        let _ = write!(
            body,
            "<tr><td>{swatch}<code>{}</code></td><td>{}</td><td>{}</td></tr>",
            escape(&file.path),
            thousands(file.kept),
            thousands(file.dropped)
        );
    }
    body.push_str("</tbody></table>");
    // Counters, masking, warnings.
    body.push_str("<h2>Counters</h2><dl class=\"facts\" id=\"counters\">");
    if let Some(selection) = pack.get("selection").and_then(Value::as_object) {
        for (key, value) in selection {
            let shown = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            let _ = write!(body, "<dt>{}</dt><dd>{}</dd>", escape(key), escape(&shown));
        }
    }
    if let Some(session) = pack.get("session").and_then(Value::as_object) {
        for (key, value) in session {
            let shown = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            let _ = write!(
                body,
                "<dt>session {}</dt><dd>{}</dd>",
                escape(key),
                escape(&shown)
            );
        }
    }
    body.push_str("</dl>");
    let redactions = pack.get("redactionSummary");
    let masked = redactions.map_or(0, |r| number(r, "total"));
    let _ = write!(
        body,
        "<h2>Masking</h2><p id=\"masking\">{} secrets masked",
        thousands(masked)
    );
    if let Some(kinds) = redactions
        .and_then(|r| r.get("byKind"))
        .and_then(Value::as_object)
        && !kinds.is_empty()
    {
        body.push_str(": ");
        let parts: Vec<String> = kinds
            .iter()
            .map(|(k, v)| format!("{} × {}", escape(k), v.as_u64().unwrap_or(0)))
            .collect();
        body.push_str(&parts.join(", "));
    }
    body.push_str(".</p>");
    let warnings = array(pack, "warnings");
    if !warnings.is_empty() {
        body.push_str("<h2>Warnings</h2><ul class=\"warnings\">");
        for warning in warnings {
            let shown = warning
                .as_str()
                .map_or_else(|| warning.to_string(), str::to_owned);
            let _ = write!(body, "<li>{}</li>", escape(&shown));
        }
        body.push_str("</ul>");
    }
    // Hits by file.
    body.push_str("<h2>Hits by file</h2>");
    let mut by_file: Vec<(&str, Vec<&Value>)> = Vec::new();
    for hit in array(pack, "hits") {
        let path = hit_path(hit);
        match by_file.iter_mut().find(|(p, _)| *p == path) {
            Some((_, hits)) => hits.push(hit),
            None => by_file.push((path, vec![hit])),
        }
    }
    let mut n = 0;
    for (path, hits) in by_file {
        let _ = write!(
            body,
            "<section class=\"file\" data-path=\"{}\"><h3><code>{}</code></h3>",
            escape(path),
            escape(path)
        );
        for hit in hits {
            n += 1;
            body.push_str(&hit_block(repo, sha, path, hit, n));
        }
        body.push_str("</section>");
    }
    // Dropped.
    let dropped = array(pack, "dropped");
    let _ = write!(
        body,
        "<h2>Dropped</h2><table class=\"dropped\" id=\"dropped\"><thead><tr><th>Citation</th>\
         <th>Reason</th><th>Tokens</th></tr></thead><tbody>"
    );
    for d in dropped {
        let _ = write!(
            body,
            "<tr><td><code>{}</code></td><td class=\"reason\">{}</td><td>{}</td></tr>",
            escape(text(d, "citation")),
            escape(text(d, "reason")),
            thousands(number(d, "tokens"))
        );
    }
    body.push_str("</tbody></table>");
    page(text(pack, "goal"), Some(repo), &body)
}

/// One hit (the `n`th on the page): its citation and its text, highlighted. The citation links
/// to its lines in the snapshot; a working-tree hit's, which no commit holds, to the text the
/// pack recorded, here.
fn hit_block(repo: &str, sha: &str, path: &str, hit: &Value, n: usize) -> String {
    let citation = text(hit, "citation");
    let start = number(hit, "startLine");
    let end = number(hit, "endLine");
    let link = if ctxpack_api::Citation::is_worktree(citation) {
        format!(
            "<a class=\"citation worktree\" href=\"#hit-{n}\" title=\"the working tree's text as packed\">{}</a>",
            escape(citation)
        )
    } else if !sha.is_empty() && start > 0 && hit.get("path").is_some() {
        format!(
            "<a class=\"citation\" href=\"/ui/repos/{}/file?at={}&amp;path={}&amp;start={start}&amp;end={end}#L{start}\">{}</a>",
            url(repo),
            url(sha),
            url(path),
            escape(citation)
        )
    } else {
        format!("<span class=\"citation\">{}</span>", escape(citation))
    };
    // A reference to lines the pack's session was shown before: no text, the pack that showed
    // them instead.
    if let Some(before) = hit.get("shownBefore")
        && before.get("whole") == Some(&Value::Bool(true))
    {
        let id = text(before, "pack");
        return format!(
            "<article class=\"hit reference\" id=\"hit-{n}\"><p>{link} shown before in pack \
             <a href=\"/ui/repos/{}/packs/{}\"><code>{}</code></a></p></article>",
            url(repo),
            url(id),
            escape(ctxpack_api::short_pack_id(id))
        );
    }
    let body = text(hit, "text");
    let lines: Vec<&str> = body.lines().collect();
    let mut code = String::new();
    for (i, line) in highlight(path, &lines).iter().enumerate() {
        let _ = write!(
            code,
            "<span class=\"line\"><span class=\"no\">{}</span>{line}</span>",
            start.max(1) + i as u64
        );
    }
    format!(
        "<article class=\"hit\" id=\"hit-{n}\"><p>{link} <span class=\"tokens\">{} tokens</span></p>\
         <pre class=\"code\"><code>{code}</code></pre></article>",
        thousands(number(hit, "tokens"))
    )
}

/// A file of a snapshot, its cited lines marked.
pub(crate) fn file(
    repo: &str,
    file: &ctxpack_api::IndexedFile,
    start: Option<u64>,
    end: Option<u64>,
) -> String {
    let mut body = format!(
        "<h1><code>{}</code></h1><p class=\"muted\">at <code>{}</code>, as ctxpack indexed it \
         (secrets masked)</p>",
        escape(&file.path),
        escape(&file.sha)
    );
    if let Some(reason) = &file.skipped {
        let _ = write!(
            body,
            "<p class=\"problem\">Not chunked: {}.</p>",
            escape(reason)
        );
    }
    let texts: Vec<&str> = file
        .lines
        .iter()
        .map(|l| l.as_deref().unwrap_or(""))
        .collect();
    body.push_str("<pre class=\"code\" id=\"file\"><code>");
    for (i, line) in highlight(&file.path, &texts).iter().enumerate() {
        let n = i as u64 + 1;
        let marked = start.is_some_and(|s| n >= s) && end.is_some_and(|e| n <= e);
        let _ = write!(
            body,
            "<span class=\"line{}\" id=\"L{n}\"><span class=\"no\">{n}</span>{line}</span>",
            if marked { " marked" } else { "" }
        );
    }
    body.push_str("</code></pre>");
    page(&file.path, Some(repo), &body)
}
