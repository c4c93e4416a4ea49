//! C and C++.

use tree_sitter::Node;

use super::graph::{Import, dir_of, join_relative};
use super::{Cx, Def, Rank, Scope};

impl Cx<'_> {
    /// C and C++.
    pub(super) fn c_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
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
}

impl Cx<'_> {
    /// `#include "a/b.h"` and `#include <a/b.h>` (see [`super::graph`]): a quoted include
    /// resolves against the including file's directory first; either reaches any file whose
    /// path without extension ends with the include's, so a header and its implementation
    /// both count.
    pub(super) fn c_imports(&self, node: Node<'_>, path: &str, out: &mut Vec<Import>) {
        if node.kind() != "preproc_include" {
            return;
        }
        let Some(target) = node.child_by_field_name("path") else {
            return;
        };
        let Some(include) = self.string_value(target) else {
            return;
        };
        let strip = |segments: Vec<String>| -> Vec<String> {
            let mut segments = segments;
            if let Some(last) = segments.last_mut()
                && let Some((stem, _)) = last.rsplit_once('.')
                && !stem.is_empty()
            {
                *last = stem.to_owned();
            }
            segments
        };
        if target.kind() == "string_literal"
            && let Some(local) = join_relative(&dir_of(path), &include)
        {
            out.push(Import::Module(strip(local)));
        }
        if let Some(plain) = join_relative(&[], &include) {
            out.push(Import::Module(strip(plain)));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::{module, symbols};

    #[test]
    fn c_and_cpp_graph() {
        let src = "#include <stdio.h>\n#include \"util/strings.h\"\n#include \"../common.h\"\n#include \"../../../up.h\"\n\nstruct point { int x; };\n\nstatic int norm(struct point *p) {\n    return trim_all(p->x) + abs(p->x);\n}\n";
        let s = symbols("src/geo/point.c", src);
        assert_eq!(s.definitions, ["norm", "point"]);
        assert_eq!(
            s.imports,
            [
                module("src/common"),
                module("src/geo/util/strings"),
                module("stdio"),
                module("util/strings"),
            ]
        );
        assert_eq!(s.references, ["abs", "point", "trim_all"]);
        assert!(module("util/strings").reaches("lib/util/strings.c"));
        let cpp = symbols(
            "src/shape.cpp",
            "#include \"shape.hpp\"\nnamespace geo { class Circle : Shape { double area() { return pi() * r; } }; }\n",
        );
        assert_eq!(cpp.imports, [module("shape"), module("src/shape")]);
        assert_eq!(cpp.definitions, ["Circle", "area", "geo"]);
        assert!(cpp.references.iter().any(|r| r == "pi"), "{cpp:?}");
    }
}
