//! The symbol graph of one file: the names it defines, the modules and files it imports, and
//! the names it uses (called functions and methods, named types).
//!
//! Each language's module says which of its nodes import and which name a use; this module
//! walks the tree once, bounded, and resolves imports against repository paths by their shape
//! alone, without a build system: a module path (`crate::budget`, `httpx._models`,
//! `com.acme.Stack`, `"util/strings.h"`) reaches the files whose path without extension ends
//! with a leading part of it; a Go import path reaches the files of the directory it ends with;
//! a relative JavaScript import names one file from the importing file's directory.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use super::{ChunkOptions, Cx, Language, Limits, Lines, Rank, language_of, parse};

/// At most this many distinct names of each kind, and imports, are kept from one file.
const MAX_NAMES: usize = 4096;
/// A module path reaches a file through at most this many of its leading segments.
const MAX_MODULE_DEPTH: usize = 32;
/// At most this many nodes are visited in one file.
const MAX_NODES: usize = 2_000_000;
/// How many distinct imports of one file [`file_imports`] keeps.
const FILE_IMPORTS: usize = 256;
/// How much of a file's chunks with an import word [`file_imports`] parses, in bytes.
const FILE_IMPORT_BYTES: usize = 64 * 1024;

/// What one file defines, imports and uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbols {
    /// Names of the functions, methods, types, classes, traits and modules it defines
    /// (unqualified, sorted).
    pub definitions: Vec<String>,
    /// What it imports, resolved against its own path where the language makes an import
    /// relative (sorted).
    pub imports: Vec<Import>,
    /// Names it uses: the functions and methods it calls and the types it names (sorted).
    pub references: Vec<String>,
}

/// An import, by the shape of the paths it can reach.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Import {
    /// A module path: reaches a file whose path without its extension is, or ends with, a
    /// leading part of the segments (the longest part that names a file wins).
    Module(Vec<String>),
    /// A package directory (Go): reaches the files directly inside a directory that the
    /// segments end with.
    Package(Vec<String>),
    /// One file from the repository root, without its extension (`index` files too).
    File(String),
}

impl Import {
    /// Whether this import reaches the file at `path` (a repository path with `/`).
    pub fn reaches(&self, path: &str) -> bool {
        self.reach(path).is_some()
    }

    /// How closely this import reaches the file at `path`, if it does: for a module path,
    /// the number of its segments the file's path ends with (the longest such part); 1
    /// otherwise. Of the files one import reaches, those reached most closely are meant.
    pub fn reach(&self, path: &str) -> Option<usize> {
        let stem = stem(path);
        let reached = match self {
            Import::Module(segments) => {
                let stem = module_stem(stem);
                // Only the leading parts a module path can really have are tried, so a
                // hostile path of thousands of segments costs no more than a real one.
                return (1..=segments.len().min(MAX_MODULE_DEPTH))
                    .rev()
                    .find(|n| ends_with_segments(stem, &segments[..*n]));
            }
            Import::Package(segments) => {
                let (dir, _) = path.rsplit_once('/')?;
                segments.len() >= dir.split('/').count()
                    && segments
                        .iter()
                        .rev()
                        .zip(dir.split('/').rev())
                        .all(|(a, b)| a == b)
            }
            Import::File(file) => {
                stem == file || stem.strip_suffix("/index").is_some_and(|s| s == file)
            }
        };
        reached.then_some(1)
    }
}

