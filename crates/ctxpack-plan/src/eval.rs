//! Evaluation: a checked [`Program`] run over [`Sources`], step by step, with a trace.
//!
//! Bindings are evaluated in order and each asks the sources once. A source that fails leaves
//! its name unbound (reported in the trace and in every pack that names it); a source that
//! refuses stops evaluation with an error. A `ctx` captures its members' values as they are at
//! that line; `+=` makes a new version from the prior one plus the added members (their values
//! as they are at the `+=`), re-applies the budget, and leaves the prior version as it was;
//! `emit` names the current version. Every version is kept in [`Outcome::versions`], so the
//! caller can record each one.
//!
//! # Work
//!
//! Every version is materialised: its pack lists each of its members, as a hit or as a drop,
//! and the trace reports each drop. A plan of one ctx and `L` lines `d += xK` therefore has
//! versions of 1, 2, …, `L + 1` members, and an outcome of about `L²/2` member records
//! however it is computed. So the bound is stated in the size of the outcome, `n`: the steps,
//! plus, for every version, its members and its pack's hits and drops. Evaluation does at most
//! `c·n` steps ([`Outcome::work`] counts them): a `+=` costs its own version's members
//! (copying one pointer each, masking and counting only the members it adds, selecting,
//! listing the drops), never a search of earlier versions, a sort, or a member-by-member
//! lookup. Without that, a `+=` chain was cubic (every left-out member looked up its place
//! among all members) and copied every text into every version. A chain of ctxs, each
//! including the one before, is linear in the number of ctxs when each pack stays the same
//! size: a ctx member costs the hits of the version it names.

use std::collections::{HashMap, HashSet};
use std::fmt;

use ctxpack_core::{DropReason, Meter};
use serde_json::{Value as Json, json};

use crate::PlanError;
use crate::check::{Program, Source, Step, StepKind};
use crate::ctx::{Binding, Built, Ctx, Shrunk, size_of};
use crate::diag::Diagnostic;
use crate::sources::Sources;
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
    /// How many steps evaluation took (not counting the sources' own work): at most a constant
    /// times the size of the outcome (see the module docs). Tests hold it to that bound.
    pub work: u64,
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
/// refuses ([`PlanError::Refused`]) are errors; nothing else is.
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
    // The members of each ctx's current version, the one a `+=` extends: so adding a member
    // knows it is new without searching the version's members.
    let mut names: HashMap<String, HashSet<String>> = HashMap::new();
    let mut outcome = Outcome {
        versions: Vec::new(),
        emitted: Vec::new(),
        trace: Vec::new(),
        work: 0,
    };
    // Members over all versions so far: every version is kept, packed and recorded.
    let mut held = 0usize;
    for step in &program.steps {
        outcome.work += 1;
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
                    Err(PlanError::SourceFailed(error)) => {
                        (Slot::Failed(error.clone()), BindOutcome::Failed { error })
                    }
                    // A source's other errors refuse the plan as a refusal does.
                    Err(refused) => {
                        let reason = match refused {
                            PlanError::SourceRefused(reason) => reason,
                            other => other.to_string(),
                        };
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
                let mut members = HashSet::new();
                for (member, tier) in &spec.members {
                    ctx = if members.insert(member.clone()) {
                        let binding = binding(member, &slots, &outcome.versions, &mut outcome.work);
                        ctx.push_new(member.clone(), binding, *tier)
                    } else {
                        // Listed twice: `check` rules it out, a hand-built program may not.
                        let ctx =
                            with_member(ctx, member, &slots, &outcome.versions, &mut outcome.work);
                        if *tier == ctxpack_core::Tier::Pinned {
                            ctx.pin(member.clone())
                        } else {
                            ctx
                        }
                    };
                }
                let mut excluded = HashSet::new();
                for name in &spec.exclude {
                    outcome.work += 1;
                    if excluded.insert(name) {
                        ctx = ctx.exclude_new(name.clone());
                    }
                }
                names.insert(spec.name.clone(), members);
                let built = ctx.build_counted(&mut outcome.work)?;
                held = within_limit(held, &ctx, step)?;
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
                // One pointer per member: the members themselves are shared.
                let mut ctx = parent.ctx.clone();
                outcome.work += ctx.len() as u64;
                let current = names.entry(target.clone()).or_default();
                for member in members {
                    ctx = if current.insert(member.clone()) {
                        let binding = binding(member, &slots, &outcome.versions, &mut outcome.work);
                        ctx.push_new(member.clone(), binding, ctxpack_core::Tier::Visible)
                    } else {
                        // Already a member: `check` rules it out, a hand-built program may not.
                        with_member(ctx, member, &slots, &outcome.versions, &mut outcome.work)
                    };
                }
                let built = ctx.build_counted(&mut outcome.work)?;
                held = within_limit(held, &ctx, step)?;
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

/// Most members all versions of a plan may hold together. Every version is packed and
/// recorded whole, so a chain of `+=` lines holds quadratically many: this bounds the memory
/// and the ledger a plan can ask for (a chain of about 600 one-member `+=` lines).
pub const MAX_VERSION_MEMBERS: usize = 200_000;

/// `held` plus the members of the version `ctx` just built, or the error once over the limit.
fn within_limit(held: usize, ctx: &Ctx, step: &Step) -> Result<usize, PlanError> {
    let held = held.saturating_add(ctx.len());
    if held > MAX_VERSION_MEMBERS {
        return Err(PlanError::Refused(
            Diagnostic::error(
                format!(
                    "the plan's versions hold more than {MAX_VERSION_MEMBERS} members together"
                ),
                step.span,
            )
            .with_label("the limit is passed at this version")
            .with_help(
                "every version is packed and recorded whole: use fewer `+=` steps, \
                 e.g. one `+=` with several members, or split the plan",
            ),
        ));
    }
    Ok(held)
}

/// The binding of member `name` with its value as it is now; `work` counts the hits a ctx
/// member copies.
fn binding(
    name: &str,
    slots: &HashMap<String, Slot>,
    versions: &[Version],
    work: &mut u64,
) -> Binding {
    match slots.get(name) {
        Some(Slot::Value(value)) => Binding::Bound(value.clone()),
        Some(Slot::Ctx(index)) => {
            let pack = &versions[*index].built.pack;
            *work += pack.hits.len() as u64;
            Binding::Bound(Value::from_pack(pack))
        }
        Some(Slot::Failed(error)) => Binding::Unbound(format!("its source failed: {error}")),
        None => Binding::Unbound(format!("`{name}` is not bound at this point")),
    }
}

/// Adds `name` to `ctx` with its value as it is now, or gives a member of that name that value.
fn with_member(
    ctx: Ctx,
    name: &str,
    slots: &HashMap<String, Slot>,
    versions: &[Version],
    work: &mut u64,
) -> Ctx {
    let binding = binding(name, slots, versions, work);
    ctx.set(name.to_owned(), binding)
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
    outcome.work += built.shrunk.len() as u64;
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
