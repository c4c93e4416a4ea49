//! Limits on what a request may carry, so that no input can make an operation's time or
//! memory unbounded.

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
