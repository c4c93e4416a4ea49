//! Limits on what a request may carry, so that no input can make an operation's time or
//! memory unbounded.

use ctxpack_core::Meter;

use crate::error::{Error, Hint, Result};

/// The longest goal, query or label, in bytes: 64 KiB. Retrieval analyzes every term of a
/// goal, and a goal is shown in every pack and recorded in the ledger.
pub const MAX_GOAL_BYTES: usize = 64 * 1024;

/// Refuses a goal or query longer than [`MAX_GOAL_BYTES`].
pub(crate) fn check_goal_size(field: &str, text: &str) -> Result<()> {
    if text.len() > MAX_GOAL_BYTES {
        return Err(Error::invalid_field(
            field,
            format!(
                "the text is {} bytes, over the limit of {MAX_GOAL_BYTES}",
                text.len()
            ),
        )
        .with_hint(Hint::Advice("state the goal in fewer words".into())));
    }
    Ok(())
}

/// Refuses a meter this build cannot count in (`cl100k` without the Cargo feature `cl100k`):
/// a request read from JSON may name any meter ctxpack knows.
pub(crate) fn check_meter(meter: Meter) -> Result<()> {
    meter.ensure_built().map(drop).map_err(|e| {
        Error::invalid_field("meter", e.to_string()).with_hint(Hint::Advice(format!(
            "use one of {}",
            Meter::BUILT
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        )))
    })
}
