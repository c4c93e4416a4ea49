//! Evaluation: a checked [`Program`] run over [`Sources`], step by step, with a trace.
//!
//! Bindings are evaluated in order and each asks the sources once. A source that fails leaves
//! its name unbound (reported in the trace and in every pack that names it); a source that
//! refuses stops evaluation with an error. A `ctx` captures its members' values as they are at
//! that line; `+=` makes a new version from the prior one plus the added members (their values
//! as they are at the `+=`), re-applies the budget, and leaves the prior version as it was;
//! `emit` names the current version. Every version is kept in [`Outcome::versions`], so the
//! caller can record each one.

use std::collections::HashMap;
use std::fmt;

use ctxpack_core::{DropReason, Meter};
use serde_json::{Value as Json, json};

use crate::PlanError;
use crate::check::{Program, Source, StepKind};
use crate::ctx::{Built, Ctx, Shrunk, size_of};
use crate::diag::Diagnostic;
use crate::sources::{SourceError, Sources};
use crate::value::Value;

/// What evaluation may do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalOptions {
    /// Whether `run` may start commands. Without it a plan with a `run` is refused before any
    /// source is asked.
    pub allow_run: bool,
}

/// One version of a ctx.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    /// The ctx value (purpose, budget, meter, members with their captured values).
    pub ctx: Ctx,
    /// 1 for the `ctx` block, then one more per `+=`.
    pub number: u32,
    /// The index in [`Outcome::versions`] of the version this one extends.
    pub parent: Option<usize>,
    /// The pack and what it left out.
    pub built: Built,
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Every version of every ctx, in the order they were made.
    pub versions: Vec<Version>,
    /// The emitted versions, as indices into `versions`, in `emit` order.
    pub emitted: Vec<usize>,
    /// The events, in order.
    pub trace: Vec<Event>,
}

/// How a binding turned out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindOutcome {
    /// A text of this many `chars` (its JSON length).
    Text {
        /// The JSON length.
        chars: u64,
    },
    /// This many hits.
    Hits {
        /// How many.
        count: usize,
    },
    /// The source failed; the name is unbound.
    Failed {
        /// Why.
        error: String,
    },
}

/// One event of the trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A name was bound (or its source failed).
    Bind {
        /// The name.
        name: String,
        /// The source call, canonical.
        source: String,
        /// What came of it.
        outcome: BindOutcome,
    },
    /// A `ctx` block made its first version.
    CtxBuilt {
        /// The ctx.
        ctx: String,
        /// Always 1.
        version: u32,
        /// Its purpose.
        purpose: String,
        /// Its budget.
        budget: u64,
        /// Its meter.
        meter: Meter,
        /// Its members, in declared order.
        members: Vec<String>,
        /// Budget used by the pack.
        used: u64,
        /// Hits in the pack.
        selected: usize,
    },
    /// A member (or one hit of it) was left out of a version.
    CtxShrunk {
        /// The ctx.
        ctx: String,
        /// The version.
        version: u32,
        /// What was left out and why.
        shrunk: Shrunk,
    },
    /// `+=` made a new version.
    VersionAppended {
        /// The ctx.
        ctx: String,
        /// The new version.
        version: u32,
        /// The version it extends.
        parent: u32,
        /// The added members.
        added: Vec<String>,
        /// Budget used by the new pack.
        used: u64,
        /// Hits in the new pack.
        selected: usize,
    },
    /// A version was emitted.
    Emit {
        /// The ctx.
        ctx: String,
        /// The version.
        version: u32,
    },
}

