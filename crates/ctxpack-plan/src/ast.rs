//! The syntax tree of a plan, every node with its span.

use crate::diag::Span;

/// A parsed plan: an optional `flow NAME` header and its statements in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The flow's name, when the plan has a `flow` header.
    pub flow: Option<Ident>,
    /// The statements, in source order.
    pub statements: Vec<Statement>,
}

/// A name and where it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A value with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where.
    pub span: Span,
}

/// One statement of a flow.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `name = source(args…)`.
    Bind {
        /// The bound name.
        name: Ident,
        /// The source call.
        call: Call,
    },
    /// `ctx NAME` and its indented settings.
    Ctx(CtxBlock),
    /// `target += a, b`.
    Append {
        /// The ctx that gets a new version.
        target: Ident,
        /// The members added.
        names: Vec<Ident>,
        /// The whole statement.
        span: Span,
    },
    /// `emit a, b`.
    Emit {
        /// The ctxs emitted.
        names: Vec<Ident>,
        /// The whole statement.
        span: Span,
    },
}

/// A call of a source: `read("path", lines: 1..80)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The source's name.
    pub function: Ident,
    /// Arguments in order.
    pub args: Vec<Arg>,
    /// From the name to the closing parenthesis.
    pub span: Span,
}

/// One argument, positional or named (`top: 10`).
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// The name, for a named argument.
    pub name: Option<Ident>,
    /// The value.
    pub value: Spanned<Literal>,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `"text"`.
    Str(String),
    /// `10`.
    Int(u64),
    /// `1..80`, both ends inclusive.
    Range(u64, u64),
    /// `true` or `false`.
    Bool(bool),
    /// A JSON object or array: `{"status": "open"}`.
    Json(serde_json::Value),
}

impl Literal {
    /// How an error message names the kind of value.
    pub fn describe(&self) -> &'static str {
        match self {
            Literal::Str(_) => "a string",
            Literal::Int(_) => "a number",
            Literal::Range(..) => "a line range",
            Literal::Bool(_) => "a boolean",
            Literal::Json(serde_json::Value::Array(_)) => "a JSON array",
            Literal::Json(_) => "a JSON object",
        }
    }
}

/// `ctx NAME` with its settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CtxBlock {
    /// The ctx's name.
    pub name: Ident,
    /// The settings, in order.
    pub lines: Vec<CtxLine>,
    /// The header line `ctx NAME`.
    pub span: Span,
}

/// One setting line of a ctx block.
#[derive(Clone, Debug, PartialEq)]
pub struct CtxLine {
    /// The keyword (`purpose`, `budget`, …).
    pub keyword: Ident,
    /// Its value.
    pub setting: CtxSetting,
}

/// The value of a ctx setting.
#[derive(Clone, Debug, PartialEq)]
pub enum CtxSetting {
    /// `purpose "why the pack exists"`.
    Purpose(Spanned<String>),
    /// `budget 9000`.
    Budget(Spanned<u64>),
    /// `meter o200k`.
    Meter(Ident),
    /// `include a, b`.
    Include(Vec<Ident>),
    /// `exclude c`.
    Exclude(Vec<Ident>),
    /// `pin a`.
    Pin(Vec<Ident>),
}
