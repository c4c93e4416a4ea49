//! The pages of the web view, as functions from data to HTML. A pack is drawn from its
//! canonical JSON (what `ctxpack show --format json` prints), so the page and the JSON can
//! never disagree about a count.

use std::collections::{BTreeMap, BTreeSet};

use ctxpack_api::{LogEntry, LogPage, Selector};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::html::{page, thousands, time, url};

mod pack;
mod report;

pub(crate) use pack::{PackView, file, pack};
pub(crate) use report::{Report, quality};

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

/// A problem in a form's reply, and what to do about it when there is a hint.
fn problem(message: &str, hint: Option<&str>) -> Markup {
    html! {
        p.problem role="alert" { (message) }
        @if let Some(hint) = hint { p.hint { (hint) } }
    }
}

/// The sign-in page of a server.
pub(crate) fn login(refused: Option<&str>) -> Markup {
    page(
        "Sign in",
        None,
        html! {
            h1 { "Sign in" }
            @if let Some(message) = refused { (problem(message, None)) }
            form.card #login method="post" action="/ui/login" {
                label { "Access token " input type="password" name="token" autocomplete="off" required; }
                p.muted {
                    "A token from " code { "ctxpack serve token create" } ". It is exchanged for a \
                     session cookie; the page never stores it."
                }
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// An error page.
pub(crate) fn error(title: &str, message: &str, hint: Option<&str>, repo: Option<&str>) -> Markup {
    page(
        title,
        repo,
        html! {
            h1 { (title) }
            (problem(message, hint))
        },
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
            "/ui/repos/{}/packs?goal={}&from={}&until={}&page={page}",
            url(repo),
            url(&self.goal),
            url(&self.from),
            url(&self.until)
        )
    }
}

/// The ledger list.
pub(crate) fn packs(repo: &str, repos: &[String], query: &ListQuery, listed: &LogPage) -> Markup {
    let first = query.first();
    let body = html! {
        h1 { "Ledger" }
        @if repos.len() > 1 {
            p.repos {
                "Repository: "
                @for other in repos {
                    a href={ "/ui/repos/" (url(other)) "/packs" }
                        aria-current=[(other == repo).then_some("page")] { (other) }
                    " "
                }
            }
        }
        form.filters #filters method="get" {
            label { "Goal contains " input name="goal" value=(query.goal); }
            label { "From " input type="date" name="from" value=(query.from); }
            label { "Until " input type="date" name="until" value=(query.until); }
            button { "Filter" }
        }
        p.count #count {
            (thousands(listed.total as u64)) " packs"
            @if !listed.entries.is_empty() {
                ", " (first + 1) "–" (first + listed.entries.len()) " shown"
            }
        }
        table.packs #packs {
            thead { tr {
                th { "Time (UTC)" } th { "Goal" } th { "Snapshot" } th { "Budget use" }
                th { "Selector" } th { "Caller" } th { "Hits" } th { "Dropped" }
            } }
            tbody { @for entry in &listed.entries { (row(repo, entry)) } }
        }
        nav.pages {
            @if query.page > 0 && first <= listed.total {
                a rel="prev" href=(query.link(repo, query.page - 1)) { "Newer" } " "
            }
            @if first + listed.entries.len() < listed.total {
                a rel="next" href=(query.link(repo, query.page + 1)) { "Older" }
            }
        }
    };
    page("Ledger", Some(repo), body)
}

