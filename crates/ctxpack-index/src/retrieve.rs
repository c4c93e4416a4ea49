//! Retrieval: a goal in, ranked candidates of one snapshot out.

use std::collections::BTreeMap;

use ctxpack_core::{Candidate, Citation, Family, Location, Tier};
use ctxpack_meter::Meter;
use ctxpack_store::{QueryTerms, ScoreBreakdown, Store};

use crate::error::IndexError;

/// A retrieved chunk: the candidate offered to selection and how its score came about.
#[derive(Clone, Debug, PartialEq)]
pub struct Retrieved {
    /// The candidate (citation, family, masked text, cost in the requested meter, score).
    pub candidate: Candidate,
    /// Combined retrieval score.
    pub score: f32,
    /// Per-field BM25 contributions.
    pub breakdown: ScoreBreakdown,
    /// Secrets masked in the text, by kind.
    pub redactions: BTreeMap<String, u64>,
}

/// The top `top_k` chunks of snapshot `sha` for `goal`, best first, costed in `meter`.
pub fn retrieve(
    store: &Store,
    sha: &str,
    goal: &str,
    top_k: usize,
    meter: Meter,
) -> Result<Vec<Retrieved>, IndexError> {
    let terms = QueryTerms::from_goal(goal);
    let hits = store.search(sha, &terms, top_k)?;
    let ids: Vec<i64> = hits.iter().map(|h| h.chunk_id).collect();
    let rows = store.chunks(&ids)?;
    let mut out = Vec::with_capacity(rows.len());
    for (hit, row) in hits.iter().zip(rows) {
        debug_assert_eq!(hit.chunk_id, row.id);
        let candidate = Candidate {
            citation: Citation::code(&row.path, row.start_line, row.end_line, sha),
            family: Family::document(&row.path),
            cost: row.cost(meter),
            tier: Tier::Visible,
            score: Some(f64::from(hit.score)),
            location: Some(Location {
                path: row.path.clone(),
                start_line: row.start_line,
                end_line: row.end_line,
                symbol: row.symbol.clone(),
            }),
            title: None,
            text: row.text,
        };
        out.push(Retrieved {
            candidate,
            score: hit.score,
            breakdown: hit.breakdown,
            redactions: row.redactions,
        });
    }
    Ok(out)
}
