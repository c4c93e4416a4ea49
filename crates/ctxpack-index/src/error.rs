//! Errors of reading a repository and indexing it.

use std::path::PathBuf;

use ctxpack_store::StoreError;

/// What can go wrong reading a repository, resolving a reference or indexing.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The path is not inside a git repository.
    #[error("{} is not inside a git repository ({detail})", .path.display())]
    NotARepository {
        /// The path searched from.
        path: PathBuf,
        /// What git reported.
        detail: String,
    },
    /// The repository has no commits yet.
    #[error("the repository has no commits yet; commit something first")]
    EmptyRepository,
    /// The reference is not `HEAD`, a full SHA or a hexadecimal prefix.
    #[error(
        "invalid reference `{reference}`: use HEAD, a full commit SHA or a unique hexadecimal prefix of at least 4 digits (branch names, tags and revision expressions are not accepted)"
    )]
    InvalidReference {
        /// The reference as given.
        reference: String,
    },
    /// No commit has this prefix.
    #[error("no commit matches `{reference}`")]
    UnknownCommit {
        /// The reference as given.
        reference: String,
    },
    /// Several commits share this prefix.
    #[error("`{reference}` is ambiguous: several commits start with it")]
    AmbiguousPrefix {
        /// The reference as given.
        reference: String,
    },
    /// The object exists but is not a commit.
    #[error("`{reference}` is not a commit")]
    NotACommit {
        /// The reference as given.
        reference: String,
    },
    /// A git object could not be read.
    #[error("cannot read git object {id}: {detail}")]
    Object {
        /// The object id.
        id: String,
        /// What git reported.
        detail: String,
    },
    /// Any other git failure.
    #[error("git: {0}")]
    Git(String),
    /// The caller cancelled the run; nothing was committed.
    #[error("indexing was cancelled; no snapshot was written")]
    Cancelled,
    /// A store failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An include or exclude glob that cannot be used, and why.
    #[error("{field} glob `{glob}` {reason}")]
    Glob {
        /// `include` or `exclude`.
        field: &'static str,
        /// The glob as given (its first 80 characters).
        glob: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}
