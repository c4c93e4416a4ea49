//! The one error type of the API: a kind that decides how a front end reports it, a message
//! that names no front end's flags or tools, the request field at fault, and a [`Hint`] that
//! each front end turns into advice in its own vocabulary.
//!
//! Every lower-level error (store, index, documents, plans) is classified here, once; no front
//! end chooses a kind and none reads a message to find out what happened.

use std::fmt;
use std::path::PathBuf;

use ctxpack_docs::DocsError;
use ctxpack_index::IndexError;
use ctxpack_store::StoreError;

/// The result of every API operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure an [`Error`] is. Front ends map each kind to one exit code or one
/// kind of protocol error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is malformed: a bad value, an invalid reference, not a repository.
    InvalidInput,
    /// Something the request names does not exist: a store, a pack, a document, a file.
    NotFound,
    /// The snapshot of the commit asked for is not indexed (see [`Hint::IndexCommit`]).
    NotIndexed,
    /// Another process is writing the store; trying again later can succeed.
    Busy,
    /// The request conflicts with what is stored (an id reused for other content).
    Conflict,
    /// The caller used up what a server allows it (packs recorded a day); it can try again
    /// when the period turns.
    OverQuota,
    /// The store is damaged, or was written by a newer format than this build reads.
    Damaged,
    /// The operating system refused a read or write.
    Io,
    /// The caller cancelled the operation; nothing was committed.
    Cancelled,
    /// A bug in ctxpack.
    Internal,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::InvalidInput,
        ErrorKind::NotFound,
        ErrorKind::NotIndexed,
        ErrorKind::Busy,
        ErrorKind::Conflict,
        ErrorKind::OverQuota,
        ErrorKind::Damaged,
        ErrorKind::Io,
        ErrorKind::Cancelled,
        ErrorKind::Internal,
    ];

    /// The kind a [name](ErrorKind::name) names, if any.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A stable snake-case name: `invalid_input`, `not_found`, `not_indexed`, `busy`,
    /// `conflict`, `over_quota`, `damaged`, `io`, `cancelled`, `internal`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::NotIndexed => "not_indexed",
            ErrorKind::Busy => "busy",
            ErrorKind::Conflict => "conflict",
            ErrorKind::OverQuota => "over_quota",
            ErrorKind::Damaged => "damaged",
            ErrorKind::Io => "io",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
        }
    }
}

/// An indexed ancestor of a commit that is not indexed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ancestor {
    /// Its full SHA.
    pub sha: String,
    /// How many commits back it is (1 for the parent).
    pub distance: usize,
}

/// What the caller can do about an error, as data: each front end phrases it with its own
/// commands, flags or tools.
///
/// In JSON (the failure envelope's `next`) a hint is its action in `snake_case` and, for the
/// hints that carry data, that data as `detail`: `{"action":"index_commit","detail":{"sha":
/// …,"nearest":{"sha":…,"distance":1}}}`, `{"action":"wait_for_writer"}`,
/// `{"action":"advice","detail":"…"}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "action", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Hint {
    /// Index the commit `sha` (its snapshot is missing); `nearest` is the nearest indexed
    /// ancestor, which could be packed instead but never is automatically.
    IndexCommit {
        /// The commit that is not indexed.
        sha: String,
        /// The nearest indexed ancestor, if one was found.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nearest: Option<Ancestor>,
    },
    /// There is no store at the path: create it (by indexing, or as a document store).
    CreateStore {
        /// Whether a document store is wanted (no repository is involved).
        documents: bool,
    },
    /// Another process holds the writer lock: wait for it, or try again later.
    WaitForWriter,
    /// Rebuild the store from the repository's git objects.
    RebuildStore,
    /// The store was written by a newer ctxpack: upgrade ctxpack (rebuilding would move the
    /// newer database aside and start afresh).
    UpgradeCtxpack,
    /// The repository lacks git objects (`git fsck` tells which).
    RepairRepository,
    /// List the recorded packs to find the right id.
    ListPacks,
    /// List the artifacts to find the right id.
    ListArtifacts,
    /// List the collections to find the right name.
    ListCollections,
    /// Remove the artifact `id` first, or store the new content under another id.
    RemoveArtifact {
        /// The artifact id in use.
        id: String,
    },
    /// Raise the limit named by the error's field, or give less.
    RaiseLimit,
    /// Give more hexadecimal digits of an id.
    MoreDigits,
    /// Advice that names no command, flag or tool.
    Advice(String),
}

/// A failure of an API operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    field: Option<String>,
    hint: Option<Hint>,
}

