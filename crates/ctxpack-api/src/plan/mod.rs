//! Context plans (`.ctx` files) over a workspace: checked without running anything, or run
//! with every version of every ctx recorded in the ledger, linked to the version it extends.
//!
//! The language, name resolution and the `ctx` semantics live in the pure [`ctxpack_plan`]
//! crate; this module is its IO (`sources`).

mod command;
mod sources;

use std::time::Duration;

use std::fmt::Write as _;

use ctxpack_core::{Format, RenderOptions, Warning, pack_json, render};
use ctxpack_plan::{EvalOptions, PlanError, Source, compile, evaluate, render_all};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub use command::RunLimits;
pub use ctxpack_plan::{
    BindOutcome, Built, Checked, Ctx, Event, Outcome, Shrunk, StepKind, Version,
};

use crate::error::{Error, Result};
use crate::workspace::{RecordExtra, Recorded, Workspace};

/// A plan's text and the name its diagnostics show (usually its file name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanSource<'a> {
    /// The plan's text.
    pub text: &'a str,
    /// The name diagnostics show.
    pub name: &'a str,
}

/// Run a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PlanRunRequest {
    /// Let `run(…)` start commands (never through a shell).
    pub allow_run: bool,
    /// Seconds a `run` command may take before it is killed (1 to 86,400).
    #[schemars(range(min = 1, max = 86_400))]
    pub run_timeout_secs: u64,
    /// Bytes of output a `run` command may produce; the rest is cut, with a note.
    pub run_max_output: usize,
}

impl PlanRunRequest {
    /// The longest accepted `run_timeout_secs`: one day.
    pub const MAX_TIMEOUT_SECS: u64 = 86_400;
}

impl Default for PlanRunRequest {
    fn default() -> Self {
        let limits = RunLimits::default();
        PlanRunRequest {
            allow_run: false,
            run_timeout_secs: limits.timeout.as_secs(),
            run_max_output: limits.max_output,
        }
    }
}

/// A checked plan: what it declares and its warnings.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanCheck {
    /// The checked program.
    pub checked: Checked,
    /// The warnings, rendered compiler-style (empty when there are none).
    pub warnings: String,
}

impl PlanCheck {
    /// How many steps of a kind the plan has.
    pub fn count(&self, kind: fn(&StepKind) -> bool) -> usize {
        self.checked
            .program
            .steps
            .iter()
            .filter(|s| kind(&s.kind))
            .count()
    }
}

/// What running a plan produced.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanRun {
    /// Every version of every ctx, what was emitted, and the trace of events.
    pub outcome: Outcome,
    /// The ledger id of each version (by index into `outcome.versions`), when recorded.
    pub ids: Vec<Option<String>>,
    /// The plan's `flow` name.
    pub flow: Option<String>,
    /// Compile warnings and unbound names, one message per line, compiler-style.
    pub warnings: String,
    /// Ledger failures, if recording failed (the packs themselves are fine).
    pub ledger_errors: Vec<Error>,
}

/// A plan error as an API error whose message is the compiler-style rendering.
fn plan_error(error: &PlanError, source: &PlanSource<'_>) -> Error {
    let rendered = error.render(source.name, source.text);
    let message = rendered
        .strip_prefix("error: ")
        .unwrap_or(&rendered)
        .trim_end();
    Error::invalid(message)
}

/// Parses a plan and resolves its names without running anything.
pub fn check_plan(source: &PlanSource<'_>) -> Result<PlanCheck> {
    let checked = compile(source.text).map_err(|e| plan_error(&e, source))?;
    let warnings = if checked.warnings.is_empty() {
        String::new()
    } else {
        render_all(&checked.warnings, source.name, source.text)
    };
    Ok(PlanCheck { checked, warnings })
}