/// Paths keyed by the one segment an import must match to reach each of them, so an import is
/// resolved against the few paths that share it instead of every path: a pack resolves up to
/// 256 imports of each of its best files against the thousands of files of its pool.
#[derive(Debug, Default)]
pub struct PathIndex<'a> {
    /// By the last segment of the stem, without a trailing `mod` or `__init__` (modules).
    by_module: HashMap<&'a str, Vec<&'a str>>,
    /// By the last segment of the directory (packages).
    by_directory: HashMap<&'a str, Vec<&'a str>>,
    /// By the stem, and by the stem without a trailing `/index` (files).
    by_stem: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> PathIndex<'a> {
    /// Indexes `paths` (repository paths with `/`).
    pub fn new(paths: impl IntoIterator<Item = &'a str>) -> PathIndex<'a> {
        let mut index = PathIndex::default();
        for path in paths {
            let stem = stem(path);
            let module = module_stem(stem);
            let last = |s: &'a str| s.rsplit('/').next().unwrap_or(s);
            index.by_module.entry(last(module)).or_default().push(path);
            if let Some((dir, _)) = path.rsplit_once('/') {
                index.by_directory.entry(last(dir)).or_default().push(path);
            }
            index.by_stem.entry(stem).or_default().push(path);
            if let Some(short) = stem.strip_suffix("/index") {
                index.by_stem.entry(short).or_default().push(path);
            }
        }
        index
    }

    /// The indexed paths `import` reaches, with how closely ([`Import::reach`]), by path: the
    /// same as asking every indexed path.
    pub fn reached(&self, import: &Import) -> Vec<(&'a str, usize)> {
        let mut candidates: Vec<&'a str> = match import {
            Import::Module(segments) => segments
                .iter()
                .take(MAX_MODULE_DEPTH)
                .filter_map(|s| self.by_module.get(s.as_str()))
                .flatten()
                .copied()
                .collect(),
            Import::Package(segments) => segments
                .last()
                .and_then(|s| self.by_directory.get(s.as_str()))
                .into_iter()
                .flatten()
                .copied()
                .collect(),
            Import::File(file) => self
                .by_stem
                .get(file.as_str())
                .into_iter()
                .flatten()
                .copied()
                .collect(),
        };
        candidates.sort_unstable();
        candidates.dedup();
        candidates
            .into_iter()
            .filter_map(|p| Some((p, import.reach(p)?)))
            .collect()
    }
}

/// A module's stem: a stem without a trailing `/mod` or `/__init__`, which stand for their
/// directory.
fn module_stem(stem: &str) -> &str {
    ["/mod", "/__init__"]
        .iter()
        .find_map(|tail| stem.strip_suffix(tail))
        .unwrap_or(stem)
}

/// `path` without the extension of its last segment.
fn stem(path: &str) -> &str {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    match path[name_start..].rfind('.') {
        Some(dot) if dot > 0 => &path[..name_start + dot],
        _ => path,
    }
}

/// Whether `stem` is `segments` joined by `/`, or ends with `/` and them.
fn ends_with_segments(stem: &str, segments: &[String]) -> bool {
    let mut rest = stem;
    for (i, segment) in segments.iter().rev().enumerate() {
        let Some(before) = rest.strip_suffix(segment.as_str()) else {
            return false;
        };
        if i + 1 == segments.len() {
            return before.is_empty() || before.ends_with('/');
        }
        let Some(before) = before.strip_suffix('/') else {
            return false;
        };
        rest = before;
    }
    false
}

/// The directory segments of a repository path (empty at the root).
pub(super) fn dir_of(path: &str) -> Vec<String> {
    match path.rsplit_once('/') {
        Some((dir, _)) => dir.split('/').map(str::to_owned).collect(),
        None => Vec::new(),
    }
}

/// `base` followed by `relative` (`/`-separated, with `.` and `..`), or None when it climbs
/// above the root.
pub(super) fn join_relative(base: &[String], relative: &str) -> Option<Vec<String>> {
    let mut out = base.to_vec();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            other => out.push(other.to_owned()),
        }
    }
    Some(out)
}

