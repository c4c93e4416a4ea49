//! Python.

use tree_sitter::Node;

use super::graph::{Import, dir_of};
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

impl Cx<'_> {
    /// `import a.b` and `from a.b import c` (see [`super::graph`]); a relative import
    /// (`from ..a import b`) resolves against the importing file's package.
    pub(super) fn python_imports(&self, node: Node<'_>, path: &str, out: &mut Vec<Import>) {
        let dotted = |node: Node<'_>| -> Option<Vec<String>> {
            let node = match node.kind() {
                "aliased_import" => node.child_by_field_name("name")?,
                _ => node,
            };
            (node.kind() == "dotted_name").then_some(())?;
            let text = self.src.get(node.byte_range())?;
            Some(text.split('.').map(|s| s.trim().to_owned()).collect())
        };
        let mut cursor = node.walk();
        match node.kind() {
            "import_statement" => {
                for name in node.children_by_field_name("name", &mut cursor) {
                    out.extend(dotted(name).map(Import::Module));
                }
            }
            "import_from_statement" => {
                let Some(module) = node.child_by_field_name("module_name") else {
                    return;
                };
                let base = if module.kind() == "relative_import" {
                    let text = self.src.get(module.byte_range()).unwrap_or("");
                    let dots = text.chars().take_while(|c| *c == '.').count();
                    let mut dir = dir_of(path);
                    for _ in 1..dots {
                        if dir.pop().is_none() {
                            return;
                        }
                    }
                    let mut inner = module.walk();
                    let rest = module
                        .named_children(&mut inner)
                        .find_map(&dotted)
                        .unwrap_or_default();
                    dir.extend(rest);
                    dir
                } else {
                    match dotted(module) {
                        Some(base) => base,
                        None => return,
                    }
                };
                let mut any = false;
                for name in node.children_by_field_name("name", &mut cursor) {
                    if let Some(name) = dotted(name) {
                        let mut segments = base.clone();
                        segments.extend(name);
                        out.push(Import::Module(segments));
                        any = true;
                    }
                }
                if !any && !base.is_empty() {
                    out.push(Import::Module(base));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::graph::{module, symbols};

    #[test]
    fn python_graph() {
        let src = "import os.path\nimport httpx._models as m\nfrom ._client import Client, AsyncClient as AC\nfrom .. import config\nfrom ..utils.text import *\n\nclass Transport(Base):\n    def send(self, request):\n        return Client(request).build(m.Request())\n";
        let s = symbols("httpx/_transports/default.py", src);
        assert_eq!(s.definitions, ["Transport", "send"]);
        assert_eq!(
            s.imports,
            [
                module("httpx/_models"),
                module("httpx/_transports/_client/AsyncClient"),
                module("httpx/_transports/_client/Client"),
                module("httpx/config"),
                module("httpx/utils/text"),
                module("os/path"),
            ]
        );
        assert_eq!(s.references, ["Client", "Request", "build"]);
        assert!(module("httpx/_models").reaches("httpx/_models.py"));
        assert!(module("httpx/config").reaches("httpx/config/__init__.py"));
        // Climbing above the root imports nothing.
        assert!(symbols("a.py", "from ... import x\n").imports.is_empty());
    }
}
