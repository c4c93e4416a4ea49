//! Name resolution and validation (`plan check`): a [`Plan`] tree in, a [`Program`] out.
//!
//! Everything that can be known without running a source is checked here, so `plan check`
//! catches it and `plan run` never starts a half-valid plan:
//!
//! - every source call has the right arguments, of the right kinds (`lines: 1..80`, `top: 10`,
//!   `filter: {…}`, `at: "sha"`, `worktree: true`); a `read` path must stay inside the
//!   repository; a `run` command must split into words;
//! - a name is bound once; `include`, `pin`, `exclude` and `+=` name something bound somewhere
//!   in the plan (a name bound only *after* the ctx that uses it is a warning: it is unbound
//!   there and contributes nothing);
//! - `+=` and `emit` name a ctx that exists at that line; a member is listed once;
//! - no ctx contains itself, directly or through other ctxs (`include` or `+=`);
//! - a budget is at least 1 (a 0 budget is rejected) and at most 2^53 - 1; the meter exists.
//!
//! Checking is linear in the plan ([`Checked::work`] counts its steps): every statement and
//! every name in it costs a few hash lookups, and containment cycles are found by one pass
//! over the strongly connected components of the ctx graph. Only a plan that has a cycle
//! searches, edge by edge in source order, for the one that closes it, and only within the
//! component that holds the cycle (it reports an error anyway). A chain of 4,000 ctxs, each
//! including the one before, was cubic before: every edge searched the chain below it,
//! copying the path at every step.

use std::collections::{BTreeMap, HashMap, HashSet};

use ctxpack_core::{Budget, Meter, Tier};

use crate::ast::{CtxBlock, CtxSetting, Ident, Plan, Statement};
use crate::diag::{Diagnostic, Span};
use crate::parser::statement_span;
use crate::sources::{DocsRequest, QueryRequest, ReadRequest, RunRequest};

mod calls;
mod cycles;

pub use calls::normalize_path;

/// How many hits `query` and `docs` return unless `top:` says otherwise.
pub const DEFAULT_TOP: usize = 10;

/// A checked plan, ready to evaluate.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The flow's name, if the plan has one.
    pub flow: Option<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

impl Program {
    /// The `run` steps, which need the caller's permission.
    pub fn runs(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| {
            matches!(
                s.kind,
                StepKind::Bind {
                    source: Source::Run(_),
                    ..
                }
            )
        })
    }
}

/// One step of a program and the statement it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The statement's span (for a binding, its source call).
    pub span: Span,
    /// What it does.
    pub kind: StepKind,
}

/// What a step does.
#[derive(Clone, Debug, PartialEq)]
pub enum StepKind {
    /// Bind a name to a source's value.
    Bind {
        /// The name.
        name: String,
        /// The source.
        source: Source,
    },
    /// Create a ctx (its first version).
    Ctx(CtxSpec),
    /// Append members to a ctx: a new version.
    Append {
        /// The ctx.
        target: String,
        /// The added members, in order.
        members: Vec<String>,
    },
    /// Emit the current version of a ctx.
    Emit {
        /// The ctx.
        ctx: String,
    },
}

/// A ctx block after checking.
#[derive(Clone, Debug, PartialEq)]
pub struct CtxSpec {
    /// Its name.
    pub name: String,
    /// Why it exists (empty when not given).
    pub purpose: String,
    /// The budget (2^53 - 1 when not given).
    pub budget: Budget,
    /// The meter (`chars`, the seed's v1 counter, when not given).
    pub meter: Meter,
    /// Members in declared order (first appearance in `include` or `pin`), with their tier.
    pub members: Vec<(String, Tier)>,
    /// Names that never enter the ctx, in any version.
    pub exclude: Vec<String>,
}

/// A source call after checking.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// `read(…)`.
    Read(ReadRequest),
    /// `query(…)`.
    Query(QueryRequest),
    /// `docs(…)`.
    Docs(DocsRequest),
    /// `artifact(id)`.
    Artifact(String),
    /// `text("…")`.
    Text(String),
    /// `run("…")`.
    Run(RunRequest),
}

