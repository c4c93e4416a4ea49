//! The pages of the web view, as functions from data to HTML. A pack is drawn from its
//! canonical JSON (what `ctxpack show --format json` prints), so the page and the JSON can
//! never disagree about a count.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ctxpack_api::{LogEntry, LogPage, Selector};
use serde::Deserialize;
use serde_json::Value;

use super::html::{escape, highlight, page, thousands, time, url};

/// Packs per page of the ledger list.
pub(crate) const PAGE_SIZE: usize = 50;

/// One file of a pack: the tokens its hits use and the tokens of its dropped candidates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileBudget {
    pub(crate) path: String,
    pub(crate) kept: u64,
    pub(crate) dropped: u64,
}

/// The path a citation points into (`src/a.rs#L1-L9@abc` → `src/a.rs`; the last `#` ends
/// it, since a path may hold one).
fn citation_path(citation: &str) -> &str {
    citation.rsplit_once('#').map_or(citation, |(p, _)| p)
}

/// The file a hit cites: its `path`, else its citation's.
fn hit_path(hit: &Value) -> &str {
    hit.get("path")
        .and_then(Value::as_str)
        .unwrap_or_else(|| citation_path(text(hit, "citation")))
}

/// At most the first `n` characters of `s`.
fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// A citation without its commit, to compare packs of two commits.
fn citation_place(citation: &str) -> &str {
    citation.rsplit_once('@').map_or(citation, |(p, _)| p)
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The files of a pack in the order its hits cite them, then files only dropped candidates
/// come from.
pub(crate) fn files(pack: &Value) -> Vec<FileBudget> {
    let mut order: Vec<String> = Vec::new();
    let mut budgets: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for hit in array(pack, "hits") {
        let path = hit_path(hit).to_owned();
        if !budgets.contains_key(&path) {
            order.push(path.clone());
        }
        budgets.entry(path).or_default().0 += number(hit, "tokens");
    }
    for dropped in array(pack, "dropped") {
        let path = citation_path(text(dropped, "citation")).to_owned();
        if !budgets.contains_key(&path) {
            order.push(path.clone());
        }
        budgets.entry(path).or_default().1 += number(dropped, "tokens");
    }
    order
        .into_iter()
        .map(|path| {
            let (kept, dropped) = budgets[&path];
            FileBudget {
                path,
                kept,
                dropped,
            }
        })
        .collect()
}

/// The sign-in page of a server.
pub(crate) fn login(problem: Option<&str>) -> String {
    let problem = problem.map_or_else(String::new, |p| {
        format!("<p class=\"problem\" role=\"alert\">{}</p>", escape(p))
    });
    page(
        "Sign in",
        None,
        &format!(
            "<h1>Sign in</h1>{problem}\
             <form method=\"post\" action=\"/ui/login\" class=\"card\" id=\"login\">\
             <label>Access token <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label>\
             <p class=\"muted\">A token from <code>ctxpack serve token create</code>. It is exchanged for a \
             session cookie; the page never stores it.</p>\
             <button type=\"submit\">Sign in</button></form>"
        ),
    )
}

/// An error page.
pub(crate) fn error(title: &str, message: &str, hint: Option<&str>, repo: Option<&str>) -> String {
    let hint = hint.map_or_else(String::new, |h| {
        format!("<p class=\"hint\">{}</p>", escape(h))
    });
    page(
        title,
        repo,
        &format!(
            "<h1>{}</h1><p class=\"problem\" role=\"alert\">{}</p>{hint}",
            escape(title),
            escape(message)
        ),
    )
}

/// What the ledger list is filtered by, as the form shows it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ListQuery {
    pub(crate) goal: String,
    pub(crate) from: String,
    pub(crate) until: String,
    pub(crate) page: usize,
}

impl ListQuery {
    /// The offset of the page's first pack.
    pub(crate) fn first(&self) -> usize {
        self.page.saturating_mul(PAGE_SIZE)
    }

    fn link(&self, repo: &str, page: usize) -> String {
        format!(
            "/ui/repos/{}/packs?goal={}&amp;from={}&amp;until={}&amp;page={page}",
            url(repo),
            url(&self.goal),
            url(&self.from),
            url(&self.until)
        )
    }
}

