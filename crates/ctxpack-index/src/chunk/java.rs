//! Java.

use tree_sitter::Node;

use super::graph::Import;
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

impl Cx<'_> {
    /// `import a.b.C;`, `import static a.b.C.m;` and `import a.b.*;` (see
    /// [`super::graph`]).
    pub(super) fn java_imports(&self, node: Node<'_>, out: &mut Vec<Import>) {
        if node.kind() != "import_declaration" {
            return;
        }
        let mut cursor = node.walk();
        let Some(name) = node
            .named_children(&mut cursor)
            .find(|c| matches!(c.kind(), "scoped_identifier" | "identifier"))
            .and_then(|n| self.src.get(n.byte_range()))
        else {
            return;
        };
        let segments: Vec<String> = name.split('.').map(|s| s.trim().to_owned()).collect();
        let wildcard = node
            .children(&mut node.walk())
            .any(|c| c.kind() == "asterisk");
        out.push(if wildcard {
            Import::Package(segments)
        } else {
            Import::Module(segments)
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::{Import, symbols};

    #[test]
    fn java_graph() {
        let src = "package com.acme.app;\n\nimport com.acme.util.Strings;\nimport static com.acme.util.Checks.notNull;\nimport java.util.*;\n\npublic class Stack {\n    public Item pop() {\n        notNull(top);\n        return new Item(Strings.trim(top.name));\n    }\n}\n";
        let s = symbols("src/main/java/com/acme/app/Stack.java", src);
        assert_eq!(s.definitions, ["Stack", "pop"]);
        let parts = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            s.imports,
            [
                Import::Module(parts("com.acme.util.Checks.notNull")),
                Import::Module(parts("com.acme.util.Strings")),
                Import::Package(parts("java.util")),
            ]
        );
        for name in ["Item", "notNull", "trim"] {
            assert!(s.references.iter().any(|r| r == name), "{name}: {s:?}");
        }
        assert!(s.imports[0].reaches("src/main/java/com/acme/util/Checks.java"));
    }
}
