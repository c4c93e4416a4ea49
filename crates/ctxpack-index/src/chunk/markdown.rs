//! Markdown.

use tree_sitter::Node;

use super::{Cx, Def, Rank, Scope};

impl Cx<'_> {
    pub(super) fn markdown_def(&self, node: Node<'_>) -> Option<Def> {
        let heading = match node.kind() {
            "section" => node
                .named_child(0)
                .filter(|child| matches!(child.kind(), "atx_heading" | "setext_heading"))?,
            "atx_heading" | "setext_heading" => node,
            _ => return None,
        };
        let name = if heading.kind() == "atx_heading" {
            let mut cursor = heading.walk();
            let inline = heading
                .named_children(&mut cursor)
                .find(|child| child.kind() == "inline");
            match inline {
                Some(inline) => self.text(inline)?,
                None => self
                    .text(heading)?
                    .trim_matches(|c: char| c == '#' || c.is_whitespace())
                    .to_owned(),
            }
        } else {
            let paragraph = heading
                .named_child(0)
                .filter(|child| child.kind() == "paragraph")?;
            self.text(paragraph)?
        };
        (!name.is_empty()).then_some(Def {
            name,
            rank: Rank::Strong,
            scope: Scope::Own,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::symbols;

    #[test]
    fn markdown_defines_its_headings_and_imports_nothing() {
        let s = symbols(
            "docs/guide.md",
            "# Guide\n\nSee [x](../x.md).\n\n## Setup\n\nText.\n",
        );
        assert_eq!(s.definitions, ["Guide", "Setup"]);
        assert!(s.imports.is_empty() && s.references.is_empty(), "{s:?}");
    }
}
