//! Real git repositories built with `git`, and workspaces over them.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxpack_api::{
    Access, Control, IndexRequest, IndexSummary, QueryHit, QueryRequest, Workspace,
    WorkspaceOptions,
};

/// A temporary git repository.
pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// An empty repository on branch `main`.
    pub fn new() -> Fixture {
        let fixture = Fixture {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture.git(&["config", "user.name", "Test"]);
        fixture.git(&["config", "user.email", "test@example.invalid"]);
        fixture.git(&["config", "commit.gpgsign", "false"]);
        fixture
    }

    /// The repository root (canonical).
    pub fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().expect("canonical temp dir")
    }

    /// The default store directory.
    pub fn store(&self) -> PathBuf {
        self.path().join(".ctxpack")
    }

    /// Runs git in the repository and returns its trimmed stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(self.dir.path(), args)
    }

    /// Writes a file (creating its directories).
    pub fn write(&self, path: &str, text: &str) {
        let full: PathBuf = self.dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, text).expect("write");
    }

    /// Commits everything and returns the new HEAD.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Commits everything at a fixed date and returns the new HEAD: the same content and
    /// messages give the same commit in every fixture.
    pub fn commit_fixed(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        let date = [
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
        ];
        git_with(self.dir.path(), &["commit", "-q", "-m", message], &date);
        self.git(&["rev-parse", "HEAD"])
    }

    /// A read-write workspace over the repository and its default store.
    pub fn workspace(&self) -> Workspace {
        self.workspace_with(Access::ReadWrite, None)
    }

    /// A workspace with the given access and store.
    pub fn workspace_with(&self, access: Access, store: Option<&Path>) -> Workspace {
        Workspace::open(WorkspaceOptions {
            cwd: self.path(),
            store: store.map(Path::to_owned),
            access,
            caller: None,
        })
        .expect("the workspace opens")
    }
}

/// Source of a small Rust file about budgets.
pub const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
/// A README.
pub const README: &str = "# Demo\n\nA tiny project about cakes and recipes.\n";
/// A config file with a secret in it.
pub const CONFIG: &str = "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1\n";

/// A small project with code, a README, a secret and a binary, committed once.
pub fn project() -> (Fixture, String) {
    let f = Fixture::new();
    f.write("src/budget.rs", BUDGET_RS);
    f.write("README.md", README);
    f.write("config.env", CONFIG);
    f.write("assets/logo.bin", "\u{0}\u{1}binary");
    let sha = f.commit("first");
    (f, sha)
}

/// Runs git in `dir` with no user or system configuration (commits need no identity) and
/// returns its trimmed stdout.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    git_with(dir, args, &[])
}

/// [`git_in`] with more environment variables.
fn git_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .envs(env.iter().copied())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
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
