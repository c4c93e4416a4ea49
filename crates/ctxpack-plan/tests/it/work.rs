//! Bounded work: long `+=` chains and deep chains of ctxs cost steps linear in what they
//! produce, counted ([`Checked::work`], [`Outcome::work`]), never timed.
//!
//! What "linear" is measured against: checking, the plan's lines. Running, the size of the
//! outcome: the steps plus, for every version, its members and its pack's hits and drops.
//! Every version is materialised and its pack accounts for each of its members, so a chain
//! of `L` lines `d += xK` on one ctx produces about `L²/2` member records whatever the
//! evaluator does; what it must not do is spend more than a constant per record (before,
//! each left-out member searched for its place among all members: a `+=` chain was cubic).
//! So each case runs at two sizes whose measure is 4× apart, and the work must be 4× apart
//! too, not 8× or 16×.

use ctxpack_plan::testing::TableSources;
use ctxpack_plan::{EvalOptions, MAX_VERSION_MEMBERS, Outcome, PlanError, compile, evaluate};

/// One ctx `d` (budget 1000), then `n` lines `d += xK`, each adding a new text member.
fn plus_chain(n: usize) -> String {
    let mut plan = String::from("flow chain\n");
    for k in 0..=n {
        plan.push_str(&format!("  x{k} = text(\"member {k}\")\n"));
    }
    plan.push_str("  ctx d\n    purpose \"a long += chain\"\n    budget 1000\n    include x0\n");
    for k in 1..=n {
        plan.push_str(&format!("  d += x{k}\n"));
    }
    plan.push_str("  emit d\n");
    plan
}

/// `c0` holds a text; each `cK` includes `c(K-1)`: a chain of `n` ctxs.
fn ctx_chain(n: usize) -> String {
    let mut plan = String::from("flow deep\n  x = text(\"the evidence\")\n");
    plan.push_str("  ctx c0\n    purpose \"level 0\"\n    budget 1000\n    include x\n");
    for k in 1..n {
        plan.push_str(&format!(
            "  ctx c{k}\n    purpose \"level {k}\"\n    budget 1000\n    include c{}\n",
            k - 1
        ));
    }
    plan.push_str(&format!("  emit c{}\n", n - 1));
    plan
}

/// What is measured.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// `compile`: work against the plan's lines.
    Check,
    /// `evaluate`: work against the size of the outcome.
    Run,
}

/// A plan shape: its name and the plan of a given size.
type Shape = (&'static str, fn(usize) -> String);

/// A plan shape, the phase measured, and two sizes whose measure is 4× apart (a `+=` chain's
/// outcome grows as the square of its length, so its run is measured at 300 and 600, both
/// under [`MAX_VERSION_MEMBERS`]).
const CASES: &[(Shape, Phase, [usize; 2])] = &[
    (("a += chain", plus_chain), Phase::Check, [1_000, 4_000]),
    (("a ctx chain", ctx_chain), Phase::Check, [1_000, 4_000]),
    (("a ctx chain", ctx_chain), Phase::Run, [1_000, 4_000]),
    (("a += chain", plus_chain), Phase::Run, [300, 600]),
];

/// Steps per unit of the measure that no case may exceed.
const STEPS_PER_UNIT: u64 = 8;

/// The size of an outcome: its steps, and every version's members, hits and drops.
fn outcome_size(steps: usize, outcome: &Outcome) -> u64 {
    let records: usize = outcome
        .versions
        .iter()
        .map(|v| v.ctx.members().len() + v.built.pack.hits.len() + v.built.pack.dropped.len())
        .sum();
    (steps + records) as u64
}

/// The work and the measure of `plan` in `phase`.
fn measure(plan: &str, phase: Phase) -> (u64, u64) {
    let checked = compile(plan).unwrap_or_else(|e| panic!("{}", e.render("plan.ctx", plan)));
    match phase {
        Phase::Check => (checked.work, plan.lines().count() as u64),
        Phase::Run => {
            let outcome = evaluate(
                &checked.program,
                &TableSources::default(),
                &EvalOptions::default(),
            )
            .expect("evaluates");
            let size = outcome_size(checked.program.steps.len(), &outcome);
            (outcome.work, size)
        }
    }
}

#[test]
fn long_chains_cost_work_linear_in_what_they_produce() {
    for &((shape, plan), phase, [small, large]) in CASES {
        let (work_small, size_small) = measure(&plan(small), phase);
        let (work_large, size_large) = measure(&plan(large), phase);
        let case = format!("{shape} ({phase:?}) at {small} and {large}");
        for (work, size) in [(work_small, size_small), (work_large, size_large)] {
            assert!(
                work <= STEPS_PER_UNIT * size,
                "{case}: {work} steps for a measure of {size}"
            );
        }
        let measured = size_large as f64 / size_small as f64;
        assert!(
            (3.5..=4.5).contains(&measured),
            "{case}: the sizes are {measured:.2}× apart, not 4×"
        );
        let ratio = work_large as f64 / work_small as f64;
        assert!(
            (3.5..=4.5).contains(&ratio),
            "{case}: the work grew {ratio:.2}× ({work_small} → {work_large}), not 4×"
        );
    }
}

#[test]
fn every_version_of_a_chain_is_still_there() {
    // Sharing members between versions changes nothing a version shows.
    let plan = plus_chain(30);
    let checked = compile(&plan).expect("compiles");
    let outcome = evaluate(
        &checked.program,
        &TableSources::default(),
        &EvalOptions::default(),
    )
    .expect("evaluates");
    assert_eq!(outcome.versions.len(), 31);
    for (k, version) in outcome.versions.iter().enumerate() {
        assert_eq!(version.number as usize, k + 1);
        assert_eq!(version.parent, k.checked_sub(1));
        let names: Vec<String> = version.ctx.members().map(|m| m.name.clone()).collect();
        let expected: Vec<String> = (0..=k).map(|i| format!("x{i}")).collect();
        assert_eq!(names, expected);
        let pack = &version.built.pack;
        assert_eq!(pack.hits.len() + pack.dropped.len(), k + 1);
    }
}

#[test]
fn a_chain_whose_versions_would_hold_too_much_is_refused_early() {
    // 4,000 `+=` lines would make eight million member records: refused once the versions
    // built so far pass the limit, having held no more than it.
    let plan = plus_chain(4_000);
    let checked = compile(&plan).expect("compiles");
    let refused = evaluate(
        &checked.program,
        &TableSources::default(),
        &EvalOptions::default(),
    );
    let Err(PlanError::Refused(diagnostic)) = refused else {
        panic!("the chain is refused");
    };
    assert!(
        diagnostic
            .message
            .contains(&format!("more than {MAX_VERSION_MEMBERS} members")),
        "{}",
        diagnostic.message
    );
    // Refused at the `+=` whose version passes the limit: about the 630th.
    let at = &plan[diagnostic.span.start..];
    let step: usize = at
        .strip_prefix("d += x")
        .and_then(|rest| rest.lines().next())
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("refused at {:?}", at.lines().next()));
    assert!((600..700).contains(&step), "refused at `d += x{step}`");
}
