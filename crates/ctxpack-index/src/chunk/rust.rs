//! Rust.

use tree_sitter::Node;

use super::graph::{Import, dir_of};
use super::{Cx, Def, Rank, Scope};

impl Cx<'_> {
    pub(super) fn rust_def(&self, node: Node<'_>) -> Option<Def> {
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
}

impl Cx<'_> {
    /// `use` declarations and `mod foo;` (see [`super::graph`]): a path from `crate` drops
    /// it, `self` and `super` resolve against the importing file's module, and a `{…}` list
    /// expands into one import each.
    pub(super) fn rust_imports(&self, node: Node<'_>, path: &str, out: &mut Vec<Import>) {
        match node.kind() {
            "use_declaration" => {
                let Some(text) = node
                    .child_by_field_name("argument")
                    .and_then(|a| self.src.get(a.byte_range()))
                else {
                    return;
                };
                let mut paths = Vec::new();
                expand_use(text, "", &mut paths, 0);
                out.extend(
                    paths
                        .iter()
                        .filter_map(|p| use_segments(p, path))
                        .map(Import::Module),
                );
            }
            "mod_item" if node.child_by_field_name("body").is_none() => {
                if let Some(name) = self.field_text(node, "name") {
                    let mut segments = module_dir(path);
                    segments.push(name);
                    out.push(Import::Module(segments));
                }
            }
            _ => {}
        }
    }
}

/// The directory of the module a Rust file defines: its own directory for `mod.rs`, `lib.rs`
/// and `main.rs`, else the directory its submodules live in (`src/a.rs` → `src/a`).
fn module_dir(path: &str) -> Vec<String> {
    let mut dir = dir_of(path);
    let name = path.rsplit('/').next().unwrap_or(path);
    if let Some(stem) = name.strip_suffix(".rs")
        && !matches!(stem, "mod" | "lib" | "main")
    {
        dir.push(stem.to_owned());
    }
    dir
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`, `a::b as c`, `a::*`) into its paths, joined to
/// `prefix`, at most 256 of them and 8 braces deep.
fn expand_use(text: &str, prefix: &str, out: &mut Vec<String>, depth: usize) {
    if depth > 8 || out.len() >= 256 {
        return;
    }
    let text = text.trim();
    let Some(open) = text.find('{') else {
        let text = text.split(" as ").next().unwrap_or(text).trim();
        let text = text.trim_end_matches("::*").trim_end_matches("::");
        let joined = format!("{prefix}{text}");
        if !joined.is_empty() {
            out.push(joined);
        }
        return;
    };
    let head = format!("{prefix}{}", &text[..open]);
    let inner = text[open + 1..]
        .trim_end()
        .strip_suffix('}')
        .unwrap_or(&text[open + 1..]);
    let mut level = 0usize;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => level += 1,
            '}' => level = level.saturating_sub(1),
            ',' if level == 0 => {
                expand_use(&inner[start..i], &head, out, depth + 1);
                start = i + 1;
            }
            _ => {}
        }
    }
    expand_use(&inner[start..], &head, out, depth + 1);
}

/// The module segments a `use` path names from the file at `path`, or None for a path that
/// climbs above the root.
fn use_segments(use_path: &str, path: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = use_path
        .split("::")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let (mut segments, rest) = match parts.first().copied() {
        Some("crate") => (Vec::new(), &parts[1..]),
        Some("self" | "super") => {
            let mut dir = module_dir(path);
            let mut taken = 0;
            for part in &parts {
                match *part {
                    "self" => {}
                    "super" => {
                        dir.pop()?;
                    }
                    _ => break,
                }
                taken += 1;
            }
            (dir, &parts[taken..])
        }
        _ => (Vec::new(), &parts[..]),
    };
    segments.extend(
        rest.iter()
            .filter(|p| **p != "self")
            .map(|p| (*p).to_owned()),
    );
    (!segments.is_empty()).then_some(segments)
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::{module, symbols};

    #[test]
    fn rust_graph() {
        let src = r#"use std::fmt;
use crate::budget::{Budget, select::{self, Policy as P}};
use super::meter::*;
use self::inner::Thing;
mod render;
mod inline { fn hidden() {} }

pub struct Pack { budget: Budget }

impl fmt::Display for Pack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = count_tokens(&self.budget).max(1);
        write!(f, "{n}")
    }
}
"#;
        let s = symbols("crates/core/src/pack.rs", src);
        assert_eq!(
            s.definitions,
            [
                "Pack",
                "fmt",
                "fmt::Display for Pack",
                "hidden",
                "inline",
                "render"
            ]
        );
        assert_eq!(
            s.imports,
            [
                module("budget/Budget"),
                module("budget/select"),
                module("budget/select/Policy"),
                module("crates/core/src/meter"),
                module("crates/core/src/pack/inner/Thing"),
                module("crates/core/src/pack/render"),
                module("std/fmt"),
            ]
        );
        for name in ["Budget", "Formatter", "count_tokens", "max", "write"] {
            assert!(s.references.iter().any(|r| r == name), "{name}: {s:?}");
        }
        assert!(module("budget/Budget").reaches("crates/core/src/budget.rs"));
        assert!(
            module("crates/core/src/pack/render").reaches("crates/core/src/pack/render/mod.rs")
        );
    }
}
