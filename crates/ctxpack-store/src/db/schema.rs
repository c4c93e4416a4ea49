//! The store's schema: the tables of the current format, what each later format added, and
//! the migration that brings an older store up to this one.

use std::time::Duration;

use rusqlite::{config::DbConfig, params};

use super::{FORMAT_VERSION, Store, checksum, sql_error};
use crate::error::StoreError;

pub(super) const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    blob TEXT NOT NULL,
    chunker INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    skip_reason TEXT,
    ready INTEGER NOT NULL DEFAULT 0,
    UNIQUE (path, blob, chunker)
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id),
    ordinal INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    symbol TEXT,
    text TEXT NOT NULL,
    cost_o200k INTEGER,
    cost_cl100k INTEGER,
    cost_words INTEGER,
    cost_chars INTEGER,
    cost_approx INTEGER,
    redactions TEXT,
    checksum TEXT,
    enclosing_line INTEGER,
    enclosing_text TEXT
);
CREATE INDEX chunks_by_file ON chunks (file_id, ordinal);
CREATE TABLE snapshots (
    sha TEXT PRIMARY KEY,
    indexed_at INTEGER NOT NULL,
    files INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    skipped TEXT NOT NULL,
    seconds REAL NOT NULL,
    base TEXT,
    seq INTEGER NOT NULL DEFAULT 0,
    basis TEXT,
    pinned INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE manifest (
    snapshot TEXT NOT NULL REFERENCES snapshots(sha),
    path TEXT NOT NULL,
    file_id INTEGER REFERENCES files(id),
    PRIMARY KEY (snapshot, path)
) WITHOUT ROWID;
CREATE TABLE artifacts (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    source_id TEXT,
    title TEXT,
    family_id TEXT NOT NULL,
    file_id INTEGER NOT NULL REFERENCES files(id),
    content_hash TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE collections (
    name TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
);
CREATE TABLE documents (
    collection TEXT NOT NULL REFERENCES collections(name),
    id_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (collection, id_key)
);
CREATE INDEX documents_by_seq ON documents (collection, seq);
CREATE TABLE embeddings (
    collection TEXT NOT NULL,
    id_key TEXT NOT NULL,
    field TEXT NOT NULL,
    embedder TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    checksum TEXT,
    PRIMARY KEY (collection, id_key, field)
);
";

/// What format 5 adds to [`SCHEMA`]: field indexes, and each collection's document count
/// (kept in the transactions that insert and delete documents, so it is read, not counted).
pub(super) const FORMAT_5: &str = "
ALTER TABLE collections ADD COLUMN documents INTEGER NOT NULL DEFAULT 0;
UPDATE collections SET documents = (SELECT count(*) FROM documents d WHERE d.collection = collections.name);
CREATE TABLE field_indexes (
    collection TEXT NOT NULL,
    field TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (collection, field)
) WITHOUT ROWID;
CREATE TABLE field_values (
    collection TEXT NOT NULL,
    field TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (collection, field, key, seq)
) WITHOUT ROWID;
CREATE INDEX field_values_by_seq ON field_values (seq);
";

/// What format 7 adds: each snapshot's record of its manifest as committed (`manifest`'s
/// `Record`), checked whenever the manifest is read. Snapshots committed before have none
/// (NULL) and are read as they are until `verify --repair` records them.
pub(super) const FORMAT_7: &str = "
ALTER TABLE snapshots ADD COLUMN manifest_files INTEGER;
ALTER TABLE snapshots ADD COLUMN manifest_ids INTEGER;
ALTER TABLE snapshots ADD COLUMN manifest_digest TEXT;
";

/// What format 8 adds: each snapshot's past as the history signals read it (the index crate's
/// `History`, as JSON), derived when the snapshot is indexed so a pack need not walk git for
/// it. A snapshot without one (indexed before, from a shallow clone, or published from a
/// database) has its past read from git at pack time.
pub(super) const FORMAT_8: &str = "
CREATE TABLE histories (snapshot TEXT PRIMARY KEY, data TEXT NOT NULL);
";

/// What format 9 adds: for each chunk, where the line opening the definition around its later
/// lines changes (`NewChunk::inside`, as JSON), so a pack that cuts a chunk finds the line
/// opening what its cut starts in without parsing the file. Chunks written before have none
/// (NULL), and a pack works those out as it did.
pub(super) const FORMAT_9: &str = "
ALTER TABLE chunks ADD COLUMN inside TEXT;
";

/// What format 10 adds: an index of every chunk's head (its place, name and whether its text
/// holds a [test marker](TEST_MARKERS)), so ranking weighs thousands of chunks without reading
/// their text ([`Store::chunk_heads`]). SQLite keeps it as chunks are written and deleted.
pub(super) fn format_10() -> String {
    format!(
        "CREATE INDEX chunk_heads ON chunks (id, file_id, start_line, end_line, symbol, {});",
        test_marked()
    )
}

/// Text that marks a chunk of source as test code in common languages. The `format_10`
/// index holds what its SQL test (`test_marked`) said of each chunk when it was written, so
/// a change to this list needs a new format that builds the index again.
pub const TEST_MARKERS: [&str; 5] = ["#[test]", "#[cfg(test)]", "def test_", "func Test", "@Test"];

/// Whether `text` holds one of [`TEST_MARKERS`] (what `test_marked` says in SQL).
pub fn has_test_marker(text: &str) -> bool {
    TEST_MARKERS.iter().any(|marker| text.contains(marker))
}

/// SQL that is 1 when a chunk's `text` holds one of [`TEST_MARKERS`], else 0; written exactly
/// so in the index and in the query that reads it, which is how SQLite knows the two agree.
pub(super) fn test_marked() -> String {
    let tests: Vec<String> = TEST_MARKERS
        .iter()
        .map(|m| format!("instr(text, '{m}') > 0"))
        .collect();
    format!("({})", tests.join(" OR "))
}

/// What format 11 adds: each chunk's `o200k` tokens before each of its lines (`LineCounts`
/// as stored), so a pack that cuts a chunk to a run of its lines costs the run without
/// counting it. Chunks written before have none (NULL), and a pack counts their runs.
pub(super) const FORMAT_11: &str = "
ALTER TABLE chunks ADD COLUMN o200k_lines BLOB;
";

/// What format 12 adds: chunks indexed by their file version and first line, so the chunk
/// around a hit's first line (for its enclosing line, [`Store::chunk_around`]) is one seek, not
/// a read of every chunk of its file; newest-first order (`ordinal DESC`) is the query's tie
/// order read backwards, and the last line lets it skip a chunk without reading its row.
pub(super) const FORMAT_12: &str = "
CREATE INDEX chunks_by_line ON chunks (file_id, start_line, ordinal DESC, end_line);
";

/// What format 14 adds: each file version's imports as ranking reads them (`NewFile::imports`),
/// so a pack weighs the files its best files import without parsing their chunks. Versions
/// written before have none (NULL), and a pack parses their chunks as it did.
pub(super) const FORMAT_14: &str = "
ALTER TABLE files ADD COLUMN imports TEXT;
";

impl Store {
    /// Fails unless every table of the schema is there and readable: a database whose tables
    /// were dropped or damaged is not rebuilt in place but moved aside.
    pub(super) fn check_schema(&self) -> Result<(), StoreError> {
        for table in [
            "meta",
            "files",
            "chunks",
            "snapshots",
            "manifest",
            "artifacts",
            "collections",
            "documents",
            "embeddings",
        ] {
            self.conn
                .query_row(&format!("SELECT count(*) FROM {table} WHERE 0"), [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(|e| sql_error(&self.dir, e))?;
        }
        let check: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| sql_error(&self.dir, e))?;
        if check != "ok" {
            return Err(StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: check,
            });
        }
        Ok(())
    }

    /// Brings a store of an older format up to this one, in one transaction: a run killed
    /// part way leaves the old format, whole. Documents, artifacts and the ledger are kept as
    /// they are; what is derived is recomputed.
    pub(super) fn migrate(&mut self, from: i64) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        if from < 2 {
            // Format 2: a checksum on every chunk and embedding row.
            tx.execute_batch(
                "ALTER TABLE chunks ADD COLUMN checksum TEXT;
                 ALTER TABLE embeddings ADD COLUMN checksum TEXT;",
            )
            .map_err(e)?;
            crate::failpoint("migrate:columns-added");
            for (table, column, key) in
                [("chunks", "text", "id"), ("embeddings", "vector", "rowid")]
            {
                let rows: Vec<(i64, Vec<u8>)> = {
                    let mut select = tx
                        .prepare(&format!(
                            "SELECT {key}, CAST({column} AS BLOB) FROM {table}"
                        ))
                        .map_err(e)?;
                    select
                        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                        .map_err(e)?
                        .collect::<Result<_, _>>()
                        .map_err(e)?
                };
                let mut update = tx
                    .prepare(&format!(
                        "UPDATE {table} SET checksum = ?1 WHERE {key} = ?2"
                    ))
                    .map_err(e)?;
                for (id, bytes) in rows {
                    update.execute(params![checksum(&bytes), id]).map_err(e)?;
                }
            }
            crate::failpoint("migrate:checksums-written");
        }
        if from < 3 {
            // Format 3: the enclosing line of every chunk written from now on (0 when there is
            // none); rows written before stay NULL, "not recorded", and readers work it out.
            tx.execute_batch(
                "ALTER TABLE chunks ADD COLUMN enclosing_line INTEGER;
                 ALTER TABLE chunks ADD COLUMN enclosing_text TEXT;",
            )
            .map_err(e)?;
        }
        if from < 4 {
            // Format 4: manifests stored as changes against a base snapshot (every existing
            // one is whole), a row without a file version for a path no longer listed, and
            // pinned snapshots.
            tx.execute_batch(
                "ALTER TABLE snapshots ADD COLUMN base TEXT;
                 ALTER TABLE snapshots ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
                 ALTER TABLE snapshots ADD COLUMN basis TEXT;
                 ALTER TABLE snapshots ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
                 CREATE TABLE manifest_4 (
                     snapshot TEXT NOT NULL REFERENCES snapshots(sha),
                     path TEXT NOT NULL,
                     file_id INTEGER REFERENCES files(id),
                     PRIMARY KEY (snapshot, path)
                 ) WITHOUT ROWID;
                 INSERT INTO manifest_4 SELECT snapshot, path, file_id FROM manifest;
                 DROP TABLE manifest;
                 ALTER TABLE manifest_4 RENAME TO manifest;",
            )
            .map_err(e)?;
        }
        if from < 5 {
            // Format 5: field indexes (none declared yet) and counted collections.
            tx.execute_batch(FORMAT_5).map_err(e)?;
        }
        // Format 6: embedding vectors may be stored by their counts (`vector_blob`). Vectors
        // written before are raw and read as they are, so nothing is rewritten; the number
        // keeps older ctxpack versions, which cannot read counted vectors, from opening it.
        if from < 7 {
            // Format 7: manifest records. Existing snapshots get none: they are read as they
            // were, and `verify --repair` records their manifests as they stand.
            tx.execute_batch(FORMAT_7).map_err(e)?;
        }
        if from < 8 {
            // Format 8: stored histories. Existing snapshots get none: their past is read
            // from git at pack time, as it was.
            tx.execute_batch(FORMAT_8).map_err(e)?;
        }
        if from < 9 {
            // Format 9: enclosing lines inside chunks, for chunks written from now on.
            tx.execute_batch(FORMAT_9).map_err(e)?;
        }
        if from < 10 {
            // Format 10: the chunks' heads indexed, built here from every chunk stored.
            tx.execute_batch(&format_10()).map_err(e)?;
        }
        if from < 11 {
            // Format 11: line counts, for chunks written from now on.
            tx.execute_batch(FORMAT_11).map_err(e)?;
        }
        if from < 12 {
            // Format 12: chunks indexed by their first line, built here.
            tx.execute_batch(FORMAT_12).map_err(e)?;
        }
        if from < 13 {
            // Format 13: the file list of every snapshot stored whole, written here from its
            // rows (before format 4 every snapshot is stored whole).
            crate::file_list::write_file_lists(&tx, from >= 4).map_err(e)?;
        }
        if from < 14 {
            // Format 14: imports, for file versions written from now on.
            tx.execute_batch(FORMAT_14).map_err(e)?;
        }

        tx.pragma_update(None, "user_version", FORMAT_VERSION)
            .map_err(e)?;
        tx.commit().map_err(e)?;
        self.version = FORMAT_VERSION;
        Ok(())
    }

    pub(super) fn configure(&mut self) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        self.conn
            .busy_timeout(Duration::from_secs(10))
            .map_err(|e| sql_error(&dir, e))?;
        // A database from an untrusted source may carry triggers and views that call
        // functions with side effects: never run them on ctxpack's behalf.
        self.conn
            .pragma_update(None, "trusted_schema", "OFF")
            .map_err(|e| sql_error(&dir, e))?;
        // Plans never depend on the values bound: this SQLite is built to weigh a value
        // compared with an indexed column, and prepares such a statement again whenever its
        // value changes (a pack's lookup of the chunk around each hit's line was prepared
        // again on every call, for a plan no statistic could change).
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(|e| sql_error(&dir, e))?;
        if self.writable {
            self.conn
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| sql_error(&dir, e))?;
            self.conn
                .pragma_update(None, "synchronous", "NORMAL")
                .map_err(|e| sql_error(&dir, e))?;
        }
        Ok(())
    }

    pub(super) fn version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| sql_error(&self.dir, e))
    }

    pub(super) fn check_version(&self, found: i64) -> Result<(), StoreError> {
        if !(0..=FORMAT_VERSION).contains(&found) {
            return Err(StoreError::Unsupported {
                dir: self.dir.clone(),
                found,
                supported: FORMAT_VERSION,
            });
        }
        Ok(())
    }
}
