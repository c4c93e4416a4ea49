//! C and C++.

use tree_sitter::Node;

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
