//! Deterministic failpoints for crash tests: `CTXPACK_FAILPOINT=NAME:N` aborts the process (as
//! `kill -9` would: no destructor, no flush) the `N`th time the named point is reached. Unset,
//! a failpoint costs one relaxed atomic load.
//!
//! The points are named after the phase they end: `index:read`, `index:chunked` (new versions
//! chunked and written),
//! `index:files-written` (after each batch of new file versions), `index:lexical-committed`,
//! `index:snapshot-committed`, `rebuild:database-ready`, `rebuild:lexical-built`,
//! `rebuild:switched`, `migrate:columns-added`, `migrate:checksums-written`,
//! `gc:snapshots-removed`, `gc:lexical-deleted`, `docs:written` (a document store's cache
//! written, before its rows are published to a database).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The failpoint asked for: its name and the hit that aborts.
struct Armed {
    name: String,
    at: u64,
    hits: AtomicU64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let spec = std::env::var("CTXPACK_FAILPOINT").ok()?;
            let (name, at) = spec.rsplit_once(':')?;
            Some(Armed {
                name: name.to_owned(),
                at: at.parse().ok().filter(|n| *n >= 1)?,
                hits: AtomicU64::new(0),
            })
        })
        .as_ref()
}

/// Aborts the process if `CTXPACK_FAILPOINT` names this point and this is the hit it names.
pub fn failpoint(name: &str) {
    let Some(armed) = armed() else { return };
    if armed.name == name && armed.hits.fetch_add(1, Ordering::SeqCst) + 1 == armed.at {
        std::process::abort();
    }
}
