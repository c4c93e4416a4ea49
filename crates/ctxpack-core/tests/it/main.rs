//! Integration tests of the pack engine: selector rules as data, invariants as properties, and
//! every format and view as snapshots.

mod coverage;
mod props;
mod render;
mod secrets;
mod select;

use ctxpack_core::{Candidate, Citation, Family, Tier};

/// Builds candidates from a compact notation: `id/family/cost`, space-separated, in rank
/// order; a leading `!` pins the candidate and `@score` after the cost gives a score.
pub fn candidates(spec: &str) -> Vec<Candidate> {
    spec.split_whitespace()
        .map(|token| {
            let (pinned, token) = match token.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, token),
            };
            let mut parts = token.split('/');
            let id = parts.next().expect("id");
            let family = parts.next().expect("family");
            let cost_and_score = parts.next().expect("cost");
            let (cost, score) = match cost_and_score.split_once('@') {
                Some((c, s)) => (c, Some(s.parse::<f64>().expect("score"))),
                None => (cost_and_score, None),
            };
            Candidate {
                citation: Citation(id.to_owned()),
                family: Family(family.to_owned()),
                text: format!("text of {id}"),
                cost: cost.parse().expect("cost"),
                tier: if pinned { Tier::Pinned } else { Tier::Visible },
                score,
                location: None,
                title: None,
            }
        })
        .collect()
}
