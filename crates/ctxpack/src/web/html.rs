//! HTML building blocks: escaping, the page layout and a small syntax highlighter.
//!
//! Everything a page shows from a repository, a pack, a goal or a request goes through
//! [`escape`] (text and attribute values alike); nothing from them is ever placed in a
//! `<script>`, a `style` or an event attribute, and the Content-Security-Policy forbids inline
//! script and style anyway.

use std::fmt::Write as _;

/// `text` safe inside an element or a quoted attribute value.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and line breaks are shown, not interpreted.
            c if c.is_control() && c != '\n' && c != '\t' && c != '\r' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as one URL query value (or path segment).
pub(crate) fn url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// A whole page: `title` (text), the navigation links of `repo` when there is one, and
/// `body` (HTML).
pub(crate) fn page(title: &str, repo: Option<&str>, body: &str) -> String {
    let nav = match repo {
        Some(repo) => {
            let r = url(repo);
            format!(
                "<nav><a class=\"brand\" href=\"/ui/repos/{r}/packs\">ctxpack</a> \
                 <span class=\"repo\">{}</span> \
                 <a href=\"/ui/repos/{r}/packs\">Ledger</a> \
                 <a href=\"/ui/repos/{r}/try\">Try a goal</a> \
                 <a href=\"/ui/quality\">Quality</a> \
                 <form method=\"post\" action=\"/ui/logout\" class=\"inline\"><button>Sign out</button></form></nav>",
                escape(repo)
            )
        }
        None => "<nav><span class=\"brand\">ctxpack</span></nav>".to_owned(),
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · ctxpack</title>\
         <link rel=\"stylesheet\" href=\"/ui/static/app.css\">\
         <script src=\"/ui/static/app.js\" defer></script></head>\
         <body><header>{nav}</header><main>{body}</main></body></html>\n",
        escape(title)
    )
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

/// The kind of a highlighted span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Span {
    Keyword,
    Str,
    Comment,
    Number,
    Plain,
}

/// How a language writes comments and which words are keywords.
struct Syntax {
    line_comment: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    keywords: &'static [&'static str],
}

fn syntax(path: &str) -> Option<Syntax> {
    let extension = path.rsplit_once('.').map(|(_, e)| e)?;
    const C_LIKE: &[&str] = &[
        "break",
        "case",
        "const",
        "continue",
        "default",
        "do",
        "else",
        "enum",
        "for",
        "if",
        "return",
        "static",
        "struct",
        "switch",
        "while",
        "class",
        "new",
        "try",
        "catch",
        "throw",
        "import",
        "export",
        "from",
        "function",
        "let",
        "var",
        "this",
        "public",
        "private",
        "protected",
        "interface",
        "package",
        "func",
        "type",
        "go",
        "defer",
        "range",
        "map",
        "chan",
        "select",
        "void",
        "int",
        "char",
        "bool",
        "true",
        "false",
        "null",
        "nil",
        "async",
        "await",
        "extends",
        "implements",
        "typeof",
        "instanceof",
        "in",
        "of",
        "yield",
        "final",
        "abstract",
        "namespace",
        "template",
        "typename",
        "using",
        "auto",
    ];
    const RUST: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
        "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
        "true", "type", "unsafe", "use", "where", "while",
    ];
    const PYTHON: &[&str] = &[
        "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "False", "finally", "for", "from", "global", "if", "import",
        "in", "is", "lambda", "None", "nonlocal", "not", "or", "pass", "raise", "return", "True",
        "try", "while", "with", "yield", "self",
    ];
    Some(match extension {
        "rs" => Syntax {
            line_comment: &["//"],
            block_comment: Some(("/*", "*/")),
            keywords: RUST,
        },
        "py" => Syntax {
            line_comment: &["#"],
            block_comment: None,
            keywords: PYTHON,
        },
        "sh" | "bash" | "toml" | "yaml" | "yml" => Syntax {
            line_comment: &["#"],
            block_comment: None,
            keywords: &[
                "if", "then", "else", "fi", "for", "do", "done", "case", "esac", "true", "false",
            ],
        },
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "go" | "java" | "c" | "h" | "cc" | "cpp"
        | "hpp" | "cs" | "kt" | "swift" | "scala" => Syntax {
            line_comment: &["//"],
            block_comment: Some(("/*", "*/")),
            keywords: C_LIKE,
        },
        _ => return None,
    })
}

