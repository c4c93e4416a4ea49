//! Java.

use tree_sitter::Node;

use super::{Cx, Def, Rank};

impl Cx<'_> {
    pub(super) fn java_def(&self, node: Node<'_>) -> Option<Def> {
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
}
