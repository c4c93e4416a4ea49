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
//! # Languages
//!
//! What the chunker asks of a grammar lives in one module per language (`rust`, `python`,
//! `script` for JavaScript, TypeScript and TSX, `go`, `java`, `c` for C and C++, `markdown`):
//! which nodes define what, under which name. This module holds what every language shares.
//!
//! For example, `chunk("src/lib.rs", "use std::fmt;\n\n/// Greets.\nfn hello() {}\n", &options)`
//! with the default options returns one chunk, lines 1–4, with the symbol `hello`.

use tree_sitter::{Node, Parser};

mod c;
mod go;
pub mod graph;
mod java;
mod markdown;
mod python;
mod rust;
mod script;

/// Bumped whenever chunk boundaries, symbols or what a chunk records could change for the same
/// input. 2: chunks record their enclosing line, so file versions chunked before are chunked
/// again when a new commit lists them (snapshots already written keep theirs). 3: a chunk that
/// holds the tail of a split definition and a definition of its own is named after its own.
pub const CHUNKER_VERSION: u32 = 3;

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
    /// The same for each of its later lines, where it changes (see [`Inside`]): a chunk cut
    /// to start at any of its lines finds that line's without a parse.
    pub inside: Vec<Inside>,
}

/// From `line` on (1-based, up to the next such entry or the chunk's end), a chunk's lines are
/// inside the definition opened at `opening` (`(1-based number, text)`, as
/// [`enclosing_lines`] finds it), or inside none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inside {
    /// The first line this holds for.
    pub line: u32,
    /// The line opening the innermost definition around it.
    pub opening: Option<(u32, String)>,
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
    let code = parsed
        .as_ref()
        .filter(|(cx, _)| cx.language != Language::Markdown);
    spans
        .into_iter()
        .map(|span| Chunk {
            start_line: one_based(span.start),
            end_line: one_based(span.end),
            symbol: span.sym.map(|sym| sym.name),
            text: lines.slice(span.start, span.end).to_owned(),
            enclosing: code.and_then(|(cx, tree)| cx.enclosing(tree, span.start)),
            inside: code.map_or_else(Vec::new, |(cx, tree)| cx.inside(tree, span.start, span.end)),
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

    /// Line `row` (0-based) as `(1-based number, text without the line break)`.
    fn numbered(&self, row: usize) -> (u32, String) {
        let text = self.slice(row, row).trim_end_matches(['\n', '\r']);
        (one_based(row), text.to_owned())
    }

    /// Lines `start..=end` (0-based) with their line endings.
    fn slice(&self, start: usize, end: usize) -> &'a str {
        let from = self.starts.get(start).copied().unwrap_or(self.text.len());
        let to = self.starts.get(end + 1).copied().unwrap_or(self.text.len());
        // Line starts follow a `\n`, so they are always character boundaries.
        self.text.get(from..to).unwrap_or_default()
    }
}

/// How strongly a name says what a chunk is about: a function or type outranks the definition
/// a chunk is a part of, which outranks a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Weak,
    /// The definition a span is a part of (its other parts are elsewhere): a function that
    /// starts in the span names it instead.
    Part,
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
            let strong = span.sym.as_ref().is_some_and(|sym| sym.rank >= Rank::Part);
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
            // The parts of a definition being split are named after it, unless a definition of
            // their own starts in them.
            let own = piece
                .own
                .as_ref()
                .map(|sym| Sym {
                    name: sym.name.clone(),
                    rank: sym.rank.min(Rank::Part),
                })
                .or_else(|| fallback.cloned());
            let own = own.as_ref();
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
            // The first part holds the definition's own first line: the definition starts in it.
            if let (Some(first), Some(def)) = (parts.first_mut(), &piece.own)
                && let Some(sym) = first.sym.as_mut().filter(|sym| sym.name == def.name)
            {
                sym.rank = sym.rank.max(def.rank);
            }
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

/// [`enclosing_lines`] for one 1-based `line` of `text`, from a parse of only the lines
/// `from..=to` (shifted left by the first one's indentation, so an indented definition parses
/// as one at the top level). `from` must be a line no definition opened before it could
/// enclose `line` without also enclosing `from`: the line opening the definition that encloses
/// some line at or before `line`, or a line at the top level; `to` is at or after `line`.
/// When a definition is left open at `to`, the lines parsed grow (three times as many each
/// time) up to the end of the file, unless the first syntax error stays where it was when they
/// grow: an error of the file itself, which no longer parse of these lines is free of. `None`
/// when no parse of them settles it (the file does not parse cleanly); the caller then parses
/// the whole file, as it must when `from` opens a definition and none is found (a definition
/// enclosing `from` may still enclose `line`).
pub fn enclosing_from(
    path: &str,
    text: &str,
    from: u32,
    line: u32,
    to: u32,
) -> Option<Option<(u32, String)>> {
    let Some(language) = language_of(path).filter(|l| *l != Language::Markdown) else {
        return Some(None);
    };
    let all = Lines::new(text);
    let first = usize::try_from(from).ok()?.checked_sub(1)?;
    let target = usize::try_from(line).ok()?.checked_sub(1)?;
    let last = usize::try_from(to)
        .ok()?
        .checked_sub(1)?
        .min(all.count().checked_sub(1)?);
    if target < first || target > last {
        return None;
    }
    let lead = all.slice(first, first);
    let indent = &lead[..lead.len() - lead.trim_start_matches([' ', '\t']).len()];
    // A definition still open at the end of the lines parsed is cut short: parse again through
    // twice as many lines, up to the end of the file.
    let end = all.count() - 1;
    let mut last = last;
    // Where the last parse's first error was: an error that stays where it was when more lines
    // are parsed is in the file itself, and no longer parse of these lines will be clean.
    let mut error_at = None;
    loop {
        let fragment: String = (first..=last)
            .map(|row| {
                let line = all.slice(row, row);
                line.strip_prefix(indent).unwrap_or(line)
            })
            .collect();
        let lines = Lines::new(&fragment);
        let (cx, tree) = parse(
            language,
            &fragment,
            &lines,
            Limits::new(&ChunkOptions::default()),
        )?;
        match cx.enclosing_row(&tree, target - first) {
            (row, true) => return Some(row.map(|row| all.numbered(first + row))),
            (_, false) if last < end => {
                let error = first_error_row(&tree).map(|row| first + row);
                if error.is_some() && error == error_at {
                    return None;
                }
                error_at = error;
                last = last.saturating_add(2 * (last - first + 1)).min(end);
            }
            (_, false) => return None,
        }
    }
}

