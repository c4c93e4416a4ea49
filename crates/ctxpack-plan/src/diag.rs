//! Spans and diagnostics, rendered the way a compiler shows them.
//!
//! A [`Span`] is a byte range of the plan's source. A [`Diagnostic`] carries no source text:
//! [`Diagnostic::render`] is given the file name and the source, and prints
//!
//! ```text
//! error: undefined name `spce`
//!  --> debug.ctx:9:13
//!   |
//! 9 |     exclude spce
//!   |             ^^^^ not bound anywhere in this plan
//!   = help: did you mean `spec`?
//! ```

use std::fmt::{self, Write};

/// A byte range `start..end` of a plan's source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The 1-based line and column (in characters) where the span starts.
    pub fn line_col(self, source: &str) -> (usize, usize) {
        let start = floor_boundary(source, self.start);
        let before = &source[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = source[line_start..start].chars().count() + 1;
        (line, col)
    }
}

fn floor_boundary(source: &str, mut at: usize) -> usize {
    at = at.min(source.len());
    while !source.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The plan cannot run.
    Error,
    /// The plan runs, but probably not as meant.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A message about a place in the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, as one sentence.
    pub message: String,
    /// Where.
    pub span: Span,
    /// A short remark printed beside the caret.
    pub label: Option<String>,
    /// Other places worth showing (for example where a name was first bound).
    pub related: Vec<(Span, String)>,
    /// `help:` lines: what to do about it.
    pub help: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            related: Vec::new(),
            help: Vec::new(),
        }
    }

    /// A warning at `span`.
    pub fn warning(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message, span)
        }
    }

    /// Sets the remark beside the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }

    /// Adds a related place.
    pub fn with_related(mut self, span: Span, note: impl Into<String>) -> Diagnostic {
        self.related.push((span, note.into()));
        self
    }

    /// Adds a `help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help.push(help.into());
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders the diagnostic against the plan's source, like a compiler: the message, the
    /// position as `file:line:col`, the source line and a caret under the span.
    pub fn render(&self, file: &str, source: &str) -> String {
        self.render_lines(file, &Lines::new(source))
    }

    fn render_lines(&self, file: &str, lines: &Lines<'_>) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}: {}", self.severity.name(), self.message);
        let gutter = snippet(&mut out, file, lines, self.span, self.label.as_deref());
        for help in &self.help {
            let _ = writeln!(out, "{} = help: {help}", " ".repeat(gutter));
        }
        for (span, note) in &self.related {
            let _ = writeln!(out, "note: {note}");
            snippet(&mut out, file, lines, *span, None);
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Renders several diagnostics, one after the other, separated by blank lines.
pub fn render_all(diagnostics: &[Diagnostic], file: &str, source: &str) -> String {
    // The line index is made once: thousands of warnings do not each count the newlines
    // before them.
    let lines = Lines::new(source);
    diagnostics
        .iter()
        .map(|d| d.render_lines(file, &lines))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A source and where each of its lines starts.
struct Lines<'a> {
    source: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(source: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { source, starts }
    }

    /// The 1-based line of byte `at` (a character boundary) and the byte where it starts.
    fn line_of(&self, at: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&start| start <= at);
        (line, self.starts[line - 1])
    }
}

/// Writes the position, the source line and the caret; returns the gutter width.
fn snippet(
    out: &mut String,
    file: &str,
    lines: &Lines<'_>,
    span: Span,
    label: Option<&str>,
) -> usize {
    let source = lines.source;
    let start = floor_boundary(source, span.start);
    let (line, line_start) = lines.line_of(start);
    let col = source[line_start..start].chars().count() + 1;
    let line_end = source[line_start..]
        .find('\n')
        .map_or(source.len(), |i| line_start + i);
    let text = source[line_start..line_end].trim_end_matches('\r');
    let end = floor_boundary(source, span.end.max(start)).min(line_start + text.len());
    let width = source[start..end.max(start)].chars().count().max(1);
    let gutter = line.to_string().len();
    let pad = " ".repeat(gutter);
    let _ = writeln!(out, "{pad}--> {file}:{line}:{col}");
    let _ = writeln!(out, "{pad} |");
    let _ = writeln!(out, "{line} | {text}");
    // Keep tabs as tabs so the caret lines up with what a terminal shows.
    let indent: String = source[line_start..start]
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let _ = write!(out, "{pad} | {indent}{}", "^".repeat(width));
    if let Some(label) = label {
        let _ = write!(out, " {label}");
    }
    out.push('\n');
    gutter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column() {
        let source = "ab\ncdé f\n";
        let cases = [
            (0, (1, 1)),
            (3, (2, 1)),
            (7, (2, 4)),
            (8, (2, 5)),
            (99, (3, 1)),
        ];
        for (offset, expected) in cases {
            assert_eq!(
                Span::new(offset, offset).line_col(source),
                expected,
                "{offset}"
            );
        }
    }

    #[test]
    fn the_line_index_agrees_with_line_col() {
        let source = "ab\ncdé f\n\nlast";
        let lines = Lines::new(source);
        for offset in (0..=source.len()).filter(|&i| source.is_char_boundary(i)) {
            let (line, start) = lines.line_of(offset);
            let col = source[start..offset].chars().count() + 1;
            assert_eq!(
                (line, col),
                Span::new(offset, offset).line_col(source),
                "{offset}"
            );
        }
    }

    #[test]
    fn renders_a_caret_under_the_span() {
        let source = "flow f\n  x = red(\"a\")\n";
        let d = Diagnostic::error("unknown source `red`", Span::new(13, 16))
            .with_label("not a source")
            .with_help("sources are read, query, docs, artifact, text and run");
        assert_eq!(
            d.render("p.ctx", source),
            "error: unknown source `red`\n --> p.ctx:2:7\n  |\n2 |   x = red(\"a\")\n  |       ^^^ not a source\n  = help: sources are read, query, docs, artifact, text and run\n"
        );
    }
}