/// The symbol graph of the file at `path` (its language comes from the extension). A file in
/// no parsed language, or one that cannot be parsed, has an empty graph.
pub fn symbols(path: &str, text: &str) -> Symbols {
    let mut definitions = BTreeSet::new();
    let mut imports = BTreeSet::new();
    let mut references = BTreeSet::new();
    let mut found = Vec::new();
    each_node(path, text, |cx, node| {
        if definitions.len() < MAX_NAMES
            && let Some(def) = cx.def_of(node, 0).filter(|d| d.rank == Rank::Strong)
        {
            definitions.insert(def.name);
        }
        if imports.len() < MAX_NAMES {
            cx.imports(node, path, &mut found);
            imports.extend(found.drain(..));
        }
        if references.len() < MAX_NAMES
            && let Some(name) = cx.used_name(node).and_then(|n| cx.name_text(n))
        {
            references.insert(name);
        }
    });
    Symbols {
        definitions: definitions.into_iter().collect(),
        imports: imports.into_iter().collect(),
        references: references.into_iter().collect(),
    }
}

/// Whether `text`, as (part of) the file at `path`, holds one of its language's import words,
/// without which it imports nothing. In Rust the word must open a line's statement (after
/// attributes and a visibility): "use " is common in prose, and a chunk of a long string or
/// comment that says it parses slowly (cut inside the string, it is read as code) for nothing.
pub fn may_import(path: &str, text: &str) -> bool {
    let words: &[&str] = match language_of(path) {
        Some(Language::Rust) => return text.lines().any(opens_a_rust_import),
        Some(Language::Python | Language::Go | Language::Java) => &["import"],
        Some(Language::JavaScript | Language::TypeScript | Language::Tsx) => {
            &["import", "require", "from"]
        }
        Some(Language::C | Language::Cpp) => &["include"],
        Some(Language::Markdown) | None => return false,
    };
    words.iter().any(|w| text.contains(w))
}

/// Whether a line of Rust opens a `use` or `mod` item: `use a::b;`, `pub(crate) mod c;`,
/// `#[cfg(test)] mod tests;`.
fn opens_a_rust_import(line: &str) -> bool {
    let mut rest = line.trim_start();
    while let Some(attribute) = rest.strip_prefix("#[") {
        match attribute.find(']') {
            Some(end) => rest = attribute[end + 1..].trim_start(),
            None => return false,
        }
    }
    let rest = match rest.strip_prefix("pub") {
        Some(scoped) if scoped.starts_with('(') => match scoped.find(')') {
            Some(end) => scoped[end + 1..].trim_start(),
            None => return false,
        },
        Some(spaced) if spaced.starts_with(char::is_whitespace) => spaced.trim_start(),
        _ => rest,
    };
    rest.starts_with("use ") || rest.starts_with("mod ")
}

/// Only the imports of [`symbols`], for a file or a part of one that holds whole statements
/// (a chunk): text without any of its language's import words is not parsed at all.
pub fn imports(path: &str, text: &str) -> Vec<Import> {
    if !may_import(path, text) {
        return Vec::new();
    }
    let mut imports = BTreeSet::new();
    let mut found = Vec::new();
    each_node(path, text, |cx, node| {
        if imports.len() < MAX_NAMES {
            cx.imports(node, path, &mut found);
            imports.extend(found.drain(..));
        }
    });
    imports.into_iter().collect()
}

/// The imports of the file at `path` as ranking reads them, from its chunks' texts in order:
/// each chunk is parsed on its own (imports are whole statements, which chunks never cut), and
/// only a chunk with an import word. Imports open a file in every language the graph reads,
/// and a chunk with an import word deep in a large file is most often prose that says "use" (a
/// generated table of lint descriptions cost a pack 130 ms to parse, in chunks cut inside its
/// strings): chunks are parsed until [`FILE_IMPORT_BYTES`] have been. At most
/// [`FILE_IMPORTS`] distinct imports are kept, the first in their order, so a file with
/// thousands lends only a few. Indexing stores the result with the file version, and a pack
/// works it out from the chunks only for a version stored without it.
pub fn file_imports<'t>(path: &str, chunks: impl IntoIterator<Item = &'t str>) -> Vec<Import> {
    file_imports_known(path, chunks.into_iter().map(|text| (text, None)))
}

