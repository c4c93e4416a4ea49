//! HTML building blocks: the page layout, URL encoding, numbers and times, highlighted code.
//!
//! Pages are compile-time templates (`maud`), which escape everything they splice in, text and
//! attribute values alike: whatever a page shows from a repository, a pack, a goal or a request
//! is inert. Nothing from them is ever placed in a `<script>`, a `style` or an event attribute,
//! and the Content-Security-Policy forbids inline script and style anyway.

use ctxpack_api::highlight::{Tag, highlight};
use maud::{DOCTYPE, Markup, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What a URL keeps as it is: the unreserved characters and `/`, so a path stays readable.
const URL_KEPT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// `text` as one URL query value (or path segment).
pub(crate) fn url(text: &str) -> String {
    utf8_percent_encode(text, URL_KEPT).to_string()
}

/// A whole page: `title` (text), the navigation links of `repo` when there is one, and `body`.
pub(crate) fn page(title: &str, repo: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · ctxpack" }
                link rel="stylesheet" href="/ui/static/app.css";
                script src="/ui/static/app.js" defer {}
            }
            body {
                header {
                    @if let Some(repo) = repo {
                        @let packs = format!("/ui/repos/{}/packs", url(repo));
                        nav {
                            a.brand href=(packs) { "ctxpack" } " "
                            span.repo { (repo) } " "
                            a href=(packs) { "Ledger" } " "
                            a href={ "/ui/repos/" (url(repo)) "/try" } { "Try a goal" } " "
                            a href="/ui/quality" { "Quality" } " "
                            form.inline method="post" action="/ui/logout" { button { "Sign out" } }
                        }
                    } @else {
                        nav { span.brand { "ctxpack" } }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A number with thousands separated by commas.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS` UTC.
pub(crate) fn time(seconds: u64) -> String {
    crate::present::utc_as(seconds, "%Y-%m-%d %H:%M:%S")
}

/// The class of a highlighted stretch (`app.css` colours them).
fn class(tag: Tag) -> &'static str {
    match tag {
        Tag::Keyword => "k",
        Tag::String => "s",
        Tag::Comment => "c",
        Tag::Constant => "n",
        Tag::Function => "f",
        Tag::Type => "t",
    }
}

/// The lines of `text`, a text of the file at `path` (a final line break ends the last line
/// rather than starting another), each highlighted as the file's language; a stretch that
/// spans lines (a block comment) is highlighted on each.
pub(crate) fn highlighted_lines(path: &str, text: &str) -> Vec<Markup> {
    let spans = highlight(path, text);
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut next = 0;
    let mut start = 0;
    for line in body.split('\n') {
        let end = start + line.len();
        let shown = start + line.strip_suffix('\r').unwrap_or(line).len();
        let mut parts: Vec<(Option<Tag>, &str)> = Vec::new();
        let mut at = start;
        while let Some((range, tag)) = spans.get(next).filter(|(r, _)| r.start < shown) {
            let (from, to) = (range.start.max(at), range.end.min(shown));
            if from < to {
                parts.push((None, text.get(at..from).unwrap_or("")));
                parts.push((Some(*tag), text.get(from..to).unwrap_or("")));
                at = to;
            }
            if range.end > end {
                break; // it goes on on the next line
            }
            next += 1;
        }
        parts.push((None, text.get(at..shown).unwrap_or("")));
        lines.push(html! {
            @for (tag, part) in parts {
                @match tag {
                    Some(tag) => span class=(class(tag)) { (part) },
                    None => (part),
                }
            }
        });
        start = end + 1;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_paths_readable_and_encode_the_rest() {
        assert_eq!(url("src/a b&c.rs"), "src/a%20b%26c.rs");
        assert_eq!(url("é?#\"<"), "%C3%A9%3F%23%22%3C");
        assert_eq!(url("a-b_c.d~e"), "a-b_c.d~e");
    }

    #[test]
    fn templates_escape_text_and_attributes() {
        let hostile = "<script>alert('x')</script> & \"y\"";
        let page = page(
            hostile,
            Some(hostile),
            html! { p title=(hostile) { (hostile) } },
        )
        .into_string();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;y&quot;"));
        assert!(!page.contains("title=\"<"), "{page}");
    }

    #[test]
    fn highlighting_escapes_everything_it_shows_and_keeps_every_line() {
        let text = "fn main() { let s = \"<b>\"; } // <i>\n/* a <block>\nstill */ 42\r\n";
        let lines: Vec<String> = highlighted_lines("x.rs", text)
            .into_iter()
            .map(Markup::into_string)
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with("<span class=\"k\">fn</span> "),
            "{lines:?}"
        );
        assert!(lines[0].contains("<span class=\"s\">&quot;&lt;b&gt;&quot;</span>"));
        assert!(
            lines[0].ends_with("<span class=\"c\">// &lt;i&gt;</span>"),
            "{lines:?}"
        );
        // A block comment is highlighted on each of its lines.
        assert_eq!(lines[1], "<span class=\"c\">/* a &lt;block&gt;</span>");
        assert!(
            lines[2].starts_with("<span class=\"c\">still */</span> "),
            "{lines:?}"
        );
        assert!(!lines[2].contains('\r'));
        // No markup survives from the text, whatever the language.
        for path in ["x.rs", "x.py", "x.md", "x"] {
            for line in highlighted_lines(path, "<script>alert(1)</script>\n") {
                assert!(!line.into_string().contains("<script"));
            }
        }
        // Plain text keeps its lines, empty ones included; an empty text has none.
        let plain = highlighted_lines("notes.txt", "a\n\nb");
        assert_eq!(plain.len(), 3);
        assert!(highlighted_lines("x.rs", "").is_empty());
    }

    #[test]
    fn numbers_have_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