impl Source {
    /// The source's name: `read`, `query`, `docs`, `artifact`, `text` or `run`.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Read(_) => "read",
            Source::Query(_) => "query",
            Source::Docs(_) => "docs",
            Source::Artifact(_) => "artifact",
            Source::Text(_) => "text",
            Source::Run(_) => "run",
        }
    }

    /// The call in canonical form, e.g. `read("a.rs", lines: 1..80)`.
    pub fn describe(&self) -> String {
        let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
        let mut args = Vec::new();
        match self {
            Source::Read(r) => {
                args.push(q(&r.path));
                if let Some((a, b)) = r.lines {
                    args.push(format!("lines: {a}..{b}"));
                }
                if let Some(at) = &r.at {
                    args.push(format!("at: {}", q(at)));
                }
                if r.worktree {
                    args.push("worktree: true".into());
                }
            }
            Source::Query(r) => {
                args.push(q(&r.goal));
                args.push(format!("top: {}", r.top));
                if let Some(at) = &r.at {
                    args.push(format!("at: {}", q(at)));
                }
            }
            Source::Docs(r) => {
                for s in [&r.store, &r.collection, &r.field, &r.query] {
                    args.push(q(s));
                }
                if let Some(filter) = &r.filter {
                    args.push(format!("filter: {filter}"));
                }
                args.push(format!("top: {}", r.top));
            }
            Source::Artifact(id) => args.push(q(id)),
            Source::Text(text) => args.push(q(text)),
            Source::Run(r) => args.push(q(&r.command)),
        }
        format!("{}({})", self.name(), args.join(", "))
    }
}

/// A program and the warnings found while checking it.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The program.
    pub program: Program,
    /// Warnings, in source order.
    pub warnings: Vec<Diagnostic>,
    /// How many steps checking took: linear in the plan's statements and names (see the
    /// module docs). Tests hold it to that bound.
    pub work: u64,
}

/// Resolves names and validates a parsed plan. On failure, every error found is returned, in
/// source order (warnings are reported only for a plan without errors).
pub fn check(plan: &Plan) -> Result<Checked, Vec<Diagnostic>> {
    let mut checker = Checker::default();
    checker.define(plan);
    let steps = checker.statements(plan);
    checker.cycles();
    if !plan
        .statements
        .iter()
        .any(|s| matches!(s, Statement::Emit { .. }))
    {
        let span = plan.flow.as_ref().map_or(Span::default(), |f| f.span);
        checker.diagnostics.push(
            Diagnostic::warning("the plan emits nothing", span)
                .with_help("add `emit NAME` for each ctx a model should see"),
        );
    }
    let work = checker.work;
    let mut diagnostics = checker.diagnostics;
    diagnostics.sort_by_key(|d| (d.span.start, d.severity));
    if diagnostics.iter().any(Diagnostic::is_error) {
        diagnostics.retain(Diagnostic::is_error);
        return Err(diagnostics);
    }
    Ok(Checked {
        program: Program {
            flow: plan.flow.as_ref().map(|f| f.name.clone()),
            steps,
        },
        warnings: diagnostics,
        work,
    })
}

/// Where and how a name is bound.
#[derive(Clone, Debug)]
struct Def {
    /// Index of the binding statement.
    index: usize,
    /// The bound name's span.
    span: Span,
    /// `Some(source)` for a value, `None` for a ctx.
    source: Option<String>,
}

/// An edge of the ctx containment graph: `from` contains `to`.
struct Edge {
    from: String,
    to: String,
    span: Span,
}

#[derive(Default)]
struct Checker {
    defs: BTreeMap<String, Def>,
    diagnostics: Vec<Diagnostic>,
    edges: Vec<Edge>,
    /// Steps taken: statements, names, graph nodes and edges visited.
    work: u64,
}

