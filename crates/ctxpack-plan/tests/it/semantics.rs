//! The seed's semantics, one rule per case: a plan, the sources it sees, and what every
//! version of every ctx holds and leaves out.

use std::fmt::Write;

use ctxpack_core::{DropReason, Meter, Tier};
use ctxpack_plan::testing::TableSources;
use ctxpack_plan::{EvalOptions, Outcome, PlanError, SourceHit, Value, compile, evaluate};

fn text(s: &str) -> Result<Value, PlanError> {
    Ok(Value::text(s))
}

fn hits(items: &[(&str, &str)]) -> Result<Value, PlanError> {
    Ok(Value::Hits(
        items
            .iter()
            .map(|(citation, text)| SourceHit::new(*citation, *text))
            .collect(),
    ))
}

/// A text whose stored JSON is exactly `n` chars long.
fn sized(n: usize) -> Result<Value, PlanError> {
    text(&"x".repeat(n - 2))
}

/// Evaluates a plan and checks the engine's invariants on every version.
fn outcome(source: &str, sources: &TableSources, options: EvalOptions) -> Outcome {
    let checked = compile(source).unwrap_or_else(|e| panic!("{}", e.render("plan.ctx", source)));
    let outcome = evaluate(&checked.program, sources, &options).expect("evaluates");
    for v in &outcome.versions {
        let pack = &v.built.pack;
        let c = pack.counters;
        assert!(pack.used <= pack.budget.get(), "used <= budget");
        assert_eq!(
            pack.used,
            pack.hits.iter().map(|h| h.candidate.cost).sum::<u64>()
        );
        assert_eq!(c.unique_citations, pack.hits.len() + c.budget_rejected_hits);
        assert_eq!(
            c.candidate_hits,
            c.unique_citations + c.duplicate_citations_skipped
        );
        // Nothing silent: every drop is a shrunk record and the other way round.
        assert_eq!(pack.dropped.len(), v.built.shrunk.len());
        // The pinned tier comes first.
        let tiers: Vec<Tier> = pack.hits.iter().map(|h| h.candidate.tier).collect();
        assert!(tiers.is_sorted(), "pinned hits first: {tiers:?}");
    }
    outcome
}

/// Every version (members kept with their size and tier, members left out with the reason),
/// then what was emitted.
fn summary(outcome: &Outcome) -> String {
    let mut out = String::new();
    for v in &outcome.versions {
        let pack = &v.built.pack;
        let from = v
            .parent
            .map(|p| format!(" (from v{})", outcome.versions[p].number))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{} v{}{from}: {}/{} {}",
            v.ctx.name(),
            v.number,
            pack.used,
            pack.budget,
            pack.meter
        );
        for h in &pack.hits {
            let pinned = if h.candidate.tier == Tier::Pinned {
                " pinned"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  + {} {}{pinned}",
                h.candidate.citation, h.candidate.cost
            );
        }
        for s in &v.built.shrunk {
            let _ = write!(
                out,
                "  - {} {} {} size {}",
                s.member, s.citation, s.reason, s.size
            );
            if let Some(r) = s.remaining {
                let _ = write!(out, " remaining {r}");
            }
            if let Some(d) = &s.detail {
                let _ = write!(out, ": {d}");
            }
            out.push('\n');
        }
    }
    let emitted: Vec<String> = outcome
        .emitted
        .iter()
        .map(|&i| {
            format!(
                "{} v{}",
                outcome.versions[i].ctx.name(),
                outcome.versions[i].number
            )
        })
        .collect();
    let _ = writeln!(out, "emitted: {}", emitted.join(", "));
    out
}

struct Case {
    rule: &'static str,
    plan: &'static str,
    reads: &'static [(&'static str, usize)],
    expected: &'static str,
}