/// The ledger list.
pub(crate) fn packs(repo: &str, repos: &[String], query: &ListQuery, listed: &LogPage) -> String {
    let mut body = String::new();
    let _ = write!(body, "<h1>Ledger</h1>");
    if repos.len() > 1 {
        body.push_str("<p class=\"repos\">Repository: ");
        for other in repos {
            let _ = write!(
                body,
                "<a href=\"/ui/repos/{}/packs\"{}>{}</a> ",
                url(other),
                if other == repo {
                    " aria-current=\"page\""
                } else {
                    ""
                },
                escape(other)
            );
        }
        body.push_str("</p>");
    }
    let _ = write!(
        body,
        "<form method=\"get\" class=\"filters\" id=\"filters\">\
         <label>Goal contains <input name=\"goal\" value=\"{}\"></label>\
         <label>From <input type=\"date\" name=\"from\" value=\"{}\"></label>\
         <label>Until <input type=\"date\" name=\"until\" value=\"{}\"></label>\
         <button>Filter</button></form>",
        escape(&query.goal),
        escape(&query.from),
        escape(&query.until)
    );
    let first = query.first();
    let _ = write!(
        body,
        "<p class=\"count\" id=\"count\">{} packs{}</p>",
        thousands(listed.total as u64),
        if !listed.entries.is_empty() {
            format!(", {}–{} shown", first + 1, first + listed.entries.len())
        } else {
            String::new()
        }
    );
    body.push_str(
        "<table class=\"packs\" id=\"packs\"><thead><tr><th>Time (UTC)</th><th>Goal</th>\
         <th>Snapshot</th><th>Budget use</th><th>Selector</th><th>Caller</th>\
         <th>Hits</th><th>Dropped</th></tr></thead><tbody>",
    );
    for entry in &listed.entries {
        body.push_str(&row(repo, entry));
    }
    body.push_str("</tbody></table><nav class=\"pages\">");
    if query.page > 0 && first <= listed.total {
        let _ = write!(
            body,
            "<a rel=\"prev\" href=\"{}\">Newer</a> ",
            query.link(repo, query.page - 1)
        );
    }
    if first + listed.entries.len() < listed.total {
        let _ = write!(
            body,
            "<a rel=\"next\" href=\"{}\">Older</a>",
            query.link(repo, query.page + 1)
        );
    }
    body.push_str("</nav>");
    page("Ledger", Some(repo), &body)
}

fn row(repo: &str, entry: &LogEntry) -> String {
    let mut snapshot = entry
        .snapshot
        .as_deref()
        .map_or_else(|| "—".to_owned(), |s| escape(prefix(s, 12)));
    if entry.worktree {
        snapshot.push_str(" + worktree");
    }
    format!(
        "<tr data-id=\"{id}\"><td>{time}</td>\
         <td><a href=\"/ui/repos/{r}/packs/{id}\">{goal}</a></td><td><code>{snapshot}</code></td>\
         <td><meter min=\"0\" max=\"{budget}\" value=\"{used}\"></meter> {used_text} / {budget_text} {meter}</td>\
         <td>{selector}</td><td>{caller}</td><td>{hits}</td><td>{dropped}</td></tr>",
        id = escape(&entry.id),
        time = time(entry.time),
        r = url(repo),
        goal = escape(&entry.goal),
        budget = entry.budget,
        used = entry.used_tokens,
        used_text = thousands(entry.used_tokens),
        budget_text = thousands(entry.budget),
        meter = escape(&entry.meter),
        selector = escape(&entry.selector),
        caller = escape(&entry.surface),
        hits = entry.selected_hits,
        dropped = entry.dropped,
    )
}

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

/// The form that builds a pack.
pub(crate) struct TryForm<'a> {
    pub(crate) goal: &'a str,
    pub(crate) budget: u64,
    pub(crate) at: &'a str,
    pub(crate) selector: &'a str,
    pub(crate) problem: Option<(&'a str, Option<&'a str>)>,
}

/// "Try a goal": a form that builds and records a pack, then shows it.
pub(crate) fn try_goal(repo: &str, form: &TryForm<'_>) -> String {
    let problem = form.problem.map_or_else(String::new, |(message, hint)| {
        format!(
            "<p class=\"problem\" role=\"alert\">{}</p>{}",
            escape(message),
            hint.map_or_else(String::new, |h| format!(
                "<p class=\"hint\">{}</p>",
                escape(h)
            ))
        )
    });
    let mut options = String::new();
    for selector in Selector::ALL {
        let name = selector.name();
        let _ = write!(
            options,
            "<option value=\"{name}\"{}>{name}</option>",
            if name == form.selector {
                " selected"
            } else {
                ""
            }
        );
    }
    page(
        "Try a goal",
        Some(repo),
        &format!(
            "<h1>Try a goal</h1>{problem}\
             <form method=\"post\" action=\"/ui/repos/{r}/try\" class=\"card\" id=\"try\">\
             <label>Goal <textarea name=\"goal\" rows=\"3\" required>{goal}</textarea></label>\
             <label>Budget (tokens) <input type=\"number\" name=\"budget\" min=\"1\" value=\"{budget}\"></label>\
             <label>Snapshot <input name=\"at\" value=\"{at}\"></label>\
             <label>Selector <select name=\"selector\">{options}</select></label>\
             <button type=\"submit\">Build the pack</button></form>",
            r = url(repo),
            goal = escape(form.goal),
            budget = form.budget,
            at = escape(form.at),
        ),
    )
}

