//! The lexer: source text to tokens with spans, indentation turned into `Indent`/`Dedent`.
//!
//! Blocks are indented with spaces, as in Python: a line indented deeper than the one before
//! opens a block, a line indented less closes blocks until the indentation matches an open one.
//! Blank lines and lines holding only a `#` comment are ignored, and so are line breaks inside
//! parentheses. A JSON value (`{…}` or `[…]`) is read whole and parsed with `serde_json`.

use crate::diag::{Diagnostic, Span};

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TokenKind {
    Name(String),
    Str(String),
    Int(u64),
    Json(serde_json::Value),
    LParen,
    RParen,
    Comma,
    Colon,
    Eq,
    PlusEq,
    DotDot,
    Newline,
    Indent,
    Dedent,
    Eof,
}

impl TokenKind {
    /// How an error message names the token.
    pub(crate) fn describe(&self) -> String {
        match self {
            TokenKind::Name(n) => format!("`{n}`"),
            TokenKind::Str(_) => "a string".into(),
            TokenKind::Int(n) => format!("the number {n}"),
            TokenKind::Json(_) => "a JSON value".into(),
            TokenKind::LParen => "`(`".into(),
            TokenKind::RParen => "`)`".into(),
            TokenKind::Comma => "`,`".into(),
            TokenKind::Colon => "`:`".into(),
            TokenKind::Eq => "`=`".into(),
            TokenKind::PlusEq => "`+=`".into(),
            TokenKind::DotDot => "`..`".into(),
            TokenKind::Newline => "the end of the line".into(),
            TokenKind::Indent => "an indented line".into(),
            TokenKind::Dedent => "the end of the block".into(),
            TokenKind::Eof => "the end of the plan".into(),
        }
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// Splits `source` into tokens, ending with `Eof`.
pub(crate) fn lex(source: &str) -> Result<Vec<Token>, Diagnostic> {
    Lexer {
        source,
        bytes: source.as_bytes(),
        at: 0,
        tokens: Vec::new(),
        indents: vec![0],
        parens: Vec::new(),
        line_start: true,
    }
    .run()
}

struct Lexer<'a> {
    source: &'a str,
    bytes: &'a [u8],
    at: usize,
    tokens: Vec<Token>,
    indents: Vec<usize>,
    /// Offsets of the open parentheses.
    parens: Vec<usize>,
    line_start: bool,
}

impl Lexer<'_> {
    fn run(mut self) -> Result<Vec<Token>, Diagnostic> {
        loop {
            if self.line_start && self.parens.is_empty() && !self.indentation()? {
                break;
            }
            let Some(&b) = self.bytes.get(self.at) else {
                break;
            };
            let start = self.at;
            match b {
                b' ' | b'\t' | b'\r' => self.at += 1,
                b'\n' => {
                    if self.parens.is_empty() {
                        self.push(TokenKind::Newline, start, start + 1);
                        self.line_start = true;
                    }
                    self.at += 1;
                }
                b'#' => self.skip_comment(),
                b'(' => {
                    self.parens.push(start);
                    self.single(TokenKind::LParen);
                }
                b')' => {
                    self.parens.pop();
                    self.single(TokenKind::RParen);
                }
                b',' => self.single(TokenKind::Comma),
                b':' => self.single(TokenKind::Colon),
                b'=' => self.single(TokenKind::Eq),
                b'+' if self.bytes.get(start + 1) == Some(&b'=') => {
                    self.at += 2;
                    self.push(TokenKind::PlusEq, start, start + 2);
                }
                b'+' => {
                    return Err(
                        Diagnostic::error("unexpected `+`", Span::new(start, start + 1))
                            .with_help("append members to a ctx with `NAME += a, b`"),
                    );
                }
                b'.' if self.bytes.get(start + 1) == Some(&b'.') => {
                    self.at += 2;
                    self.push(TokenKind::DotDot, start, start + 2);
                }
                b'"' => self.string()?,
                b'{' | b'[' => self.json()?,
                b'0'..=b'9' => self.number()?,
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => self.name(),
                _ => {
                    let c = self.source[start..].chars().next().unwrap_or('\u{fffd}');
                    return Err(Diagnostic::error(
                        format!("unexpected character `{c}`"),
                        Span::new(start, start + c.len_utf8()),
                    ));
                }
            }
        }
        if let Some(&open) = self.parens.last() {
            return Err(Diagnostic::error("unclosed `(`", Span::new(open, open + 1))
                .with_label("this parenthesis is never closed"));
        }
        let end = self.source.len();
        if self
            .tokens
            .last()
            .is_some_and(|t| t.kind != TokenKind::Newline)
        {
            self.push(TokenKind::Newline, end, end);
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(TokenKind::Dedent, end, end);
        }
        self.push(TokenKind::Eof, end, end);
        Ok(self.tokens)
    }