#[test]
fn seed_rules() {
    let cases = [
        Case {
            rule: "one oversized early member never evicts the smaller members after it",
            plan: "flow f\n  a = text(\"alpha\")\n  big = read(\"big.txt\")\n  c = text(\"gamma\")\n  ctx d\n    purpose \"p\"\n    budget 20\n    include a, big, c\n  emit d\n",
            reads: &[("big.txt", 100)],
            expected: "\
d v1: 14/20 chars
  + plan:d/a 7
  + plan:d/c 7
  - big plan:d/big over_budget size 100 remaining 13
emitted: d v1
",
        },
        Case {
            rule: "a pinned member is never dropped to make room for a plainer member",
            plan: "flow f\n  a = text(\"alpha\")\n  b = text(\"bravo!\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    include a, b\n    pin b\n  emit d\n",
            reads: &[],
            expected: "\
d v1: 8/10 chars
  + plan:d/b 8 pinned
  - a plan:d/a over_budget size 7 remaining 2
emitted: d v1
",
        },
        Case {
            rule: "a pinned member that does not fit is dropped and packing goes on",
            plan: "flow f\n  big = read(\"big.txt\")\n  a = text(\"alpha\")\n  ctx d\n    purpose \"p\"\n    budget 20\n    include a\n    pin big\n  emit d\n",
            reads: &[("big.txt", 30)],
            expected: "\
d v1: 7/20 chars
  + plan:d/a 7
  - big plan:d/big over_budget size 30 remaining 20
emitted: d v1
",
        },
        Case {
            rule: "members are kept in priority order: pinned tier first, then declared order",
            plan: "flow f\n  a = text(\"alpha\")\n  b = text(\"beta\")\n  c = text(\"gamma\")\n  e = text(\"echo\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include a, b\n    pin e, c\n  emit d\n",
            reads: &[],
            expected: "\
d v1: 26/100 chars
  + plan:d/e 6 pinned
  + plan:d/c 7 pinned
  + plan:d/a 7
  + plan:d/b 6
emitted: d v1
",
        },
        Case {
            rule: "the v1 counter is the JSON length of the stored value",
            plan: "flow f\n  q = text(\"a\\\"b\\nc\")\n  ctx d\n    purpose \"p\"\n    budget 9\n    include q\n  emit d\n",
            reads: &[],
            expected: "\
d v1: 9/9 chars
  + plan:d/q 9
emitted: d v1
",
        },
        Case {
            rule: "an unbound member contributes nothing and is reported, not an error",
            plan: "flow f\n  a = text(\"alpha\")\n  log = artifact(\"ci-log-17\")\n  ctx d\n    purpose \"p\"\n    budget 20\n    include log, a, later\n  later = text(\"late\")\n  emit d\n",
            reads: &[],
            expected: "\
d v1: 7/20 chars
  + plan:d/a 7
  - log plan:d/log unbound size 0: its source failed: no artifact `ci-log-17` in the table
  - later plan:d/later unbound size 0: `later` is not bound at this point
emitted: d v1
",
        },
        Case {
            rule: "+= makes a new version, re-applies the budget and keeps the prior version",
            plan: "flow f\n  a = text(\"alpha\")\n  ctx d\n    purpose \"p\"\n    budget 20\n    include a\n  emit d\n  big = read(\"big.txt\")\n  c = text(\"gamma\")\n  d += big, c\n  emit d\n",
            reads: &[("big.txt", 100)],
            expected: "\
d v1: 7/20 chars
  + plan:d/a 7
d v2 (from v1): 14/20 chars
  + plan:d/a 7
  + plan:d/c 7
  - big plan:d/big over_budget size 100 remaining 13
emitted: d v1, d v2
",
        },
        Case {
            rule: "each += extends the current version; members keep the values they had",
            plan: "flow f\n  a = text(\"alpha\")\n  ctx d\n    purpose \"p\"\n    budget 50\n    pin a\n  b = text(\"beta\")\n  d += b\n  c = text(\"gamma\")\n  d += c\n  emit d\n",
            reads: &[],
            expected: "\
d v1: 7/50 chars
  + plan:d/a 7 pinned
d v2 (from v1): 13/50 chars
  + plan:d/a 7 pinned
  + plan:d/b 6
d v3 (from v2): 20/50 chars
  + plan:d/a 7 pinned
  + plan:d/b 6
  + plan:d/c 7
emitted: d v3
",
        },
        Case {
            rule: "exclude removes a member from this version and every later one",
            plan: "flow f\n  a = text(\"alpha\")\n  spec = text(\"spec\")\n  ctx d\n    purpose \"p\"\n    budget 50\n    include a, spec\n    exclude spec\n  d += x\n  x = text(\"x\")\n  emit d\n",
            reads: &[],
            expected: "\
d v1: 7/50 chars
  + plan:d/a 7
  - spec plan:d/spec excluded size 6
d v2 (from v1): 7/50 chars
  + plan:d/a 7
  - spec plan:d/spec excluded size 6
  - x plan:d/x unbound size 0: `x` is not bound at this point
emitted: d v2
",
        },
        Case {
            rule: "a ctx used as a member contributes the hits of its current version",
            plan: "flow f\n  a = text(\"alpha\")\n  big = read(\"big.txt\")\n  ctx inner\n    purpose \"p\"\n    budget 10\n    include big, a\n  b = text(\"beta\")\n  ctx outer\n    purpose \"q\"\n    budget 100\n    include b, inner\n  emit outer\n",
            reads: &[("big.txt", 40)],
            expected: "\
inner v1: 7/10 chars
  + plan:inner/a 7
  - big plan:inner/big over_budget size 40 remaining 10
outer v1: 13/100 chars
  + plan:outer/b 6
  + plan:inner/a 7
emitted: outer v1
",
        },
    ];
    for case in cases {
        let mut sources = TableSources::default();
        for (path, size) in case.reads {
            sources.reads.insert((*path).to_owned(), sized(*size));
        }
        let got = summary(&outcome(case.plan, &sources, EvalOptions::default()));
        assert_eq!(got, case.expected, "rule: {}\n{}", case.rule, case.plan);
    }
}

