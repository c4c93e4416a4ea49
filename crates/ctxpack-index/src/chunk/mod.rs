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
mod enclosing;
mod go;
pub mod graph;
mod java;
mod lines;
mod markdown;
mod python;
mod rust;
mod script;

pub use enclosing::{enclosing_from, enclosing_lines};
use lines::{Limits, Lines, Span, covers, merge_small, windows};

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
    /// What it imports, read from the same parse, when its text holds an import word of its
    /// language ([`graph::may_import`]); `None` when it holds none or the file was not parsed.
    pub imports: Option<Vec<graph::Import>>,
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
            imports: code
                .filter(|_| graph::may_import(path, lines.slice(span.start, span.end)))
                .map(|(cx, tree)| {
                    let (from, to) = lines.bytes(span.start, span.end);
                    graph::imports_within(cx, tree, path, from, to)
                }),
        })
        .collect()
}

fn one_based(line: usize) -> u32 {
    u32::try_from(line + 1).unwrap_or(u32::MAX)
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

pub(crate) fn grammar(language: Language) -> tree_sitter::Language {
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

#[cfg(test)]
mod tests;