    fn push(&mut self, kind: TokenKind, start: usize, end: usize) {
        self.tokens.push(Token {
            kind,
            span: Span::new(start, end),
        });
    }

    fn single(&mut self, kind: TokenKind) {
        let start = self.at;
        self.at += 1;
        self.push(kind, start, start + 1);
    }

    fn skip_comment(&mut self) {
        while self.bytes.get(self.at).is_some_and(|&b| b != b'\n') {
            self.at += 1;
        }
    }

    /// Measures the indentation of the next line that holds a token and emits `Indent` or
    /// `Dedent`s. Returns false at the end of the source.
    fn indentation(&mut self) -> Result<bool, Diagnostic> {
        loop {
            let start = self.at;
            let mut width = 0;
            while let Some(&b) = self.bytes.get(self.at) {
                match b {
                    b' ' => width += 1,
                    b'\t' => {
                        return Err(Diagnostic::error(
                            "a tab in indentation",
                            Span::new(self.at, self.at + 1),
                        )
                        .with_help("indent blocks with spaces"));
                    }
                    _ => break,
                }
                self.at += 1;
            }
            match self.bytes.get(self.at) {
                None => return Ok(false),
                Some(b'\n') => self.at += 1,
                Some(b'\r') if self.bytes.get(self.at + 1) == Some(&b'\n') => self.at += 2,
                Some(b'#') => self.skip_comment(),
                Some(_) => {
                    self.line_start = false;
                    let top = *self.indents.last().expect("the indent stack keeps its 0");
                    if width > top {
                        self.indents.push(width);
                        self.push(TokenKind::Indent, start, self.at);
                    } else {
                        while width < *self.indents.last().expect("the indent stack keeps its 0") {
                            self.indents.pop();
                            self.push(TokenKind::Dedent, self.at, self.at);
                        }
                        if width != *self.indents.last().expect("the indent stack keeps its 0") {
                            return Err(Diagnostic::error(
                                "this line's indentation matches no enclosing block",
                                Span::new(start, self.at),
                            )
                            .with_help(
                                "indent it exactly like the lines of the block it belongs to",
                            ));
                        }
                    }
                    return Ok(true);
                }
            }
        }
    }

