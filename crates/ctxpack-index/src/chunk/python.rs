//! Python.

use tree_sitter::Node;

use super::{Cx, Def, Rank, Scope};

impl Cx<'_> {
    pub(super) fn python_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
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
}