/// [`file_imports`], with the imports of some chunks known already (read from the file's own
/// parse, [`super::Chunk::imports`]): only the others are parsed.
pub(crate) fn file_imports_known<'t>(
    path: &str,
    chunks: impl IntoIterator<Item = (&'t str, Option<Vec<Import>>)>,
) -> Vec<Import> {
    let mut found: Vec<Import> = Vec::new();
    let mut parsed = 0;
    for (text, known) in chunks {
        if parsed >= FILE_IMPORT_BYTES {
            break;
        }
        if may_import(path, text) {
            parsed += text.len();
            found.extend(known.unwrap_or_else(|| imports(path, text)));
        }
    }
    found.sort();
    found.dedup();
    found.truncate(FILE_IMPORTS);
    found
}

/// [`file_imports`] as indexing stores them with a file version.
pub(crate) fn encode_imports(imports: &[Import]) -> String {
    serde_json::to_string(imports).unwrap_or_else(|_| "[]".to_owned())
}

/// What [`encode_imports`] stored; `None` for text that does not decode (a damaged row), whose
/// imports are then worked out from the chunks again. At most [`FILE_IMPORTS`] are read,
/// whatever the row holds.
pub(crate) fn decode_imports(stored: &str) -> Option<Vec<Import>> {
    let mut imports: Vec<Import> = serde_json::from_str(stored).ok()?;
    imports.truncate(FILE_IMPORTS);
    Some(imports)
}