/// Two packs side by side (usually one goal at two commits): tokens per file before and after,
/// and the citations added and removed.
pub(crate) fn compare(repo: &str, ids: (&str, &str), a: &Value, b: &Value) -> String {
    let (fa, fb) = (files(a), files(b));
    let kept = |files: &[FileBudget], path: &str| {
        files.iter().find(|f| f.path == path).map_or(0, |f| f.kept)
    };
    let mut paths: Vec<&str> = fa.iter().chain(&fb).map(|f| f.path.as_str()).collect();
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(*p));
    let places = |pack: &Value| -> std::collections::BTreeSet<String> {
        array(pack, "hits")
            .iter()
            .map(|h| citation_place(text(h, "citation")).to_owned())
            .collect()
    };
    let (pa, pb) = (places(a), places(b));
    let mut body = format!(
        "<h1>{}</h1><p>Pack <a href=\"/ui/repos/{r}/packs/{ia}\"><code>{ia}</code></a> at <code>{sa}</code> \
         against pack <a href=\"/ui/repos/{r}/packs/{ib}\"><code>{ib}</code></a> at <code>{sb}</code>.</p>",
        escape(text(a, "goal")),
        r = url(repo),
        ia = escape(prefix(ids.0, 12)),
        ib = escape(prefix(ids.1, 12)),
        sa = escape(prefix(text(a, "snapshotSha"), 12)),
        sb = escape(prefix(text(b, "snapshotSha"), 12)),
    );
    body.push_str(
        "<table class=\"compare\" id=\"compare\"><thead><tr><th>File</th><th>Before</th>\
         <th>After</th><th>Change</th></tr></thead><tbody>",
    );
    for path in paths {
        let (before, after) = (kept(&fa, path), kept(&fb, path));
        if before == 0 && after == 0 {
            continue;
        }
        let change = match (before, after) {
            (0, _) => "added".to_owned(),
            (_, 0) => "removed".to_owned(),
            (x, y) if x == y => "same".to_owned(),
            (x, y) => format!("{:+}", y as i64 - x as i64),
        };
        let _ = write!(
            body,
            "<tr class=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            match change.as_str() {
                "added" | "removed" | "same" => change.as_str(),
                _ => "changed",
            },
            escape(path),
            thousands(before),
            thousands(after),
            escape(&change)
        );
    }
    body.push_str("</tbody></table><h2>Citations</h2><ul class=\"citations\">");
    for place in pb.difference(&pa) {
        let _ = write!(
            body,
            "<li class=\"added\">+ <code>{}</code></li>",
            escape(place)
        );
    }
    for place in pa.difference(&pb) {
        let _ = write!(
            body,
            "<li class=\"removed\">− <code>{}</code></li>",
            escape(place)
        );
    }
    if pa == pb {
        body.push_str("<li>The same citations.</li>");
    }
    body.push_str("</ul>");
    page("Compare packs", Some(repo), &body)
}

/// An evaluation report, as `ctxpack eval --format json` writes it.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Report {
    pub(crate) tasks: usize,
    pub(crate) selector: String,
    pub(crate) meter: String,
    pub(crate) results: Vec<ReportRow>,
}

/// One ranker at one budget.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReportRow {
    pub(crate) ranker: String,
    pub(crate) budget: u64,
    pub(crate) file_recall: f64,
    pub(crate) hit_rate: f64,
    pub(crate) mrr: f64,
    /// Named `tokenPrecision` in reports written before it was renamed.
    #[serde(alias = "tokenPrecision")]
    pub(crate) gold_share: f64,
}

