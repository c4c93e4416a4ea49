//! Syntax highlighting with the grammars the chunker parses and their own highlight queries.
//!
//! A text is highlighted as the language its path names ([`language_of`]); a language without
//! a highlight query (Markdown) or a path of no known language has no highlights. Highlighting
//! never fails a caller: a text the highlighter gives up on is returned without highlights.

use std::ops::Range;
use std::sync::OnceLock;

use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};

use crate::chunk::{Language, grammar, language_of};

/// What a highlighted stretch of text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// A keyword of the language (`fn`, `def`, `return`).
    Keyword,
    /// A string or character literal.
    String,
    /// A comment, documentation comments included.
    Comment,
    /// A number or a constant (`true`, `None`, `MAX_LEN`).
    Constant,
    /// The name of a function or method, where it is defined or called.
    Function,
    /// The name of a type.
    Type,
}

impl Tag {
    /// Capture names of the grammars' queries, in the order of [`Tag::ALL`]: a capture takes
    /// the tag of the most specific name it starts with (`function.method` is a function,
    /// `constant.builtin` a constant).
    const NAMES: [&'static str; 7] = [
        "keyword", "string", "comment", "number", "constant", "function", "type",
    ];
    const ALL: [Tag; 7] = [
        Tag::Keyword,
        Tag::String,
        Tag::Comment,
        Tag::Constant,
        Tag::Constant,
        Tag::Function,
        Tag::Type,
    ];
}

/// The highlighted stretches of `text` in order, as byte ranges that never overlap, each with
/// its tag; text between them is plain. Empty for a language it cannot highlight.
pub fn highlight(path: &str, text: &str) -> Vec<(Range<usize>, Tag)> {
    let Some(config) = language_of(path).and_then(configuration) else {
        return Vec::new();
    };
    let mut highlighter = Highlighter::new();
    let Ok(events) = highlighter.highlight(config, text.as_bytes(), None, None, |_| None) else {
        return Vec::new();
    };
    let mut spans: Vec<(Range<usize>, Tag)> = Vec::new();
    let mut open: Vec<Option<Tag>> = Vec::new();
    for event in events {
        match event {
            Ok(HighlightEvent::HighlightStart(h)) => open.push(Tag::ALL.get(h.0).copied()),
            Ok(HighlightEvent::HighlightEnd) => {
                open.pop();
            }
            Ok(HighlightEvent::Source { start, end }) => {
                // The innermost highlight names the text (a keyword inside a string is a string
                // only when the query says so).
                let Some(tag) = open.iter().rev().find_map(|t| *t) else {
                    continue;
                };
                match spans.last_mut() {
                    Some((last, t)) if *t == tag && last.end == start => last.end = end,
                    _ => spans.push((start..end, tag)),
                }
            }
            Err(_) => return Vec::new(),
        }
    }
    spans
}

/// The highlight configuration of `language`, built once; None when it has no query or the
/// query does not compile against its grammar.
fn configuration(language: Language) -> Option<&'static HighlightConfiguration> {
    static CONFIGS: [OnceLock<Option<HighlightConfiguration>>; 10] =
        [const { OnceLock::new() }; 10];
    let slot = CONFIGS.get(language as usize)?;
    slot.get_or_init(|| {
        let query = match language {
            Language::Rust => tree_sitter_rust::HIGHLIGHTS_QUERY.to_owned(),
            Language::Python => tree_sitter_python::HIGHLIGHTS_QUERY.to_owned(),
            Language::JavaScript => tree_sitter_javascript::HIGHLIGHT_QUERY.to_owned(),
            // TypeScript's query only adds to JavaScript's.
            Language::TypeScript | Language::Tsx => format!(
                "{}\n{}",
                tree_sitter_typescript::HIGHLIGHTS_QUERY,
                tree_sitter_javascript::HIGHLIGHT_QUERY
            ),
            Language::Go => tree_sitter_go::HIGHLIGHTS_QUERY.to_owned(),
            Language::Java => tree_sitter_java::HIGHLIGHTS_QUERY.to_owned(),
            Language::C => tree_sitter_c::HIGHLIGHT_QUERY.to_owned(),
            // C++'s query only adds to C's.
            Language::Cpp => format!(
                "{}\n{}",
                tree_sitter_cpp::HIGHLIGHT_QUERY,
                tree_sitter_c::HIGHLIGHT_QUERY
            ),
            Language::Markdown => return None,
        };
        let mut config =
            HighlightConfiguration::new(grammar(language), format!("{language:?}"), &query, "", "")
                .ok()?;
        config.configure(&Tag::NAMES);
        Some(config)
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged<'a>(path: &str, text: &'a str) -> Vec<(&'a str, Tag)> {
        highlight(path, text)
            .into_iter()
            .map(|(range, tag)| (&text[range], tag))
            .collect()
    }

    #[test]
    fn every_language_with_a_query_highlights_its_keywords_strings_and_comments() {
        let samples = [
            ("a.rs", "fn main() { let s = \"x\"; } // note", "fn"),
            ("a.py", "def f():\n    return \"x\"  # note\n", "def"),
            ("a.js", "function f() { return \"x\"; } // note", "function"),
            (
                "a.ts",
                "function f(): string { return \"x\"; } // note",
                "function",
            ),
            (
                "a.tsx",
                "function f() { return \"x\"; } // note",
                "function",
            ),
            ("a.go", "func f() string { return \"x\" } // note", "func"),
            (
                "a.java",
                "class A { String f() { return \"x\"; } } // note",
                "class",
            ),
            ("a.c", "int f(void) { return \"x\"[0]; } // note", "return"),
            (
                "a.cpp",
                "class A { int f() { return \"x\"[0]; } }; // note",
                "class",
            ),
        ];
        for (path, text, keyword) in samples {
            let tags = tagged(path, text);
            assert!(tags.contains(&(keyword, Tag::Keyword)), "{path}: {tags:?}");
            assert!(tags.contains(&("\"x\"", Tag::String)), "{path}: {tags:?}");
            assert!(
                tags.iter()
                    .any(|(t, tag)| *tag == Tag::Comment && t.contains("note")),
                "{path}: {tags:?}"
            );
        }
    }

    #[test]
    fn spans_are_ordered_disjoint_and_inside_the_text() {
        let text = "/* a\n block */\nfn f<T: Clone>(x: T) -> Option<T> { Some(x.clone()) }\n";
        let spans = highlight("a.rs", text);
        assert!(spans.iter().any(|(_, t)| *t == Tag::Type), "{spans:?}");
        assert!(spans.iter().any(|(_, t)| *t == Tag::Function), "{spans:?}");
        assert_eq!(&text[spans[0].0.clone()], "/* a\n block */");
        for pair in spans.windows(2) {
            assert!(pair[0].0.end <= pair[1].0.start, "{spans:?}");
        }
        assert!(
            spans
                .iter()
                .all(|(r, _)| r.start < r.end && r.end <= text.len())
        );
    }

    #[test]
    fn other_languages_and_broken_text_have_no_highlights_or_plain_ones() {
        assert!(highlight("notes.md", "# Title\n").is_empty());
        assert!(highlight("config.toml", "a = \"b\"").is_empty());
        assert!(highlight("Makefile", "all:\n\techo").is_empty());
        // Text that does not parse is still highlighted where it can be, never refused.
        let broken = "fn ((( \"unterminated";
        for (range, _) in highlight("a.rs", broken) {
            assert!(range.end <= broken.len());
        }
    }
}
