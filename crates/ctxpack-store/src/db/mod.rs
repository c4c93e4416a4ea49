//! The SQLite system of record.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use crate::error::StoreError;
use crate::guard::{self, lexical_dirs};
use crate::lexical::{Lexical, LexicalWriter};
use crate::lock::WriterLock;

mod chunks;
mod rows;
mod schema;
mod search;

pub(crate) use chunks::insert_chunks;
pub(crate) use rows::inside_from_json;
#[cfg(test)]
pub(crate) use rows::inside_json;
use rows::snapshot_row;
pub use rows::{
    ChunkHead, ChunkRow, FileVersion, InsideRuns, NewChunk, NewFile, SnapshotRow, SnapshotStats,
};
use schema::{
    FORMAT_5, FORMAT_7, FORMAT_8, FORMAT_9, FORMAT_11, FORMAT_12, FORMAT_14, SCHEMA, format_10,
};
pub use schema::{TEST_MARKERS, has_test_marker};
use search::remove_stale_lexical;

/// The newest store format this build reads and writes. Older formats (1: no checksums, one
/// `lexical/` directory; 2: no enclosing lines; 3: every manifest whole; 4: no field indexes;
/// 5: every vector raw; 6: no manifest records; 7: no stored histories; 8: no enclosing lines
/// inside chunks; 9: no index of chunk heads; 10: no line counts; 11: no index of chunks by
/// line; 12: no file lists) are read as they are and migrated by the first writer.
pub const FORMAT_VERSION: i64 = 14;

const DB_FILE: &str = "ctxpack.sqlite";
/// The page cache of a read-only store, in KiB (negative, as SQLite's `cache_size` takes it).
const READ_CACHE_KIB: i64 = -16 * 1024;
/// How much of the database file a reader maps (SQLite's `mmap_size`; it maps no more than
/// the file holds). A page read through the map is neither copied nor given fresh memory to
/// land in: a pack's few hundred pages cost a third fewer page faults and no `pread` copies.
/// A mapped file must not shrink under its readers, and this one never does: no store is
/// vacuumed, so SQLite never truncates it.
pub(crate) const READ_MAP_BYTES: i64 = 1 << 34;

