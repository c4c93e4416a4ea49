//! Typed failures and the one place they map to exit codes.

use std::fmt;

use serde_json::json;

/// The kind of a failure; each kind has exactly one exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// Malformed input, an invalid reference or option: exit 2.
    InvalidInput,
    /// A missing snapshot, store, pack or document: exit 3.
    NotFound,
    /// A corrupt store or one written by an unsupported format version: exit 4.
    Corrupt,
    /// A write that conflicts with what is stored (for example a duplicate id): exit 5.
    Conflict,
    /// A bug or an operating-system failure: exit 1.
    Internal,
}

impl FailureKind {
    /// The process exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            FailureKind::Internal => 1,
            FailureKind::InvalidInput => 2,
            FailureKind::NotFound => 3,
            FailureKind::Corrupt => 4,
            FailureKind::Conflict => 5,
        }
    }

    /// The stable code in the failure envelope.
    pub fn code(self) -> &'static str {
        match self {
            FailureKind::Internal => "internal",
            FailureKind::InvalidInput => "invalid_input",
            FailureKind::NotFound => "not_found",
            FailureKind::Corrupt => "corrupt",
            FailureKind::Conflict => "conflict",
        }
    }
}

/// A failure a user can act on: what went wrong and, when there is one, what to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The kind, which decides the exit code.
    pub kind: FailureKind,
    /// What went wrong, as one sentence.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure of `kind`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    /// Invalid input (exit 2).
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(FailureKind::InvalidInput, message)
    }

    /// Adds what to do next.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// The stable failure envelope: `{"error":{"code","exitCode","message","hint"}}`.
    pub fn envelope(&self) -> serde_json::Value {
        json!({
            "error": {
                "code": self.kind.code(),
                "exitCode": self.kind.exit_code(),
                "message": self.message,
                "hint": self.hint,
            }
        })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

impl From<ctxpack_store::StoreError> for Failure {
    fn from(e: ctxpack_store::StoreError) -> Failure {
        use ctxpack_store::StoreError as E;
        let (kind, hint) = match &e {
            E::NotFound { .. } => (
                FailureKind::NotFound,
                Some("run `ctxpack index` to create it"),
            ),
            E::Locked { .. } => (
                FailureKind::NotFound,
                Some("wait for the other writer to finish, or pass --wait"),
            ),
            E::Unsupported { .. } | E::Corrupt { .. } => (
                FailureKind::Corrupt,
                Some(
                    "run `ctxpack index --rebuild`: it rebuilds the lexical index, or moves an unreadable database aside (never deleting it) and starts afresh",
                ),
            ),
            E::Conflict { .. } => (FailureKind::Conflict, None),
            E::ReadOnly { .. } | E::Io { .. } | E::Sqlite { .. } | E::Lexical { .. } => {
                (FailureKind::Internal, None)
            }
        };
        let failure = Failure::new(kind, e.to_string());
        match hint {
            Some(hint) => failure.with_hint(hint),
            None => failure,
        }
    }
}

impl From<ctxpack_index::IndexError> for Failure {
    fn from(e: ctxpack_index::IndexError) -> Failure {
        use ctxpack_index::IndexError as E;
        match e {
            E::Store(e) => e.into(),
            E::NotARepository { .. } => Failure::invalid(e.to_string())
                .with_hint("run inside a git repository or pass --cwd PATH"),
            E::EmptyRepository => Failure::new(FailureKind::NotFound, e.to_string()),
            E::InvalidReference { .. }
            | E::UnknownCommit { .. }
            | E::AmbiguousPrefix { .. }
            | E::NotACommit { .. } => Failure::invalid(e.to_string()),
            E::Object { .. } => Failure::new(FailureKind::Corrupt, e.to_string())
                .with_hint("the repository is missing objects; try `git fsck`"),
            E::Git(_) => Failure::new(FailureKind::Internal, e.to_string()),
        }
    }
}
