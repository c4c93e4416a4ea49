//! Each selector against the worked rules of its seed, written as data.

use ctxpack_core::{Budget, Selector, select};

use crate::candidates;

/// Runs `selector` and compares `selected ids | dropped id:reason …` (dropped in rank order).
fn check(selector: Selector, budget: u64, spec: &str, expected: &str) {
    let selection = select(
        candidates(spec),
        Budget::new(budget).expect("budget"),
        selector,
    );
    let selected: Vec<&str> = selection
        .hits
        .iter()
        .map(|h| h.candidate.citation.as_str())
        .collect();
    let dropped: Vec<String> = selection
        .dropped
        .iter()
        .map(|d| format!("{}:{}", d.citation, d.reason))
        .collect();
    let got = format!("{} | {}", selected.join(" "), dropped.join(" "));
    assert_eq!(got.trim(), expected, "{selector} budget {budget}: {spec}");
    let c = selection.counters;
    assert_eq!(
        c.unique_citations,
        selection.hits.len() + c.budget_rejected_hits
    );
    assert_eq!(
        c.candidate_hits,
        c.unique_citations + c.duplicate_citations_skipped
    );
    assert!(selection.used <= budget);
}

#[test]
fn diverse_citation_diverse_v2() {
    use Selector::Diverse as S;
    // A large first hit does not fit: it is skipped, not a reason to stop.
    check(S, 10, "a/f1/20 b/f1/5 c/f2/5", "b c | a:over_budget");
    // Diversity representatives first (one per family, rank order), then fill hits.
    check(S, 10, "a/f1/3 b/f1/3 c/f2/3", "a c b |");
    // The diversity pass takes the first *fitting* hit of a family.
    check(S, 5, "a/f1/50 b/f1/2 c/f2/2", "b c | a:over_budget");
    // The fill pass skips what does not fit and continues in rank order.
    check(S, 10, "a/f1/4 b/f1/7 c/f1/3", "a c | b:over_budget");
    // Exact duplicate citation ids: only the first occurrence is eligible.
    check(S, 100, "a/f1/3 a/f1/3 b/f2/3", "a b | a:duplicate");
    // A duplicate is removed even when the first occurrence does not fit.
    check(
        S,
        4,
        "a/f1/9 a/f2/1 b/f2/3",
        "b | a:over_budget a:duplicate",
    );
    // Nothing fits.
    check(S, 10, "a/f1/20 b/f2/11", "| a:over_budget b:over_budget");
    // Zero-cost hits always fit.
    check(S, 1, "a/f1/0 b/f1/0 c/f2/2", "a b | c:over_budget");
    // Pinned hits go first; their families count as represented.
    check(S, 10, "a/f1/3 b/f2/3 !c/f1/3", "c b a |");
}

#[test]
fn prefix_stops_at_the_first_miss() {
    use Selector::Prefix as S;
    // The seed-001 worked example: 7 + 6 tokens in a 500 budget, not truncated.
    check(S, 500, "db/d1/7 cake/d2/6", "db cake |");
    // A large first hit truncates everything: an empty pack.
    check(
        S,
        10,
        "a/f1/20 b/f1/5 c/f2/5",
        "| a:over_budget b:prefix_truncated c:prefix_truncated",
    );
    // Contiguous top prefix; smaller later hits are not used to fill.
    check(
        S,
        10,
        "a/f1/4 b/f1/7 c/f1/3",
        "a | b:over_budget c:prefix_truncated",
    );
    // An exact fit is not a miss.
    check(S, 10, "a/f1/4 b/f1/6 c/f1/1", "a b | c:over_budget");
}

#[test]
fn skip_drop_and_continue_with_pinned_tier() {
    use Selector::Skip as S;
    // One oversized early member never evicts the smaller members after it.
    check(S, 10, "a/f1/20 b/f1/5 c/f2/5", "b c | a:over_budget");
    // Pinned before visible, whatever the declared order.
    check(S, 10, "a/f1/5 !b/f1/8", "b | a:over_budget");
    // A pinned member is never dropped to make room for a plainer member.
    check(S, 10, "a/f1/3 b/f1/3 !c/f1/6", "c a | b:over_budget");
    // A pinned member that cannot fit at all is dropped; packing continues.
    check(S, 10, "!a/f1/20 b/f1/5", "b | a:over_budget");
    // Declared order within each tier.
    check(S, 100, "a/f/1 !b/f/1 c/f/1 !d/f/1", "b d a c |");
}

#[test]
fn coverage_trades_relevance_against_cost_and_redundancy() {
    use Selector::Coverage as S;
    // A second hit of an already represented family is worth half as much, so later
    // families of nearly the same relevance win the remaining budget; hits are listed in
    // rank order.
    check(
        S,
        8,
        "a/f0/2@1 b/f1/2@0.95 c/f1/2@0.95 d/f2/2@0.9 e/f3/2@0.9",
        "a b d e | c:over_budget",
    );
    // The best-ranked candidate's family is worth 0.85 per further hit: its second hit beats
    // a family's first at 0.93 (0.93³ ≈ 0.80), which three quarters would not.
    check(
        S,
        6,
        "a/f1/2@1 b/f1/2@1 c/f2/2@0.93 d/f3/2@0.93",
        "a b c | d:over_budget",
    );
    // ... while a strong family's second hit beats a much weaker family's first: relevance
    // counts cubed (0.7³ ≈ 0.34 < 0.5).
    check(S, 4, "a/f1/2@1 b/f1/2@1 c/f2/2@0.7", "a b | c:over_budget");
    // Scores, when every candidate has one, decide relevance.
    check(S, 5, "a/f1/5@0.1 b/f2/5@0.9", "b | a:over_budget");
    // Without scores, rank decides; a long top hit stays competitive with short weak ones.
    check(
        S,
        10,
        "a/f1/10 b/f2/5 c/f3/5",
        "a | b:over_budget c:over_budget",
    );
    // Cheap, relevant hits beat an expensive one of equal relevance.
    check(S, 10, "a/f1/9@1 b/f2/5@1 c/f3/5@1", "b c | a:over_budget");
    // Pinned first, duplicates removed, ties by rank.
    check(
        S,
        4,
        "!p/f9/2 a/f1/2 a/f1/2 b/f2/2",
        "p a | a:duplicate b:over_budget",
    );
    // Everything that fits is taken, even at zero relevance.
    check(S, 100, "a/f1/7@0.7071 b/f2/6@0", "a b |");
}

#[test]
fn selector_names_round_trip() {
    for s in Selector::ALL {
        assert_eq!(s.name().parse::<Selector>(), Ok(s));
    }
    assert_eq!(
        "best".parse::<Selector>().unwrap_err().to_string(),
        "unknown selector `best`: expected one of diverse, prefix, skip, coverage"
    );
}