/// Highlights the lines of `path` (a language it knows; others are plain), returning each
/// line as escaped HTML. A block comment may span lines.
pub(crate) fn highlight(path: &str, lines: &[&str]) -> Vec<String> {
    let Some(syntax) = syntax(path) else {
        return lines.iter().map(|l| escape(l)).collect();
    };
    let mut in_block = false;
    lines
        .iter()
        .map(|line| highlight_line(&syntax, line, &mut in_block))
        .collect()
}

fn highlight_line(syntax: &Syntax, line: &str, in_block: &mut bool) -> String {
    let mut spans: Vec<(Span, &str)> = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        if *in_block {
            let end = syntax.block_comment.map_or("", |(_, end)| end);
            match rest.find(end) {
                Some(i) if !end.is_empty() => {
                    spans.push((Span::Comment, &rest[..i + end.len()]));
                    rest = &rest[i + end.len()..];
                    *in_block = false;
                }
                _ => {
                    spans.push((Span::Comment, rest));
                    rest = "";
                }
            }
            continue;
        }
        if syntax.line_comment.iter().any(|c| rest.starts_with(c)) {
            spans.push((Span::Comment, rest));
            break;
        }
        if let Some((start, _)) = syntax.block_comment
            && rest.starts_with(start)
        {
            *in_block = true;
            spans.push((Span::Comment, &rest[..start.len()]));
            rest = &rest[start.len()..];
            continue;
        }
        let first = rest.chars().next().unwrap_or(' ');
        let take = if first == '"' || first == '\'' || first == '`' {
            // A string to its closing quote on this line (escapes skipped).
            let mut end = rest.len();
            let mut escaped = false;
            for (i, c) in rest.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == first {
                    end = i + c.len_utf8();
                    break;
                }
            }
            spans.push((Span::Str, &rest[..end]));
            end
        } else if first.is_ascii_digit() {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            spans.push((Span::Number, &rest[..end]));
            end
        } else if first.is_alphabetic() || first == '_' {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            let kind = if syntax.keywords.contains(&word) {
                Span::Keyword
            } else {
                Span::Plain
            };
            spans.push((kind, word));
            end
        } else {
            let end = first.len_utf8();
            spans.push((Span::Plain, &rest[..end]));
            end
        };
        rest = &rest[take..];
    }
    let mut out = String::with_capacity(line.len() + 32);
    for (kind, text) in spans {
        let class = match kind {
            Span::Keyword => Some("k"),
            Span::Comment => Some("c"),
            Span::Number => Some("n"),
            Span::Str => Some("s"),
            Span::Plain => None,
        };
        match class {
            Some(class) => {
                let _ = write!(out, "<span class=\"{class}\">{}</span>", escape(text));
            }
            None => out.push_str(&escape(text)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
        assert_eq!(escape("a\u{0}b"), "a\\u{0}b");
        assert_eq!(url("src/a b&c.rs"), "src/a%20b%26c.rs");
    }

    #[test]
    fn highlighting_escapes_everything_it_shows() {
        let lines = [
            "fn main() { let s = \"<b>\"; } // <i>",
            "/* a <block>",
            "still */ 42",
        ];
        let out = highlight("x.rs", &lines);
        assert_eq!(
            out[0],
            "<span class=\"k\">fn</span> main() { <span class=\"k\">let</span> s = <span class=\"s\">&quot;&lt;b&gt;&quot;</span>; } <span class=\"c\">// &lt;i&gt;</span>"
        );
        assert_eq!(
            out[1],
            "<span class=\"c\">/*</span><span class=\"c\"> a &lt;block&gt;</span>"
        );
        assert_eq!(
            out[2],
            "<span class=\"c\">still */</span> <span class=\"n\">42</span>"
        );
        // No markup survives from the text, whatever the language.
        for path in ["x.rs", "x.py", "x.md", "x"] {
            for line in highlight(path, &["<script>alert(1)</script>"]) {
                assert!(!line.contains("<script"), "{line}");
            }
        }
    }

    #[test]
    fn numbers_have_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
