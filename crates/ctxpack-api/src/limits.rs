//! Limits on what a request may carry, so that no input can make an operation's time or
//! memory unbounded.

use ctxpack_core::Meter;

use crate::error::{Error, ErrorKind, Hint, Result};

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

/// How many packs each token of a server may record in the ledger a day, by default.
pub const LEDGER_QUOTA_PER_DAY: u64 = 2_000;

/// How many packs each token of a server may record in the ledger a day (UTC), counted by
/// this process: a token that holds a server's read scope may not grow its ledger without
/// bound. Past it, a request that would record a pack fails with [`ErrorKind::OverQuota`]
/// before anything is built.
#[derive(Debug)]
pub struct LedgerQuota {
    per_day: u64,
    /// Per token: the day counted and the packs recorded on it.
    used: std::sync::Mutex<std::collections::HashMap<String, (u64, u64)>>,
}

impl LedgerQuota {
    /// A quota of `per_day` packs a token a day.
    pub fn new(per_day: u64) -> LedgerQuota {
        LedgerQuota {
            per_day,
            used: std::sync::Mutex::default(),
        }
    }

    /// The packs a token may record a day.
    pub fn per_day(&self) -> u64 {
        self.per_day
    }

    /// Fails when `token` has recorded its packs for today; with `take`, counts one more.
    pub(crate) fn admit(&self, token: &str, take: bool) -> Result<()> {
        let today = ctxpack_store::session::now_secs() / 86_400;
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Yesterday's counts are of no use: the map holds today's tokens alone.
        used.retain(|_, (day, _)| *day == today);
        let count = used.get(token).map_or(0, |&(_, count)| count);
        if count >= self.per_day {
            return Err(Error::new(
                ErrorKind::OverQuota,
                format!(
                    "this token has recorded {count} packs today, the most this server allows a token a day"
                ),
            )
            .with_hint(Hint::Advice(
                "try again after midnight UTC, or ask the server's operator for a larger quota".into(),
            )));
        }
        if take {
            used.insert(token.to_owned(), (today, count + 1));
        }
        Ok(())
    }
}