impl Event {
    /// The event's name: `bind`, `ctx_built`, `ctx_shrunk`, `version_appended` or `emit`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Bind { .. } => "bind",
            Event::CtxBuilt { .. } => "ctx_built",
            Event::CtxShrunk { .. } => "ctx_shrunk",
            Event::VersionAppended { .. } => "version_appended",
            Event::Emit { .. } => "emit",
        }
    }

    /// The event as a JSON object with a stable key order, `event` first.
    pub fn to_json(&self) -> Json {
        match self {
            Event::Bind {
                name,
                source,
                outcome,
            } => {
                let mut v = json!({"event": self.name(), "name": name, "source": source});
                let extra = match outcome {
                    BindOutcome::Text { chars } => {
                        json!({"ok": true, "value": "text", "chars": chars})
                    }
                    BindOutcome::Hits { count } => {
                        json!({"ok": true, "value": "hits", "hits": count})
                    }
                    BindOutcome::Failed { error } => json!({"ok": false, "error": error}),
                };
                merge(&mut v, extra);
                v
            }
            Event::CtxBuilt {
                ctx,
                version,
                purpose,
                budget,
                meter,
                members,
                used,
                selected,
            } => json!({
                "event": self.name(), "ctx": ctx, "version": version, "purpose": purpose,
                "budget": budget, "meter": meter.name(), "members": members, "used": used,
                "selected": selected,
            }),
            Event::CtxShrunk {
                ctx,
                version,
                shrunk,
            } => {
                let mut v = json!({
                    "event": self.name(), "ctx": ctx, "version": version, "member": shrunk.member,
                    "citation": shrunk.citation, "size": shrunk.size,
                    "remaining": shrunk.remaining, "reason": shrunk.reason.name(),
                });
                if let Some(detail) = &shrunk.detail {
                    merge(&mut v, json!({"detail": detail}));
                }
                v
            }
            Event::VersionAppended {
                ctx,
                version,
                parent,
                added,
                used,
                selected,
            } => json!({
                "event": self.name(), "ctx": ctx, "version": version, "parent": parent,
                "added": added, "used": used, "selected": selected,
            }),
            Event::Emit { ctx, version } => {
                json!({"event": self.name(), "ctx": ctx, "version": version})
            }
        }
    }
}

fn merge(into: &mut Json, extra: Json) {
    if let (Json::Object(a), Json::Object(b)) = (into, extra) {
        a.extend(b);
    }
}

impl fmt::Display for Event {
    /// One line per event, e.g. `ctx_shrunk debug v1 src: over_budget (5000, 4000 remaining)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Bind {
                name,
                source,
                outcome,
            } => {
                write!(f, "bind {name} = {source}: ")?;
                match outcome {
                    BindOutcome::Text { chars } => write!(f, "text, {chars} chars"),
                    BindOutcome::Hits { count } => write!(f, "{count} hits"),
                    BindOutcome::Failed { error } => write!(f, "unbound ({error})"),
                }
            }
            Event::CtxBuilt {
                ctx,
                version,
                budget,
                meter,
                members,
                used,
                selected,
                ..
            } => write!(
                f,
                "ctx_built {ctx} v{version}: members {}; {selected} selected, {used}/{budget} {meter}",
                members.join(", ")
            ),
            Event::CtxShrunk {
                ctx,
                version,
                shrunk,
            } => {
                write!(
                    f,
                    "ctx_shrunk {ctx} v{version} {}: {} ({}",
                    shrunk.member, shrunk.reason, shrunk.citation
                )?;
                if shrunk.reason != DropReason::Unbound {
                    write!(f, ", size {}", shrunk.size)?;
                }
                if let Some(remaining) = shrunk.remaining {
                    write!(f, ", {remaining} remaining")?;
                }
                if let Some(detail) = &shrunk.detail {
                    write!(f, ": {detail}")?;
                }
                f.write_str(")")
            }
            Event::VersionAppended {
                ctx,
                version,
                parent,
                added,
                used,
                selected,
            } => write!(
                f,
                "version_appended {ctx} v{version} (from v{parent}): +{}; {selected} selected, {used} used",
                added.join(", +")
            ),
            Event::Emit { ctx, version } => write!(f, "emit {ctx} v{version}"),
        }
    }
}

/// What a name is bound to during evaluation.
enum Slot {
    Value(Value),
    Failed(String),
    /// The index of the ctx's current version.
    Ctx(usize),
}