#[test]
fn retrieval_hits_are_separate_candidates_with_their_own_citations() {
    let plan = "flow f\n  note = text(\"n\")\n  hits = query(\"budget\", top: 3)\n  more = docs(\"app.ctxpack\", \"tickets\", \"text\", \"overflow\")\n  ctx d\n    purpose \"p\"\n    budget 40\n    include note, more\n    pin hits\n  emit d\n";
    let mut sources = TableSources::default();
    sources.queries.insert(
        "budget".into(),
        hits(&[
            ("src/a.rs#L1-L3@abc1234", "fn a() {}"),
            ("src/b.rs#L1-L9@abc1234", &"y".repeat(40)),
            ("src/c.rs#L4-L5@abc1234", "c"),
        ]),
    );
    sources.docs.insert(
        "overflow".into(),
        hits(&[
            ("src/c.rs#L4-L5@abc1234", "c"),
            ("doc:tickets/7", "overflow!"),
        ]),
    );
    let got = summary(&outcome(plan, &sources, EvalOptions::default()));
    assert_eq!(
        got,
        "\
d v1: 28/40 chars
  + src/a.rs#L1-L3@abc1234 11 pinned
  + src/c.rs#L4-L5@abc1234 3 pinned
  + plan:d/note 3
  + doc:tickets/7 11
  - hits src/b.rs#L1-L9@abc1234 over_budget size 42 remaining 29
  - more src/c.rs#L4-L5@abc1234 duplicate size 3
emitted: d v1
"
    );
}

#[test]
fn any_meter_with_meter_line() {
    let plan = "flow f\n  a = text(\"hello world, this is a budget test\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    meter o200k\n    include a\n  emit d\n";
    let out = outcome(plan, &TableSources::default(), EvalOptions::default());
    let pack = &out.versions[0].built.pack;
    assert_eq!(pack.meter, Meter::O200k);
    let expected = Meter::O200k.count("\"hello world, this is a budget test\"");
    assert_eq!(pack.used, expected);
    assert!(expected < 20, "tokens, not chars: {expected}");
}