impl Workspace {
    /// Runs a plan and records every version in the ledger (with `record`, when the
    /// workspace may write).
    pub fn run_plan(
        &self,
        source: &PlanSource<'_>,
        request: &PlanRunRequest,
        record: Option<&RenderOptions>,
    ) -> Result<PlanRun> {
        self.admit_record(record)?;
        if !(1..=PlanRunRequest::MAX_TIMEOUT_SECS).contains(&request.run_timeout_secs) {
            return Err(Error::invalid_field(
                "run_timeout_secs",
                format!(
                    "must be between 1 and {} seconds, got {}",
                    PlanRunRequest::MAX_TIMEOUT_SECS,
                    request.run_timeout_secs
                ),
            ));
        }
        let PlanCheck {
            checked,
            mut warnings,
        } = check_plan(source)?;
        // A plan reads and records in the store: refuse an untrusted one before anything runs.
        self.store_root()?;
        let repo = self.repo()?;
        let dirty = repo.is_dirty();
        let sources = sources::WorkspaceSources::new(
            self,
            repo,
            RunLimits {
                timeout: Duration::from_secs(request.run_timeout_secs),
                max_output: request.run_max_output,
            },
        );
        let mut outcome = evaluate(
            &checked.program,
            &sources,
            &EvalOptions {
                allow_run: request.allow_run,
            },
        )
        .map_err(|e| plan_error(&e, source))?;
        for event in &outcome.trace {
            if let Event::Bind {
                name,
                outcome: BindOutcome::Failed { error },
                ..
            } = event
            {
                warnings.push_str(&format!(
                    "warning: `{name}` is unbound and contributes nothing: {error}\n"
                ));
            }
        }
        // Committed reads leave uncommitted changes out; say so in every pack, as snapshot
        // packs do.
        let reads_commits = checked.program.steps.iter().any(
            |s| matches!(&s.kind, StepKind::Bind { source: Source::Read(r), .. } if !r.worktree),
        );
        // The trace repeats what the author wrote (sources, purposes): masked like the packs.
        for event in &mut outcome.trace {
            let mut unused = ctxpack_core::RedactionSummary::default();
            match event {
                Event::Bind { source, .. } => *source = crate::mask::text(source, &mut unused),
                Event::CtxBuilt { purpose, .. } => {
                    *purpose = crate::mask::text(purpose, &mut unused);
                }
                _ => {}
            }
        }
        for version in &mut outcome.versions {
            let pack = &mut version.built.pack;
            if dirty && reads_commits {
                pack.warnings.push(Warning::DirtyWorktree);
            }
            // A purpose is text the plan's author wrote: it is shown and recorded, so masked.
            let mut masked = pack.candidate_redactions.clone();
            pack.goal = crate::mask::text(&pack.goal, &mut masked);
            pack.set_redactions(masked);
        }
        let (ids, ledger_errors) = self.record_versions(&outcome, record);
        Ok(PlanRun {
            outcome,
            ids,
            flow: checked.program.flow.clone(),
            warnings,
            ledger_errors,
        })
    }

    /// Records every version in order, each linked to the record of the version it extends.
    fn record_versions(
        &self,
        outcome: &Outcome,
        record: Option<&RenderOptions>,
    ) -> (Vec<Option<String>>, Vec<Error>) {
        let mut ids: Vec<Option<String>> = Vec::with_capacity(outcome.versions.len());
        let mut errors = Vec::new();
        for version in &outcome.versions {
            let parent = version.parent.and_then(|p| ids[p].clone());
            let extra = RecordExtra {
                parent,
                output: None,
            };
            match self.record(&version.built.pack, "plan", record, extra) {
                Recorded::Stored(id) => ids.push(Some(id)),
                Recorded::NotAsked => ids.push(None),
                Recorded::Failed(e) => {
                    errors.push(e);
                    ids.push(None);
                }
            }
        }
        (ids, errors)
    }
}

impl PlanRun {
    /// The emitted versions as the front end shows them: each pack rendered with `options`
    /// under a header naming its ctx, version and ledger id (JSON: one document with the
    /// flow and every emitted pack), and with `trace`, every event of the run.
    pub fn render(&self, options: &RenderOptions, trace: bool) -> String {
        let ran = self;
        let outcome = &ran.outcome;
        if options.format == Format::Json {
            let packs: Vec<serde_json::Value> = outcome
                .emitted
                .iter()
                .map(|&i| {
                    let v = &outcome.versions[i];
                    let mut entry = json!({"ctx": v.ctx.name(), "version": v.number});
                    if let Some(id) = &ran.ids[i] {
                        entry["id"] = json!(id);
                    }
                    entry["pack"] = pack_json(&v.built.pack, options.view);
                    entry
                })
                .collect();
            let mut value = json!({"flow": ran.flow, "packs": packs});
            if trace {
                let trace: Vec<_> = outcome.trace.iter().map(Event::to_json).collect();
                value["trace"] = serde_json::Value::Array(trace);
            }
            return ctxpack_core::json_text(&value, options.pretty);
        }
        let markdown = options.format == Format::Markdown;
        let mut out = String::new();
        for (n, &i) in outcome.emitted.iter().enumerate() {
            let v = &outcome.versions[i];
            if n > 0 {
                out.push('\n');
            }
            let id = ran.ids[i]
                .as_ref()
                .map(|id| format!(", pack {}", &id[..12]))
                .unwrap_or_default();
            let (name, number) = (v.ctx.name(), v.number);
            if markdown {
                let _ = writeln!(out, "<!-- ctxpack plan: emit {name} v{number}{id} -->");
            } else {
                let _ = writeln!(out, "=== emit {name} v{number}{id} ===");
            }
            out.push_str(&render(&v.built.pack, options));
        }
        if trace {
            out.push_str(if markdown {
                "\n## Trace\n\n"
            } else {
                "\n=== trace ===\n"
            });
            for (n, event) in outcome.trace.iter().enumerate() {
                if markdown {
                    let _ = writeln!(out, "{}. `{event}`", n + 1);
                } else {
                    let _ = writeln!(out, "{:>3}. {event}", n + 1);
                }
            }
        }
        out
    }
}
