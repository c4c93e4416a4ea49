//! The coverage selector: the same choices as the plain greedy definition (a reference kept
//! here, quadratic and obviously right), with work that grows as n log n, not n².

use std::collections::HashMap;

use ctxpack_core::{Budget, Candidate, Citation, DropReason, Family, Selector, Tier, select};
use proptest::prelude::*;

/// The definition: repeatedly take the fitting candidate with the best relevance cubed times
/// 0.5 per chosen member of its family (0.85 for the first candidate's family), per square root
/// of cost, earliest rank on ties; drop the rest with the budget left at the end. Visible tier
/// only (no pins), unique citations.
fn reference(cands: &[Candidate], budget: u64) -> (Vec<usize>, Vec<(usize, u64)>) {
    let scores: Option<Vec<f64>> = cands
        .iter()
        .map(|c| c.score.filter(|v| v.is_finite() && *v >= 0.0))
        .collect();
    let relevance: Vec<f64> = match scores {
        Some(s) if s.iter().any(|&v| v > 0.0) => {
            let max = s.iter().copied().fold(0.0, f64::max);
            s.into_iter().map(|v| v / max).collect()
        }
        _ => (0..cands.len())
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .collect(),
    };
    let mut remaining = budget;
    let mut open = vec![true; cands.len()];
    let mut seen: HashMap<&Family, i32> = HashMap::new();
    let mut chosen = Vec::new();
    loop {
        let mut best: Option<(usize, f64)> = None;
        for (i, c) in cands.iter().enumerate() {
            if !open[i] || c.cost > remaining {
                continue;
            }
            let decay: f64 = if c.family == cands[0].family {
                0.85
            } else {
                0.5
            };
            let gain = relevance[i].powi(3) * decay.powi(seen.get(&c.family).copied().unwrap_or(0));
            let density = gain / (c.cost.max(1) as f64).sqrt();
            if best.is_none_or(|(_, d)| density > d) {
                best = Some((i, density));
            }
        }
        let Some((i, _)) = best else { break };
        open[i] = false;
        remaining -= cands[i].cost;
        *seen.entry(&cands[i].family).or_default() += 1;
        chosen.push(i + 1);
    }
    chosen.sort_unstable();
    let dropped = (0..cands.len())
        .filter(|&i| open[i])
        .map(|i| (i + 1, remaining))
        .collect();
    (chosen, dropped)
}

fn candidate(i: usize, family: u32, cost: u64, score: Option<f64>) -> Candidate {
    Candidate {
        citation: Citation(format!("c{i}")),
        family: Family(format!("f{family}")),
        text: String::new(),
        cost,
        tier: Tier::Visible,
        score,
        location: None,
        title: None,
    }
}

fn arb_candidates(max: usize) -> impl Strategy<Value = Vec<Candidate>> {
    prop::collection::vec((0u32..6, 0u64..80, prop::option::of(0.0f64..1.0)), 0..max).prop_map(
        |specs| {
            let scored = specs.iter().all(|s| s.2.is_some());
            specs
                .into_iter()
                .enumerate()
                .map(|(i, (family, cost, score))| {
                    candidate(i, family, cost, if scored { score } else { None })
                })
                .collect()
        },
    )
}

proptest! {
    #[test]
    fn coverage_makes_the_choices_of_its_definition(
        cands in arb_candidates(60),
        budget in 1u64..400,
    ) {
        let selection = select(cands.clone(), Budget::new(budget).expect("valid"), Selector::Coverage);
        let (chosen, dropped) = reference(&cands, budget);
        let got: Vec<usize> = selection.hits.iter().map(|h| h.rank).collect();
        prop_assert_eq!(got, chosen);
        let got: Vec<(usize, u64)> = selection
            .dropped
            .iter()
            .map(|d| {
                assert_eq!(d.reason, DropReason::OverBudget);
                (d.rank.expect("a rank"), d.remaining.expect("remaining"))
            })
            .collect();
        prop_assert_eq!(got, dropped);
    }
}

/// Pseudo-random but fixed candidates: `n` of them over `families` families.
fn many(n: usize, families: u32) -> Vec<Candidate> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let family = (next() % u64::from(families)) as u32;
            let cost = 20 + next() % 400;
            let score = (next() % 10_000) as f64 / 10_000.0;
            candidate(i, family, cost, Some(score))
        })
        .collect()
}

#[test]
fn coverage_work_grows_as_n_log_n() {
    for n in [5_000usize, 20_000, 50_000] {
        for families in [1, 50, 5_000] {
            // A budget that admits about a third of the candidates: many picks, many misses.
            let budget = Budget::new(n as u64 * 70).expect("valid");
            let selection = select(many(n, families), budget, Selector::Coverage);
            let bound = 4.0 * n as f64 * (n as f64).log2();
            assert!(
                (selection.work as f64) <= bound,
                "n {n}, {families} families: work {} over 4·n·log2(n) = {bound}",
                selection.work
            );
            assert!(selection.hits.len() > n / 10, "the budget admits many hits");
            assert_eq!(selection.hits.len() + selection.dropped.len(), n);
        }
    }
}

#[test]
fn the_best_ranked_file_gets_depth_before_a_weaker_file_gets_breadth() {
    // Two chunks of the best-ranked file and one of a weaker file, room for two. The best
    // file's second chunk is worth 0.9³ · ¾ = 0.55 of a first, the weaker file's first 0.8³ =
    // 0.51: the best file is shown deeper. Another file's second chunk is worth half, so a
    // file that is not the best-ranked one gets no such depth.
    let cands = vec![
        candidate(0, 1, 100, Some(1.0)),
        candidate(1, 1, 100, Some(0.9)),
        candidate(2, 2, 100, Some(0.8)),
    ];
    let budget = Budget::new(200).expect("valid");
    let ranks = |cands: Vec<Candidate>| -> Vec<usize> {
        select(cands, budget, Selector::Coverage)
            .hits
            .iter()
            .map(|h| h.rank)
            .collect()
    };
    assert_eq!(ranks(cands), [1, 2]);
    let cands = vec![
        candidate(0, 3, 100, Some(1.0)),
        candidate(1, 1, 100, Some(0.95)),
        candidate(2, 1, 100, Some(0.9)),
        candidate(3, 2, 100, Some(0.8)),
    ];
    let budget = Budget::new(300).expect("valid");
    let chosen = select(cands, budget, Selector::Coverage);
    let got: Vec<usize> = chosen.hits.iter().map(|h| h.rank).collect();
    assert_eq!(
        got,
        [1, 2, 4],
        "the second-ranked file's second chunk is worth half"
    );
}