#[test]
fn the_trace_lists_every_event_in_order() {
    let plan = "flow f\n  a = text(\"alpha\")\n  log = artifact(\"ci-log-17\")\n  big = read(\"big.txt\")\n  ctx d\n    purpose \"p\"\n    budget 20\n    include a, big, log\n  emit d\n  c = text(\"gamma\")\n  d += c\n  emit d\n";
    let mut sources = TableSources::default();
    sources.reads.insert("big.txt".into(), sized(100));
    let out = outcome(plan, &sources, EvalOptions::default());
    let lines: Vec<String> = out.trace.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "bind a = text(\"alpha\"): text, 7 chars",
            "bind log = artifact(\"ci-log-17\"): unbound (no artifact `ci-log-17` in the table)",
            "bind big = read(\"big.txt\"): text, 100 chars",
            "ctx_built d v1: members a, big, log; 1 selected, 7/20 chars",
            "ctx_shrunk d v1 big: over_budget (plan:d/big, size 100, 13 remaining)",
            "ctx_shrunk d v1 log: unbound (plan:d/log: its source failed: no artifact `ci-log-17` in the table)",
            "emit d v1",
            "bind c = text(\"gamma\"): text, 7 chars",
            "version_appended d v2 (from v1): +c; 2 selected, 14 used",
            "ctx_shrunk d v2 big: over_budget (plan:d/big, size 100, 13 remaining)",
            "ctx_shrunk d v2 log: unbound (plan:d/log: its source failed: no artifact `ci-log-17` in the table)",
            "emit d v2",
        ]
    );
    let shrunk = out.trace[4].to_json();
    assert_eq!(
        shrunk.to_string(),
        r#"{"event":"ctx_shrunk","ctx":"d","version":1,"member":"big","citation":"plan:d/big","size":100,"remaining":13,"reason":"over_budget"}"#
    );
    let pack = &out.versions[0].built.pack;
    assert!(
        pack.warnings
            .iter()
            .any(|w| w.to_string().starts_with("member `log` of `d` is unbound")),
        "{:?}",
        pack.warnings
    );
    assert_eq!(pack.dropped[1].reason, DropReason::Unbound);
    assert_eq!(pack.dropped[1].rank, None);
}

#[test]
fn run_is_refused_without_permission_before_any_source_is_asked() {
    let plan = "flow f\n  a = read(\"a.txt\")\n  t = run(\"cargo test -p core\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include a, t\n  emit d\n";
    let checked = compile(plan).expect("compiles");
    let mut sources = TableSources::default();
    sources.runs.insert("cargo test -p core".into(), text("ok"));
    let err = evaluate(&checked.program, &sources, &EvalOptions::default()).expect_err("refused");
    assert!(matches!(err, PlanError::Refused(_)));
    insta::assert_snapshot!("run_refused", err.render("plan.ctx", plan));
    assert!(sources.asked.borrow().is_empty());

    let out = outcome(plan, &sources, EvalOptions { allow_run: true });
    assert_eq!(
        *sources.asked.borrow(),
        ["read:a.txt", "run:cargo test -p core"]
    );
    assert_eq!(out.versions[0].built.pack.hits.len(), 1);
}

#[test]
fn a_refusing_source_stops_the_plan() {
    let plan = "flow f\n  a = read(\"link.txt\")\n  ctx d\n    purpose \"p\"\n    budget 100\n    include a\n  emit d\n";
    let checked = compile(plan).expect("compiles");
    let mut sources = TableSources::default();
    sources.reads.insert(
        "link.txt".into(),
        Err(PlanError::SourceRefused(
            "`link.txt` leaves the repository".into(),
        )),
    );
    let err = evaluate(&checked.program, &sources, &EvalOptions::default()).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "`read` is refused: `link.txt` leaves the repository"
    );
}

#[test]
fn secrets_are_masked_before_sizing() {
    let plan = "flow f\n  env = text(\"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\")\n  ctx d\n    purpose \"p\"\n    budget 1000\n    include env\n  emit d\n";
    let out = outcome(plan, &TableSources::default(), EvalOptions::default());
    let pack = &out.versions[0].built.pack;
    assert_eq!(
        pack.hits[0].candidate.text,
        "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]"
    );
    assert_eq!(pack.redactions.total(), 1);
    assert_eq!(
        pack.used,
        ctxpack_plan::size_of(
            "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]",
            Meter::Chars
        )
    );
}

#[test]
fn evaluation_is_deterministic() {
    let plan = "flow f\n  a = text(\"alpha\")\n  h = query(\"q\")\n  ctx d\n    purpose \"p\"\n    budget 30\n    include h, a\n  emit d\n";
    let mut sources = TableSources::default();
    sources.queries.insert(
        "q".into(),
        hits(&[
            ("x#L1-L2@1", "one"),
            ("y#L1-L2@1", "two"),
            ("z#L1-L2@1", "three"),
        ]),
    );
    let first = outcome(plan, &sources, EvalOptions::default());
    let second = outcome(plan, &sources, EvalOptions::default());
    assert_eq!(first, second);
}
