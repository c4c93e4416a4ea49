//! Go.

use tree_sitter::Node;

use super::graph::Import;
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

impl Cx<'_> {
    /// Import specs: a package path reaches the directory it ends with (see
    /// [`super::graph`]).
    pub(super) fn go_imports(&self, node: Node<'_>, out: &mut Vec<Import>) {
        if node.kind() != "import_spec" {
            return;
        }
        let Some(spec) = node
            .child_by_field_name("path")
            .and_then(|p| self.string_value(p))
        else {
            return;
        };
        out.push(Import::Package(
            spec.split('/').map(str::to_owned).collect(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::{Import, symbols};

    #[test]
    fn go_graph() {
        let src = "package gin\n\nimport (\n\t\"net/http\"\n\tr \"github.com/gin-gonic/gin/render\"\n)\n\ntype Context struct{ w http.ResponseWriter }\n\nfunc (c *Context) JSON(code int, obj any) {\n\tc.Render(code, r.JSON{Data: obj})\n\twriteHeader(c.w)\n}\n";
        let s = symbols("context.go", src);
        assert_eq!(s.definitions, ["Context", "Context.JSON"]);
        let package = |p: &str| Import::Package(p.split('/').map(str::to_owned).collect());
        assert_eq!(
            s.imports,
            [
                package("github.com/gin-gonic/gin/render"),
                package("net/http")
            ]
        );
        for name in ["Context", "Render", "writeHeader"] {
            assert!(s.references.iter().any(|r| r == name), "{name}: {s:?}");
        }
        assert!(s.imports[0].reaches("render/json.go"));
        assert!(!s.imports[0].reaches("context.go"));
    }
}
