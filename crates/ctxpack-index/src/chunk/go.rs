//! Go.

use tree_sitter::Node;

use super::{Cx, Def, Rank, Scope, first_of_kind};

impl Cx<'_> {
    pub(super) fn go_def(&self, node: Node<'_>, depth: usize) -> Option<Def> {
        match node.kind() {
            "function_declaration" | "type_spec" | "type_alias" | "method_elem" | "method_spec" => {
                self.named(node, "name", Rank::Strong)
            }
            "method_declaration" => {
                // Named the way Go documentation names it: `Server.Start`.
                let name = self.field_text(node, "name")?;
                let receiver = node
                    .child_by_field_name("receiver")
                    .and_then(|receiver| first_of_kind(receiver, "type_identifier", 32))
                    .and_then(|ty| self.text(ty));
                Some(Def {
                    name: match receiver {
                        Some(receiver) => format!("{receiver}.{name}"),
                        None => name,
                    },
                    rank: Rank::Strong,
                    scope: Scope::Own,
                })
            }
            "type_declaration" | "const_declaration" | "var_declaration" | "var_spec_list" => {
                self.first_def_child(node, depth)
            }
            "const_spec" | "var_spec" => self.named(node, "name", Rank::Weak),
            _ => None,
        }
    }
}
