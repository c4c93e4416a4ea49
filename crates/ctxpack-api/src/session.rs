//! Sessions: never send an agent the same evidence twice.
//!
//! A pack request may name a session. A hit whose exact lines (the same path, line numbers
//! and text) the session was shown before becomes a reference: its citation and the pack that
//! showed it, a few tokens where the lines cost many, so the budget goes to new evidence. A
//! hit some of whose lines were shown is cut to the longest run of new ones, cited by exactly
//! those. `fresh` shows everything whole (and still remembers it); `recall` asks for the text
//! behind references again, by citation or pack id, since a client may have dropped it.
//!
//! What a session was shown lives where its front end keeps it ([`Sessions`]): a store
//! directory's files for the command line, a process's memory for a local MCP server (which
//! records nothing on disk), the database for a server's processes, per access token.

use std::sync::Arc;

pub use ctxpack_store::{MemorySessions, SessionLimits, SessionStore};

/// The most characters a session id may have.
pub const MAX_SESSION_ID_CHARS: usize = 128;

/// The most citations or pack ids one request may recall.
pub const MAX_RECALL: usize = 64;

/// Where a workspace keeps its sessions, and whose they are: a server's are its access
/// token's, which no other token sees.
#[derive(Clone, Debug)]
pub struct Sessions {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) owner: String,
}

impl Sessions {
    /// The sessions `store` keeps for `owner`.
    pub fn new(store: Arc<dyn SessionStore>, owner: impl Into<String>) -> Sessions {
        Sessions {
            store,
            owner: owner.into(),
        }
    }

    /// Sessions in this process's memory, within the default [`SessionLimits`].
    pub fn in_memory() -> Sessions {
        Sessions::new(
            Arc::new(MemorySessions::new(SessionLimits::default())),
            String::new(),
        )
    }

    /// A new session id: 32 random hex digits.
    pub fn new_id() -> String {
        unrecorded_pack_id()[..32].to_owned()
    }

    /// The same store, for another owner.
    pub fn for_owner(&self, owner: impl Into<String>) -> Sessions {
        Sessions::new(self.store.clone(), owner)
    }
}

/// A new pack id for a pack no ledger records: 64 random hex digits, like a record's.
pub(crate) fn unrecorded_pack_id() -> String {
    let mut bytes = [0u8; 32];
    // A clock-derived id stands in if the system's randomness fails: ids need only differ.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes[..16].copy_from_slice(&nanos.to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