/// The checksum of stored text or bytes: the first 16 bytes of their SHA-256, in hex. It
/// detects damage (a flipped byte, a truncated row), not forgery: a committed store is
/// refused, and `verify` re-derives chunks from the git objects.
pub fn checksum(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(32);
    for byte in &Sha256::digest(bytes)[..16] {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

/// An open store.
pub struct Store {
    pub(crate) dir: PathBuf,
    pub(crate) conn: Connection,
    lexical: Option<Lexical>,
    /// A lexical writer kept open across calls by [`Store::begin_lexical`].
    open_writer: Option<LexicalWriter>,
    writable: bool,
    version: i64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("writable", &self.writable)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens one read transaction for a batch of point lookups, unless one is already open: a
    /// statement outside a transaction takes and releases the database's locks (and checks its
    /// files) on its own, so a lookup per row would pay that per row, and the rows of one batch
    /// would not come from one snapshot. Dropping the returned transaction ends it.
    pub(crate) fn read_batch(&self) -> rusqlite::Result<Option<rusqlite::Transaction<'_>>> {
        if !self.conn.is_autocommit() {
            return Ok(None);
        }
        rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Deferred)
            .map(Some)
    }

    /// Opens an existing store read-only. Never writes, never takes the writer lock.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        check_files(dir)?;
        let db = dir.join(DB_FILE);
        if !db.is_file() {
            return Err(StoreError::NotFound {
                dir: dir.to_owned(),
            });
        }
        let conn = Connection::open_with_flags(
            &db,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| sql_error(dir, e))?;
        let mut store = Store {
            dir: dir.to_owned(),
            conn,
            lexical: None,
            open_writer: None,
            writable: false,
            version: 0,
        };
        store.configure()?;
        // A pack reads a few hundred pages once or twice each, more than SQLite's default
        // cache of 2 MiB holds (a sixth of them were read again); pages are kept as they are
        // read, up to this much, so a short reader pays only for what it reads.
        store
            .conn
            .pragma_update(None, "cache_size", READ_CACHE_KIB)
            .map_err(|e| sql_error(dir, e))?;
        store
            .conn
            .pragma_update(None, "mmap_size", READ_MAP_BYTES)
            .map_err(|e| sql_error(dir, e))?;
        let version = store.version()?;
        if version == 0 {
            return Err(StoreError::Corrupt {
                dir: dir.to_owned(),
                detail: "the database has no ctxpack schema".into(),
            });
        }
        store.check_version(version)?;
        store.version = version;
        let name = store.lexical_name()?;
        store.lexical = Lexical::open(dir, &name, false)?;
        store.check_lexical()?;
        Ok(store)
    }

    /// A value of the `meta` table.
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Opens a store for writing, creating it if needed.
    pub fn open_or_create(dir: &Path) -> Result<Store, StoreError> {
        let mut store = Store::open_writable(dir)?;
        let has_snapshots = !store.snapshots()?.is_empty();
        let name = store.lexical_name()?;
        store.lexical = Lexical::open(dir, &name, !has_snapshots)?;
        store.check_lexical()?;
        Ok(store)
    }

    /// Rebuilds what can be rebuilt. A readable database keeps its chunks and snapshots and
    /// gets a fresh lexical index built from them; a database that is damaged or written by
    /// an unsupported format is moved aside (never deleted: its path is returned) and the
    /// store starts empty. Requires the writer lock.
    ///
    /// The new lexical index is built beside the old one and the database is switched to it
    /// in one transaction: a run killed at any point leaves the old index in use, and readers
    /// use the old one until the switch.
    pub fn rebuild(dir: &Path, _lock: &WriterLock) -> Result<(Store, Option<PathBuf>), StoreError> {
        let opened = Store::open_writable(dir).and_then(|store| {
            store.check_schema()?;
            Ok(store)
        });
        let (mut store, moved) = match opened {
            Ok(store) => (store, None),
            Err(StoreError::Corrupt { .. } | StoreError::Unsupported { .. }) => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let aside = dir.join(format!("{DB_FILE}.unreadable-{stamp}"));
                std::fs::rename(dir.join(DB_FILE), &aside).map_err(|source| StoreError::Io {
                    path: aside.clone(),
                    source,
                })?;
                for suffix in ["-wal", "-shm"] {
                    let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}{suffix}")));
                }
                (Store::open_writable(dir)?, Some(aside))
            }
            Err(e) => return Err(e),
        };
        crate::failpoint("rebuild:database-ready");
        let old = store.lexical_name()?;
        let next = format!("lexical-{}", unique_suffix());
        store.lexical = Lexical::open(dir, &next, true)?;
        let ids: Vec<i64> =
            store.query_ids("SELECT id FROM files WHERE skip_reason IS NULL", [])?;
        store.write_lexical(&ids, &mut |_| true)?;
        crate::failpoint("rebuild:lexical-built");
        let docs = store.lexical.as_ref().map_or(0, Lexical::num_docs);
        let tx = store.conn.transaction().map_err(|e| sql_error(dir, e))?;
        for (key, value) in [
            ("lexical", next.clone()),
            ("lexical_docs", docs.to_string()),
        ] {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map_err(|e| sql_error(dir, e))?;
        }
        tx.commit().map_err(|e| sql_error(dir, e))?;
        crate::failpoint("rebuild:switched");
        // The old index, and any left by rebuilds killed before their switch.
        remove_stale_lexical(dir, &next, &old);
        Ok((store, moved))
    }

    /// Opens (creating if needed) the database for writing and checks or installs the schema.
    fn open_writable(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_owned(),
            source,
        })?;
        check_files(dir)?;
        // Keep the store out of `git add -A` without touching the repository's own ignores.
        let ignore = Path::new(".gitignore");
        if std::fs::symlink_metadata(dir.join(ignore)).is_err() {
            use std::io::Write as _;
            let mut file = guard::create_new(dir, ignore)?;
            file.write_all(b"*\n").map_err(|source| StoreError::Io {
                path: dir.join(ignore),
                source,
            })?;
        }
        let conn = Connection::open_with_flags(
            dir.join(DB_FILE),
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| sql_error(dir, e))?;
        let mut store = Store {
            dir: dir.to_owned(),
            conn,
            lexical: None,
            open_writer: None,
            writable: true,
            version: 0,
        };
        // Pages of 16 KiB for a new database (an existing one keeps its size: the pragma only
        // takes effect before the first table): rows of a few KiB, such as JSON documents and
        // their vectors, pack several to a page instead of one or two to a 4 KiB page, which
        // left about half of every page empty.
        store
            .conn
            .pragma_update(None, "page_size", 16384)
            .map_err(|e| sql_error(dir, e))?;
        store.configure()?;
        let version = store.version()?;
        if version != 0 {
            store.check_version(version)?;
            store.version = version;
            if version < FORMAT_VERSION {
                store.migrate(version)?;
            }
            return Ok(store);
        }
        let tables: i64 = store
            .conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| sql_error(dir, e))?;
        if tables > 0 {
            return Err(StoreError::Corrupt {
                dir: dir.to_owned(),
                detail: "the database has tables but no ctxpack format version".into(),
            });
        }
        let tx = store.conn.transaction().map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(SCHEMA).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_5).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_7).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_8).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_9).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(&format_10())
            .map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_11).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_12).map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(crate::file_list::FORMAT_13)
            .map_err(|e| sql_error(dir, e))?;
        tx.execute_batch(FORMAT_14).map_err(|e| sql_error(dir, e))?;
        tx.pragma_update(None, "user_version", FORMAT_VERSION)
            .map_err(|e| sql_error(dir, e))?;
        tx.commit().map_err(|e| sql_error(dir, e))?;
        store.version = FORMAT_VERSION;
        Ok(store)
    }

    /// The store's format version (older formats are read as they are until a writer
    /// migrates them).
    pub fn format_version(&self) -> i64 {
        self.version
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the writer lock for this store.
    pub fn lock(&self, wait: bool) -> Result<WriterLock, StoreError> {
        WriterLock::acquire(&self.dir, wait)
    }

    /// Total size on disk, in bytes.
    pub fn size_bytes(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            match std::fs::read_dir(p) {
                Ok(entries) => entries
                    .filter_map(Result::ok)
                    .map(|e| match e.metadata() {
                        Ok(m) if m.is_dir() => walk(&e.path()),
                        Ok(m) => m.len(),
                        Err(_) => 0,
                    })
                    .sum(),
                Err(_) => 0,
            }
        }
        walk(&self.dir)
    }

    /// The columns [`snapshot_row`] reads (a store before format 4 pins nothing).
    fn snapshot_columns(&self) -> &'static str {
        if self.version >= 4 {
            "sha, indexed_at, files, chunks, skipped, seconds, pinned"
        } else {
            "sha, indexed_at, files, chunks, skipped, seconds, 0"
        }
    }

    /// Every indexed snapshot, most recent first (of those indexed in the same second, the
    /// last written first).
    pub fn snapshots(&self) -> Result<Vec<SnapshotRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM snapshots ORDER BY indexed_at DESC, rowid DESC",
                self.snapshot_columns()
            ))
            .map_err(|e| sql_error(&self.dir, e))?;
        let rows = stmt
            .query_map([], snapshot_row)
            .map_err(|e| sql_error(&self.dir, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// The snapshot for a full SHA, if indexed.
    pub fn snapshot(&self, sha: &str) -> Result<Option<SnapshotRow>, StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {} FROM snapshots WHERE sha = ?1",
                    self.snapshot_columns()
                ),
                [sha],
                snapshot_row,
            )
            .optional()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// The past of snapshot `sha` as stored when it was indexed, if it was (format 8 on).
    pub fn history(&self, sha: &str) -> Result<Option<String>, StoreError> {
        if self.format_version() < 8 {
            return Ok(None);
        }
        self.conn
            .prepare_cached("SELECT data FROM histories WHERE snapshot = ?1")
            .and_then(|mut stmt| stmt.query_row([sha], |r| r.get(0)).optional())
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Stores the past of snapshot `sha` (`data`, as [`history`](Store::history) returns it).
    pub fn set_history(&mut self, sha: &str, data: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO histories (snapshot, data) VALUES (?1, ?2)",
                params![sha, data],
            )
            .map(drop)
            .map_err(|e| sql_error(&self.dir, e))
    }

    pub(crate) fn query_ids<P: rusqlite::Params>(
        &self,
        sql: &str,
        p: P,
    ) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .map_err(|e| sql_error(&self.dir, e))?;
        let rows = stmt
            .query_map(p, |r| r.get(0))
            .map_err(|e| sql_error(&self.dir, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql_error(&self.dir, e))
    }

    pub(crate) fn require_writable(&self) -> Result<(), StoreError> {
        if self.writable {
            Ok(())
        } else {
            Err(StoreError::ReadOnly {
                dir: self.dir.clone(),
            })
        }
    }
}

