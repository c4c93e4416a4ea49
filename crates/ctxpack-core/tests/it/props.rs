//! Invariants that hold for every selector on every input.

use ctxpack_core::{
    Budget, Candidate, Citation, DropReason, Family, Format, Pack, PackRequest, RenderOptions,
    Selector, Tier, View, render,
};
use ctxpack_meter::Meter;
use proptest::prelude::*;

fn arb_candidate() -> impl Strategy<Value = Candidate> {
    (
        0u8..12,
        0u8..4,
        0u64..60,
        any::<bool>(),
        proptest::option::of(0.0f64..1.0),
    )
        .prop_map(|(id, family, cost, pinned, score)| Candidate {
            citation: Citation(format!("c{id}")),
            family: Family(format!("f{family}")),
            text: format!("text {id}"),
            cost,
            tier: if pinned { Tier::Pinned } else { Tier::Visible },
            score,
            location: None,
            title: None,
        })
}

fn arb_selector() -> impl Strategy<Value = Selector> {
    prop::sample::select(Selector::ALL.to_vec())
}

fn build(cands: Vec<Candidate>, budget: u64, selector: Selector) -> Pack {
    Pack::build(
        PackRequest {
            goal: "g".into(),
            budget: Budget::new(budget).expect("strategy yields valid budgets"),
            meter: Meter::Words,
            selector,
        },
        cands,
    )
}

proptest! {
    #[test]
    fn budget_counters_and_accounting(
        cands in prop::collection::vec(arb_candidate(), 0..30),
        budget in 1u64..200,
        selector in arb_selector(),
    ) {
        let n = cands.len();
        let pack = build(cands.clone(), budget, selector);
        let c = pack.counters;
        // usedTokens <= budget, and it is the sum of whole hits.
        prop_assert!(pack.used <= budget);
        prop_assert_eq!(pack.used, pack.hits.iter().map(|h| h.candidate.cost).sum::<u64>());
        // The two counter identities.
        prop_assert_eq!(c.unique_citations, pack.hits.len() + c.budget_rejected_hits);
        prop_assert_eq!(c.candidate_hits, c.unique_citations + c.duplicate_citations_skipped);
        prop_assert_eq!(c.candidate_hits, n);
        // Every candidate is selected or dropped with a reason, exactly once.
        prop_assert_eq!(pack.hits.len() + pack.dropped.len(), n);
        let mut ranks: Vec<usize> = pack.hits.iter().map(|h| h.rank)
            .chain(pack.dropped.iter().filter_map(|d| d.rank)).collect();
        ranks.sort_unstable();
        prop_assert_eq!(ranks, (1..=n).collect::<Vec<_>>());
        // Hits are whole and unchanged.
        for hit in &pack.hits {
            prop_assert_eq!(&hit.candidate, &cands[hit.rank - 1]);
        }
        // Selected citations are unique; duplicates really are repeats of an earlier id.
        let mut ids: Vec<&str> = pack.hits.iter().map(|h| h.candidate.citation.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        prop_assert_eq!(ids.len(), pack.hits.len());
        for d in &pack.dropped {
            let rank = d.rank.expect("selection drops carry a rank");
            match d.reason {
                DropReason::Duplicate => prop_assert!(
                    cands[..rank - 1].iter().any(|c| c.citation == d.citation)
                ),
                // A budget drop really did not fit what remained.
                DropReason::OverBudget => prop_assert!(d.cost > d.remaining.expect("remaining")),
                DropReason::PrefixTruncated => prop_assert_eq!(selector, Selector::Prefix),
                other => prop_assert!(false, "selection produced {other}"),
            }
        }
        prop_assert_eq!(
            pack.warnings.contains(&ctxpack_core::Warning::NoCompleteHitFits),
            n > 0 && pack.hits.is_empty()
        );
    }

    #[test]
    fn pinned_never_displaced_by_visible(
        cands in prop::collection::vec(arb_candidate(), 0..30),
        budget in 1u64..200,
        selector in arb_selector(),
    ) {
        let pack = build(cands.clone(), budget, selector);
        // When a pinned candidate was dropped, only earlier pinned hits had used the budget:
        // no visible candidate was ever admitted ahead of it.
        for d in pack.dropped.iter().filter(|d| d.reason == DropReason::OverBudget) {
            let rank = d.rank.expect("rank");
            if cands[rank - 1].tier != Tier::Pinned {
                continue;
            }
            let pinned_before: u64 = pack.hits.iter()
                .filter(|h| h.candidate.tier == Tier::Pinned && h.rank < rank)
                .map(|h| h.candidate.cost).sum();
            prop_assert_eq!(d.remaining, Some(budget - pinned_before));
        }
        let pinned_used: u64 = pack.hits.iter()
            .filter(|h| h.candidate.tier == Tier::Pinned)
            .map(|h| h.candidate.cost).sum();
        for hit in &pack.hits {
            if hit.candidate.tier == Tier::Visible {
                // No visible hit comes before a pinned one.
                let later_pinned = pack.hits.iter()
                    .skip_while(|h| h.rank != hit.rank)
                    .any(|h| h.candidate.tier == Tier::Pinned);
                prop_assert!(!later_pinned);
            }
        }
        prop_assert!(pinned_used <= budget);
    }

    #[test]
    fn same_input_same_bytes(
        cands in prop::collection::vec(arb_candidate(), 0..20),
        budget in 1u64..100,
        selector in arb_selector(),
    ) {
        for format in Format::ALL {
            for view in View::ALL {
                let options = RenderOptions { format, view, pretty: false };
                let a = render(&build(cands.clone(), budget, selector), &options);
                let b = render(&build(cands.clone(), budget, selector), &options);
                prop_assert_eq!(a, b);
            }
        }
    }
}

proptest! {
    /// A budget as the command line writes it: any text at all is read or refused with a
    /// message, never a panic, and what is read is a valid budget.
    #[test]
    fn any_text_is_a_budget_or_a_refusal(text in any::<String>()) {
        match Budget::parse_suffixed(&text) {
            Ok(budget) => prop_assert!(Budget::new(budget.get()).is_ok()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// A number with a suffix is that number times a thousand or a million.
    #[test]
    fn suffixed_budgets_scale(n in 1u64..1_000_000, suffix in "[kKmM]") {
        let scale = if suffix.eq_ignore_ascii_case("k") { 1_000 } else { 1_000_000 };
        let budget = Budget::parse_suffixed(&format!("{n}{suffix}")).expect("a budget");
        prop_assert_eq!(budget.get(), n * scale);
    }
}
