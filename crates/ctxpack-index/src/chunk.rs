//! Splitting one file's text into chunks: line ranges that retrieval indexes and packs cite.
//!
//! This module is pure: it sees a path (only for its extension) and the text, and returns
//! chunks. It does no IO and never panics, whatever the input.
//!
//! # Approach
//!
//! For a language with a tree-sitter grammar ([`language_of`]), the file is parsed and the
//! root's named children become *pieces*: line ranges that never share a line (a node that
//! starts on a line the previous piece already owns is folded into it, or starts on the next
//! line) and that together cover the range exactly. Leading comments, doc comments,
//! attributes and decorators are attached to the item that follows them; the lines between
//! items (blank lines, closing braces) to the item before them. Pieces are grouped greedily,
//! in order, while a group stays within `max_lines`.
//!
//! A piece longer than `max_lines` is split the same way, one level down, into its own named
//! children: an `impl`, trait, module or class body into its items, a function body into its
//! statements, a Markdown section into its blocks and subsections. The lines before the first
//! child (`impl Foo {`, a signature, a heading) stay with the first part: room is kept for them
//! while it is short next to `max_lines`. A node with nothing to split on (a huge string or
//! comment), or nesting deeper than a fixed limit, becomes line windows of `window` lines
//! overlapping by `overlap`. Finally, a chunk shorter than `min_lines` is merged into a
//! neighbour when the result still fits in `max_lines`.
//!
//! A file without a language gets line windows. tree-sitter always returns a tree, with error
//! nodes for what it could not parse, and that tree is used as it is; if anything goes wrong
//! anyway (no tree, a grammar that cannot be loaded, chunks that would not cover the file),
//! the file falls back to line windows, so no line is ever lost.
//!
//! # Symbols
//!
//! A chunk's symbol is the name of the definition it is about: the first *strong* definition
//! in it (function, method, type, class, interface, trait, `impl`, module, Markdown heading);
//! else, for a part of a larger definition, that definition's name; else the first *weak*
//! one (constant, static, variable, field, prototype). Nested definitions are qualified with
//! the language's own separator: `Foo::bar` in Rust, C and C++, `Foo.bar` in Python,
//! JavaScript, TypeScript, Java and Go. `impl Trait for Foo` is named `Trait for Foo` and its
//! methods `Foo::method`; a Go method is `Receiver.Method`; a C/C++ function is its
//! declarator's identifier (`Foo::bar` when defined out of line). Markdown headings are never
//! qualified.
//!
//! For example, `chunk("src/lib.rs", "use std::fmt;\n\n/// Greets.\nfn hello() {}\n", &options)`
//! with the default options returns one chunk, lines 1–4, with the symbol `hello`.

use tree_sitter::{Node, Parser};

/// Bumped whenever chunk boundaries, symbols or what a chunk records could change for the same
/// input. 2: chunks record their enclosing line, so file versions chunked before are chunked
/// again when a new commit lists them (snapshots already written keep theirs).
pub const CHUNKER_VERSION: u32 = 2;

/// Nesting deeper than this is cut into line windows rather than followed, so that a
/// pathological file (thousands of nested brackets) cannot exhaust the stack.
const MAX_DEPTH: usize = 48;

/// Symbols longer than this (in characters) are cut: a name comes from source text, and an
/// error-recovered parse can make a "name" out of a large region.
const MAX_SYMBOL_CHARS: usize = 160;

/// One chunk of a file: the source lines `start_line..=end_line` (1-based, inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First line of the chunk, 1-based.
    pub start_line: u32,
    /// Last line of the chunk, 1-based and inclusive.
    pub end_line: u32,
    /// The definition the chunk is about, when known (see the module documentation).
    pub symbol: Option<String>,
    /// Exactly the source lines `start_line..=end_line`, with their original line endings.
    pub text: String,
    /// The line that opens the innermost definition the chunk starts inside of (see
    /// [`enclosing_lines`]), found from the same parse as the chunk: `(1-based number, text)`.
    pub enclosing: Option<(u32, String)>,
}

/// How large chunks are. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkOptions {
    /// Syntactic groups are cut so that they stay within this many lines (default 60).
    pub max_lines: u32,
    /// A syntactic chunk shorter than this is merged into a neighbour when the result stays
    /// within `max_lines` (default 8).
    pub min_lines: u32,
    /// Length of a line window (default 40).
    pub window: u32,
    /// Lines shared by consecutive line windows (default 8).
    pub overlap: u32,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            max_lines: 60,
            min_lines: 8,
            window: 40,
            overlap: 8,
        }
    }
}

/// A language the chunker parses; everything else is cut into line windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// `.rs`
    Rust,
    /// `.py`, `.pyi`, `.pyw`
    Python,
    /// `.js`, `.mjs`, `.cjs`, `.jsx`
    JavaScript,
    /// `.ts`, `.mts`, `.cts`
    TypeScript,
    /// `.tsx`
    Tsx,
    /// `.go`
    Go,
    /// `.java`
    Java,
    /// `.c`, `.h`
    C,
    /// `.cc`, `.cpp`, `.cxx`, `.c++`, `.hh`, `.hpp`, `.hxx`, `.h++`, `.ipp`, `.tpp`, `.inl`
    Cpp,
    /// `.md`, `.markdown`
    Markdown,
}

/// Language detected from the path's extension (None → line windows).
///
/// The extension is compared case-insensitively; a dotfile such as `.rs` has no extension.
pub fn language_of(path: &str) -> Option<Language> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let (stem, extension) = name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    let language = match extension.to_ascii_lowercase().as_str() {
        "rs" => Language::Rust,
        "py" | "pyi" | "pyw" => Language::Python,
        "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
        "ts" | "mts" | "cts" => Language::TypeScript,
        "tsx" => Language::Tsx,
        "go" => Language::Go,
        "java" => Language::Java,
        "c" | "h" => Language::C,
        "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp" | "inl" => {
            Language::Cpp
        }
        "md" | "markdown" => Language::Markdown,
        _ => return None,
    };
    Some(language)
}

/// Cuts `text` into chunks that cover every line in order (see the module documentation).
///
/// An empty text has no chunks. Syntactic chunks never overlap; line windows overlap by
/// `options.overlap` lines.
pub fn chunk(path: &str, text: &str, options: &ChunkOptions) -> Vec<Chunk> {
    if text.is_empty() {
        return Vec::new();
    }
    let lines = Lines::new(text);
    let limits = Limits::new(options);
    let last = lines.count() - 1;
    let parsed = language_of(path).and_then(|language| parse(language, text, &lines, limits));
    let spans = parsed
        .as_ref()
        .map(|(cx, tree)| syntactic_spans(cx, tree))
        .filter(|spans| covers(spans, last))
        .unwrap_or_else(|| windows(0, last, None, limits));
    spans
        .into_iter()
        .map(|span| Chunk {
            start_line: one_based(span.start),
            end_line: one_based(span.end),
            symbol: span.sym.map(|sym| sym.name),
            text: lines.slice(span.start, span.end).to_owned(),
            enclosing: parsed
                .as_ref()
                .filter(|(cx, _)| cx.language != Language::Markdown)
                .and_then(|(cx, tree)| cx.enclosing(tree, span.start)),
        })
        .collect()
}

fn one_based(line: usize) -> u32 {
    u32::try_from(line + 1).unwrap_or(u32::MAX)
}

/// The options made safe to compute with: every length at least one line, the overlap
/// smaller than the window (so windows always advance) and `min <= max`.
#[derive(Clone, Copy, Debug)]
struct Limits {
    max: usize,
    min: usize,
    window: usize,
    step: usize,
}

impl Limits {
    fn new(options: &ChunkOptions) -> Self {
        let as_usize = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        let max = as_usize(options.max_lines).max(1);
        let window = as_usize(options.window).max(1);
        let overlap = as_usize(options.overlap).min(window - 1);
        Self {
            max,
            min: as_usize(options.min_lines).min(max),
            window,
            step: window - overlap,
        }
    }
}

