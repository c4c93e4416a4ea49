//! Context plans: reviewable, reproducible recipes for what a model may see (seed 004).
//!
//! A plan binds names to cited values and groups them into `ctx` blocks, each with a purpose,
//! a budget the engine enforces and a meter, then emits the ctxs a model should see:
//!
//! ```text
//! flow explain-failure
//!   src = read("crates/core/src/select.rs")
//!   spec = read("SPEC.md", lines: 1..80)
//!   hits = query("budget enforcement", top: 10)
//!   ctx debug
//!     purpose "explain a failing selection test"
//!     budget 9000
//!     include src, hits
//!     exclude spec
//!     pin src
//!   more = artifact("ci-log-17")
//!   debug += more
//!   emit debug
//! ```
//!
//! This crate is pure: it parses ([`parse`]), resolves names ([`check`]) and evaluates
//! ([`evaluate`]) over a [`Sources`] trait that the caller implements for IO. Packs are built by
//! [`ctxpack_core`]'s engine, so budgets are hard, pins go first, and everything left out is
//! recorded. The same semantics are available without a file through the [`Ctx`] builder.
//!
//! ```
//! use ctxpack_plan::{EvalOptions, Value, compile, evaluate, testing::TableSources};
//!
//! let source = "\
//! flow demo
//!   a = text(\"alpha\")
//!   b = text(\"a much longer text that will not fit\")
//!   c = text(\"gamma\")
//!   ctx d
//!     purpose \"show drop-and-continue\"
//!     budget 20
//!     include a, b, c
//!   emit d
//! ";
//! let checked = compile(source).unwrap();
//! let outcome = evaluate(&checked.program, &TableSources::default(), &EvalOptions::default()).unwrap();
//! let pack = &outcome.versions[outcome.emitted[0]].built.pack;
//! let cited: Vec<_> = pack.hits.iter().map(|h| h.candidate.citation.as_str()).collect();
//! assert_eq!(cited, ["plan:d/a", "plan:d/c"]);
//! assert_eq!(outcome.trace.iter().map(|e| e.name()).collect::<Vec<_>>(),
//!            ["bind", "bind", "bind", "ctx_built", "ctx_shrunk", "emit"]);
//! ```

mod ast;
mod check;
mod ctx;
mod diag;
mod eval;
mod lexer;
mod parser;
mod shell;
mod sources;
pub mod testing;
mod value;

pub use ast::{Arg, Call, CtxBlock, CtxLine, CtxSetting, Ident, Literal, Plan, Spanned, Statement};
pub use check::{
    Checked, CtxSpec, DEFAULT_TOP, Program, Source, Step, StepKind, check, normalize_path,
};
pub use ctx::{Binding, Built, Ctx, Member, Shrunk, size_of};
pub use diag::{Diagnostic, Severity, Span, render_all};
pub use eval::{BindOutcome, EvalOptions, Event, MAX_VERSION_MEMBERS, Outcome, Version, evaluate};
pub use parser::{KEYWORDS, parse};
pub use shell::split_command;
pub use sources::{DocsRequest, QueryRequest, ReadRequest, RunRequest, Sources};
pub use value::{SourceHit, Text, Value};

/// Why a plan cannot be checked, built or run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// Syntax or name-resolution errors, in source order.
    #[error("{}", summary(.0))]
    Invalid(Vec<Diagnostic>),
    /// Evaluation was refused: a `run` without permission, or a source that refused.
    #[error("{0}")]
    Refused(Diagnostic),
    /// A budget outside `1 ..= 2^53 - 1` given to the [`Ctx`] builder.
    #[error(transparent)]
    Budget(#[from] ctxpack_core::ValueError),
    /// A source ran and failed (a missing file, an unindexed snapshot, a command killed at its
    /// time limit), as [`Sources`] reports it. The name stays unbound: members naming it
    /// contribute nothing and are reported.
    #[error("{0}")]
    SourceFailed(String),
    /// A source must not run as asked (a path outside the repository, an invalid commit), as
    /// [`Sources`] reports it. Evaluation stops with an error ([`PlanError::Refused`], naming
    /// the binding) before anything is recorded.
    #[error("{0}")]
    SourceRefused(String),
    /// A command with a quote opened and never closed (`"single"` or `"double"`), from
    /// [`split_command`].
    #[error("unterminated {0} quote in the command")]
    UnterminatedQuote(&'static str),
    /// A command of no words (nothing but whitespace and comments), from [`split_command`].
    #[error("the command is empty")]
    EmptyCommand,
}

fn summary(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
    match errors.as_slice() {
        [] => "the plan is invalid".to_owned(),
        [one] => one.message.clone(),
        [first, rest @ ..] => format!("{} (and {} more errors)", first.message, rest.len()),
    }
}

impl PlanError {
    /// The diagnostics to render against the source (none but for an invalid or refused plan).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            PlanError::Invalid(all) => all,
            PlanError::Refused(one) => std::slice::from_ref(one),
            PlanError::Budget(_)
            | PlanError::SourceFailed(_)
            | PlanError::SourceRefused(_)
            | PlanError::UnterminatedQuote(_)
            | PlanError::EmptyCommand => &[],
        }
    }

    /// The error rendered like a compiler's against the plan's file name and source.
    pub fn render(&self, file: &str, source: &str) -> String {
        match self {
            PlanError::Invalid(_) | PlanError::Refused(_) => {
                render_all(self.diagnostics(), file, source)
            }
            other => format!("error: {other}\n"),
        }
    }
}

/// Parses and checks a plan.
pub fn compile(source: &str) -> Result<Checked, PlanError> {
    let plan = parse(source).map_err(|d| PlanError::Invalid(vec![d]))?;
    check(&plan).map_err(PlanError::Invalid)
}
