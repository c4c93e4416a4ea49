//! The one Rust API of ctxpack: the best evidence for a task, inside a hard token budget,
//! every piece cited.
//!
//! Open a [`Workspace`] (a repository and its store), build a typed request — a plain struct
//! whose [`Default`] is ctxpack's default, so callers write
//! `SnapshotPackRequest { goal, ..Default::default() }` — and get data back: a pack, an index
//! summary, a ledger entry. Rendering a pack (text, Markdown, XML, canonical JSON; three views)
//! is a pure function of the data: [`render`]. Every failure is one [`Error`] whose
//! [`kind`](Error::kind) tells a front end how to report it, whose [`field`](Error::field)
//! names the request field at fault, and whose [`hint`](Error::hint) says what to do next as
//! data. Long operations take a [`Control`] for progress events and cancellation.
//!
//! The command line, the MCP server and any other front end are adapters over this crate:
//! defaults, masking, errors and the ledger are decided here once, so every surface behaves
//! the same. This crate depends on no command-line, protocol, terminal or async crate.
//!
//! ```
//! use ctxpack_api::{
//!     Budget, Control, IndexRequest, Meter, SnapshotPackRequest, Workspace, WorkspaceOptions,
//!     PackOptions,
//! };
//!
//! // A repository to pack from.
//! let dir = tempfile::tempdir()?;
//! let git = |args: &[&str]| {
//!     let status = std::process::Command::new("git")
//!         .args(args)
//!         .current_dir(dir.path())
//!         .env("GIT_CONFIG_GLOBAL", "/dev/null")
//!         .env("GIT_CONFIG_NOSYSTEM", "1")
//!         .status()
//!         .expect("git runs");
//!     assert!(status.success(), "git {args:?}");
//! };
//! git(&["init", "-q", "-b", "main"]);
//! std::fs::write(
//!     dir.path().join("budget.rs"),
//!     "/// Admits a hit only if it fits the remaining budget.\n\
//!      pub fn enforce_budget(remaining: u64, cost: u64) -> bool { cost <= remaining }\n",
//! )?;
//! git(&["add", "-A"]);
//! git(&["-c", "user.name=A", "-c", "user.email=a@example.invalid", "commit", "-q", "-m", "budgets"]);
//!
//! // Open it, index HEAD, and pack a goal within 8,000 o200k tokens.
//! let workspace = Workspace::open(WorkspaceOptions {
//!     cwd: dir.path().to_owned(),
//!     ..WorkspaceOptions::default()
//! })?;
//! workspace.index(&IndexRequest::default(), &Control::new())?;
//! let built = workspace.snapshot_pack(
//!     &SnapshotPackRequest {
//!         goal: "how are budgets enforced".into(),
//!         budget: Budget::new(8000)?,
//!         meter: Meter::O200k,
//!         ..SnapshotPackRequest::default()
//!     },
//!     &PackOptions::default(),
//! )?;
//! for hit in &built.pack.hits {
//!     println!("{}", hit.candidate.citation);
//! }
//! assert!(built.pack.hits[0].candidate.citation.as_str().starts_with("budget.rs#L1-L2@"));
//! assert!(built.pack.used <= 8000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Stability
//!
//! This crate follows semantic versioning from 1.0 on; before 1.0 a minor release may break
//! it, and the changelog says how. Request types are plain structs with public fields: new
//! fields are added with a default that keeps the old behaviour, so code that builds requests
//! with `..Default::default()` keeps compiling across minor releases (a struct literal that
//! names every field does not). Enums that may grow ([`ErrorKind`], [`Hint`]) are
//! `#[non_exhaustive]`. A changed `Default` — a better measured default — is a minor release,
//! and is called out in the changelog.

mod artifacts;
pub mod config;
mod control;
mod cores;
pub mod docs;
mod duration;
/// Syntax highlighting of a file's text as its language, for front ends that show code.
pub mod highlight {
    pub use ctxpack_index::highlight::{Tag, highlight};
}
mod error;
mod eval;
mod fit;
mod gc;
pub mod hooks;
mod index;
mod ledger;
mod limits;
mod mask;
pub mod plan;
mod published;
pub mod remote;
pub mod schema;
mod select;
pub mod server;
mod session;
mod snapshot;
mod status;
mod verify;
mod workspace;
mod worktree;

pub use artifacts::{ArtifactAddRequest, ArtifactInfo, ArtifactScope};
pub use control::{Canceller, Control, Progress};
pub use duration::parse_duration;
pub use error::{Ancestor, Error, ErrorKind, Hint, Result};
pub use eval::{
    DEFAULT_MINED_TASKS, DEFAULT_MINING_SCAN, EvalReport, EvalRequest, EvalRow, EvalTask, Gold,
    IndexSeconds, candidates_for, parse_tasks,
};
pub use gc::{GcRequest, GcSummary};
pub use index::{IndexRequest, IndexSummary};
pub use ledger::{DEFAULT_LOG_LIMIT, Log, LogEntry, LogFilter, LogPage, MAX_LOG_LIMIT, Shown};
pub use limits::{LEDGER_QUOTA_PER_DAY, LedgerQuota, MAX_GOAL_BYTES};
pub use select::{SelectRequest, select};
pub use session::{
    MAX_RECALL, MAX_SESSION_ID_CHARS, MemorySessions, SessionLimits, SessionStore, Sessions,
};
pub use snapshot::{
    BudgetCovers, IndexedFile, PackOptions, PackPayload, PackScope, PayloadBudget, QueryHit,
    QueryHits, QueryRequest, ScoreParts, Shaping, SnapshotPack, SnapshotPackRequest,
};
pub use status::{SnapshotStatus, Status};
pub use verify::{VerifyProblem, VerifyReport, VerifyRequest};
pub use workspace::{Access, Recorded, Workspace, WorkspaceOptions};

pub use ctxpack_core::{
    Budget, Candidate, Citation, Counters, DropReason, Dropped, Family, Format, Hit, Location,
    Meter, Pack, RedactionSummary, RenderOptions, Seen, Selector, SnapshotInfo, Tier, ValueError,
    View, Warning, around_the_evidence, pack_json, render, short_pack_id, visible,
};
pub use ctxpack_store::LedgerRecord;

/// Starts compiling the masking rules on another core, for a front end about to pack: a pack
/// masks its goal once selection begins, and compiling the rules there (some three
/// milliseconds) would hold up the core that reads the working tree's status, which shaping
/// wants back. A short process that calls this first overlaps the compilation with its own
/// setup (configuration, the repository, the store). Never needed for correctness: the first
/// masking compiles the rules, or waits for this compilation, if they are not ready.
pub fn prepare_masking() {
    mask::prepare_in_background();
}

/// The README's examples, run as tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
