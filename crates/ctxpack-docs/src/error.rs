//! The one error type of the crate.

use std::fmt;

/// Where inside a filter a logical operator's sub-filter sits, e.g. `$and.1`. Empty at the
/// top level. It is printed as a ` (in `…`)` suffix so a message about a nested clause still
/// says which clause.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope(pub String);

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " (in `{}`)", self.0)
        }
    }
}

/// Everything that can go wrong in this crate: an invalid filter or document, or stored vector
/// bytes of the wrong shape. Messages name the offending operator and its field path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocsError {
    /// The filter itself (or a clause of `$and`/`$or`/`$nor`) is not a JSON object.
    #[error("filter must be a JSON object, got {found}{scope}")]
    FilterNotObject {
        /// The JSON type found, with its article (`an array`).
        found: &'static str,
        /// Where the clause sits.
        scope: Scope,
    },
    /// A `$`-key at the top level that is not `$and`, `$or` or `$nor`.
    #[error("unknown top-level operator `{op}`{scope}")]
    UnknownTopLevelOperator {
        /// The operator as written.
        op: String,
        /// Where the clause sits.
        scope: Scope,
    },
    /// A key in an operator object that is not a supported operator.
    #[error("unknown operator `{op}` at `{path}`{scope}")]
    UnknownOperator {
        /// The operator as written.
        op: String,
        /// The field path it applies to.
        path: String,
        /// Where the clause sits.
        scope: Scope,
    },
    /// An operator whose operand has the wrong shape.
    #[error("`{op}` at `{path}` needs {need}{scope}")]
    BadOperand {
        /// The operator.
        op: &'static str,
        /// The field path it applies to.
        path: String,
        /// What it needs, with its article (`an array`).
        need: &'static str,
        /// Where the clause sits.
        scope: Scope,
    },
    /// `$and`, `$or` or `$nor` without a non-empty array of objects.
    #[error("`{op}` needs a non-empty array of filter objects{scope}")]
    BadLogical {
        /// The operator.
        op: &'static str,
        /// Where the clause sits.
        scope: Scope,
    },
    /// A `$regex` the regex engine refuses.
    #[error("`$regex` at `{path}` does not compile: {message}{scope}")]
    BadRegex {
        /// The field path.
        path: String,
        /// The regex engine's explanation.
        message: String,
        /// Where the clause sits.
        scope: Scope,
    },
    /// A `$options` flag other than `i`, `m`, `s`, `x` (and `u`, which MongoDB ignores).
    #[error("`$options` at `{path}` has unknown flag `{flag}` (expected i, m, s, x or u){scope}")]
    UnknownRegexFlag {
        /// The field path.
        path: String,
        /// The flag.
        flag: char,
        /// Where the clause sits.
        scope: Scope,
    },
    /// `$options` without `$regex` next to it.
    #[error("`$options` at `{path}` needs a `$regex` beside it{scope}")]
    OptionsWithoutRegex {
        /// The field path.
        path: String,
        /// Where the clause sits.
        scope: Scope,
    },
    /// `$not: {}`.
    #[error("`$not` at `{path}` cannot be empty{scope}")]
    EmptyNot {
        /// The field path.
        path: String,
        /// Where the clause sits.
        scope: Scope,
    },
    /// A field path such as `a..b`, `.a` or the empty path.
    #[error("field path `{path}` has an empty segment{scope}")]
    EmptySegment {
        /// The path as written.
        path: String,
        /// Where the clause sits.
        scope: Scope,
    },
    /// Document text that is not valid JSON.
    #[error("invalid JSON: {message}")]
    InvalidJson {
        /// The parser's explanation, with line and column.
        message: String,
    },
    /// A document that is valid JSON but not an object.
    #[error("a document must be a JSON object, got {found}")]
    NotAnObject {
        /// The JSON type found, with its article (`an array`).
        found: &'static str,
    },
    /// An `_id` that cannot key a document.
    #[error("invalid _id {found}: {reason}")]
    BadId {
        /// The `_id` as compact JSON.
        found: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Stored embedding bytes that are not 256 little-endian `f32`s.
    #[error("a stored vector must be {expected} bytes (256 little-endian f32), got {len}")]
    VectorLength {
        /// The number of bytes found.
        len: usize,
        /// The number expected.
        expected: usize,
    },
    /// Stored embedding bytes holding a NaN or an infinity.
    #[error("a stored vector holds a non-finite value at dimension {dimension}")]
    VectorNotFinite {
        /// The first offending dimension.
        dimension: usize,
    },
}

/// The filter errors are [`DocsError`]s; this alias names the role.
pub type FilterError = DocsError;
