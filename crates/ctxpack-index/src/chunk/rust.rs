//! Rust.

use tree_sitter::Node;

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