/// Where each line starts. Lines end at `\n` (kept in the line); a final `\n` does not start
/// another line, and a lone `\r` is an ordinary character — the same lines as `str::lines`.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(i, byte)| byte == b'\n' && i + 1 < text.len())
                .map(|(i, _)| i + 1),
        );
        Self { text, starts }
    }

    fn count(&self) -> usize {
        self.starts.len()
    }

    /// The 0-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// The 0-based lines a node spans, or None for a zero-width (missing) node.
    fn of_node(&self, node: Node<'_>) -> Option<(usize, usize)> {
        let (start, end) = (node.start_byte(), node.end_byte());
        (end > start).then(|| (self.line_of(start), self.line_of(end - 1)))
    }

    /// Lines `start..=end` (0-based) with their line endings.
    fn slice(&self, start: usize, end: usize) -> &'a str {
        let from = self.starts.get(start).copied().unwrap_or(self.text.len());
        let to = self.starts.get(end + 1).copied().unwrap_or(self.text.len());
        // Line starts follow a `\n`, so they are always character boundaries.
        self.text.get(from..to).unwrap_or_default()
    }
}

/// How strongly a name says what a chunk is about: a function or type outranks a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Weak,
    Strong,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Sym {
    name: String,
    rank: Rank,
}

/// The first of the highest rank: `a` comes first in the file.
fn better(a: Option<Sym>, b: Option<Sym>) -> Option<Sym> {
    match (a, b) {
        (Some(a), Some(b)) if b.rank > a.rank => Some(b),
        (a, b) => a.or(b),
    }
}

/// A chunk under construction, in 0-based lines.
#[derive(Clone, Debug)]
struct Span {
    start: usize,
    end: usize,
    sym: Option<Sym>,
    /// Part of a run of overlapping line windows: never merged with a neighbour.
    window: bool,
}

impl Span {
    fn len(&self) -> usize {
        self.end - self.start + 1
    }
}

/// Windows of `limits.window` lines over `start..=end`, each starting `limits.step` lines
/// after the previous one; the last one ends exactly at `end`.
fn windows(start: usize, end: usize, sym: Option<Sym>, limits: Limits) -> Vec<Span> {
    let mut spans = Vec::with_capacity((end - start) / limits.step + 1);
    let mut from = start;
    loop {
        let to = end.min(from.saturating_add(limits.window - 1));
        spans.push(Span {
            start: from,
            end: to,
            sym: sym.clone(),
            window: true,
        });
        if to >= end {
            break;
        }
        from += limits.step;
    }
    if let [only] = spans.as_mut_slice() {
        only.window = false;
    }
    spans
}

/// Whether `spans` cover lines `0..=last` in order: each starts and ends after the previous
/// one and leaves no line between them.
fn covers(spans: &[Span], last: usize) -> bool {
    let (Some(first), Some(final_span)) = (spans.first(), spans.last()) else {
        return false;
    };
    first.start == 0
        && final_span.end == last
        && spans.iter().all(|span| span.start <= span.end)
        && spans.windows(2).all(|pair| {
            let (a, b) = (&pair[0], &pair[1]);
            b.start > a.start && b.end > a.end && b.start <= a.end + 1
        })
}

fn grammar(language: Language) -> tree_sitter::Language {
    match language {
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Java => tree_sitter_java::LANGUAGE.into(),
        Language::C => tree_sitter_c::LANGUAGE.into(),
        Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        Language::Markdown => tree_sitter_md::LANGUAGE.into(),
    }
}

/// A non-empty text parsed as `language`, or None when it cannot be parsed at all.
fn parse<'a>(
    language: Language,
    text: &'a str,
    lines: &'a Lines<'a>,
    limits: Limits,
) -> Option<(Cx<'a>, tree_sitter::Tree)> {
    let mut parser = Parser::new();
    parser.set_language(&grammar(language)).ok()?;
    let tree = parser.parse(text, None)?;
    let cx = Cx {
        language,
        src: text,
        lines,
        limits,
    };
    Some((cx, tree))
}

/// The syntactic spans of a parsed text.
fn syntactic_spans(cx: &Cx<'_>, tree: &tree_sitter::Tree) -> Vec<Span> {
    let names = Names {
        scope: None,
        fallback: None,
    };
    let spans = cx.split(tree.root_node(), 0, cx.lines.count() - 1, names, 0, 0);
    merge_small(spans, cx.limits)
}

/// Merges each non-window span shorter than `limits.min` into the span before it, or else the
/// one after it, when the result stays within `limits.max`.
fn merge_small(spans: Vec<Span>, limits: Limits) -> Vec<Span> {
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    let mut carry: Option<Span> = None;
    for mut span in spans {
        if let Some(small) = carry.take() {
            if !span.window && span.end - small.start < limits.max {
                span.start = small.start;
                span.sym = better(small.sym, span.sym.take());
            } else {
                merged.push(small);
            }
        }
        if span.window || span.len() >= limits.min {
            merged.push(span);
            continue;
        }
        match merged.last_mut() {
            Some(previous) if !previous.window && span.end - previous.start < limits.max => {
                previous.end = span.end;
                previous.sym = better(previous.sym.take(), span.sym);
            }
            _ => carry = Some(span),
        }
    }
    merged.extend(carry);
    merged
}

/// A run of lines at one level of the tree: a named child (with the comments attached to it
/// and anything on its lines), or a gap between children.
struct Piece<'t> {
    start: usize,
    end: usize,
    /// The node to split when the piece is too long; None for a gap.
    main: Option<Node<'t>>,
    /// A comment, attribute or decorator, waiting for the item it documents.
    trivia: bool,
    /// The best name among the nodes of the piece.
    sym: Option<Sym>,
    /// The definition `main` itself makes, which names its parts when it is split.
    own: Option<Sym>,
    /// The scope `main`'s nested definitions are qualified with.
    scope: Option<String>,
}

impl Piece<'_> {
    fn gap(start: usize, end: usize) -> Self {
        Self {
            start,
            end,
            main: None,
            trivia: false,
            sym: None,
            own: None,
            scope: None,
        }
    }
}

/// What a node defines: its name and how its nested definitions are qualified.
struct Def {
    name: String,
    rank: Rank,
    scope: Scope,
}

enum Scope {
    /// Nested definitions are qualified with the definition's own name.
    Own,
    /// Nested definitions are qualified with another name (`impl Trait for Foo` → `Foo`).
    Named(String),
    /// A wrapper (`export`, a decorator list, `template <…>`): the definition inside qualifies.
    Transparent,
}

/// How the spans of a node being split are named.
#[derive(Clone, Copy)]
struct Names<'s> {
    /// Qualifies the definitions nested in the node.
    scope: Option<&'s str>,
    /// Names a span that contains no definition: the definition being split, if any.
    fallback: Option<&'s Sym>,
}

struct Cx<'a> {
    language: Language,
    src: &'a str,
    lines: &'a Lines<'a>,
    limits: Limits,
}

impl<'a> Cx<'a> {
    /// Spans covering exactly `start..=end`, cut on the boundaries of `node`'s children.
    fn split(
        &self,
        node: Node<'_>,
        start: usize,
        end: usize,
        names: Names<'_>,
        depth: usize,
        lead: usize,
    ) -> Vec<Span> {
        let Names { scope, fallback } = names;
        if depth >= MAX_DEPTH {
            return windows(start, end, fallback.cloned(), self.limits);
        }
        let pieces = self.pieces(node, start, end, scope);
        if pieces.iter().all(|piece| piece.main.is_none()) {
            return windows(start, end, fallback.cloned(), self.limits);
        }
        self.group(pieces, fallback, depth, lead)
    }

