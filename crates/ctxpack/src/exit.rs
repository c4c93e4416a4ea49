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

/// Adds an error's data to its failure envelope: `field`, the request field at fault as the
/// API names it, and `next`, the hint as data ([`Hint`]'s JSON), each only when the error has
/// it. The message and the hint's text are phrased for the surface; these are not.
pub fn add_data(envelope: &mut Value, field: Option<&str>, next: Option<&Hint>) {
    let Some(Value::Object(fields)) = envelope.get_mut("error") else {
        return;
    };
    if let Some(field) = field {
        fields.insert("field".into(), Value::from(field));
    }
    if let Some(next) = next.and_then(|h| serde_json::to_value(h).ok()) {
        fields.insert("next".into(), next);
    }
}

/// An error as the command line reports it.
pub struct CliFailure {
    /// The kind, which decides the exit code.
    pub kind: ErrorKind,
    /// The message, with the field named by its flag.
    pub message: String,
    /// What to do next, in commands and flags.
    pub hint: Option<String>,
    /// The request field at fault, as the API names it.
    pub field: Option<String>,
    /// The hint as data.
    pub next: Option<Hint>,
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
            field: error.field().map(str::to_owned),
            next: error.hint().cloned(),
        }
    }

    /// The JSON envelope, with the error's data ([`add_data`]).
    pub fn envelope(&self) -> Value {
        let mut out = envelope(self.kind, &self.message, self.hint.as_deref());
        add_data(&mut out, self.field.as_deref(), self.next.as_ref());
        out
    }

    /// `error: …` and `hint: …` lines for stderr.
    pub fn lines(&self) -> String {
        match &self.hint {
            Some(hint) => format!("error: {}\nhint: {hint}\n", self.message),
            None => format!("error: {}\n", self.message),
        }
    }
}

/// `message` without the command line's naming of `field` in front of it: the API's message
/// of an error [`CliFailure::new`] phrased.
pub(crate) fn unflagged<'m>(field: &str, message: &'m str) -> &'m str {
    message
        .strip_prefix(flag(field).as_str())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
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

    /// The envelope carries the field as the API names it and the hint as data, beside the
    /// surface's phrasing of both; neither key appears when the error has none.
    #[test]
    fn the_envelope_carries_the_field_and_the_hint_as_data() {
        let error =
            Error::invalid_field("budget", "must be at least 1").with_hint(Hint::RaiseLimit);
        let out = CliFailure::new(&error, None).envelope();
        assert_eq!(out["error"]["message"], "--budget: must be at least 1");
        assert_eq!(out["error"]["field"], "budget");
        assert_eq!(out["error"]["next"], json!({"action": "raise_limit"}));

        let sha = "0123456789abcdef0123456789abcdef01234567";
        let error = Error::new(ErrorKind::NotIndexed, "not indexed").with_hint(Hint::IndexCommit {
            sha: sha.into(),
            nearest: Some(ctxpack_api::Ancestor {
                sha: "fedcba9876543210fedcba9876543210fedcba98".into(),
                distance: 2,
            }),
        });
        let out = CliFailure::new(&error, None).envelope();
        assert_eq!(
            out["error"]["next"],
            json!({"action": "index_commit", "detail": {"sha": sha, "nearest": {
                "sha": "fedcba9876543210fedcba9876543210fedcba98", "distance": 2}}})
        );
        assert!(out["error"].get("field").is_none());
        // The data reads back as the hint it was.
        let back: Hint = serde_json::from_value(out["error"]["next"].clone()).expect("a hint");
        assert_eq!(Some(&back), error.hint());
        let advice = Error::internal("x").with_hint(Hint::Advice("try again".into()));
        let out = CliFailure::new(&advice, None).envelope();
        assert_eq!(
            out["error"]["next"],
            json!({"action": "advice", "detail": "try again"})
        );

        let plain = CliFailure::new(&Error::internal("x"), None).envelope();
        assert!(plain["error"].get("field").is_none() && plain["error"].get("next").is_none());
    }
}