impl Checker {
    fn error(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    /// First pass: where every name is bound, and names bound twice.
    fn define(&mut self, plan: &Plan) {
        for (index, statement) in plan.statements.iter().enumerate() {
            self.work += 1;
            let (ident, source) = match statement {
                Statement::Bind { name, call } => (name, Some(call.function.name.clone())),
                Statement::Ctx(block) => (&block.name, None),
                _ => continue,
            };
            if let Some(first) = self.defs.get(&ident.name) {
                let first = first.span;
                self.error(
                    Diagnostic::error(format!("`{}` is bound twice", ident.name), ident.span)
                        .with_label("bound again here")
                        .with_related(first, format!("`{}` is first bound here", ident.name))
                        .with_help("values are immutable: choose another name, or use `+=` to add members to a ctx"),
                );
                continue;
            }
            self.defs.insert(
                ident.name.clone(),
                Def {
                    index,
                    span: ident.span,
                    source,
                },
            );
        }
    }

    fn statements(&mut self, plan: &Plan) -> Vec<Step> {
        let mut steps = Vec::new();
        // Current members and exclusions of each ctx, as versions are appended.
        let mut ctxs: HashMap<String, (HashSet<String>, HashSet<String>)> = HashMap::new();
        for (index, statement) in plan.statements.iter().enumerate() {
            self.work += 1;
            let span = statement_span(statement);
            match statement {
                Statement::Bind { name, call } => {
                    if let Some(source) = self.source(call) {
                        steps.push(Step {
                            span: call.span,
                            kind: StepKind::Bind {
                                name: name.name.clone(),
                                source,
                            },
                        });
                    }
                }
                Statement::Ctx(block) => {
                    let spec = self.ctx(block, index);
                    let members = spec.members.iter().map(|(m, _)| m.clone()).collect();
                    let excluded = spec.exclude.iter().cloned().collect();
                    ctxs.insert(spec.name.clone(), (members, excluded));
                    steps.push(Step {
                        span,
                        kind: StepKind::Ctx(spec),
                    });
                }
                Statement::Append { target, names, .. } => {
                    if !self.ctx_here(target, index, "`+=` adds members to a ctx") {
                        continue;
                    }
                    let mut added = Vec::new();
                    for ident in names {
                        self.member(ident, index, &target.name);
                        let Some((members, excluded)) = ctxs.get_mut(&target.name) else {
                            continue;
                        };
                        if !members.insert(ident.name.clone()) {
                            self.error(Diagnostic::error(
                                format!(
                                    "`{}` is already a member of `{}`",
                                    ident.name, target.name
                                ),
                                ident.span,
                            ));
                            continue;
                        }
                        if excluded.contains(&ident.name) {
                            self.error(
                                Diagnostic::warning(
                                    format!("`{}` is excluded from `{}`", ident.name, target.name),
                                    ident.span,
                                )
                                .with_label("it will be reported as excluded, not packed"),
                            );
                        }
                        added.push(ident.name.clone());
                    }
                    steps.push(Step {
                        span,
                        kind: StepKind::Append {
                            target: target.name.clone(),
                            members: added,
                        },
                    });
                }
                Statement::Emit { names, .. } => {
                    for ident in names {
                        if self.ctx_here(ident, index, "only a ctx can be emitted") {
                            steps.push(Step {
                                span: ident.span,
                                kind: StepKind::Emit {
                                    ctx: ident.name.clone(),
                                },
                            });
                        }
                    }
                }
            }
        }
        steps
    }

    /// Checks that `ident` names a ctx that exists before statement `index`.
    fn ctx_here(&mut self, ident: &Ident, index: usize, what: &str) -> bool {
        self.work += 1;
        let Some(def) = self.defs.get(&ident.name).cloned() else {
            self.undefined(ident);
            return false;
        };
        if let Some(source) = &def.source {
            self.error(
                Diagnostic::error(
                    format!("{what}, but `{}` is a `{source}` value", ident.name),
                    ident.span,
                )
                .with_related(def.span, format!("`{}` is bound here", ident.name)),
            );
            return false;
        }
        if def.index >= index {
            self.error(
                Diagnostic::error(
                    format!("`{}` is not a ctx yet at this line", ident.name),
                    ident.span,
                )
                .with_related(def.span, format!("`{}` is created here", ident.name)),
            );
            return false;
        }
        true
    }

    /// A name used as a member of `ctx` at statement `index`.
    fn member(&mut self, ident: &Ident, index: usize, ctx: &str) {
        self.work += 1;
        let Some(def) = self.defs.get(&ident.name).cloned() else {
            self.undefined(ident);
            return;
        };
        if def.source.is_none() {
            self.edges.push(Edge {
                from: ctx.to_owned(),
                to: ident.name.clone(),
                span: ident.span,
            });
        }
        if def.index > index {
            self.error(
                Diagnostic::warning(
                    format!("`{}` is not bound yet at this line", ident.name),
                    ident.span,
                )
                .with_label("unbound here: it contributes nothing")
                .with_related(def.span, format!("`{}` is bound later, here", ident.name)),
            );
        }
    }

    fn undefined(&mut self, ident: &Ident) {
        let mut d = Diagnostic::error(format!("undefined name `{}`", ident.name), ident.span)
            .with_label("not bound anywhere in this plan");
        if let Some(close) = self.closest(&ident.name) {
            d = d.with_help(format!("did you mean `{close}`?"));
        }
        self.error(d);
    }

    fn closest(&self, name: &str) -> Option<String> {
        // A one- or two-letter name is close to every other short name: no guess.
        if name.chars().count() < 3 {
            return None;
        }
        let limit = (name.chars().count() / 3).max(1);
        self.defs
            .keys()
            // Optimal string alignment: an adjacent transposition is one edit, so `spce`
            // is one edit from `spec`.
            .map(|k| (strsim::osa_distance(k, name), k))
            .filter(|(d, _)| *d <= limit)
            .min()
            .map(|(_, k)| k.clone())
    }

    fn ctx(&mut self, block: &CtxBlock, index: usize) -> CtxSpec {
        let name = block.name.name.clone();
        let mut purpose = None;
        let mut budget = None;
        let mut meter = None;
        let mut set: HashMap<&str, Span> = HashMap::new();
        let mut members: Vec<(String, Tier)> = Vec::new();
        // Where each member is in `members`, so a name pinned and included is found at once.
        let mut place: HashMap<String, usize> = HashMap::new();
        let mut excluded: HashSet<String> = HashSet::new();
        let mut included: HashSet<String> = HashSet::new();
        let mut pinned: HashSet<String> = HashSet::new();
        let mut exclude: Vec<String> = Vec::new();
        for line in &block.lines {
            let keyword = line.keyword.name.as_str();
            if matches!(keyword, "purpose" | "budget" | "meter") {
                if let Some(first) = set.get(keyword) {
                    let first = *first;
                    self.error(
                        Diagnostic::error(
                            format!("`{keyword}` is set twice in `{name}`"),
                            line.keyword.span,
                        )
                        .with_related(first, "first set here"),
                    );
                    continue;
                }
                set.insert(keyword, line.keyword.span);
            }
            match &line.setting {
                CtxSetting::Purpose(text) => purpose = Some(text.value.clone()),
                CtxSetting::Budget(n) => match Budget::new(n.value) {
                    Ok(b) => budget = Some(b),
                    Err(e) => {
                        let message = if n.value == 0 {
                            "a 0 budget is rejected".to_owned()
                        } else {
                            e.to_string()
                        };
                        self.error(
                            Diagnostic::error(message, n.span)
                                .with_label("a budget is a whole number from 1 to 2^53 - 1"),
                        );
                    }
                },
                CtxSetting::Meter(m) => match m.name.parse::<Meter>() {
                    Ok(parsed) => meter = Some(parsed),
                    Err(e) => self.error(Diagnostic::error(e.to_string(), m.span)),
                },
                CtxSetting::Include(names) | CtxSetting::Pin(names) => {
                    let pin = matches!(line.setting, CtxSetting::Pin(_));
                    for ident in names {
                        self.member(ident, index, &name);
                        let seen = if pin { &mut pinned } else { &mut included };
                        if !seen.insert(ident.name.clone()) {
                            self.error(Diagnostic::error(
                                format!(
                                    "`{}` is listed twice in `{}` of `{name}`",
                                    ident.name, line.keyword.name
                                ),
                                ident.span,
                            ));
                            continue;
                        }
                        if let Some(&at) = place.get(&ident.name) {
                            if pin {
                                members[at].1 = Tier::Pinned;
                            }
                        } else {
                            let tier = if pin { Tier::Pinned } else { Tier::Visible };
                            place.insert(ident.name.clone(), members.len());
                            members.push((ident.name.clone(), tier));
                        }
                    }
                }
                CtxSetting::Exclude(names) => {
                    for ident in names {
                        self.work += 1;
                        if !self.defs.contains_key(&ident.name) {
                            self.undefined(ident);
                        } else if excluded.insert(ident.name.clone()) {
                            exclude.push(ident.name.clone());
                        }
                    }
                }
            }
        }
        if purpose.is_none() {
            self.error(
                Diagnostic::warning(format!("ctx `{name}` has no purpose"), block.name.span)
                    .with_help(
                        "`purpose \"…\"` documents why the pack exists and labels it in the ledger",
                    ),
            );
        }
        if budget.is_none() && !set.contains_key("budget") {
            self.error(
                Diagnostic::warning(format!("ctx `{name}` has no budget"), block.name.span)
                    .with_help("without `budget N` the pack is bounded only by 2^53 - 1"),
            );
        }
        CtxSpec {
            name,
            purpose: purpose.unwrap_or_default(),
            budget: budget
                .unwrap_or(Budget::new(Budget::MAX).expect("the maximum budget is valid")),
            meter: meter.unwrap_or(Meter::Chars),
            members,
            exclude,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("src/a.rs", Ok("src/a.rs")),
            ("./src//a.rs", Ok("src/a.rs")),
            ("src/../README.md", Ok("README.md")),
            ("../etc/passwd", Err("it climbs above the repository root")),
            ("src/../../x", Err("it climbs above the repository root")),
            ("/etc/passwd", Err("absolute paths are refused")),
            ("C:/x", Err("absolute paths are refused")),
            (".", Err("it names the repository root, not a file")),
            ("", Err("the path is empty")),
        ];
        for (raw, expected) in cases {
            assert_eq!(normalize_path(raw), expected.map(str::to_owned), "{raw:?}");
        }
    }

    /// The cycle check as it was before components: every edge searched with a path copied
    /// at every step. Kept as the reference the faster one must agree with.
    fn reference_cycles(edges: &[(usize, usize)]) -> Vec<String> {
        fn find(graph: &HashMap<String, Vec<String>>, from: &str, to: &str) -> Option<Vec<String>> {
            let mut stack = vec![(from.to_owned(), vec![from.to_owned()])];
            let mut seen = HashSet::new();
            while let Some((node, path)) = stack.pop() {
                if node == to {
                    return Some(path);
                }
                if !seen.insert(node.clone()) {
                    continue;
                }
                for next in graph.get(&node).into_iter().flatten() {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
            None
        }
        let mut graph: HashMap<String, Vec<String>> = HashMap::new();
        let mut found = Vec::new();
        for &(from, to) in edges {
            let (from, to) = (format!("c{from}"), format!("c{to}"));
            if let Some(path) = find(&graph, &to, &from) {
                found.push(if from == to {
                    format!("`{from}` contains itself")
                } else {
                    format!("`{from}` contains itself: {from} -> {}", path.join(" -> "))
                });
                continue;
            }
            graph.entry(from).or_default().push(to);
        }
        found
    }

    #[test]
    fn cycles_are_the_ones_the_edge_by_edge_search_finds() {
        // Edge lists from a fixed pseudo-random sequence: small graphs, many cycles.
        let mut seed = 0x2545_f491_u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) % n) as usize
        };
        let mut through_others = 0;
        for _ in 0..2_000 {
            let nodes = 1 + next(7) as u64;
            let edges: Vec<(usize, usize)> =
                (0..next(12)).map(|_| (next(nodes), next(nodes))).collect();
            let mut checker = Checker {
                edges: edges
                    .iter()
                    .enumerate()
                    .map(|(i, &(from, to))| Edge {
                        from: format!("c{from}"),
                        to: format!("c{to}"),
                        span: Span::new(i, i + 1),
                    })
                    .collect(),
                ..Checker::default()
            };
            checker.cycles();
            let found: Vec<&str> = checker
                .diagnostics
                .iter()
                .map(|d| d.message.as_str())
                .collect();
            assert_eq!(found, reference_cycles(&edges), "{edges:?}");
            through_others += found.iter().filter(|m| m.contains(" -> ")).count();
        }
        // Not only self-containment: cycles through other ctxs, with their paths.
        assert!(through_others > 500, "{through_others}");
    }

    #[test]
    fn edit_distance() {
        use strsim::osa_distance;
        assert_eq!(osa_distance("spec", "spce"), 1);
        assert_eq!(osa_distance("budget", "budjet"), 1);
        assert_eq!(osa_distance("src", "src"), 0);
        assert_eq!(osa_distance("", "abc"), 3);
    }
}