    /// Packs pieces greedily into spans of at most `max` lines, splitting the pieces that are
    /// longer than that one level down.
    ///
    /// `lead` lines are waiting to be merged into the first span (the header of the node being
    /// split), so the first span is kept short enough to take them.
    fn group(
        &self,
        pieces: Vec<Piece<'_>>,
        fallback: Option<&Sym>,
        depth: usize,
        lead: usize,
    ) -> Vec<Span> {
        let max = self.limits.max;
        // A weak name (a constant, a local variable) names a span only where it is not part of
        // a larger definition: inside `fn foo`, a chunk of statements is about `foo`.
        let finish = |mut span: Span| {
            let strong = span
                .sym
                .as_ref()
                .is_some_and(|sym| sym.rank == Rank::Strong);
            if !strong && fallback.is_some() {
                span.sym = fallback.cloned();
            }
            span
        };
        // Only lines without a definition of their own (a header: `impl Foo {`, a signature,
        // imports, the section's own heading) are merged into the first part of what follows;
        // complete small items before a long one stay a chunk of their own.
        let is_header = |span: &Span| span.sym.is_none() || span.sym.as_ref() == fallback;
        // Headers are kept with what follows only while they are short next to `max`: with
        // deep nesting, reserving room for each level's header would cut the rest into slivers.
        let header_room = max / 4;
        let mut spans: Vec<Span> = Vec::new();
        let mut current: Option<Span> = None;
        for piece in pieces {
            // The lead applies to the first span only.
            let reserved = if spans.is_empty() && lead <= header_room {
                lead
            } else {
                0
            };
            let fits = |group: &Span| piece.end - group.start + reserved < max;
            // A piece is split when it is too long, and also when it would otherwise leave the
            // header of the node being split (`class Foo:`) alone in a chunk of its own.
            let split = piece.end - piece.start >= max
                || (depth > 0
                    && spans.is_empty()
                    && piece.main.is_some()
                    && current.as_ref().is_some_and(|group| {
                        is_header(group) && !fits(group) && group.len() + reserved <= header_room
                    }));
            if !split {
                match &mut current {
                    Some(group) if fits(group) => {
                        group.end = piece.end;
                        group.sym = better(group.sym.take(), piece.sym);
                    }
                    _ => {
                        spans.extend(current.take().map(finish));
                        current = Some(Span {
                            start: piece.start,
                            end: piece.end,
                            sym: piece.sym,
                            window: false,
                        });
                    }
                }
                continue;
            }
            if let Some(group) = current.take_if(|group| !is_header(group)) {
                spans.push(finish(group));
            }
            let reserved = if spans.is_empty() && lead <= header_room {
                lead
            } else {
                0
            };
            let header = current.as_ref().map_or(0, Span::len) + reserved;
            let header = if header <= header_room { header } else { 0 };
            let own = piece.own.as_ref().or(fallback);
            let mut parts = match piece.main {
                Some(node) => {
                    let names = Names {
                        scope: piece.scope.as_deref(),
                        fallback: own,
                    };
                    self.split(node, piece.start, piece.end, names, depth + 1, header)
                }
                None => windows(piece.start, piece.end, own.cloned(), self.limits),
            };
            let only_windows = parts.iter().all(|part| part.window);
            if let Some(group) = current.take() {
                match parts.first_mut() {
                    // The piece had nothing to split on: the header joins its windows.
                    Some(first) if only_windows => {
                        let sym = better(group.sym, first.sym.take());
                        parts = windows(group.start, piece.end, sym, self.limits);
                    }
                    Some(first) if !first.window && first.end - group.start < max => {
                        first.start = group.start;
                        first.sym = better(group.sym, first.sym.take());
                    }
                    _ => spans.push(finish(group)),
                }
            }
            spans.append(&mut parts);
        }
        spans.extend(current.map(finish));
        spans
    }

