//! Masking on every surface: whatever a pack, a search result or a ledger record carries is
//! masked here, once, with the current rules — chunk text stored by older rules, documents
//! (stored verbatim, so that `find` returns what was inserted), candidates given to `select`,
//! goals, purposes and titles. Chunk text stored under the current rules was masked by them
//! when it was indexed, and masking is idempotent, so it is not masked again.
//!
//! Text is masked before selection, so every cost is the cost of what the pack shows and the
//! budget holds.

use std::sync::OnceLock;

use ctxpack_core::{Candidate, Masker, Meter, RedactionSummary};
use serde_json::Value;

static MASKER: OnceLock<Masker> = OnceLock::new();

fn masker() -> &'static Masker {
    MASKER.get_or_init(Masker::new)
}

/// Compiles the rule set now, if no masking has yet: a pack calls it first thing on a thread
/// that has time to spare, so the compilation (about two milliseconds) is not paid where the
/// first text is masked, on the path a pack waits on.
pub(crate) fn prepare() {
    masker();
}

/// [`prepare`] on a thread of its own, off the caller's core, when the rules are not compiled
/// yet: for a search, which masks only the documents it returns, at its end, and for a front
/// end about to pack ([`crate::prepare_masking`]), so the compilation overlaps their work. The
/// thread is not waited for: the first masking waits for the rules if it must, and a process
/// that ends first loses nothing.
pub(crate) fn prepare_in_background() {
    if MASKER.get().is_none() {
        crate::cores::detach_beside(prepare);
    }
}

/// `text` with every secret masked; what was masked is added to `redactions`.
pub(crate) fn text(text: &str, redactions: &mut RedactionSummary) -> String {
    let (masked, found) = masker().mask(text);
    for (kind, n) in &found {
        redactions.add(kind, *n);
    }
    masked.into_owned()
}

/// A candidate with its text and title masked; its cost is counted again when the text
/// changed.
pub(crate) fn candidate(
    candidate: &mut Candidate,
    meter: Meter,
    redactions: &mut RedactionSummary,
) {
    let masked = text(&candidate.text, redactions);
    if masked != candidate.text {
        candidate.cost = meter.count(&masked);
        candidate.text = masked;
    }
    title(candidate, redactions);
}

/// A candidate with its title masked (its text is left as it is).
pub(crate) fn title(candidate: &mut Candidate, redactions: &mut RedactionSummary) {
    if let Some(title) = &candidate.title {
        candidate.title = Some(text(title, redactions));
    }
}

/// A stored JSON document with the string values in it masked. The text is returned as it was
/// stored (byte for byte) when nothing needed masking.
pub(crate) fn document(body: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(body) else {
        return text(body, &mut RedactionSummary::default());
    };
    let mut changed = false;
    strings(&mut value, &mut changed);
    if changed {
        value.to_string()
    } else {
        body.to_owned()
    }
}

fn strings(value: &mut Value, changed: &mut bool) {
    match value {
        Value::String(s) => {
            let masked = text(s, &mut RedactionSummary::default());
            if masked != *s {
                *s = masked;
                *changed = true;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strings(v, changed)),
        Value::Object(map) => map.values_mut().for_each(|v| strings(v, changed)),
        _ => {}
    }
}