/// Evaluates a checked program. A `run` without [`EvalOptions::allow_run`] and a source that
/// refuses ([`SourceError::Refused`]) are errors; nothing else is.
pub fn evaluate(
    program: &Program,
    sources: &dyn Sources,
    options: &EvalOptions,
) -> Result<Outcome, PlanError> {
    if !options.allow_run
        && let Some(step) = program.runs().next()
    {
        return Err(PlanError::Refused(
            Diagnostic::error("`run` is refused: commands are not allowed", step.span)
                .with_label("this would start a command")
                .with_help("plans start commands only when asked: pass --allow-run"),
        ));
    }
    let mut slots: HashMap<String, Slot> = HashMap::new();
    let mut outcome = Outcome {
        versions: Vec::new(),
        emitted: Vec::new(),
        trace: Vec::new(),
    };
    for step in &program.steps {
        match &step.kind {
            StepKind::Bind { name, source } => {
                let result = match source {
                    Source::Text(text) => Ok(Value::text(text.clone())),
                    Source::Read(r) => sources.read(r),
                    Source::Query(r) => sources.query(r),
                    Source::Docs(r) => sources.docs(r),
                    Source::Artifact(id) => sources.artifact(id),
                    Source::Run(r) => sources.run(r),
                };
                let (slot, bound) = match result {
                    Ok(value) => {
                        let bound = match &value {
                            Value::Text(t) => BindOutcome::Text {
                                chars: size_of(&t.text, Meter::Chars),
                            },
                            Value::Hits(h) => BindOutcome::Hits { count: h.len() },
                        };
                        (Slot::Value(value), bound)
                    }
                    Err(SourceError::Failed(error)) => {
                        (Slot::Failed(error.clone()), BindOutcome::Failed { error })
                    }
                    Err(SourceError::Refused(reason)) => {
                        return Err(PlanError::Refused(
                            Diagnostic::error(
                                format!("`{}` is refused: {reason}", source.name()),
                                step.span,
                            )
                            .with_label(format!("while binding `{name}`")),
                        ));
                    }
                };
                slots.insert(name.clone(), slot);
                outcome.trace.push(Event::Bind {
                    name: name.clone(),
                    source: source.describe(),
                    outcome: bound,
                });
            }
            StepKind::Ctx(spec) => {
                let mut ctx = Ctx::new(spec.purpose.clone())
                    .named(spec.name.clone())
                    .budget(spec.budget.get())
                    .meter(spec.meter);
                for (member, tier) in &spec.members {
                    ctx = with_member(ctx, member, &slots, &outcome.versions);
                    if *tier == ctxpack_core::Tier::Pinned {
                        ctx = ctx.pin(member.clone());
                    }
                }
                for name in &spec.exclude {
                    ctx = ctx.exclude(name.clone());
                }
                let built = ctx.build()?;
                outcome.trace.push(Event::CtxBuilt {
                    ctx: spec.name.clone(),
                    version: 1,
                    purpose: spec.purpose.clone(),
                    budget: spec.budget.get(),
                    meter: spec.meter,
                    members: spec.members.iter().map(|(m, _)| m.clone()).collect(),
                    used: built.pack.used,
                    selected: built.pack.hits.len(),
                });
                push_version(&mut outcome, &mut slots, ctx, 1, None, built);
            }
            StepKind::Append { target, members } => {
                let prior = current(&slots, target, step)?;
                let parent = &outcome.versions[prior];
                let number = parent.number + 1;
                let parent_number = parent.number;
                let mut ctx = parent.ctx.clone();
                for member in members {
                    ctx = with_member(ctx, member, &slots, &outcome.versions);
                }
                let built = ctx.build()?;
                outcome.trace.push(Event::VersionAppended {
                    ctx: target.clone(),
                    version: number,
                    parent: parent_number,
                    added: members.clone(),
                    used: built.pack.used,
                    selected: built.pack.hits.len(),
                });
                push_version(&mut outcome, &mut slots, ctx, number, Some(prior), built);
            }
            StepKind::Emit { ctx } => {
                let index = current(&slots, ctx, step)?;
                outcome.trace.push(Event::Emit {
                    ctx: ctx.clone(),
                    version: outcome.versions[index].number,
                });
                outcome.emitted.push(index);
            }
        }
    }
    Ok(outcome)
}

/// Adds `name` to `ctx` with its value as it is now.
fn with_member(ctx: Ctx, name: &str, slots: &HashMap<String, Slot>, versions: &[Version]) -> Ctx {
    match slots.get(name) {
        Some(Slot::Value(value)) => ctx.include(name, value.clone()),
        Some(Slot::Ctx(index)) => ctx.include(name, Value::from_pack(&versions[*index].built.pack)),
        Some(Slot::Failed(error)) => ctx.unbound(name, format!("its source failed: {error}")),
        None => ctx.unbound(name, format!("`{name}` is not bound at this point")),
    }
}

fn push_version(
    outcome: &mut Outcome,
    slots: &mut HashMap<String, Slot>,
    ctx: Ctx,
    number: u32,
    parent: Option<usize>,
    built: Built,
) {
    let name = ctx.name().to_owned();
    for shrunk in &built.shrunk {
        outcome.trace.push(Event::CtxShrunk {
            ctx: name.clone(),
            version: number,
            shrunk: shrunk.clone(),
        });
    }
    outcome.versions.push(Version {
        ctx,
        number,
        parent,
        built,
    });
    slots.insert(name, Slot::Ctx(outcome.versions.len() - 1));
}

fn current(
    slots: &HashMap<String, Slot>,
    name: &str,
    step: &crate::check::Step,
) -> Result<usize, PlanError> {
    match slots.get(name) {
        Some(Slot::Ctx(index)) => Ok(*index),
        // `check` guarantees this; a hand-built program may not.
        _ => Err(PlanError::Refused(Diagnostic::error(
            format!("`{name}` is not a ctx at this point"),
            step.span,
        ))),
    }
}