    /// `node`'s named children as pieces covering exactly `start..=end`, with gaps between
    /// them and leading comments attached to the item that follows.
    fn pieces<'t>(
        &self,
        node: Node<'t>,
        start: usize,
        end: usize,
        scope: Option<&str>,
    ) -> Vec<Piece<'t>> {
        let mut pieces: Vec<Piece<'t>> = Vec::new();
        // The first line no piece owns yet.
        let mut next = start;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            let Some((child_start, child_end)) = self.lines.of_node(child) else {
                continue;
            };
            if child_start > end {
                break;
            }
            let child_end = child_end.min(end);
            let trivia = is_trivia(child.kind());
            if child_end < next {
                // Entirely on lines the previous piece owns (`a(); // note`, `#[attr] fn f()`):
                // fold it in. Before the first piece these lines belong to the parent's header.
                if let Some(previous) = pieces.last_mut()
                    && !trivia
                {
                    let (sym, scope) = self.describe(child, scope);
                    if previous.trivia {
                        previous.main = Some(child);
                        previous.trivia = false;
                        previous.sym = better(sym.clone(), previous.sym.take());
                        previous.own = sym;
                        previous.scope = scope;
                    } else {
                        previous.sym = better(previous.sym.take(), sym);
                    }
                }
                continue;
            }
            let child_start = child_start.max(next);
            if child_start > next {
                pieces.push(Piece::gap(next, child_start - 1));
            }
            let (sym, child_scope) = if trivia {
                (None, scope.map(str::to_owned))
            } else {
                self.describe(child, scope)
            };
            pieces.push(Piece {
                start: child_start,
                end: child_end,
                main: Some(child),
                trivia,
                sym: sym.clone(),
                own: sym,
                scope: child_scope,
            });
            next = child_end + 1;
        }
        if next <= end {
            pieces.push(Piece::gap(next, end));
        }
        attach(pieces)
    }

    /// The qualified name a node defines, and the scope for the definitions nested in it.
    fn describe(&self, node: Node<'_>, scope: Option<&str>) -> (Option<Sym>, Option<String>) {
        let Some(def) = self.def_of(node, 0) else {
            return (None, scope.map(str::to_owned));
        };
        let name = self.qualify(scope, &def.name);
        let nested = match def.scope {
            Scope::Own => Some(name.clone()),
            Scope::Named(inner) => Some(self.qualify(scope, &inner)),
            Scope::Transparent => scope.map(str::to_owned),
        };
        (
            Some(Sym {
                name,
                rank: def.rank,
            }),
            nested,
        )
    }

    fn qualify(&self, scope: Option<&str>, name: &str) -> String {
        let separator = match self.language {
            Language::Markdown => return name.to_owned(),
            Language::Rust | Language::C | Language::Cpp => "::",
            Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go
            | Language::Java => ".",
        };
        match scope {
            Some(scope) => format!("{scope}{separator}{name}"),
            None => name.to_owned(),
        }
    }

    /// The source text of a node with whitespace runs collapsed, or None when empty.
    fn text(&self, node: Node<'_>) -> Option<String> {
        let raw = self.src.get(node.byte_range())?;
        let mut name = String::new();
        for word in raw.split_whitespace() {
            if name.chars().count() >= MAX_SYMBOL_CHARS {
                break;
            }
            if !name.is_empty() {
                name.push(' ');
            }
            name.push_str(word);
        }
        if name.chars().count() > MAX_SYMBOL_CHARS {
            name = name.chars().take(MAX_SYMBOL_CHARS).collect();
        }
        (!name.is_empty()).then_some(name)
    }

    fn field_text(&self, node: Node<'_>, field: &str) -> Option<String> {
        self.text(node.child_by_field_name(field)?)
    }

    fn named(&self, node: Node<'_>, field: &str, rank: Rank) -> Option<Def> {
        Some(Def {
            name: self.field_text(node, field)?,
            rank,
            scope: Scope::Own,
        })
    }

    /// The definition inside a wrapper node, which does not open a scope of its own.
    fn transparent(&self, inner: Option<Node<'_>>, depth: usize) -> Option<Def> {
        let def = self.def_of(inner?, depth + 1)?;
        Some(Def {
            scope: Scope::Transparent,
            ..def
        })
    }

    /// The first named child of `node` that defines something.
    fn first_def_child(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        let mut cursor = node.walk();
        let def = node
            .named_children(&mut cursor)
            .find_map(|child| self.def_of(child, depth + 1));
        Some(Def {
            scope: Scope::Transparent,
            ..def?
        })
    }

    fn def_of(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        if depth > 4 {
            return None;
        }
        match self.language {
            Language::Rust => self.rust_def(node),
            Language::Python => self.python_def(node, depth),
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                self.script_def(node, depth)
            }
            Language::Go => self.go_def(node, depth),
            Language::Java => self.java_def(node),
            Language::C | Language::Cpp => self.c_def(node, depth),
            Language::Markdown => self.markdown_def(node),
        }
    }

    fn rust_def(&self, node: Node<'_>) -> Option<Def> {
        match node.kind() {
            "function_item"
            | "function_signature_item"
            | "struct_item"
            | "enum_item"
            | "union_item"
            | "trait_item"
            | "mod_item"
            | "macro_definition"
            | "type_item" => self.named(node, "name", Rank::Strong),
            "const_item" | "static_item" => self.named(node, "name", Rank::Weak),
            "impl_item" => {
                // `impl<T> Foo<T>` is about `Foo`; its methods are `Foo::method`, also in
                // `impl Trait for Foo`, whose own chunk is named `Trait for Foo`.
                let ty = node.child_by_field_name("type")?;
                let ty = match ty.kind() {
                    "generic_type" => ty.child_by_field_name("type").unwrap_or(ty),
                    _ => ty,
                };
                let ty = self.text(ty)?;
                let name = match self.field_text(node, "trait") {
                    Some(tr) => format!("{tr} for {ty}"),
                    None => ty.clone(),
                };
                Some(Def {
                    name,
                    rank: Rank::Strong,
                    scope: Scope::Named(ty),
                })
            }
            _ => None,
        }
    }

    fn python_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        match node.kind() {
            "function_definition" | "class_definition" => self.named(node, "name", Rank::Strong),
            "decorated_definition" => {
                self.transparent(node.child_by_field_name("definition"), depth)
            }
            "expression_statement" => {
                let assignment = node.named_child(0)?;
                let left = assignment.child_by_field_name("left")?;
                (assignment.kind() == "assignment" && left.kind() == "identifier").then_some(Def {
                    name: self.text(left)?,
                    rank: Rank::Weak,
                    scope: Scope::Own,
                })
            }
            _ => None,
        }
    }

    /// JavaScript, TypeScript and TSX.
    fn script_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        match node.kind() {
            "function_declaration"
            | "generator_function_declaration"
            | "class_declaration"
            | "abstract_class_declaration"
            | "class"
            | "interface_declaration"
            | "type_alias_declaration"
            | "enum_declaration"
            | "method_definition"
            | "method_signature"
            | "abstract_method_signature"
            | "function_signature"
            | "internal_module" => self.named(node, "name", Rank::Strong),
            "module" => {
                let name = self.field_text(node, "name")?;
                Some(Def {
                    name: name.trim_matches(['"', '\'', '`']).to_owned(),
                    rank: Rank::Strong,
                    scope: Scope::Own,
                })
            }
            "export_statement" => self.transparent(node.child_by_field_name("declaration"), depth),
            "ambient_declaration" | "expression_statement" => {
                self.transparent(node.named_child(0), depth)
            }
            "lexical_declaration" | "variable_declaration" => {
                self.transparent(node.named_child(0), depth)
            }
            "pair" => {
                // An object's keys name their values, but do not qualify what is inside them.
                let key = node.child_by_field_name("key")?;
                if !matches!(key.kind(), "property_identifier" | "string" | "identifier") {
                    return None;
                }
                Some(Def {
                    name: self.text(key)?.trim_matches(['"', '\'']).to_owned(),
                    rank: callable(node.child_by_field_name("value")),
                    scope: Scope::Transparent,
                })
            }
            "assignment_expression" => {
                // `module.exports = …`, `Foo.prototype.bar = function () {…}`.
                let left = node.child_by_field_name("left")?;
                if !matches!(left.kind(), "identifier" | "member_expression") {
                    return None;
                }
                Some(Def {
                    name: self.text(left)?,
                    rank: callable(node.child_by_field_name("right")),
                    scope: Scope::Transparent,
                })
            }
            "variable_declarator" | "public_field_definition" | "field_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .or_else(|| node.child_by_field_name("property"))?;
                if !matches!(
                    name.kind(),
                    "identifier" | "property_identifier" | "private_property_identifier"
                ) {
                    return None;
                }
                Some(Def {
                    name: self.text(name)?,
                    rank: callable(node.child_by_field_name("value")),
                    scope: Scope::Own,
                })
            }
            _ => None,
        }
    }

    fn go_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        match node.kind() {
            "function_declaration" | "type_spec" | "type_alias" | "method_elem" | "method_spec" => {
                self.named(node, "name", Rank::Strong)
            }
            "method_declaration" => {
                // Named the way Go documentation names it: `Server.Start`.
                let name = self.field_text(node, "name")?;
                let receiver = node
                    .child_by_field_name("receiver")
                    .and_then(|receiver| first_of_kind(receiver, "type_identifier", 32))
                    .and_then(|ty| self.text(ty));
                Some(Def {
                    name: match receiver {
                        Some(receiver) => format!("{receiver}.{name}"),
                        None => name,
                    },
                    rank: Rank::Strong,
                    scope: Scope::Own,
                })
            }
            "type_declaration" | "const_declaration" | "var_declaration" | "var_spec_list" => {
                self.first_def_child(node, depth)
            }
            "const_spec" | "var_spec" => self.named(node, "name", Rank::Weak),
            _ => None,
        }
    }

    fn java_def(&self, node: Node<'_>) -> Option<Def> {
        match node.kind() {
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration"
            | "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration" => self.named(node, "name", Rank::Strong),
            "field_declaration" | "constant_declaration" => {
                let declarator = node.child_by_field_name("declarator")?;
                self.named(declarator, "name", Rank::Weak)
            }
            _ => None,
        }
    }

    /// C and C++.
    fn c_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        match node.kind() {
            "function_definition" => Some(Def {
                name: self.declarator_name(node)?,
                rank: Rank::Strong,
                scope: Scope::Own,
            }),
            "type_definition" => Some(Def {
                name: self.declarator_name(node)?,
                rank: Rank::Strong,
                scope: Scope::Own,
            }),
            "declaration" | "field_declaration" => Some(Def {
                name: self.declarator_name(node)?,
                rank: Rank::Weak,
                scope: Scope::Own,
            }),
            "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier" => {
                // Only a definition with a body; `struct foo` alone is a reference.
                node.child_by_field_name("body")?;
                self.named(node, "name", Rank::Strong)
            }
            "namespace_definition" | "alias_declaration" | "concept_definition" => {
                self.named(node, "name", Rank::Strong)
            }
            "preproc_def" | "preproc_function_def" => self.named(node, "name", Rank::Weak),
            "template_declaration" => self.first_def_child(node, depth),
            _ => None,
        }
    }

    /// The identifier a C/C++ declarator declares, through pointers, references, arrays,
    /// parentheses, initializers and function declarators.
    fn declarator_name(&self, node: Node<'_>) -> Option<String> {
        let mut current = node.child_by_field_name("declarator")?;
        for _ in 0..16 {
            match current.kind() {
                "identifier"
                | "field_identifier"
                | "type_identifier"
                | "qualified_identifier"
                | "destructor_name"
                | "operator_name"
                | "template_function"
                | "operator_cast" => {
                    return self.text(current);
                }
                _ => {
                    current = current
                        .child_by_field_name("declarator")
                        .or_else(|| current.named_child(0))?;
                }
            }
        }
        None
    }

    fn markdown_def(&self, node: Node<'_>) -> Option<Def> {
        let heading = match node.kind() {
            "section" => node
                .named_child(0)
                .filter(|child| matches!(child.kind(), "atx_heading" | "setext_heading"))?,
            "atx_heading" | "setext_heading" => node,
            _ => return None,
        };
        let name = if heading.kind() == "atx_heading" {
            let mut cursor = heading.walk();
            let inline = heading
                .named_children(&mut cursor)
                .find(|child| child.kind() == "inline");
            match inline {
                Some(inline) => self.text(inline)?,
                None => self
                    .text(heading)?
                    .trim_matches(|c: char| c == '#' || c.is_whitespace())
                    .to_owned(),
            }
        } else {
            let paragraph = heading
                .named_child(0)
                .filter(|child| child.kind() == "paragraph")?;
            self.text(paragraph)?
        };
        (!name.is_empty()).then_some(Def {
            name,
            rank: Rank::Strong,
            scope: Scope::Own,
        })
    }
}

