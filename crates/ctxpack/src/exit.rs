//! The one place a failure becomes an exit code or an HTTP status, and the failure envelope
//! every surface prints; with the command line's phrasing of an error's field and hint.

use std::path::Path;

use ctxpack_api::{Error, ErrorKind, Hint};
use serde_json::{Value, json};

/// The process exit code of an error kind.
pub fn exit_code(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::InvalidInput => 2,
        ErrorKind::NotFound | ErrorKind::NotIndexed | ErrorKind::Busy | ErrorKind::OverQuota => 3,
        ErrorKind::Damaged => 4,
        ErrorKind::Conflict => 5,
        _ => 1,
    }
}

/// The HTTP status of an error kind, for the JSON API and the web view alike.
pub fn http_status(kind: ErrorKind) -> axum::http::StatusCode {
    use axum::http::StatusCode;
    match kind {
        ErrorKind::InvalidInput => StatusCode::BAD_REQUEST,
        ErrorKind::NotFound | ErrorKind::NotIndexed => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::OverQuota => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The stable code in the failure envelope: `invalid_input`, `not_found`, `corrupt`,
/// `conflict` or `internal`.
pub fn envelope_code(kind: ErrorKind) -> &'static str {
    match exit_code(kind) {
        2 => "invalid_input",
        3 => "not_found",
        4 => "corrupt",
        5 => "conflict",
        _ => "internal",
    }
}

/// The stable failure envelope: `{"error":{"code","kind","exitCode","message","hint"}}`. `code`
/// groups kinds as the exit code does; `kind` names the kind exactly (`not_indexed`, `busy`,
/// …), so a client reads back the error it was.
pub fn envelope(kind: ErrorKind, message: &str, hint: Option<&str>) -> Value {
    json!({
        "error": {
            "code": envelope_code(kind),
            "kind": kind.name(),
            "exitCode": exit_code(kind),
            "message": message,
            "hint": hint,
        }
    })
}

/// An error as the command line reports it.
pub struct CliFailure {
    /// The kind, which decides the exit code.
    pub kind: ErrorKind,
    /// The message, with the field named by its flag.
    pub message: String,
    /// What to do next, in commands and flags.
    pub hint: Option<String>,
}

impl CliFailure {
    /// Phrases `error` for the command line; `store` is the `--store` the caller gave, which
    /// advice repeats so that following it touches the same store.
    pub fn new(error: &Error, store: Option<&Path>) -> CliFailure {
        let message = match error.field() {
            Some(field) => format!("{}: {}", flag(field), error.message()),
            None => error.message().to_owned(),
        };
        CliFailure {
            kind: error.kind(),
            message,
            hint: error.hint().and_then(|h| hint(h, error.field(), store)),
        }
    }

    /// The JSON envelope.
    pub fn envelope(&self) -> Value {
        envelope(self.kind, &self.message, self.hint.as_deref())
    }

    /// `error: …` and `hint: …` lines for stderr.
    pub fn lines(&self) -> String {
        match &self.hint {
            Some(hint) => format!("error: {}\nhint: {hint}\n", self.message),
            None => format!("error: {}\n", self.message),
        }
    }
}

/// How the command line names a request field: its flag, or its argument for positionals.
fn flag(field: &str) -> String {
    match field {
        "goal" | "collection" | "field" | "query" | "document" | "id" => field.to_uppercase(),
        "run_timeout_secs" => "--run-timeout".to_owned(),
        "baselines" => "--baseline".to_owned(),
        other => format!("--{}", other.replace('_', "-")),
    }
}

pub(crate) fn hint(hint: &Hint, field: Option<&str>, store: Option<&Path>) -> Option<String> {
    let store_arg = store
        .map(|d| format!(" --store {}", d.display()))
        .unwrap_or_default();
    Some(match hint {
        Hint::IndexCommit {
            sha,
            nearest: Some(a),
        } => format!(
            "nearest indexed ancestor: {} ({} commit{} back); it is not packed automatically: run `ctxpack index --at {sha}{store_arg}` to index it, or pass --at {}",
            a.sha,
            a.distance,
            if a.distance == 1 { "" } else { "s" },
            a.sha
        ),
        Hint::IndexCommit { sha, nearest: None } => format!(
            "no indexed ancestor; run `ctxpack index --at {sha}{store_arg}`, or `ctxpack pack --index GOAL{store_arg}` to index HEAD and pack"
        ),
        Hint::CreateStore { documents: true } => {
            "create it with `ctxpack docs create DIR`".to_owned()
        }
        Hint::CreateStore { documents: false } => {
            format!("run `ctxpack index{store_arg}` to create it")
        }
        Hint::WaitForWriter => "wait for the other writer to finish, or pass --wait".to_owned(),
        Hint::RebuildStore => format!(
            "run `ctxpack verify --repair{store_arg}`: it rebuilds what is derived, chunks damaged files again from the git objects, and moves an unreadable database aside (never deleting it)"
        ),
        Hint::UpgradeCtxpack => format!(
            "upgrade ctxpack to read it, or run `ctxpack index --rebuild{store_arg}` to move it aside and start afresh"
        ),
        Hint::RepairRepository => "the repository is missing objects; try `git fsck`".to_owned(),
        Hint::ListPacks => "list recorded packs with `ctxpack log`".to_owned(),
        Hint::ListArtifacts => "list artifacts with `ctxpack artifact list`".to_owned(),
        Hint::ListCollections => {
            "list the collections with `ctxpack docs collections STORE`".to_owned()
        }
        Hint::RemoveArtifact { id } => {
            format!("remove it first (`ctxpack artifact rm {id}`) or choose another --id")
        }
        Hint::RaiseLimit => format!("raise it with {}", flag(field.unwrap_or("limit"))),
        Hint::MoreDigits => "give more digits".to_owned(),
        Hint::Advice(text) => text.clone(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What README and docs/server.md promise for each kind: the exit code, the envelope's code
    /// and the HTTP status.
    #[test]
    fn every_error_kind_has_its_documented_exit_code_envelope_code_and_status() {
        for (kind, exit, code, status) in [
            (ErrorKind::InvalidInput, 2, "invalid_input", 400),
            (ErrorKind::NotFound, 3, "not_found", 404),
            (ErrorKind::NotIndexed, 3, "not_found", 404),
            (ErrorKind::Busy, 3, "not_found", 503),
            (ErrorKind::OverQuota, 3, "not_found", 429),
            (ErrorKind::Damaged, 4, "corrupt", 500),
            (ErrorKind::Conflict, 5, "conflict", 409),
            (ErrorKind::Io, 1, "internal", 500),
            (ErrorKind::Cancelled, 1, "internal", 500),
            (ErrorKind::Internal, 1, "internal", 500),
        ] {
            assert_eq!(exit_code(kind), exit, "{kind:?}");
            assert_eq!(envelope_code(kind), code, "{kind:?}");
            assert_eq!(http_status(kind).as_u16(), status, "{kind:?}");
        }
    }
}