/// The quality page: recall by budget for each ranker of an evaluation report.
pub(crate) fn quality(repo: Option<&str>, report: Option<&Report>) -> String {
    let Some(report) = report else {
        return page(
            "Quality",
            repo,
            "<h1>Quality</h1><p>No evaluation report was given. Run <code>ctxpack eval history --format json \
             &gt; report.json</code> in the repository and start the view with <code>--eval-report report.json</code>.</p>",
        );
    };
    let mut budgets: Vec<u64> = report.results.iter().map(|r| r.budget).collect();
    budgets.sort_unstable();
    budgets.dedup();
    let mut rankers: Vec<&str> = Vec::new();
    for row in &report.results {
        if !rankers.contains(&row.ranker.as_str()) {
            rankers.push(&row.ranker);
        }
    }
    let mut body = format!(
        "<h1>Quality</h1><p>{} tasks; ctxpack's selector {}, meter {}.</p>",
        report.tasks,
        escape(&report.selector),
        escape(&report.meter)
    );
    body.push_str(&recall_chart(report, &budgets, &rankers));
    body.push_str(
        "<table class=\"quality\" id=\"quality\"><thead><tr><th>Ranker</th><th>Budget</th>\
         <th>File recall</th><th>Hit rate</th><th>MRR</th><th>Gold share</th></tr></thead><tbody>",
    );
    for row in &report.results {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            escape(&row.ranker),
            thousands(row.budget),
            row.file_recall,
            row.hit_rate,
            row.mrr,
            row.gold_share
        );
    }
    body.push_str("</tbody></table>");
    page("Quality", repo, &body)
}

