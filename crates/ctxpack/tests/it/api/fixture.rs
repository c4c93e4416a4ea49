//! Real git repositories built with `git`, and workspaces over them.

use std::path::Path;

use ctxpack_api::{
    Access, Control, IndexRequest, IndexSummary, QueryHit, QueryRequest, Workspace,
    WorkspaceOptions,
};
pub use ctxpack_testkit::git::git as git_in;
pub use ctxpack_testkit::{Fixture, Script};

/// Workspaces over a fixture.
pub trait Workspaces {
    /// A read-write workspace over the repository and its default store.
    fn workspace(&self) -> Workspace {
        self.workspace_with(Access::ReadWrite, None)
    }

    /// A workspace with the given access and store.
    fn workspace_with(&self, access: Access, store: Option<&Path>) -> Workspace;
}

impl Workspaces for Fixture {
    fn workspace_with(&self, access: Access, store: Option<&Path>) -> Workspace {
        Workspace::open(WorkspaceOptions {
            cwd: self.path().to_owned(),
            store: store.map(Path::to_owned),
            access,
            caller: None,
        })
        .expect("the workspace opens")
    }
}

/// A repository of `files` files of budget code, each an impl of four methods of 40 lines
/// whose every line is its own: packs under 12,000 tokens cut its chunks.
pub fn budget_impls(files: usize) -> Fixture {
    let f = Fixture::new();
    for file in 0..files {
        let mut text =
            format!("//! Budgets {file}.\n\npub struct Budget{file};\n\nimpl Budget{file} {{\n");
        for function in 0..4 {
            text.push_str(&format!(
                "    /// Enforces the budget, step {function}.\n    pub fn enforce_{function}(&self, cost: u64) -> bool {{\n"
            ));
            for line in 0..40 {
                text.push_str(&format!(
                    "        let budget_{file}_{function}_{line} = cost + {line}; // enforce the budget\n"
                ));
            }
            text.push_str("        cost < 10\n    }\n\n");
        }
        text.push_str("}\n");
        f.write(&format!("src/budget_{file}.rs"), &text);
    }
    f.commit("budgets");
    f
}

/// Source of a small Rust file about budgets.
pub const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
/// A README.
pub const README: &str = "# Demo\n\nA tiny project about cakes and recipes.\n";
/// A config file with a secret in it.
pub const CONFIG: &str = "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1\n";

/// One 44-line Rust function, `reconcile_ledger`: a doc comment and signature naming the
/// ledger, then 40 numbered steps, the 28th (line 30) the only one about an overflow check.
pub fn ledger_chunk() -> String {
    let mut body = String::from(
        "/// Reconciles the ledger.\npub fn reconcile_ledger(entries: &[u64]) -> u64 {\n",
    );
    for i in 0..40 {
        let note = if i == 27 {
            "ledger overflow check"
        } else {
            "ledger step"
        };
        body.push_str(&format!(
            "    let step_{i} = entries.len() as u64 + {i}; // {note}\n"
        ));
    }
    body.push_str("    0\n}\n");
    body
}

/// The script of [`project`].
pub fn project_script() -> Script {
    let mut script = Script::new();
    script
        .write("src/budget.rs", BUDGET_RS)
        .write("README.md", README)
        .write("config.env", CONFIG)
        .write("assets/logo.bin", "\u{0}\u{1}binary")
        .commit("first");
    script
}

/// A small project with code, a README, a secret and a binary, committed once.
pub fn project() -> (Fixture, String) {
    let repo = project_script().build();
    (repo.checkout(), repo.head().to_owned())
}

/// Indexes `at`, which must succeed.
pub fn index_at(workspace: &Workspace, at: &str) -> IndexSummary {
    workspace
        .index(
            &IndexRequest {
                at: at.to_owned(),
                ..IndexRequest::default()
            },
            &Control::new(),
        )
        .unwrap_or_else(|e| panic!("indexing {at}: {e}"))
}

/// A small deterministic generator, so the fixture is the same on every run.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// The top ten hits for `goal` at `at`.
pub fn top_hits(workspace: &Workspace, goal: &str, at: &str) -> Vec<QueryHit> {
    workspace
        .query(&QueryRequest {
            goal: goal.into(),
            at: at.to_owned(),
            top_k: 10,
            ..QueryRequest::default()
        })
        .expect("query")
        .hits
}

/// Where `path`'s first hit ranks among `hits` (0 is the best); panics when it is not there.
pub fn rank_of(hits: &[QueryHit], path: &str) -> usize {
    hits.iter()
        .position(|h| h.path.as_deref() == Some(path))
        .unwrap_or_else(|| panic!("{path} is not among the hits: {hits:#?}"))
}

/// The score breakdown of `path`'s first hit among `hits`.
pub fn parts<'a>(hits: &'a [QueryHit], path: &str) -> Option<&'a ctxpack_api::ScoreParts> {
    hits.iter()
        .find(|h| h.path.as_deref() == Some(path))
        .map(|h| &h.score_breakdown)
}

/// Replaces the text of the first stored chunk of `path` in the store of `f` with what `edit`
/// makes of it, with a checksum that matches: a change only the git objects (or the rules it
/// was masked by) can tell. Returns the new text.
pub fn rewrite_chunk(f: &Fixture, path: &str, edit: impl FnOnce(&str) -> String) -> String {
    let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("open");
    let (id, text): (i64, String) = conn
        .query_row(
            "SELECT c.id, c.text FROM chunks c JOIN files f ON f.id = c.file_id \
             WHERE f.path = ?1 ORDER BY c.id LIMIT 1",
            [path],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a chunk");
    let changed = edit(&text);
    assert_ne!(changed, text);
    conn.execute(
        "UPDATE chunks SET text = ?1, checksum = ?2 WHERE id = ?3",
        rusqlite::params![changed, ctxpack_store::checksum(changed.as_bytes()), id],
    )
    .expect("rewrite the chunk");
    changed
}