/// A suffix no other run of this or another process picks: the time and the pid.
fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}", std::process::id())
}

/// Refuses a symbolic link at any file SQLite or tantivy opens in the store: SQLite's
/// `NOFOLLOW` covers the database file only, not its `-wal`, `-shm` and `-journal` files, and
/// tantivy opens whatever the `lexical/` directory holds.
fn check_files(dir: &Path) -> Result<(), StoreError> {
    for name in [
        DB_FILE,
        "ctxpack.sqlite-wal",
        "ctxpack.sqlite-shm",
        "ctxpack.sqlite-journal",
    ] {
        guard::no_link(dir, Path::new(name))?;
    }
    lexical_dirs(dir)
        .iter()
        .try_for_each(|name| guard::no_links_below(dir, Path::new(name)))
}

/// Maps SQLite errors. ctxpack's statements are fixed, so an SQL error from one of them, a
/// value of an unexpected type, or a damaged file all mean the database is not what ctxpack
/// wrote: damage. Busy, I/O, full-disk and permission errors stay SQLite errors.
pub(crate) fn sql_error(dir: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::Error as E;
    let damaged = match &e {
        E::SqliteFailure(..) => matches!(
            e.sqlite_error_code(),
            Some(
                ErrorCode::NotADatabase
                    | ErrorCode::DatabaseCorrupt
                    | ErrorCode::Unknown
                    | ErrorCode::TypeMismatch
            )
        ),
        E::InvalidColumnType(..)
        | E::FromSqlConversionFailure(..)
        | E::InvalidColumnIndex(..)
        | E::InvalidColumnName(..)
        | E::IntegralValueOutOfRange(..)
        | E::Utf8Error(..) => true,
        _ => false,
    };
    if damaged {
        StoreError::Corrupt {
            dir: dir.to_owned(),
            detail: e.to_string(),
        }
    } else {
        StoreError::Sqlite {
            dir: dir.to_owned(),
            source: e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::checksum;

    /// Stored checksums are compared as text, so the form never changes: the first half of
    /// SHA-256 in lower-case hex.
    #[test]
    fn a_checksum_is_the_first_half_of_sha256_in_lower_case_hex() {
        assert_eq!(checksum(b""), "e3b0c44298fc1c149afbf4c8996fb924");
        assert_eq!(checksum(b"abc"), "ba7816bf8f01cfea414140de5dae2223");
    }
}