fn row(repo: &str, entry: &LogEntry) -> Markup {
    html! {
        tr data-id=(entry.id) {
            td { (time(entry.time)) }
            td { a href={ "/ui/repos/" (url(repo)) "/packs/" (entry.id) } { (entry.goal) } }
            td { code {
                (entry.snapshot.as_deref().map_or("—", |s| prefix(s, 12)))
                @if entry.worktree { " + worktree" }
            } }
            td {
                meter min="0" max=(entry.budget) value=(entry.used_tokens) {}
                " " (thousands(entry.used_tokens)) " / " (thousands(entry.budget)) " " (entry.meter)
            }
            td { (entry.selector) }
            td { (entry.surface) }
            td { (entry.selected_hits) }
            td { (entry.dropped) }
        }
    }
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
pub(crate) fn try_goal(repo: &str, form: &TryForm<'_>) -> Markup {
    let body = html! {
        h1 { "Try a goal" }
        @if let Some((message, hint)) = form.problem { (problem(message, hint)) }
        form.card #try method="post" action={ "/ui/repos/" (url(repo)) "/try" } {
            label { "Goal " textarea name="goal" rows="3" required { (form.goal) } }
            label { "Budget (tokens) " input type="number" name="budget" min="1" value=(form.budget); }
            label { "Snapshot " input name="at" value=(form.at); }
            label { "Selector " select name="selector" {
                @for selector in Selector::ALL {
                    @let name = selector.name();
                    option value=(name) selected[name == form.selector] { (name) }
                }
            } }
            button type="submit" { "Build the pack" }
        }
    };
    page("Try a goal", Some(repo), body)
}

/// Two packs side by side (usually one goal at two commits): tokens per file before and after,
/// and the citations added and removed.
pub(crate) fn compare(repo: &str, ids: (&str, &str), a: &Value, b: &Value) -> Markup {
    let (fa, fb) = (files(a), files(b));
    let kept = |files: &[FileBudget], path: &str| {
        files.iter().find(|f| f.path == path).map_or(0, |f| f.kept)
    };
    let mut paths: Vec<&str> = fa.iter().chain(&fb).map(|f| f.path.as_str()).collect();
    let mut seen = BTreeSet::new();
    paths.retain(|p| seen.insert(*p));
    let places = |pack: &Value| -> BTreeSet<String> {
        array(pack, "hits")
            .iter()
            .map(|h| citation_place(text(h, "citation")).to_owned())
            .collect()
    };
    let (pa, pb) = (places(a), places(b));
    let changes = paths.into_iter().filter_map(|path| {
        let (before, after) = (kept(&fa, path), kept(&fb, path));
        let (class, change) = match (before, after) {
            (0, 0) => return None,
            (0, _) => ("added", "added".to_owned()),
            (_, 0) => ("removed", "removed".to_owned()),
            (x, y) if x == y => ("same", "same".to_owned()),
            (x, y) => ("changed", format!("{:+}", y as i64 - x as i64)),
        };
        Some((path, before, after, class, change))
    });
    let link = |id: &str| {
        html! {
            a href={ "/ui/repos/" (url(repo)) "/packs/" (url(prefix(id, 12))) } { code { (prefix(id, 12)) } }
        }
    };
    let body = html! {
        h1 { (text(a, "goal")) }
        p {
            "Pack " (link(ids.0)) " at " code { (prefix(text(a, "snapshotSha"), 12)) }
            " against pack " (link(ids.1)) " at " code { (prefix(text(b, "snapshotSha"), 12)) } "."
        }
        table.compare #compare {
            thead { tr { th { "File" } th { "Before" } th { "After" } th { "Change" } } }
            tbody {
                @for (path, before, after, class, change) in changes {
                    tr class=(class) {
                        td { code { (path) } }
                        td { (thousands(before)) }
                        td { (thousands(after)) }
                        td { (change) }
                    }
                }
            }
        }
        h2 { "Citations" }
        ul.citations {
            @for place in pb.difference(&pa) { li.added { "+ " code { (place) } } }
            @for place in pa.difference(&pb) { li.removed { "− " code { (place) } } }
            @if pa == pb { li { "The same citations." } }
        }
    };
    page("Compare packs", Some(repo), body)
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
        let html = quality(None, None).into_string();
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
        })
        .into_string();
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
        })
        .into_string();
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
        assert!(row("app", &entry).into_string().contains("abc + worktree"));
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
        })
        .into_string();
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
