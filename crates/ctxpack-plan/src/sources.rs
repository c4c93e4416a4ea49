//! The IO a plan needs, as a trait the caller implements.
//!
//! The plan crate never touches git, the store, the file system or a process. Evaluation asks a
//! [`Sources`] for each bound value; the `ctxpack` CLI implements it over the committed
//! snapshot, the index, document stores, artifacts and child processes, and tests implement it
//! over a table.

use crate::PlanError;
use crate::value::Value;

/// `read(path, lines: a..b, at: "sha", worktree: true)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    /// `/`-separated path relative to the repository root, normalised (no `.`, no `..`).
    pub path: String,
    /// First and last line, 1-based and inclusive; the whole file when absent.
    pub lines: Option<(u32, u32)>,
    /// `HEAD`, a full SHA or a unique hex prefix; `HEAD` when absent.
    pub at: Option<String>,
    /// Read the file as it is in the worktree instead of a commit.
    pub worktree: bool,
}

/// `query(goal, top: 10, at: "sha")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRequest {
    /// What to retrieve for.
    pub goal: String,
    /// How many hits.
    pub top: usize,
    /// The snapshot; `HEAD` when absent.
    pub at: Option<String>,
}

/// `docs(store, collection, field, query, filter: {…}, top: 10)`.
#[derive(Clone, Debug, PartialEq)]
pub struct DocsRequest {
    /// The document store directory (relative to the repository root unless absolute).
    pub store: String,
    /// The collection.
    pub collection: String,
    /// The string field that is ranked and packed (a dotted path).
    pub field: String,
    /// The query text.
    pub query: String,
    /// A MongoDB-style filter applied before ranking.
    pub filter: Option<serde_json::Value>,
    /// How many documents.
    pub top: usize,
}

/// `run("cargo test -p core")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRequest {
    /// The command as written.
    pub command: String,
    /// The program and its arguments, split without a shell.
    pub argv: Vec<String>,
}

/// The IO behind a plan's sources. `text("…")` needs none and is evaluated by the plan itself.
pub trait Sources {
    /// A file of a commit (or of the worktree).
    fn read(&self, request: &ReadRequest) -> Result<Value, PlanError>;
    /// Retrieval hits of a snapshot.
    fn query(&self, request: &QueryRequest) -> Result<Value, PlanError>;
    /// Documents of a collection, by similarity.
    fn docs(&self, request: &DocsRequest) -> Result<Value, PlanError>;
    /// A stored artifact's text.
    fn artifact(&self, id: &str) -> Result<Value, PlanError>;
    /// A command's output. Only called when the caller allowed commands.
    fn run(&self, request: &RunRequest) -> Result<Value, PlanError>;
}