/// A JavaScript binding is a strong definition when its value is a function or a class.
fn callable(value: Option<Node<'_>>) -> Rank {
    let callable = value.is_some_and(|value| {
        matches!(
            value.kind(),
            "arrow_function" | "function_expression" | "function" | "generator_function" | "class"
        )
    });
    if callable { Rank::Strong } else { Rank::Weak }
}

/// Comments, attributes and decorators document the item after them.
fn is_trivia(kind: &str) -> bool {
    matches!(
        kind,
        "comment" | "line_comment" | "block_comment" | "attribute_item" | "decorator"
    )
}

/// The first node of `kind` in a pre-order walk of `node`, looking at no more than `budget`
/// nodes.
fn first_of_kind<'t>(node: Node<'t>, kind: &str, budget: usize) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    for _ in 0..budget {
        let current = cursor.node();
        if current.kind() == kind {
            return Some(current);
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() || cursor.node() == node {
                return None;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
    None
}

/// Merges each run of comments (and the gaps inside it) into the item that follows, and each
/// other gap (blank lines, a closing brace) into the piece before it. A run of comments with
/// no item after it stays as it is.
fn attach(pieces: Vec<Piece<'_>>) -> Vec<Piece<'_>> {
    let mut attached: Vec<Piece<'_>> = Vec::with_capacity(pieces.len());
    let mut pending: Vec<Piece<'_>> = Vec::new();
    for mut piece in pieces {
        if piece.main.is_some() && !piece.trivia {
            if let Some(first) = pending.first() {
                piece.start = first.start;
                pending.clear();
            }
            attached.push(piece);
        } else if piece.trivia || !pending.is_empty() {
            pending.push(piece);
        } else if let Some(previous) = attached.last_mut() {
            previous.end = piece.end;
        } else {
            attached.push(piece);
        }
    }
    attached.append(&mut pending);
    attached
}

/// For each 1-based line of `lines`, the line that opens the innermost definition (a
/// function, type, impl, class …, as the chunker names them) containing it without starting on
/// it: `(its 1-based number, its text without the line break)`. `None` for a line at the top
/// level, in a language the chunker does not parse (or Markdown), or when the file cannot be
/// parsed. The file is parsed once for all the lines.
pub fn enclosing_lines(path: &str, text: &str, lines: &[u32]) -> Vec<Option<(u32, String)>> {
    let none = || vec![None; lines.len()];
    let Some(language) = language_of(path).filter(|l| *l != Language::Markdown) else {
        return none();
    };
    if text.is_empty() {
        return none();
    }
    let all = Lines::new(text);
    let Some((cx, tree)) = parse(language, text, &all, Limits::new(&ChunkOptions::default()))
    else {
        return none();
    };
    lines
        .iter()
        .map(|&line| {
            let target = usize::try_from(line).ok()?.checked_sub(1)?;
            cx.enclosing(&tree, target)
        })
        .collect()
}

impl Cx<'_> {
    /// The line opening the innermost definition containing 0-based line `target` without
    /// starting on it, as `(1-based number, text without the line break)`.
    fn enclosing(&self, tree: &tree_sitter::Tree, target: usize) -> Option<(u32, String)> {
        if target >= self.lines.count() {
            return None;
        }
        let mut node = tree.root_node();
        let mut found = None;
        for _ in 0..MAX_DEPTH {
            let mut cursor = node.walk();
            let Some(child) = node
                .children(&mut cursor)
                .find(|c| c.start_position().row <= target && target <= c.end_position().row)
            else {
                break;
            };
            if child.start_position().row < target && self.def_of(child, 0).is_some() {
                found = Some(child.start_position().row);
            }
            node = child;
        }
        let row = found?;
        let text = self.lines.slice(row, row).trim_end_matches(['\n', '\r']);
        Some((one_based(row), text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small limits so that short samples exercise grouping and splitting.
    const SMALL: ChunkOptions = ChunkOptions {
        max_lines: 8,
        min_lines: 1,
        window: 4,
        overlap: 1,
    };

    type Expected<'a> = &'a [(u32, u32, Option<&'a str>)];

    /// The enclosing line a chunk carries from indexing is the one `enclosing_lines` finds for
    /// its first line from a parse of its own, in every language; and chunks that start inside
    /// a definition have one.
    #[test]
    fn chunks_carry_the_enclosing_line_of_their_first_line() {
        let python = "class Shop:\n    def __init__(self):\n        self.items = []\n\n".to_owned()
            + &"    def add(self, item):\n        self.items.append(item)\n        return item\n\n"
                .repeat(12);
        let go = "package main\n\nfunc long() int {\n".to_owned()
            + &"\tx := 1\n\tx += 2\n".repeat(60)
            + "\treturn x\n}\n";
        let sources = [
            ("src/chunk.rs", include_str!("chunk.rs").to_owned()),
            ("shop.py", python),
            ("main.go", go),
            ("README.md", "# A\n\ntext\n\n## B\n\nmore\n".repeat(20)),
        ];
        let mut with_enclosing = 0;
        for (path, text) in &sources {
            let options = ChunkOptions::default();
            let chunks = chunk(path, text, &options);
            let starts: Vec<u32> = chunks.iter().map(|c| c.start_line).collect();
            let expected = enclosing_lines(path, text, &starts);
            for (c, expected) in chunks.iter().zip(expected) {
                assert_eq!(c.enclosing, expected, "{path}:{}", c.start_line);
                with_enclosing += usize::from(c.enclosing.is_some());
            }
        }
        assert!(
            with_enclosing >= 3,
            "{with_enclosing} chunks start inside a definition"
        );
        let chunks = chunk(
            "src/chunk.rs",
            include_str!("chunk.rs"),
            &ChunkOptions::default(),
        );
        assert!(
            chunks.iter().any(|c| c
                .enclosing
                .as_ref()
                .is_some_and(|(_, line)| line.starts_with("impl"))),
            "a chunk inside an impl block shows the impl line"
        );
    }

    /// Chunks `src` as `path` and compares (start, end, symbol) with `expected`, after checking
    /// that the chunks cover the file.
    fn check(path: &str, src: &str, options: ChunkOptions, expected: Expected<'_>) {
        let chunks = chunk(path, src, &options);
        assert_covers(src, &chunks);
        let actual: Vec<_> = chunks
            .iter()
            .map(|c| (c.start_line, c.end_line, c.symbol.as_deref()))
            .collect();
        assert_eq!(actual, expected, "{path}");
    }

    /// Every line in some chunk, in order, each chunk's text exactly its lines.
    fn assert_covers(src: &str, chunks: &[Chunk]) {
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        if lines.is_empty() {
            assert!(chunks.is_empty(), "an empty file has no chunks");
            return;
        }
        let first = chunks.first().expect("a non-empty file has chunks");
        let last = chunks.last().expect("a non-empty file has chunks");
        assert_eq!(first.start_line, 1, "the first chunk starts at line 1");
        assert_eq!(
            last.end_line as usize,
            lines.len(),
            "the last chunk ends the file"
        );
        for pair in chunks.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(b.start_line > a.start_line, "{a:?} then {b:?}");
            assert!(b.end_line > a.end_line, "{a:?} then {b:?}");
            assert!(
                b.start_line <= a.end_line + 1,
                "a line is lost between {a:?} and {b:?}"
            );
        }
        for c in chunks {
            assert!(c.start_line <= c.end_line, "{c:?}");
            let expected: String = lines[c.start_line as usize - 1..c.end_line as usize].concat();
            assert_eq!(
                c.text, expected,
                "text of {}..={}",
                c.start_line, c.end_line
            );
        }
    }

    const RUST: &str = r#"use std::fmt;

/// A point.
#[derive(Debug)]
pub struct Point {
    x: i32,
}

impl Point {
    pub fn new() -> Self {
        Self { x: 0 }
    }

    /// Moves it.
    pub fn shift(&mut self) {
        self.x += 1;
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}
"#;

    const PYTHON: &str = r#"import os


class Greeter(Base):
    """Says hello."""

    def __init__(self):
        self.name = "x"

    @staticmethod
    def hello():
        return "hi"


def main():
    Greeter().hello()
"#;

    const JAVASCRIPT: &str = r#"import { a } from "a";

// Adds.
export function add(x, y) {
  return x + y;
}

const twice = (x) => add(x, x);

class Counter {
  constructor() {
    this.n = 0;
  }

  bump() {
    this.n += 1;
    return this.n;
  }
}
"#;

    const TYPESCRIPT: &str = r#"export interface Shape {
  area(): number;
}

type Id = string;

export class Square implements Shape {
  constructor(private side: number) {}

  area(): number {
    return this.side * this.side;
  }

  /** The perimeter. */
  perimeter(): number {
    return 4 * this.side;
  }
}

namespace Geometry {
  export const unit = 1;
}
"#;

    const TSX: &str = r#"import React from "react";

export function Hello({ name }: { name: string }) {
  return <div className="hello">Hello, {name}</div>;
}
"#;

    const GO: &str = r#"package main

import "fmt"

// Server serves.
type Server struct {
	addr string
}

func (s *Server) Start() error {
	fmt.Println(s.addr)
	return nil
}

func main() {
	s := &Server{addr: ":80"}
	s.Start()
}
"#;

    const JAVA: &str = r#"package demo;

import java.util.List;

/** A stack. */
public class Stack {
    private int size;

    public Stack() {
        this.size = 0;
    }

    /** Pushes. */
    public void push(int x) {
        size += 1;
    }
}
"#;

    const C: &str = r#"#include <stdio.h>

/* A point. */
struct point {
    int x;
    int y;
};

typedef struct point point_t;

static int *make(int a) {
    static int v;
    v = a;
    return &v;
}

int main(void) {
    return *make(1);
}
"#;

    const CPP: &str = r#"#include <string>

namespace shapes {

class Circle {
 public:
  double area() const {
    return 3.14 * r * r;
  }
  double r;
};

double Circle_perimeter(const Circle& c) {
  return 2 * 3.14 * c.r;
}

}  // namespace shapes
"#;

    const MARKDOWN: &str = r#"Intro before any heading.

# Guide

Some words.

## Install

Run the installer.
Then run it again.
And once more.

## Usage

Use it.
"#;

    const SAMPLES: &[(&str, &str)] = &[
        ("src/lib.rs", RUST),
        ("app/main.py", PYTHON),
        ("web/app.js", JAVASCRIPT),
        ("web/shape.ts", TYPESCRIPT),
        ("web/hello.tsx", TSX),
        ("cmd/main.go", GO),
        ("src/Stack.java", JAVA),
        ("src/point.c", C),
        ("src/circle.cpp", CPP),
        ("docs/guide.md", MARKDOWN),
        ("notes.txt", MARKDOWN),
    ];

    fn small(max_lines: u32) -> ChunkOptions {
        ChunkOptions { max_lines, ..SMALL }
    }

    #[test]
    fn default_options_are_the_documented_ones() {
        let options = ChunkOptions::default();
        assert_eq!(
            (
                options.max_lines,
                options.min_lines,
                options.window,
                options.overlap
            ),
            (60, 8, 40, 8)
        );
    }

    #[test]
    fn languages_come_from_extensions() {
        let cases = [
            ("src/lib.rs", Some(Language::Rust)),
            ("a/b.PY", Some(Language::Python)),
            ("stubs/x.pyi", Some(Language::Python)),
            ("web/a.js", Some(Language::JavaScript)),
            ("web/a.mjs", Some(Language::JavaScript)),
            ("web/a.jsx", Some(Language::JavaScript)),
            ("web/a.ts", Some(Language::TypeScript)),
            ("web/a.d.ts", Some(Language::TypeScript)),
            ("web/a.tsx", Some(Language::Tsx)),
            ("main.go", Some(Language::Go)),
            ("A.java", Some(Language::Java)),
            ("x.c", Some(Language::C)),
            ("x.h", Some(Language::C)),
            ("x.cc", Some(Language::Cpp)),
            ("x.hpp", Some(Language::Cpp)),
            ("README.md", Some(Language::Markdown)),
            (r"docs\guide.markdown", Some(Language::Markdown)),
            ("Makefile", None),
            ("notes.txt", None),
            (".rs", None),
            ("dir.rs/file", None),
            ("", None),
            ("trailing.", None),
        ];
        for (path, expected) in cases {
            assert_eq!(language_of(path), expected, "{path:?}");
        }
    }

    #[test]
    fn small_files_are_one_chunk_named_by_their_first_definition() {
        let default = ChunkOptions::default();
        let cases: &[(&str, &str, Expected<'_>)] = &[
            ("src/lib.rs", RUST, &[(1, 24, Some("Point"))]),
            ("app/main.py", PYTHON, &[(1, 16, Some("Greeter"))]),
            ("web/app.js", JAVASCRIPT, &[(1, 19, Some("add"))]),
            ("web/shape.ts", TYPESCRIPT, &[(1, 22, Some("Shape"))]),
            ("web/hello.tsx", TSX, &[(1, 5, Some("Hello"))]),
            ("cmd/main.go", GO, &[(1, 18, Some("Server"))]),
            ("src/Stack.java", JAVA, &[(1, 17, Some("Stack"))]),
            ("src/point.c", C, &[(1, 19, Some("point"))]),
            ("src/circle.cpp", CPP, &[(1, 17, Some("shapes"))]),
            ("docs/guide.md", MARKDOWN, &[(1, 15, Some("Guide"))]),
            ("notes.txt", MARKDOWN, &[(1, 15, None)]),
        ];
        for (path, src, expected) in cases {
            check(path, src, default, expected);
        }
    }

    #[test]
    fn long_definitions_split_into_named_parts() {
        let cases: &[(&str, &str, Expected<'_>)] = &[
            (
                "src/lib.rs",
                RUST,
                &[
                    (1, 8, Some("Point")),
                    (9, 13, Some("Point::new")),
                    (14, 19, Some("Point::shift")),
                    (20, 24, Some("fmt::Display for Point")),
                ],
            ),
            (
                "app/main.py",
                PYTHON,
                &[
                    (1, 3, None),
                    (4, 9, Some("Greeter.__init__")),
                    (10, 14, Some("Greeter.hello")),
                    (15, 16, Some("main")),
                ],
            ),
            (
                "web/app.js",
                JAVASCRIPT,
                &[
                    (1, 7, Some("add")),
                    (8, 9, Some("twice")),
                    (10, 14, Some("Counter.constructor")),
                    (15, 19, Some("Counter.bump")),
                ],
            ),
            (
                "web/shape.ts",
                TYPESCRIPT,
                &[
                    (1, 6, Some("Shape")),
                    (7, 13, Some("Square.constructor")),
                    (14, 19, Some("Square.perimeter")),
                    (20, 22, Some("Geometry")),
                ],
            ),
            (
                "cmd/main.go",
                GO,
                &[
                    (1, 4, None),
                    (5, 9, Some("Server")),
                    (10, 14, Some("Server.Start")),
                    (15, 18, Some("main")),
                ],
            ),
            (
                "src/Stack.java",
                JAVA,
                &[
                    (1, 4, None),
                    (5, 12, Some("Stack.Stack")),
                    (13, 17, Some("Stack.push")),
                ],
            ),
            (
                "src/point.c",
                C,
                &[
                    (1, 8, Some("point")),
                    (9, 16, Some("point_t")),
                    (17, 19, Some("main")),
                ],
            ),
            (
                "src/circle.cpp",
                CPP,
                &[
                    (1, 2, None),
                    (3, 9, Some("shapes::Circle::area")),
                    (10, 12, Some("shapes::Circle")),
                    (13, 17, Some("shapes::Circle_perimeter")),
                ],
            ),
            (
                "docs/guide.md",
                MARKDOWN,
                &[
                    (1, 6, Some("Guide")),
                    (7, 12, Some("Install")),
                    (13, 15, Some("Usage")),
                ],
            ),
        ];
        for (path, src, expected) in cases {
            check(path, src, SMALL, expected);
        }
    }

    #[test]
    fn rust_trait_impls_name_their_methods_by_type() {
        let src = "\
impl<T: Debug> fmt::Display for Wrapper<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = 1;
        let b = 2;
        write!(f, \"{a}{b}\")
    }

    fn other(&self) -> u8 {
        let c = 3;
        c
    }
}
";
        check(
            "a.rs",
            src,
            ChunkOptions::default(),
            &[(1, 12, Some("fmt::Display for Wrapper"))],
        );
        check(
            "a.rs",
            src,
            SMALL,
            &[
                (1, 7, Some("Wrapper::fmt")),
                (8, 12, Some("Wrapper::other")),
            ],
        );
    }

    #[test]
    fn comments_and_attributes_attach_to_the_next_item() {
        let src = "fn a() {}\n\n/// Doc.\n#[inline]\nfn b() {}\n";
        check(
            "a.rs",
            src,
            small(3),
            &[(1, 2, Some("a")), (3, 5, Some("b"))],
        );
        let src = "x = 1\n\n# Says hi.\n@decorator\ndef hi():\n    pass\n";
        check(
            "a.py",
            src,
            small(4),
            &[(1, 2, Some("x")), (3, 6, Some("hi"))],
        );
        let src = "package p\n\n// Run runs.\nfunc Run() {\n}\n";
        check("a.go", src, small(3), &[(1, 2, None), (3, 5, Some("Run"))]);
        // A comment at the end of an item's line stays with that item.
        let src = "fn a() {} // about a\nfn b() {\n}\n";
        check(
            "a.rs",
            src,
            small(2),
            &[(1, 1, Some("a")), (2, 3, Some("b"))],
        );
    }

    #[test]
    fn items_sharing_a_line_never_share_a_chunk_boundary() {
        let src = "struct A; struct B;\nfn c() {\n    1;\n}\n";
        check(
            "a.rs",
            src,
            small(3),
            &[(1, 1, Some("A")), (2, 4, Some("c"))],
        );
        let src = "#[derive(Debug)] struct A {\n    x: u8,\n}\n";
        check("a.rs", src, small(3), &[(1, 3, Some("A"))]);
    }

    #[test]
    fn function_bodies_split_into_statements_named_by_the_function() {
        let mut src = String::from("/// Big.\nfn big() {\n");
        for i in 0..20 {
            src.push_str(&format!("    let x{i} = {i};\n"));
        }
        src.push_str("}\n");
        let chunks = chunk("a.rs", &src, &SMALL);
        assert_covers(&src, &chunks);
        assert!(chunks.len() >= 3, "{chunks:?}");
        assert!(chunks.iter().all(|c| c.symbol.as_deref() == Some("big")));
        assert!(
            chunks.iter().all(|c| c.end_line - c.start_line < 8),
            "{chunks:?}"
        );
        assert!(chunks[0].text.starts_with("/// Big.\nfn big() {\n"));
    }

    #[test]
    fn nodes_without_children_become_windows_named_by_their_definition() {
        let mut src = String::from("const TEXT: &str = \"\n");
        for i in 0..10 {
            src.push_str(&format!("line {i}\n"));
        }
        src.push_str("\";\n");
        // 12 lines: windows of 4 lines stepping by 3.
        check(
            "a.rs",
            &src,
            SMALL,
            &[
                (1, 4, Some("TEXT")),
                (4, 7, Some("TEXT")),
                (7, 10, Some("TEXT")),
                (10, 12, Some("TEXT")),
            ],
        );
    }

    #[test]
    fn c_and_cpp_names_come_from_declarators() {
        let src = "static int *make(int a) {\n    return 0;\n}\n";
        check("a.c", src, SMALL, &[(1, 3, Some("make"))]);
        let src = "typedef struct {\n    int y;\n} pt_t;\n";
        check("a.h", src, SMALL, &[(1, 3, Some("pt_t"))]);
        let src = "void Foo::set(int v) {\n    x = v;\n}\n";
        check("a.cpp", src, SMALL, &[(1, 3, Some("Foo::set"))]);
        let src = "template <typename T>\nT id(T x) {\n    return x;\n}\n";
        check("a.hpp", src, SMALL, &[(1, 4, Some("id"))]);
        let src = "int proto(void);\n#define MAX 3\n";
        check("a.h", src, SMALL, &[(1, 2, Some("proto"))]);
    }

    #[test]
    fn script_names() {
        let src = "export default class Widget {\n  render() {}\n}\n";
        check("a.js", src, SMALL, &[(1, 3, Some("Widget"))]);
        let src = "module.exports = {\n  run: () => 1,\n};\n";
        check("a.js", src, SMALL, &[(1, 3, Some("module.exports"))]);
        let src = "const config = { a: 1 };\nlet helper = function () {};\n";
        check("a.js", src, SMALL, &[(1, 2, Some("helper"))]);
        let src = "declare module \"fs\" {\n  export function read(): void;\n}\n";
        check("a.ts", src, SMALL, &[(1, 3, Some("fs"))]);
        let src = "enum Color {\n  Red,\n}\n";
        check("a.ts", src, SMALL, &[(1, 3, Some("Color"))]);
    }

    #[test]
    fn go_and_java_names() {
        let src = "package p\n\nfunc (b Box[T]) Get() T {\n\treturn b.v\n}\n";
        check("a.go", src, SMALL, &[(1, 5, Some("Box.Get"))]);
        let src = "package p\n\ntype (\n\tA int\n\tB string\n)\n";
        check("a.go", src, SMALL, &[(1, 6, Some("A"))]);
        let src = "package p\n\nconst Max = 3\n";
        check("a.go", src, SMALL, &[(1, 3, Some("Max"))]);
        let src = "interface Shape {\n    double area();\n}\n";
        check("Shape.java", src, SMALL, &[(1, 3, Some("Shape"))]);
        let src = "enum Color { RED }\n";
        check("Color.java", src, SMALL, &[(1, 1, Some("Color"))]);
    }

    #[test]
    fn markdown_sections_are_named_by_their_headings() {
        let src = "\
Title
=====

Intro.

## Part A

a1
a2
a3

a4
a5
a6
a7

### Deeper

d1
d2
d3
";
        // The setext heading does not open a section; its text names the chunk that holds it.
        check(
            "a.md",
            src,
            SMALL,
            &[
                (1, 5, Some("Title")),
                (6, 11, Some("Part A")),
                (12, 16, Some("Part A")),
                (17, 21, Some("Deeper")),
            ],
        );
    }

    #[test]
    fn files_without_a_language_get_overlapping_windows() {
        check(
            "notes.txt",
            MARKDOWN,
            SMALL,
            &[
                (1, 4, None),
                (4, 7, None),
                (7, 10, None),
                (10, 13, None),
                (13, 15, None),
            ],
        );
        let text: String = (1..=100).map(|i| format!("{i}\n")).collect();
        let chunks = chunk("data.csv", &text, &ChunkOptions::default());
        let ranges: Vec<_> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
        assert_eq!(ranges, [(1, 40), (33, 72), (65, 100)]);
        assert_covers(&text, &chunks);
    }

    #[test]
    fn empty_and_tiny_files() {
        assert!(chunk("a.rs", "", &SMALL).is_empty());
        assert!(chunk("a.txt", "", &SMALL).is_empty());
        check("a.rs", "\n", SMALL, &[(1, 1, None)]);
        check("a.rs", "\n\n\n", SMALL, &[(1, 3, None)]);
        check("a.md", "   ", SMALL, &[(1, 1, None)]);
        check("a.rs", "fn a() {}", SMALL, &[(1, 1, Some("a"))]);
    }

    #[test]
    fn crlf_keeps_line_endings_and_boundaries() {
        for (path, src) in SAMPLES {
            let crlf = src.replace('\n', "\r\n");
            for options in [SMALL, ChunkOptions::default()] {
                let lf = chunk(path, src, &options);
                let cr = chunk(path, &crlf, &options);
                assert_covers(&crlf, &cr);
                let shape = |chunks: &[Chunk]| -> Vec<(u32, u32, Option<String>)> {
                    chunks
                        .iter()
                        .map(|c| (c.start_line, c.end_line, c.symbol.clone()))
                        .collect()
                };
                assert_eq!(shape(&lf), shape(&cr), "{path}");
                assert!(cr.iter().all(|c| c.text.ends_with("\r\n")), "{path}");
            }
        }
    }

    #[test]
    fn odd_bytes_and_endings() {
        // No trailing newline: the last line still counts.
        check(
            "a.rs",
            "fn a() {}\nfn b() {}",
            small(1),
            &[(1, 1, Some("a")), (2, 2, Some("b"))],
        );
        // A lone carriage return does not end a line.
        check(
            "a.rs",
            "fn a() {}\rfn b() {}\r",
            SMALL,
            &[(1, 1, Some("a"))],
        );
        check("a.txt", "a\rb\rc", SMALL, &[(1, 1, None)]);
        // NUL bytes and other control characters parse as errors, never panic.
        let src = "fn a() {\0}\n\0\0\0\nstruct \u{1}B;\n";
        let chunks = chunk("a.rs", src, &SMALL);
        assert_covers(src, &chunks);
        // Non-ASCII names are cut on character boundaries.
        let name = "é".repeat(400);
        let src = format!("fn {name}() {{}}\n");
        let chunks = chunk("a.rs", &src, &SMALL);
        assert_covers(&src, &chunks);
        let symbol = chunks[0].symbol.as_deref().expect("a function name");
        assert_eq!(symbol.chars().count(), MAX_SYMBOL_CHARS);
    }

    #[test]
    fn odd_options_are_made_safe() {
        let odd = [
            ChunkOptions {
                max_lines: 0,
                min_lines: 0,
                window: 0,
                overlap: 0,
            },
            ChunkOptions {
                max_lines: 1,
                min_lines: 50,
                window: 3,
                overlap: 9,
            },
            ChunkOptions {
                max_lines: u32::MAX,
                min_lines: u32::MAX,
                window: u32::MAX,
                overlap: u32::MAX,
            },
        ];
        for options in odd {
            for (path, src) in SAMPLES {
                let chunks = chunk(path, src, &options);
                assert_covers(src, &chunks);
            }
        }
    }

    #[test]
    fn small_chunks_merge_into_a_neighbour_that_has_room() {
        // `c` alone would be a 1-line chunk; it joins `b`'s chunk, which has room.
        let src = "fn a() {\n    1;\n    2;\n}\nfn b() {\n    3;\n}\nfn c() {}\n";
        let options = ChunkOptions {
            max_lines: 4,
            min_lines: 2,
            window: 4,
            overlap: 1,
        };
        check(
            "a.rs",
            src,
            options,
            &[(1, 4, Some("a")), (5, 8, Some("b"))],
        );
    }

    #[test]
    fn sample_grammars_parse_cleanly() {
        for (path, src) in SAMPLES {
            let Some(language) = language_of(path) else {
                continue;
            };
            let mut parser = Parser::new();
            parser
                .set_language(&grammar(language))
                .expect("the grammar is compatible");
            let tree = parser.parse(src, None).expect("no cancellation");
            assert!(!tree.root_node().has_error(), "{path}");
        }
    }

    /// Checks both the public result and that the syntactic spans are valid by themselves (the
    /// windows fallback in `chunk` would otherwise hide a bug).
    fn assert_chunks_well(path: &str, src: &str, options: &ChunkOptions) {
        let chunks = chunk(path, src, options);
        assert_covers(src, &chunks);
        if let Some(language) = language_of(path)
            && !src.is_empty()
        {
            let lines = Lines::new(src);
            let limits = Limits::new(options);
            let (cx, tree) = parse(language, src, &lines, limits).expect("a tree");
            let spans = syntactic_spans(&cx, &tree);
            assert!(covers(&spans, lines.count() - 1), "{path}: {spans:?}");
            for pair in spans.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                if !a.window || !b.window {
                    assert_eq!(
                        b.start,
                        a.end + 1,
                        "{path}: syntactic chunks do not overlap"
                    );
                }
            }
        }
    }

    #[test]
    fn every_line_is_covered_in_order() {
        let options = [
            ChunkOptions::default(),
            SMALL,
            small(1),
            small(2),
            small(3),
            ChunkOptions {
                max_lines: 5,
                min_lines: 3,
                window: 2,
                overlap: 1,
            },
        ];
        for (path, src) in SAMPLES {
            for options in &options {
                assert_chunks_well(path, src, options);
            }
        }
    }

    #[test]
    fn chunking_is_deterministic() {
        for (path, src) in SAMPLES {
            assert_eq!(chunk(path, src, &SMALL), chunk(path, src, &SMALL), "{path}");
        }
    }

    /// A small deterministic generator (64-bit LCG), so mutations are the same on every run.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, bound: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) as usize) % bound.max(1)
        }
    }

    /// Deterministic mutations of `src`: truncations, deleted and duplicated lines, inserted
    /// junk (brackets, quotes, comment openers, CR, NUL) and shuffled lines.
    fn mutations(src: &str, rng: &mut Lcg) -> Vec<String> {
        const JUNK: &[&str] = &[
            "{", "}", "(", ")", "[", "]", "\"", "'", "/*", "*/", "//", "#", "\r", "\0", "\n", "<",
            ">", "`", "```", "\\", "é", "fn ", "def ", "class ", ":", ";", "\t",
        ];
        let mut out = Vec::new();
        let boundaries: Vec<usize> = src.char_indices().map(|(i, _)| i).collect();
        for _ in 0..6 {
            let cut = boundaries[rng.next(boundaries.len())];
            out.push(src[..cut].to_owned());
            out.push(src[cut..].to_owned());
        }
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        for _ in 0..4 {
            let mut deleted = lines.clone();
            deleted.remove(rng.next(deleted.len()));
            out.push(deleted.concat());
            let mut doubled = lines.clone();
            let at = rng.next(doubled.len());
            doubled.insert(at, lines[at]);
            out.push(doubled.concat());
        }
        for _ in 0..12 {
            let mut mangled = src.to_owned();
            for _ in 0..1 + rng.next(4) {
                let at = boundaries[rng.next(boundaries.len())];
                mangled.insert_str(at.min(mangled.len()), JUNK[rng.next(JUNK.len())]);
            }
            out.push(mangled);
        }
        let mut shuffled = lines.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.next(i + 1));
        }
        out.push(shuffled.concat());
        out.push(src.repeat(3));
        out.push(src.replace('\n', "\r"));
        out.push(src.replace('\n', ""));
        out
    }

    #[test]
    fn mangled_inputs_never_panic_and_stay_covered() {
        let mut rng = Lcg(0x5eed);
        let others = [
            "a.rs", "a.py", "a.js", "a.ts", "a.tsx", "a.go", "a.java", "a.c", "a.cpp", "a.md",
        ];
        let options = [ChunkOptions::default(), SMALL, small(2)];
        for (path, src) in SAMPLES {
            for mutated in mutations(src, &mut rng) {
                // Each mutation is read as its own language and as another one.
                let other = others[rng.next(others.len())];
                for path in [path, other] {
                    for options in &options {
                        assert_chunks_well(path, &mutated, options);
                    }
                }
            }
        }
    }

    #[test]
    fn large_and_deep_files() {
        // 50,000 lines of small items.
        let mut src = String::new();
        for i in 0..25_000 {
            src.push_str(&format!("fn f{i}() {{}}\n\n"));
        }
        let chunks = chunk("big.rs", &src, &ChunkOptions::default());
        assert_covers(&src, &chunks);
        assert_eq!(chunks.len(), 834);
        assert_eq!(chunks[1].symbol.as_deref(), Some("f30"));
        // Nesting far deeper than `MAX_DEPTH` ends in windows, not a stack overflow.
        let depth = 5_000;
        let src = format!(
            "fn deep() {}\n{}\n",
            "{\n".repeat(depth),
            "}\n".repeat(depth)
        );
        assert_chunks_well("deep.rs", &src, &ChunkOptions::default());
        let src = format!("x = {}\n{}\n", "[\n".repeat(depth), "]\n".repeat(depth));
        assert_chunks_well("deep.py", &src, &ChunkOptions::default());
        // A huge single line.
        let src = format!("fn a() {{ {} }}\n", "1 + ".repeat(100_000) + "1");
        check("a.rs", &src, SMALL, &[(1, 1, Some("a"))]);
    }
}
