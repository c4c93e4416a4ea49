//! Store errors: each says what went wrong, where, and what to do next.

use std::path::PathBuf;

/// What can go wrong opening, reading or writing a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// There is no store at the path.
    #[error("no ctxpack store at {}", .dir.display())]
    NotFound {
        /// The store directory.
        dir: PathBuf,
    },
    /// Another process holds the writer lock.
    #[error("store {} is being written by another process{}", .dir.display(), holder(*.pid))]
    Locked {
        /// The store directory.
        dir: PathBuf,
        /// The holder's process id, as it recorded it (0 when unknown).
        pid: u32,
    },
    /// The store was written by a newer ctxpack.
    #[error("store {} has format version {found}, this ctxpack reads up to {supported}", .dir.display())]
    Unsupported {
        /// The store directory.
        dir: PathBuf,
        /// The version found.
        found: i64,
        /// The newest version this build reads.
        supported: i64,
    },
    /// The database or lexical index is damaged or missing.
    #[error("store {} is corrupt: {detail}", .dir.display())]
    Corrupt {
        /// The store directory.
        dir: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A path inside the store is a symbolic link, which ctxpack never follows.
    #[error("{} is a symbolic link; ctxpack never follows a link inside a store (remove it, or name another store)", .path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// A write conflicts with what is stored (an id reused for different content).
    #[error("{detail}")]
    Conflict {
        /// The store directory.
        dir: PathBuf,
        /// What conflicts, and how to resolve it.
        detail: String,
    },
    /// A write was attempted on a store opened read-only.
    #[error("store {} is open read-only", .dir.display())]
    ReadOnly {
        /// The store directory.
        dir: PathBuf,
    },
    /// An operating-system error on a store file.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An unexpected database error.
    #[error("database error in {}: {source}", .dir.display())]
    Sqlite {
        /// The store directory.
        dir: PathBuf,
        /// The underlying error.
        source: rusqlite::Error,
    },
    /// The database server failed or could not be reached (the PostgreSQL backend).
    #[error("database error: {detail}")]
    Database {
        /// What failed, without credentials.
        detail: String,
    },
    /// An unexpected lexical-index error.
    #[error("lexical index error in {}: {detail}", .dir.display())]
    Lexical {
        /// The store directory.
        dir: PathBuf,
        /// The underlying error, as text.
        detail: String,
    },
    /// The collection does not exist.
    #[error("collection `{collection}` does not exist in store {}", .dir.display())]
    UnknownCollection {
        /// The store directory.
        dir: PathBuf,
        /// The collection name.
        collection: String,
    },
    /// A document's `_id` is already in the collection, or twice in one batch.
    #[error("duplicate _id {id_key} in collection `{collection}`")]
    DuplicateId {
        /// The collection name.
        collection: String,
        /// The canonical JSON of the `_id`.
        id_key: String,
        /// The position of the offending document in the batch.
        index: usize,
    },
    /// A collection name that cannot be used.
    #[error("invalid collection name {name:?}: {reason}")]
    InvalidCollectionName {
        /// The name as given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
}

/// ` (pid N)` when the lock holder recorded its pid.
fn holder(pid: u32) -> String {
    if pid == 0 {
        String::new()
    } else {
        format!(" (pid {pid})")
    }
}

impl StoreError {
    /// Whether the database was busy with another connection's write past the busy timeout:
    /// trying again later can succeed.
    pub fn is_busy(&self) -> bool {
        matches!(self, StoreError::Sqlite { source, .. } if matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::StoreError;

    #[test]
    fn a_lock_whose_holder_left_no_pid_names_none() {
        // The holder truncates the file before writing its pid: a reader can see it empty.
        let locked = |pid| StoreError::Locked {
            dir: "/r/.ctxpack".into(),
            pid,
        };
        assert_eq!(
            locked(0).to_string(),
            "store /r/.ctxpack is being written by another process"
        );
        assert_eq!(
            locked(42).to_string(),
            "store /r/.ctxpack is being written by another process (pid 42)"
        );
    }
}