/// The imports of the named nodes that lie within bytes `from..to` of a parsed file (a chunk's
/// lines): what parsing those lines alone finds, since a chunk never cuts a statement, without
/// parsing. The walk enters only nodes that overlap the range, starting each level at the
/// first child that reaches it and leaving it at the first that starts past it, so the chunks
/// of a large file are read in time proportional to their own nodes (at most [`MAX_NODES`]).
pub(super) fn imports_within(
    cx: &Cx<'_>,
    tree: &tree_sitter::Tree,
    path: &str,
    from: usize,
    to: usize,
) -> Vec<Import> {
    let mut imports = BTreeSet::new();
    let mut found = Vec::new();
    let mut cursor = tree.walk();
    'walk: for _ in 0..MAX_NODES {
        let node = cursor.node();
        let overlaps = node.start_byte() < to && node.end_byte() > from;
        if overlaps && node.is_named() && node.start_byte() >= from && node.end_byte() <= to {
            cx.imports(node, path, &mut found);
            imports.extend(found.drain(..));
            if imports.len() >= MAX_NAMES {
                break;
            }
        }
        if overlaps && cursor.goto_first_child_for_byte(from).is_some() {
            continue;
        }
        loop {
            // A sibling that starts past the range, and every one after it, lies outside it.
            if cursor.goto_next_sibling() && cursor.node().start_byte() < to {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    imports.into_iter().collect()
}

/// Calls `visit` on each named node of the parse of `text` as the file at `path`, in a
/// pre-order walk of at most [`MAX_NODES`] nodes that uses no recursion.
fn each_node(path: &str, text: &str, mut visit: impl FnMut(&Cx<'_>, Node<'_>)) {
    let Some(language) = language_of(path) else {
        return;
    };
    if text.is_empty() {
        return;
    }
    let lines = Lines::new(text);
    let Some((cx, tree)) = parse(
        language,
        text,
        &lines,
        Limits::new(&ChunkOptions::default()),
    ) else {
        return;
    };
    let mut cursor = tree.walk();
    for _ in 0..MAX_NODES {
        let node = cursor.node();
        if node.is_named() {
            visit(&cx, node);
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

impl Cx<'_> {
    /// The imports a node makes, for a file at `path`.
    fn imports(&self, node: Node<'_>, path: &str, out: &mut Vec<Import>) {
        match self.language {
            Language::Rust => self.rust_imports(node, path, out),
            Language::Python => self.python_imports(node, path, out),
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                self.script_imports(node, path, out)
            }
            Language::Go => self.go_imports(node, out),
            Language::Java => self.java_imports(node, out),
            Language::C | Language::Cpp => self.c_imports(node, path, out),
            Language::Markdown => {}
        }
    }

    /// The node naming what `node` uses: the callee of a call, a named type.
    fn used_name<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        match node.kind() {
            "type_identifier" => Some(node),
            "call_expression" | "call" => callee(node.child_by_field_name("function")?),
            "new_expression" => callee(node.child_by_field_name("constructor")?),
            "macro_invocation" => callee(node.child_by_field_name("macro")?),
            "method_invocation" => node.child_by_field_name("name"),
            "object_creation_expression" => callee(node.child_by_field_name("type")?),
            _ => None,
        }
    }

    /// The text of an identifier-like node, when it is a plain name.
    fn name_text(&self, node: Node<'_>) -> Option<String> {
        let text = self.src.get(node.byte_range())?;
        let plain = !text.is_empty()
            && text.len() <= super::MAX_SYMBOL_CHARS
            && text
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
        plain.then(|| text.to_owned())
    }

    /// The text of a string literal node without its quotes.
    pub(super) fn string_value(&self, node: Node<'_>) -> Option<String> {
        let text = self.src.get(node.byte_range())?;
        let value = text.trim_matches(['"', '\'', '`', '<', '>']);
        (!value.is_empty() && value.len() <= 1024).then(|| value.to_owned())
    }
}

/// The name at the end of a callee expression: `f`, `a.b.f`, `a::f`, `f::<T>`.
fn callee(node: Node<'_>) -> Option<Node<'_>> {
    let mut node = node;
    for _ in 0..8 {
        match node.kind() {
            "identifier" | "type_identifier" | "field_identifier" | "property_identifier" => {
                return Some(node);
            }
            "generic_function" | "generic_type" => {
                node = node
                    .child_by_field_name("function")
                    .or_else(|| node.child_by_field_name("type"))?;
            }
            _ => {
                node = ["field", "property", "attribute", "name"]
                    .iter()
                    .find_map(|f| node.child_by_field_name(f))?;
            }
        }
    }
    None
}

/// A module import from its segments joined by `/` (tests of every language use it).
#[cfg(test)]
pub(super) fn module(segments: &str) -> Import {
    Import::Module(segments.split('/').map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_index_reaches_what_every_path_reaches() {
        let paths = [
            "crates/core/src/budget.rs",
            "crates/core/src/budget/mod.rs",
            "crates/core/src/overbudget.rs",
            "httpx/_models.py",
            "httpx/__init__.py",
            "b.py",
            "README",
            "web/src/util/index.js",
            "web/src/util.js",
            "web/src/index",
            "pkg/strings/strings.go",
            "pkg/strings/builder.go",
            "strings/x.go",
            "a/a/a.rs",
            "mod.rs",
            "src/.hidden",
        ];
        let imports = [
            module("budget/Budget"),
            module("budget"),
            module("crate/budget"),
            module("httpx/_models/Request"),
            module("httpx/_models"),
            module("httpx"),
            module("a/b"),
            module("a/a/a"),
            module("a"),
            module("mod"),
            module(""),
            Import::Package(vec!["pkg".into(), "strings".into()]),
            Import::Package(vec!["strings".into()]),
            Import::Package(vec![]),
            Import::File("web/src/util".into()),
            Import::File("web/src".into()),
            Import::File("README".into()),
            Import::File("src/".into()),
        ];
        let index = PathIndex::new(paths);
        for import in &imports {
            let every: Vec<(&str, usize)> = paths
                .iter()
                .filter_map(|p| Some((*p, import.reach(p)?)))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(index.reached(import), every, "{import:?}");
        }
    }

    #[test]
    fn imports_reach_paths_by_shape() {
        let cases: &[(Import, &str, bool)] = &[
            (module("budget/Budget"), "crates/core/src/budget.rs", true),
            (module("budget"), "crates/core/src/budget/mod.rs", true),
            (module("budget"), "crates/core/src/overbudget.rs", false),
            (module("httpx/_models/Request"), "httpx/_models.py", true),
            (module("httpx/_models"), "httpx/__init__.py", true),
            (module("a/b"), "b.py", false),
            (
                Import::Package(vec!["github.com".into(), "gin".into(), "render".into()]),
                "render/json.go",
                true,
            ),
            (
                Import::Package(vec!["encoding".into(), "json".into()]),
                "internal/json/json.go",
                false,
            ),
            (Import::Package(vec!["x".into()]), "main.go", false),
            (Import::File("src/a/foo".into()), "src/a/foo.ts", true),
            (Import::File("src/a/foo".into()), "src/a/foo/index.js", true),
            (Import::File("src/a/foo".into()), "src/a/foobar.ts", false),
        ];
        for (import, path, expected) in cases {
            assert_eq!(import.reaches(path), *expected, "{import:?} → {path}");
        }
    }

    #[test]
    fn relative_paths_never_climb_above_the_root() {
        let base = dir_of("src/a/b.ts");
        assert_eq!(
            join_relative(&base, "../c/./d"),
            Some(vec!["src".to_owned(), "c".to_owned(), "d".to_owned()])
        );
        assert_eq!(join_relative(&base, "../../../x"), None);
    }

    #[test]
    fn imports_alone_match_the_whole_graph_and_skip_text_without_import_words() {
        let samples = [
            (
                "src/a.rs",
                "use crate::b::C;\nmod d;\nfn f() { use super::e; }\n",
            ),
            (
                "pkg/a.py",
                "import os\nfrom . import b\ndef f():\n    from .c import d\n",
            ),
            (
                "web/a.ts",
                "import x from './b'\nconst c = require('../c')\n",
            ),
            ("a.go", "package a\n\nimport \"x/y\"\n"),
            ("A.java", "import a.b.C;\nclass A {}\n"),
            ("a.c", "#include \"b.h\"\nint main() {}\n"),
        ];
        for (path, text) in samples {
            let whole = symbols(path, text).imports;
            assert!(!whole.is_empty(), "{path}");
            assert_eq!(imports(path, text), whole, "{path}");
        }
        assert!(imports("src/a.rs", "fn f() {}\n").is_empty());
        assert!(imports("README.md", "import x\n").is_empty());
    }

    #[test]
    fn chunks_read_their_imports_from_the_file_parse() {
        use crate::chunk::{ChunkOptions, chunk};
        // Imports at the top, inside functions and in a nested module, across several chunks.
        let helpers: String = (0..30)
            .map(|i| format!("fn helper_{i}() -> u32 {{\n    use crate::m{i}::X;\n    X\n}}\n\n"))
            .collect();
        let rust =
            format!("use crate::a::B;\nmod c;\n\n{helpers}mod inner {{\n    use super::d;\n}}\n");
        let python: String = std::iter::once("import os\nfrom . import b\n\n".to_owned())
            .chain(
                (0..30).map(|i| format!("def f{i}():\n    from .m{i} import x\n    return x\n\n")),
            )
            .collect();
        for (path, text) in [("src/a.rs", rust.as_str()), ("pkg/a.py", python.as_str())] {
            let chunks = chunk(path, text, &ChunkOptions::default());
            assert!(chunks.len() > 2, "{path}: {}", chunks.len());
            for c in &chunks {
                let alone = may_import(path, &c.text).then(|| imports(path, &c.text));
                assert_eq!(c.imports, alone, "{path}:{}", c.start_line);
            }
            let texts = || chunks.iter().map(|c| c.text.as_str());
            let known = chunks.iter().map(|c| c.imports.clone());
            assert_eq!(
                file_imports_known(path, texts().zip(known)),
                file_imports(path, texts())
            );
        }
        // A chunk cut inside a long macro: its text alone reads as code that imports, while the
        // file's parse knows those lines are tokens of the macro's body, which import nothing.
        let body: String = (0..70)
            .map(|i| format!("        let x{i} = {i};\n"))
            .collect();
        let text = format!(
            "macro_rules! event {{\n    () => {{{{\n{body}        use $crate::callsite::Callsite;\n    }}}};\n}}\n"
        );
        let chunks = chunk("src/macros.rs", &text, &ChunkOptions::default());
        let cut = chunks
            .iter()
            .find(|c| c.text.contains("use $crate"))
            .expect("a chunk holds the line");
        assert!(cut.start_line > 1, "{chunks:?}");
        assert!(!imports("src/macros.rs", &cut.text).is_empty());
        assert_eq!(cut.imports, Some(Vec::new()), "{cut:?}");
    }

    #[test]
    fn stored_imports_decode_to_what_was_stored_and_no_more() {
        let found = imports("src/a.rs", "use crate::b::C;\nmod d;\n");
        assert_eq!(decode_imports(&encode_imports(&found)), Some(found));
        for damaged in ["", "not json", "42", "[{\"Unknown\":1}]"] {
            assert_eq!(decode_imports(damaged), None, "{damaged}");
        }
        let many: Vec<Import> = (0..1000).map(|i| Import::File(format!("f{i}"))).collect();
        let read = decode_imports(&encode_imports(&many)).expect("decodes");
        assert_eq!(read.len(), FILE_IMPORTS);
    }

    #[test]
    fn rust_imports_are_looked_for_only_where_a_line_opens_one() {
        for opens in [
            "use a::b;\n",
            "    use super::c;\n",
            "pub use d::E;\n",
            "pub(crate) mod f;\n",
            "pub(in crate::g) use h::I;\n",
            "#[cfg(test)]\nmod tests;\n",
            "#[cfg(test)] mod tests;\n",
            "#[path = \"x.rs\"] #[allow(dead_code)] pub mod x;\n",
        ] {
            assert!(may_import("src/a.rs", opens), "{opens:?}");
        }
        // Prose, comments and strings that say the words, as a chunk cut inside a long string
        // or a table of descriptions holds them.
        for prose in [
            "Checks for the use of `unwrap`. Why is this bad? Prefer to use a match.\n",
            "    \"Denies the use of unsafe code\",\n",
            "// we use the cache here; see the mod docs\n",
            "let user = used; // refuse mode\n",
            "publish use x;\n",
            "#[unclosed use a;\n",
        ] {
            assert!(!may_import("src/a.rs", prose), "{prose:?}");
            assert!(imports("src/a.rs", prose).is_empty(), "{prose:?}");
        }
    }

    #[test]
    fn hostile_imports_stay_bounded() {
        // Braces nested far deeper than a use tree is followed.
        let deep = format!("use a::{}b{};\n", "{x, ".repeat(5_000), "}".repeat(5_000));
        let graph = symbols("src/a.rs", &deep);
        assert!(graph.imports.len() <= 256, "{}", graph.imports.len());
        // More distinct imports than a file may lend.
        let many: String = (0..10_000).map(|i| format!("import m{i}\n")).collect();
        assert_eq!(symbols("a.py", &many).imports.len(), MAX_NAMES);
        assert_eq!(imports("a.py", &many).len(), MAX_NAMES);
        // A module path of thousands of segments is tried by its leading parts only.
        let long_path = module(&format!("a/b{}", "/c".repeat(5_000)));
        assert_eq!(long_path.reach("src/a/b.rs"), Some(2));
        // Relative levels above the root, and an over-long specifier, import nothing.
        let dots = format!("from {} import x\n", ".".repeat(10_000));
        assert!(symbols("a/b.py", &dots).imports.is_empty());
        let long = format!("import x from './{}'\n", "a".repeat(5_000));
        assert!(symbols("a.ts", &long).imports.is_empty());
    }

    #[test]
    fn files_without_a_graph() {
        assert_eq!(symbols("notes.txt", "use a::b;"), Symbols::default());
        assert_eq!(symbols("a.rs", ""), Symbols::default());
        assert!(
            symbols("README.md", "# Title\n\nText.\n")
                .imports
                .is_empty()
        );
    }
}
