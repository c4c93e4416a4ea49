//! JavaScript, TypeScript and TSX.

use tree_sitter::Node;

use super::graph::{Import, dir_of, join_relative};
use super::{Cx, Def, Rank, Scope};

impl Cx<'_> {
    /// JavaScript, TypeScript and TSX.
    pub(super) fn script_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
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

impl Cx<'_> {
    /// Relative module specifiers (`./a`, `../b/c.js`) of `import … from`, `export … from`,
    /// `require(…)` and `import(…)`, resolved against the importing file's directory (see
    /// [`super::graph`]). Package specifiers name no file of the repository by their shape.
    pub(super) fn script_imports(&self, node: Node<'_>, path: &str, out: &mut Vec<Import>) {
        let source = match node.kind() {
            "import_statement" | "export_statement" => node.child_by_field_name("source"),
            "call_expression" => {
                let callee = node.child_by_field_name("function");
                let by_name = callee.is_some_and(|c| {
                    c.kind() == "import"
                        || (c.kind() == "identifier"
                            && self.src.get(c.byte_range()) == Some("require"))
                });
                by_name
                    .then(|| node.child_by_field_name("arguments"))
                    .flatten()
                    .and_then(|a| a.named_child(0))
                    .filter(|a| a.kind() == "string")
            }
            _ => None,
        };
        let Some(specifier) = source.and_then(|s| self.string_value(s)) else {
            return;
        };
        if !(specifier.starts_with("./") || specifier.starts_with("../")) {
            return;
        }
        let Some(segments) = join_relative(&dir_of(path), &specifier) else {
            return;
        };
        let joined = segments.join("/");
        let file = match joined.rsplit_once('.') {
            Some((stem, ext)) if !stem.ends_with('/') && !ext.contains('/') => stem.to_owned(),
            _ => joined,
        };
        out.push(Import::File(file));
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::{Import, symbols};

    #[test]
    fn script_graph() {
        let src = "import { createServer } from './server/index.js'\nimport path from 'node:path'\nexport { load } from '../config'\nconst utils = require('./utils')\nconst lazy = () => import('./lazy.ts')\n\nexport class Dev extends Base {\n  start(): Server {\n    return createServer(path.join('a'), new Watcher())\n  }\n}\n";
        for file in [
            "packages/vite/src/node/cli.ts",
            "packages/vite/src/node/cli.js",
        ] {
            let s = symbols(file, src);
            assert_eq!(s.definitions, ["Dev", "lazy", "start"], "{file}");
            let expected: Vec<Import> = [
                "packages/vite/src/config",
                "packages/vite/src/node/lazy",
                "packages/vite/src/node/server/index",
                "packages/vite/src/node/utils",
            ]
            .iter()
            .map(|f| Import::File((*f).to_owned()))
            .collect();
            assert_eq!(s.imports, expected, "{file}");
            for name in ["Watcher", "createServer", "join", "require"] {
                assert!(s.references.iter().any(|r| r == name), "{name}: {s:?}");
            }
        }
        let server = Import::File("packages/vite/src/node/server".to_owned());
        assert!(server.reaches("packages/vite/src/node/server/index.ts"));
        assert!(
            symbols("a.ts", "import x from '../../x'\n")
                .imports
                .is_empty()
        );
    }
}
