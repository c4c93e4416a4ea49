//! JavaScript, TypeScript and TSX.

use tree_sitter::Node;

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