impl Error {
    /// An error of `kind` with a message that names no front end's flags.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            field: None,
            hint: None,
        }
    }

    /// Invalid input.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidInput, message)
    }

    /// Invalid input in the request field `field`: the message says what is wrong with the
    /// value without naming the field, which front ends name their own way.
    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Error {
        Error::invalid(message).with_field(field)
    }

    /// Not found.
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::NotFound, message)
    }

    /// An internal error (a bug).
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }

    /// An operating-system error on `path`.
    pub fn io(path: &std::path::Path, e: &std::io::Error) -> Error {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::Io
        };
        Error::new(kind, format!("{}: {e}", path.display()))
    }

    /// The request field at fault.
    pub fn with_field(mut self, field: impl Into<String>) -> Error {
        self.field = Some(field.into());
        self
    }

    /// What the caller can do about it.
    pub fn with_hint(mut self, hint: Hint) -> Error {
        self.hint = Some(hint);
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong, as one sentence that names no flag, tool or field.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The request field at fault, by its name in the request type (`budget`, `top_k`).
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// What the caller can do about it.
    pub fn hint(&self) -> Option<&Hint> {
        self.hint.as_ref()
    }

    /// The same error with `rewrite` applied to its message and to its advice, if any.
    pub fn map_text(mut self, rewrite: impl Fn(&str) -> String) -> Error {
        self.message = rewrite(&self.message);
        if let Some(Hint::Advice(advice)) = &mut self.hint {
            *advice = rewrite(advice);
        }
        self
    }

    /// Prefixes the message with context, e.g. the file and line an input error is at.
    pub fn context(mut self, context: impl fmt::Display) -> Error {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "`{field}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        let message = e.to_string();
        match e {
            StoreError::NotFound { .. } => Error::not_found(message),
            StoreError::Locked { .. } => {
                Error::new(ErrorKind::Busy, message).with_hint(Hint::WaitForWriter)
            }
            // A newer ctxpack wrote it: rebuilding would throw its contents away.
            StoreError::Unsupported { .. } => {
                Error::new(ErrorKind::Damaged, message).with_hint(Hint::UpgradeCtxpack)
            }
            StoreError::Corrupt { .. } => damaged(message),
            // A lexical index that fails to answer is damaged; rebuilding it from the chunks
            // the database holds restores it.
            StoreError::Lexical { .. } => damaged(message),
            StoreError::Conflict { .. } => Error::new(ErrorKind::Conflict, message),
            // A link inside a store is hostile or a mistake; rebuilding would not remove it.
            StoreError::Symlink { .. } => Error::new(ErrorKind::Damaged, message),
            ref e if e.is_busy() => {
                Error::new(ErrorKind::Busy, message).with_hint(Hint::WaitForWriter)
            }
            StoreError::ReadOnly { .. } => Error::internal(message),
            StoreError::Io { .. } | StoreError::Sqlite { .. } => Error::new(ErrorKind::Io, message),
            StoreError::UnknownCollection { .. } => {
                Error::not_found(message).with_hint(Hint::ListCollections)
            }
            StoreError::DuplicateId { .. } => Error::new(ErrorKind::Conflict, message),
            StoreError::InvalidCollectionName { .. } => Error::invalid_field("collection", message),
            StoreError::Database { .. } => Error::new(ErrorKind::Io, message).with_hint(
                Hint::Advice("check that the database server is up and reachable".into()),
            ),
        }
    }
}

fn damaged(message: String) -> Error {
    Error::new(ErrorKind::Damaged, message).with_hint(Hint::RebuildStore)
}

impl From<IndexError> for Error {
    fn from(e: IndexError) -> Error {
        let message = e.to_string();
        match e {
            IndexError::Store(e) => e.into(),
            IndexError::NotARepository { .. } => {
                Error::invalid(message).with_hint(Hint::Advice(
                    "run it inside a git repository, or name one with --cwd (git init and a first commit make one)"
                        .into(),
                ))
            }
            IndexError::EmptyRepository => Error::not_found(message),
            IndexError::InvalidReference { reference } => {
                let plain = reference
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._/-~^@".contains(c));
                let reference = if plain {
                    reference
                } else {
                    format!("'{}'", reference.replace('\'', r"'\''"))
                };
                let advice = format!(
                    "name a branch or tag by its commit: `git rev-parse {reference}` prints it"
                );
                Error::invalid_field("at", message).with_hint(Hint::Advice(advice))
            }
            IndexError::UnknownCommit { .. }
            | IndexError::NotACommit { .. } => Error::invalid_field("at", message),
            IndexError::AmbiguousPrefix { .. } => {
                Error::invalid_field("at", message).with_hint(Hint::MoreDigits)
            }
            IndexError::Object { .. } => {
                Error::new(ErrorKind::Damaged, message).with_hint(Hint::RepairRepository)
            }
            IndexError::Cancelled => Error::new(ErrorKind::Cancelled, message),
            IndexError::Glob { field, .. } => {
                Error::invalid_field(field, message).with_hint(Hint::Advice(
                    "globs follow git's wildmatch: `src/**`, `*.rs`, `docs/*.md`".into(),
                ))
            }
            IndexError::Git(_) => Error::new(ErrorKind::Io, message),
        }
    }
}

impl From<DocsError> for Error {
    fn from(e: DocsError) -> Error {
        match e {
            DocsError::VectorLength { .. } | DocsError::VectorNotFinite { .. } => Error::new(
                ErrorKind::Damaged,
                format!("a stored embedding is damaged: {e}"),
            )
            .with_hint(Hint::Advice(
                "recompute the field's embeddings with vsync".into(),
            )),
            _ => Error::invalid(e.to_string()),
        }
    }
}

impl From<ctxpack_core::ValueError> for Error {
    fn from(e: ctxpack_core::ValueError) -> Error {
        use ctxpack_core::ValueError;
        let field = match e {
            ValueError::UnknownSelector(_) => "selector",
            ValueError::UnknownFormat(_) => "format",
            ValueError::UnknownView(_) => "view",
            _ => "budget",
        };
        Error::invalid_field(field, e.to_string())
    }
}

/// A missing store directory, for operations that need one to exist.
pub(crate) fn no_store(dir: PathBuf, documents: bool) -> Error {
    Error::from(StoreError::NotFound { dir }).with_hint(Hint::CreateStore { documents })
}

/// A stored document whose JSON no longer parses: the database was altered.
/// The JSON value of a stored document's body; a body that does not parse is damage.
pub(crate) fn stored_document(
    collection: &str,
    id_key: &str,
    body: &str,
) -> Result<serde_json::Value> {
    ctxpack_docs::document::parse_body(body).map_err(|e| corrupt_document(collection, id_key, &e))
}

fn corrupt_document(collection: &str, id_key: &str, e: &serde_json::Error) -> Error {
    Error::new(
        ErrorKind::Damaged,
        format!("stored document {id_key} of `{collection}` is not valid JSON: {e}"),
    )
}
