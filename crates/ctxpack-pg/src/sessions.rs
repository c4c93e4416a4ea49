//! Sessions as rows: one per session, its state as JSON, read and written in one transaction
//! so that two processes adding to one session both keep what they added.

use ctxpack_store::{
    SessionKey, SessionLimits, SessionState, SessionStore, ShownRange, StoreError,
};

use crate::Database;

/// The sessions of every process on one database ([`SessionStore`]).
#[derive(Clone, Debug)]
pub struct PgSessions {
    pub(crate) db: Database,
    pub(crate) limits: SessionLimits,
}

impl PgSessions {
    fn state(&self, text: &str, key: &SessionKey) -> Result<SessionState, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Database {
            detail: format!(
                "session {:?} of {:?} cannot be read ({e}); start another session",
                key.id, key.owner
            ),
        })
    }
}

fn seconds(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl SessionStore for PgSessions {
    fn shown(&self, key: &SessionKey, now: u64) -> Result<Vec<ShownRange>, StoreError> {
        let row = self.db.with(|c| {
            c.query_opt(
                "SELECT state FROM ctxpack_sessions WHERE owner = $1 AND id = $2",
                &[&key.owner, &key.id],
            )
            .map_err(|e| self.db.error(&e))
        })?;
        let Some(row) = row else {
            return Ok(Vec::new());
        };
        let state = self.state(row.get(0), key)?;
        Ok(if state.expired(&self.limits, now) {
            Vec::new()
        } else {
            state.ranges
        })
    }

    fn add(&self, key: &SessionKey, ranges: Vec<ShownRange>, now: u64) -> Result<(), StoreError> {
        let limits = self.limits;
        self.db.with(|c| {
            let error = |e: postgres::Error| self.db.error(&e);
            let mut tx = c.transaction().map_err(error)?;
            // The row exists before it is locked, so two first packs of a session queue on it.
            tx.execute(
                "INSERT INTO ctxpack_sessions (owner, id, used, state) VALUES ($1, $2, $3, '{}')
                 ON CONFLICT DO NOTHING",
                &[&key.owner, &key.id, &seconds(now)],
            )
            .map_err(error)?;
            let row = tx
                .query_one(
                    "SELECT state FROM ctxpack_sessions WHERE owner = $1 AND id = $2 FOR UPDATE",
                    &[&key.owner, &key.id],
                )
                .map_err(error)?;
            let mut state = match self.state(row.get(0), key) {
                Ok(state) if !state.expired(&limits, now) => state,
                // A state that cannot be read is replaced: it only says what was shown.
                _ => SessionState::default(),
            };
            state.add(ranges, &limits, now);
            let text = serde_json::to_string(&state).expect("a session serializes");
            tx.execute(
                "UPDATE ctxpack_sessions SET used = $3, state = $4 WHERE owner = $1 AND id = $2",
                &[&key.owner, &key.id, &seconds(state.used), &text],
            )
            .map_err(error)?;
            let idle_before = seconds(now.saturating_sub(limits.idle_secs));
            tx.execute(
                "DELETE FROM ctxpack_sessions WHERE owner = $1 AND used < $2",
                &[&key.owner, &idle_before],
            )
            .map_err(error)?;
            let keep = i64::try_from(limits.sessions).unwrap_or(i64::MAX);
            tx.execute(
                "DELETE FROM ctxpack_sessions WHERE owner = $1 AND id IN (
                     SELECT id FROM ctxpack_sessions WHERE owner = $1
                     ORDER BY used DESC, id OFFSET $2)",
                &[&key.owner, &keep],
            )
            .map_err(error)?;
            tx.commit().map_err(error)
        })
    }

    fn limits(&self) -> SessionLimits {
        self.limits
    }
}
