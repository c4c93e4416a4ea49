//! Canonical JSON: keys in a fixed order, integers as integers, one line unless pretty.

use serde_json::{Map, Value, json};

use super::View;
use crate::model::{Dropped, Hit};
use crate::pack::Pack;

/// The pack as a JSON value with a stable key order.
pub fn pack_json(pack: &Pack, view: View) -> Value {
    let mut out = Map::new();
    out.insert("goal".into(), json!(pack.goal));
    if let Some(snapshot) = &pack.snapshot {
        out.insert("snapshotSha".into(), json!(snapshot.resolved_sha));
        out.insert(
            "snapshot".into(),
            json!({
                "requestedRef": snapshot.requested_ref,
                "resolvedSha": snapshot.resolved_sha,
                "selection": snapshot.selection,
                "status": snapshot.status,
                "branch": snapshot.branch,
                "detached": snapshot.detached,
                "worktreeDirty": snapshot.worktree_dirty,
            }),
        );
    }
    out.insert("budget".into(), json!(pack.budget.get()));
    out.insert("meter".into(), json!(pack.meter.name()));
    out.insert("usedTokens".into(), json!(pack.used));
    if let Some(fitted) = &pack.presentation.fitted {
        // The budget covered the printed output: the hits' content and the rendering the
        // budget was fitted to, each measured in the pack's meter.
        out.insert("contentTokens".into(), json!(pack.used));
        out.insert("renderedTokens".into(), json!(fitted.tokens));
        out.insert("renderedFormat".into(), json!(fitted.format.name()));
    }
    out.insert("selectedHits".into(), json!(pack.hits.len()));
    out.insert("truncated".into(), json!(pack.truncated()));
    let c = &pack.counters;
    out.insert(
        "selection".into(),
        json!({
            "strategy": pack.selector.strategy(),
            "candidateHits": c.candidate_hits,
            "uniqueCitations": c.unique_citations,
            "selectedSources": c.selected_sources,
            "duplicateCitationsSkipped": c.duplicate_citations_skipped,
            "budgetRejectedHits": c.budget_rejected_hits,
        }),
    );
    out.insert(
        "hits".into(),
        pack.hits.iter().map(|h| hit_json(h, view)).collect(),
    );
    out.insert(
        "dropped".into(),
        pack.dropped.iter().map(|d| dropped_json(d, view)).collect(),
    );
    out.insert(
        "warnings".into(),
        pack.warnings.iter().map(|w| json!(w.to_string())).collect(),
    );
    let by_kind: Map<String, Value> = pack
        .redactions
        .by_kind
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    out.insert(
        "redactionSummary".into(),
        json!({
            "total": pack.redactions.total(),
            "byKind": by_kind,
            "candidates": pack.candidate_redactions.total(),
        }),
    );
    if let Some(id) = &pack.session {
        let seen = pack.hits.iter().filter_map(|h| h.seen.as_ref());
        let (references, partial) =
            seen.clone().fold(
                (0, 0),
                |(r, p), s| {
                    if s.whole { (r + 1, p) } else { (r, p + 1) }
                },
            );
        out.insert(
            "session".into(),
            json!({
                "id": id,
                "references": references,
                "partlyShownBefore": partial,
                "savedTokens": seen.map(|s| s.saved).sum::<u64>(),
            }),
        );
    }
    if !pack.artifacts.is_empty() {
        out.insert("artifacts".into(), json!(pack.artifacts));
    }
    Value::Object(out)
}

fn hit_json(hit: &Hit, view: View) -> Value {
    let c = &hit.candidate;
    let mut out = Map::new();
    if view == View::Full {
        out.insert("rank".into(), json!(hit.rank));
    }
    out.insert("citation".into(), json!(c.citation));
    if view != View::Minimal {
        out.insert("family".into(), json!(c.family));
        out.insert("tokens".into(), json!(c.cost));
        if let Some(loc) = &c.location {
            out.insert("path".into(), json!(loc.path));
            out.insert("startLine".into(), json!(loc.start_line));
            out.insert("endLine".into(), json!(loc.end_line));
            if let Some(symbol) = &loc.symbol {
                out.insert("symbol".into(), json!(symbol));
            }
        }
    }
    if view == View::Full {
        out.insert("tier".into(), json!(c.tier));
        if let Some(title) = &c.title {
            out.insert("title".into(), json!(title));
        }
    }
    if let Some(seen) = &hit.seen {
        out.insert(
            "shownBefore".into(),
            json!({
                "pack": seen.pack,
                "citation": seen.citation,
                "whole": seen.whole,
                "savedTokens": seen.saved,
            }),
        );
    }
    out.insert("text".into(), json!(c.text));
    Value::Object(out)
}

fn dropped_json(d: &Dropped, view: View) -> Value {
    let mut out = Map::new();
    out.insert("citation".into(), json!(d.citation));
    out.insert("reason".into(), json!(d.reason));
    if view != View::Minimal {
        out.insert("tokens".into(), json!(d.cost));
    }
    if view == View::Full {
        out.insert("rank".into(), json!(d.rank));
        out.insert("family".into(), json!(d.family));
        out.insert("remaining".into(), json!(d.remaining));
    }
    Value::Object(out)
}
