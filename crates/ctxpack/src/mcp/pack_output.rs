//! The `outputSchema` of `repo_context_pack`: its `structuredContent` is the canonical pack
//! JSON, what `ctxpack pack --format json` prints, or the failure envelope when the call
//! failed (a tool error), so a client that validates every `structuredContent` accepts both.
//!
//! Objects stay open (no `additionalProperties: false`): a field added to the pack in a later
//! release must not make an older client refuse the result. The test
//! `structured_content_validates_against_the_output_schema` (tests/it/mcp.rs) also checks that
//! every field a pack carries is declared here, so the schema cannot fall behind the pack.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

fn count(description: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "description": description})
}

fn count_or_null(description: &str) -> Value {
    json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": description})
}

fn text(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn object(description: &str, properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "description": description, "properties": properties, "required": required})
}

/// One selected hit; which fields it has depends on `view`.
fn hit() -> Value {
    object(
        "A selected hit, in pack order. minimal view: citation and text; default: also family, tokens and location; full: also rank, tier and title.",
        json!({
            "rank": count("Its rank among the candidates, from 1 (full view)."),
            "citation": text("How to cite it: `path#Lstart-Lend@sha` for code, `evidence:<id>#Lx-Ly` or `artifact:<id>#Lx-Ly` for artifacts."),
            "family": text("The source it belongs to, e.g. `document:src/lib.rs`."),
            "tokens": count("Its cost in units of `meter`."),
            "path": text("The file it comes from."),
            "startLine": count("Its first line, from 1."),
            "endLine": count("Its last line."),
            "symbol": text("The item it defines, when the chunker found one."),
            "tier": {"type": "string", "enum": ["pinned", "visible"], "description": "pinned hits are admitted before visible ones (full view)."},
            "title": text("Its title, when it has one (full view)."),
            "text": text("The chunk's text, secrets masked."),
        }),
        &["citation", "text"],
    )
}

/// One candidate left out.
fn dropped() -> Value {
    object(
        "A candidate that was left out, and why.",
        json!({
            "citation": text("Its citation."),
            "reason": {"type": "string", "enum": ["duplicate", "over_budget", "prefix_truncated", "excluded", "unbound", "weak"], "description": "Why it was left out."},
            "tokens": count("Its cost in units of `meter` (default and full views)."),
            "rank": count_or_null("Its rank among the candidates; null for a plan member that never was one (full view)."),
            "family": text("Its source (full view)."),
            "remaining": count_or_null("The budget that remained when it was considered; null for a drop that is not about the budget (full view)."),
        }),
        &["citation", "reason"],
    )
}

/// The canonical pack.
fn pack() -> Value {
    let snapshot = object(
        "The commit the pack was built from.",
        json!({
            "requestedRef": text("The reference as given (`HEAD`, a SHA or a prefix)."),
            "resolvedSha": text("The full SHA it resolved to."),
            "selection": text("How the snapshot was chosen (`exact`)."),
            "status": text("The snapshot's state in the store (`indexed`)."),
            "branch": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "The checked-out branch; null when HEAD is detached."},
            "detached": {"type": "boolean", "description": "Whether HEAD is detached."},
            "worktreeDirty": {"type": "boolean", "description": "Whether uncommitted changes were left out."},
        }),
        &["requestedRef", "resolvedSha"],
    );
    let selection = object(
        "How selection went; uniqueCitations = selectedHits + budgetRejectedHits and candidateHits = uniqueCitations + duplicateCitationsSkipped.",
        json!({
            "strategy": text("The selector's strategy name."),
            "candidateHits": count("Candidates offered to selection."),
            "uniqueCitations": count("Candidates left after removing duplicate citations."),
            "selectedSources": count("Distinct families among the selected hits."),
            "duplicateCitationsSkipped": count("Candidates skipped as duplicates."),
            "budgetRejectedHits": count("Candidates that did not fit the budget."),
        }),
        &[
            "strategy",
            "candidateHits",
            "uniqueCitations",
            "selectedSources",
            "duplicateCitationsSkipped",
            "budgetRejectedHits",
        ],
    );
    let redactions = object(
        "Secrets masked in the selected text.",
        json!({
            "total": count("Masked secrets in all."),
            "byKind": {"type": "object", "description": "Masked secrets per rule.", "additionalProperties": {"type": "integer", "minimum": 0}},
        }),
        &["total", "byKind"],
    );
    object(
        "The pack, exactly what `ctxpack pack --format json` prints with the same options.",
        json!({
            "goal": text("The goal, secrets masked."),
            "snapshotSha": text("The full SHA of the commit packed."),
            "snapshot": snapshot,
            "budget": {"type": "integer", "minimum": 1, "description": "The hard budget, in units of `meter`."},
            "meter": {"type": "string", "enum": ctxpack_api::Meter::ALL.iter().map(|m| m.name()).collect::<Vec<_>>(), "description": "The budget unit."},
            "usedTokens": count("What the selected hits' text costs, in units of `meter`."),
            "contentTokens": count("The same as `usedTokens`: the hits' text alone."),
            "renderedTokens": count("What the whole text rendering of the pack measures, in units of `meter`; never more than `budget`. Present when the budget covers the output."),
            "renderedFormat": {"type": "string", "enum": ["text", "markdown", "xml"], "description": "The text format `renderedTokens` measures: the `format` of the text content (markdown for json)."},
            "selectedHits": count("How many hits were selected."),
            "truncated": {"type": "boolean", "description": "Whether any candidate was left out for the budget."},
            "selection": selection,
            "hits": {"type": "array", "items": hit(), "description": "The selected hits."},
            "dropped": {"type": "array", "items": dropped(), "description": "Every candidate left out, with its reason (empty in the minimal view)."},
            "warnings": {"type": "array", "items": {"type": "string"}, "description": "What the reader should know, e.g. that uncommitted changes are excluded."},
            "redactionSummary": redactions,
            "artifacts": {"type": "array", "items": {"type": "string"}, "description": "Ids of the artifacts merged into the pack, when there are any."},
        }),
        &[
            "goal",
            "budget",
            "meter",
            "usedTokens",
            "selectedHits",
            "truncated",
            "selection",
            "hits",
            "dropped",
            "warnings",
            "redactionSummary",
        ],
    )
}

/// The failure envelope of a tool error.
pub(crate) fn envelope() -> Value {
    let error = json!({
        "type": "object",
        "description": "What failed and what to do next.",
        "properties": {
            "code": {"type": "string", "enum": ["invalid_input", "not_found", "corrupt", "conflict", "internal"], "description": "The kind of failure."},
            "exitCode": {"type": "integer", "enum": [1, 2, 3, 4, 5], "description": "The CLI's exit code for it."},
            "message": text("What failed, naming the argument at fault."),
            "hint": text("What to do next; absent when there is no advice."),
        },
        "required": ["code", "exitCode", "message"],
        "additionalProperties": false,
    });
    json!({
        "type": "object",
        "description": "The failure envelope of a tool error (`isError: true`).",
        "properties": {"error": error},
        "required": ["error"],
        "additionalProperties": false,
    })
}

/// The output schema: the pack, or the failure envelope of a tool error.
pub(crate) fn schema() -> JsonObject {
    let Value::Object(object) = json!({
        "type": "object",
        "description": "The canonical pack JSON (what `ctxpack pack --format json` prints), whatever `format` the text content has; the failure envelope when the call failed.",
        "anyOf": [pack(), envelope()],
    }) else {
        unreachable!("a JSON object")
    };
    object
}