    fn name(&mut self) {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            self.at += 1;
        }
        let name = self.source[start..self.at].to_owned();
        self.push(TokenKind::Name(name), start, self.at);
    }

    fn number(&mut self) -> Result<(), Diagnostic> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|&b| b.is_ascii_digit() || b == b'_')
        {
            self.at += 1;
        }
        if self
            .bytes
            .get(self.at)
            .is_some_and(|&b| b.is_ascii_alphabetic())
        {
            self.name();
            let span = Span::new(start, self.at);
            return Err(Diagnostic::error(
                format!("invalid number `{}`", &self.source[start..self.at]),
                span,
            )
            .with_help("names start with a letter or `_`"));
        }
        let digits: String = self.source[start..self.at]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let span = Span::new(start, self.at);
        let value = digits.parse::<u64>().map_err(|_| {
            Diagnostic::error(
                format!("the number {} is too large", &self.source[start..self.at]),
                span,
            )
        })?;
        self.push(TokenKind::Int(value), start, self.at);
        Ok(())
    }

    fn string(&mut self) -> Result<(), Diagnostic> {
        let start = self.at;
        let mut value = String::new();
        let mut chars = self.source[start + 1..].char_indices();
        let unterminated = |end: usize| {
            Diagnostic::error("unterminated string", Span::new(start, end))
                .with_label("this string has no closing `\"`")
        };
        loop {
            let Some((i, c)) = chars.next() else {
                return Err(unterminated(self.source.len()));
            };
            let here = start + 1 + i;
            match c {
                '"' => {
                    self.at = here + 1;
                    self.push(TokenKind::Str(value), start, self.at);
                    return Ok(());
                }
                '\n' => return Err(unterminated(here)),
                '\\' => {
                    let Some((_, e)) = chars.next() else {
                        return Err(unterminated(self.source.len()));
                    };
                    match e {
                        '"' => value.push('"'),
                        '\\' => value.push('\\'),
                        'n' => value.push('\n'),
                        't' => value.push('\t'),
                        'r' => value.push('\r'),
                        '0' => value.push('\0'),
                        '\n' => return Err(unterminated(here)),
                        other => {
                            return Err(Diagnostic::error(
                                format!("unknown escape `\\{other}` in a string"),
                                Span::new(here, here + 1 + other.len_utf8()),
                            )
                            .with_help(r#"escapes are \", \\, \n, \t, \r and \0"#));
                        }
                    }
                }
                c => value.push(c),
            }
        }
    }

    /// A JSON object or array, read up to its matching bracket and parsed.
    fn json(&mut self) -> Result<(), Diagnostic> {
        let start = self.at;
        let mut closers = Vec::new();
        let mut in_string = false;
        let mut escaped = false;
        let mut end = None;
        for (i, &b) in self.bytes[start..].iter().enumerate() {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' => closers.push(b'}'),
                b'[' => closers.push(b']'),
                b'}' | b']' => {
                    if closers.pop() != Some(b) {
                        return Err(Diagnostic::error(
                            format!("unexpected `{}` in a JSON value", b as char),
                            Span::new(start + i, start + i + 1),
                        ));
                    }
                    if closers.is_empty() {
                        end = Some(start + i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            let open = self.bytes[start] as char;
            return Err(Diagnostic::error(
                format!("unclosed `{open}`"),
                Span::new(start, start + 1),
            )
            .with_label("this JSON value is never closed"));
        };
        let raw = &self.source[start..end];
        let value: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
            let offset = offset_of(raw, e.line(), e.column());
            let message = e.to_string();
            let message = message
                .rfind(" at line ")
                .map_or(message.as_str(), |i| &message[..i]);
            Diagnostic::error(
                format!("invalid JSON: {message}"),
                Span::new(start + offset, start + offset + 1),
            )
        })?;
        self.at = end;
        self.push(TokenKind::Json(value), start, end);
        Ok(())
    }
}

/// The byte offset in `text` of serde_json's 1-based line and column (column 0 means the
/// position before the line's first character).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = &text[line_start.min(text.len())..];
    let col: usize = rest
        .chars()
        .take(column.saturating_sub(1))
        .map(char::len_utf8)
        .sum();
    (line_start + col).min(text.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(source: &str) -> Vec<String> {
        lex(source)
            .expect("lexes")
            .into_iter()
            .map(|t| match t.kind {
                TokenKind::Name(n) => n,
                TokenKind::Str(s) => format!("{s:?}"),
                TokenKind::Int(n) => n.to_string(),
                TokenKind::Json(v) => v.to_string(),
                TokenKind::LParen => "(".into(),
                TokenKind::RParen => ")".into(),
                TokenKind::Comma => ",".into(),
                TokenKind::Colon => ":".into(),
                TokenKind::Eq => "=".into(),
                TokenKind::PlusEq => "+=".into(),
                TokenKind::DotDot => "..".into(),
                TokenKind::Newline => "NL".into(),
                TokenKind::Indent => "INDENT".into(),
                TokenKind::Dedent => "DEDENT".into(),
                TokenKind::Eof => "EOF".into(),
            })
            .collect()
    }

    #[test]
    fn tokens() {
        let cases: &[(&str, &str)] = &[
            ("x = text(\"a\\\"b\")", r#"x = text ( "a\"b" ) NL EOF"#),
            (
                "flow f\n  # c\n\n  a = read(\"p\", lines: 1..80)\n",
                r#"flow f NL INDENT a = read ( "p" , lines : 1 .. 80 ) NL DEDENT EOF"#,
            ),
            (
                "a = docs(\"s\",\n   filter: {\"k\": [1, \"}\"]})",
                r#"a = docs ( "s" , filter : {"k":[1,"}"]} ) NL EOF"#,
            ),
            (
                "ctx d\n  budget 9_000\nd += a, b",
                "ctx d NL INDENT budget 9000 NL DEDENT d += a , b NL EOF",
            ),
        ];
        for (source, expected) in cases {
            assert_eq!(kinds(source).join(" "), *expected, "{source:?}");
        }
        let err = lex("a\n    b\n  c\n").expect_err("bad dedent");
        assert_eq!(
            err.message,
            "this line's indentation matches no enclosing block"
        );
    }
}