/// File recall (0–1, vertical) against budget (evenly spaced, horizontal), a line per ranker.
fn recall_chart(report: &Report, budgets: &[u64], rankers: &[&str]) -> String {
    let (left, top, width, height) = (60.0, 20.0, 600.0, 260.0);
    let x = |i: usize| {
        if budgets.len() <= 1 {
            left + width / 2.0
        } else {
            left + width * i as f64 / (budgets.len() - 1) as f64
        }
    };
    let y = |v: f64| top + height * (1.0 - v.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg class=\"chart\" id=\"recall\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"File recall by budget\">",
        left + width + 160.0,
        top + height + 50.0
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"></line>\
             <text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{tick:.2}</text>",
            left + width,
            left - 8.0,
            y(tick) + 4.0,
            y = y(tick)
        );
    }
    for (i, budget) in budgets.iter().enumerate() {
        let _ = write!(
            svg,
            "<text class=\"axis\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(i),
            top + height + 20.0,
            thousands(*budget)
        );
    }
    for (r, ranker) in rankers.iter().enumerate() {
        let points: Vec<String> = budgets
            .iter()
            .enumerate()
            .filter_map(|(i, budget)| {
                report
                    .results
                    .iter()
                    .find(|row| row.ranker == *ranker && row.budget == *budget)
                    .map(|row| format!("{:.1},{:.1}", x(i), y(row.file_recall)))
            })
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"series c{}\" data-ranker=\"{}\" points=\"{}\"></polyline>\
             <text class=\"legend c{}\" x=\"{}\" y=\"{}\">{}</text>",
            r % 8,
            escape(ranker),
            points.join(" "),
            r % 8,
            left + width + 16.0,
            top + 16.0 + 18.0 * r as f64,
            escape(ranker)
        );
    }
    let _ = write!(
        svg,
        "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">budget (tokens)</text></svg>",
        left + width / 2.0,
        top + height + 42.0
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The command the quality page gives without a report is one the command line takes,
    /// and it asks for the JSON report the page reads.
    #[test]
    fn the_quality_pages_command_parses() {
        use clap::Parser;
        let html = quality(None, None);
        let start = html.find("<code>").expect("a command") + "<code>".len();
        let command = &html[start..];
        let command = &command[..command.find(" &gt;").expect("redirected to a file")];
        let args: Vec<&str> = command.split_whitespace().collect();
        let parsed = crate::cli::Cli::try_parse_from(&args);
        assert!(parsed.is_ok(), "{command}: {parsed:?}");
        assert!(command.contains("--format json"), "{command}");
    }

    fn sample() -> Value {
        json!({
            "goal": "<script>alert(1)</script>",
            "snapshotSha": "abc",
            "budget": 100,
            "meter": "o200k",
            "usedTokens": 60,
            "hits": [
                {"citation": "src/a.rs#L1-L3@abc", "path": "src/a.rs", "startLine": 1, "endLine": 3, "tokens": 40, "text": "<b>bold</b>\n<img src=x onerror=alert(1)>\n"},
                {"citation": "src/b.rs#L1-L2@abc", "path": "src/b.rs", "startLine": 1, "endLine": 2, "tokens": 15, "text": "b\n"},
                {"citation": "src/a.rs#L9-L9@abc", "path": "src/a.rs", "startLine": 9, "endLine": 9, "tokens": 5, "text": "a\n"}
            ],
            "dropped": [
                {"citation": "src/c.rs#L1-L80@abc", "reason": "over_budget", "tokens": 300},
                {"citation": "src/a.rs#L20-L30@abc", "reason": "duplicate", "tokens": 7}
            ],
            "selection": {"strategy": "coverage-v4"},
            "redactionSummary": {"total": 1, "byKind": {"aws-key": 1}},
            "warnings": []
        })
    }

    #[test]
    fn files_sum_tokens_in_citation_order() {
        assert_eq!(
            files(&sample()),
            vec![
                FileBudget {
                    path: "src/a.rs".into(),
                    kept: 45,
                    dropped: 7
                },
                FileBudget {
                    path: "src/b.rs".into(),
                    kept: 15,
                    dropped: 0
                },
                FileBudget {
                    path: "src/c.rs".into(),
                    kept: 0,
                    dropped: 300
                },
            ]
        );
    }

    /// The log entry of the sample pack.
    fn entry(id: &str, snapshot: Option<&str>, worktree: bool) -> LogEntry {
        LogEntry {
            id: id.into(),
            time: 0,
            surface: "pack".into(),
            goal: "g".into(),
            snapshot: snapshot.map(str::to_owned),
            budget: 100,
            meter: "o200k".into(),
            selector: "coverage".into(),
            used_tokens: 60,
            selected_hits: 3,
            dropped: 2,
            parent: None,
            worktree,
        }
    }

    #[test]
    fn a_pack_page_shows_its_content_inert() {
        let entry = LogEntry {
            surface: "serve:<i>agent</i>".into(),
            ..entry("ab12", None, false)
        };
        let html = pack(&PackView {
            repo: "app",
            id: "ab12",
            entry: &entry,
            pack: &sample(),
            markdown: "</textarea><script>alert(2)</script>",
        });
        for raw in [
            "<script>alert",
            "<img",
            "<b>bold",
            "<i>agent",
            "</textarea><script",
        ] {
            assert!(!html.contains(raw), "{raw} in the page");
        }
        // One segment per file with kept tokens, and one per file with dropped tokens.
        assert_eq!(html.matches("data-kind=\"kept\"").count(), 2);
        assert_eq!(html.matches("data-kind=\"dropped\"").count(), 2);
        assert!(html.contains("<td class=\"reason\">over_budget</td>"));
    }

    /// A working-tree pack says so, and its `@worktree` citations open the text it recorded
    /// (on the page), not a snapshot's file, which never held it.
    #[test]
    fn a_worktree_pack_is_marked_and_its_citations_open_the_recorded_text() {
        let mut value = sample();
        value["snapshotSha"] = json!("abc");
        value["hits"][1]["citation"] = json!("src/b.rs#L1-L2@worktree");
        let entry = entry("cd34", Some("abc"), true);
        let html = pack(&PackView {
            repo: "app",
            id: "cd34",
            entry: &entry,
            pack: &value,
            markdown: "",
        });
        assert!(
            html.contains("<code>abc</code> and the working tree"),
            "{html}"
        );
        assert!(
            html.contains("href=\"#hit-3\" title=\"the working tree's text as packed\">src/b.rs#L1-L2@worktree</a>"),
            "{html}"
        );
        assert!(
            html.contains("<article class=\"hit\" id=\"hit-3\">"),
            "{html}"
        );
        assert!(
            !html.contains("path=src%2Fb.rs"),
            "a snapshot link for the worktree hit: {html}"
        );
        assert!(row("app", &entry).contains("abc + worktree"));
    }

    /// A session's reference shows no text: the pack that showed its lines, linked.
    #[test]
    fn a_reference_links_the_pack_that_showed_its_lines() {
        let mut value = sample();
        value["session"] =
            json!({"id": "task-1", "references": 1, "partlyShownBefore": 0, "savedTokens": 40});
        value["hits"][0]["text"] = json!("shown before in pack 0123456789ab");
        value["hits"][0]["shownBefore"] = json!({"pack": "0123456789abcdef", "citation": "src/a.rs#L1-L4@abc", "whole": true, "savedTokens": 40});
        let entry = entry("ef56", None, false);
        let html = pack(&PackView {
            repo: "app",
            id: "ef56",
            entry: &entry,
            pack: &value,
            markdown: "",
        });
        assert!(
            html.contains("shown before in pack <a href=\"/ui/repos/app/packs/0123456789abcdef\"><code>0123456789ab</code></a>"),
            "{html}"
        );
        assert!(
            html.contains("<dt>session id</dt><dd>task-1</dd>"),
            "{html}"
        );
        assert!(
            !html.contains("shown before in pack 0123456789ab</span>"),
            "{html}"
        );
    }
}