/// The first child of `node` whose lines include 0-based row `row` (it starts on or before
/// the row and ends on or after it).
///
/// A file's many top-level items are children of one node, which tree-sitter keeps as a
/// balanced tree of hidden nodes: walking the children one by one to find the row costs their
/// number, once per chunk (quadratic in the file), while asking the cursor for the first child
/// ending on or after the row skips whole hidden subtrees. Children are in document order, so
/// that child is the one sought unless it starts after the row, and then no child is.
fn child_on_row(node: Node<'_>, row: usize) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let found = match row.checked_sub(1) {
        // Ending after the last column of the row before: ending on or after `row`.
        Some(before) => cursor
            .goto_first_child_for_point(tree_sitter::Point::new(before, u32::MAX as usize))
            .map(|_| cursor.node()),
        None => node.child(0),
    };
    found.filter(|child| child.start_position().row <= row && row <= child.end_position().row)
}

/// The 0-based row where the first syntax error of `tree` (an error or a missing node, in
/// document order) starts, if it has one.
fn first_error_row(tree: &tree_sitter::Tree) -> Option<usize> {
    let mut node = tree.root_node();
    for _ in 0..MAX_DEPTH {
        if node.is_error() || node.is_missing() {
            return Some(node.start_position().row);
        }
        let mut cursor = node.walk();
        let next = node
            .children(&mut cursor)
            .find(|c| c.has_error() || c.is_error() || c.is_missing())?;
        node = next;
    }
    Some(node.start_position().row)
}

impl Cx<'_> {
    /// The line opening the innermost definition containing 0-based line `target` without
    /// starting on it, as `(1-based number, text without the line break)`.
    fn enclosing(&self, tree: &tree_sitter::Tree, target: usize) -> Option<(u32, String)> {
        self.enclosing_row(tree, target)
            .0
            .map(|row| self.lines.numbered(row))
    }

    /// Where the line opening the innermost definition around 0-based lines `start + 1..=end`
    /// changes, from what it is at `start` ([`Chunk::inside`]): what [`Cx::enclosing_row`]
    /// finds for each of them. The path it walks from the root to a line is carried from line
    /// to line: a node on it that still holds the next line stays on it (no sibling before it
    /// can hold that line), so each node is reached once, not once per line.
    fn inside(&self, tree: &tree_sitter::Tree, start: usize, end: usize) -> Vec<Inside> {
        let mut runs = Vec::new();
        // The nodes from the root's child down to the line, each with whether it is a
        // definition.
        let mut path: Vec<(Node<'_>, bool)> = Vec::new();
        let mut current = None;
        for row in start..=end.min(self.lines.count().saturating_sub(1)) {
            while path.last().is_some_and(|(n, _)| n.end_position().row < row) {
                path.pop();
            }
            let mut node = path.last().map_or_else(|| tree.root_node(), |(n, _)| *n);
            while path.len() < MAX_DEPTH {
                let Some(child) = child_on_row(node, row) else {
                    break;
                };
                path.push((child, self.def_of(child, 0).is_some()));
                node = child;
            }
            let here = path
                .iter()
                .rev()
                .find(|(n, def)| *def && n.start_position().row < row)
                .map(|(n, _)| n.start_position().row);
            if row > start && here != current {
                runs.push(Inside {
                    line: one_based(row),
                    opening: here.map(|r| self.lines.numbered(r)),
                });
            }
            current = here;
        }
        runs
    }

    /// The 0-based row of the innermost definition containing 0-based line `target` without
    /// starting on it, and whether the answer is sound: no error node on the way, and none in
    /// the definition found — or, when none is found, none anywhere in the tree (a definition
    /// the parse could not close may have been cut short of `target`).
    fn enclosing_row(&self, tree: &tree_sitter::Tree, target: usize) -> (Option<usize>, bool) {
        let root = tree.root_node();
        if target >= self.lines.count() {
            return (None, !root.has_error());
        }
        let mut node = root;
        let mut found = None;
        let mut way = true;
        for _ in 0..MAX_DEPTH {
            let Some(child) = child_on_row(node, target) else {
                break;
            };
            way &= !child.is_error() && !child.is_missing();
            if child.start_position().row < target && self.def_of(child, 0).is_some() {
                found = Some((child.start_position().row, !child.has_error()));
            }
            node = child;
        }
        match found {
            Some((row, clean)) => (Some(row), way && clean),
            None => (None, way && !root.has_error()),
        }
    }
}

#[cfg(test)]
mod tests;
