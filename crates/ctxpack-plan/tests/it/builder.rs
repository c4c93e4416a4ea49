//! The `Ctx` builder: the same semantics for programs that do not want a file.

use ctxpack_core::{DropReason, Meter, Tier};
use ctxpack_plan::{Ctx, PlanError, SourceHit, Value};

#[test]
fn zero_budget_is_rejected() {
    let err = Ctx::new("p").budget(0).build().expect_err("0 is rejected");
    assert!(matches!(err, PlanError::Budget(_)));
    assert_eq!(err.to_string(), "budget must be a positive integer, got 0");
    assert!(Ctx::new("p").budget(1 << 53).build().is_err());
}

#[test]
fn builder_matches_the_plan_semantics() {
    let v1 = Ctx::new("explain")
        .named("debug")
        .budget(30)
        .include("a", Value::text("alpha"))
        .include("big", Value::text("x".repeat(40)))
        .include("c", Value::text("gamma"))
        .pin("c")
        .exclude("spec")
        .include("spec", Value::text("never"));
    let built = v1.build().expect("builds");
    let cited: Vec<(&str, Tier)> = built
        .pack
        .hits
        .iter()
        .map(|h| (h.candidate.citation.as_str(), h.candidate.tier))
        .collect();
    assert_eq!(
        cited,
        [
            ("plan:debug/c", Tier::Pinned),
            ("plan:debug/a", Tier::Visible)
        ]
    );
    let shrunk: Vec<(&str, DropReason)> = built
        .shrunk
        .iter()
        .map(|s| (s.member.as_str(), s.reason))
        .collect();
    assert_eq!(
        shrunk,
        [
            ("big", DropReason::OverBudget),
            ("spec", DropReason::Excluded)
        ]
    );
    assert_eq!(built.pack.goal, "explain");

    // `+=` is a clone plus members; the prior version is untouched.
    let v2 = v1.clone().include(
        "hits",
        Value::Hits(vec![SourceHit::new("src/x.rs#L1-L2@abc1234", "ok")]),
    );
    assert_eq!(v1.build().expect("builds"), built);
    let built2 = v2.build().expect("builds");
    assert_eq!(built2.pack.hits.len(), 3);
    assert_eq!(
        built2.pack.hits[2].candidate.citation.as_str(),
        "src/x.rs#L1-L2@abc1234"
    );
}

#[test]
fn pinning_before_including_keeps_the_pin() {
    let built = Ctx::new("p")
        .pin("late")
        .include("early", Value::text("e"))
        .include("late", Value::text("l"))
        .build()
        .expect("builds");
    let order: Vec<&str> = built
        .pack
        .hits
        .iter()
        .map(|h| h.candidate.citation.as_str())
        .collect();
    assert_eq!(order, ["plan:ctx/late", "plan:ctx/early"]);
}

#[test]
fn meter_and_unbound() {
    let built = Ctx::new("p")
        .meter(Meter::Words)
        .budget(3)
        .include("a", Value::text("one two"))
        .unbound("tests", "cargo test was killed after 60 s")
        .build()
        .expect("builds");
    // JSON `"one two"` is two words.
    assert_eq!(built.pack.used, 2);
    assert_eq!(built.shrunk[0].reason, DropReason::Unbound);
    assert_eq!(
        built.shrunk[0].detail.as_deref(),
        Some("cargo test was killed after 60 s")
    );
}
