//! The SQLite system of record.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ctxpack_meter::{LineCounts, Meter};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use crate::error::StoreError;
use crate::guard;
use crate::lexical::{Lexical, LexicalDoc, LexicalHit, LexicalWriter, QueryTerms};
use crate::lock::WriterLock;

/// The newest store format this build reads and writes. Older formats (1: no checksums, one
/// `lexical/` directory; 2: no enclosing lines; 3: every manifest whole; 4: no field indexes;
/// 5: every vector raw; 6: no manifest records; 7: no stored histories; 8: no enclosing lines
/// inside chunks) are read as they are and migrated by the first writer.
pub const FORMAT_VERSION: i64 = 12;

const DB_FILE: &str = "ctxpack.sqlite";

const SCHEMA: &str = "
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
const FORMAT_5: &str = "
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
const FORMAT_7: &str = "
ALTER TABLE snapshots ADD COLUMN manifest_files INTEGER;
ALTER TABLE snapshots ADD COLUMN manifest_ids INTEGER;
ALTER TABLE snapshots ADD COLUMN manifest_digest TEXT;
";

/// What format 8 adds: each snapshot's past as the history signals read it (the index crate's
/// `History`, as JSON), derived when the snapshot is indexed so a pack need not walk git for
/// it. A snapshot without one (indexed before, from a shallow clone, or published from a
/// database) has its past read from git at pack time.
const FORMAT_8: &str = "
CREATE TABLE histories (snapshot TEXT PRIMARY KEY, data TEXT NOT NULL);
";

/// What format 9 adds: for each chunk, where the line opening the definition around its later
/// lines changes (`NewChunk::inside`, as JSON), so a pack that cuts a chunk finds the line
/// opening what its cut starts in without parsing the file. Chunks written before have none
/// (NULL), and a pack works those out as it did.
const FORMAT_9: &str = "
ALTER TABLE chunks ADD COLUMN inside TEXT;
";

/// What format 10 adds: an index of every chunk's head (its place, name and whether its text
/// holds a [test marker](TEST_MARKERS)), so ranking weighs thousands of chunks without reading
/// their text ([`Store::chunk_heads`]). SQLite keeps it as chunks are written and deleted.
fn format_10() -> String {
    format!(
        "CREATE INDEX chunk_heads ON chunks (id, file_id, start_line, end_line, symbol, {});",
        test_marked()
    )
}

/// Text that marks a chunk of source as test code in common languages. The [`format_10`]
/// index holds what its SQL test ([`test_marked`]) said of each chunk when it was written, so
/// a change to this list needs a new format that builds the index again.
pub const TEST_MARKERS: [&str; 5] = ["#[test]", "#[cfg(test)]", "def test_", "func Test", "@Test"];

/// Whether `text` holds one of [`TEST_MARKERS`] (what [`test_marked`] says in SQL).
pub fn has_test_marker(text: &str) -> bool {
    TEST_MARKERS.iter().any(|marker| text.contains(marker))
}

/// SQL that is 1 when a chunk's `text` holds one of [`TEST_MARKERS`], else 0; written exactly
/// so in the index and in the query that reads it, which is how SQLite knows the two agree.
fn test_marked() -> String {
    let tests: Vec<String> = TEST_MARKERS
        .iter()
        .map(|m| format!("instr(text, '{m}') > 0"))
        .collect();
    format!("({})", tests.join(" OR "))
}

/// What format 11 adds: each chunk's `o200k` tokens before each of its lines (`LineCounts`
/// as stored), so a pack that cuts a chunk to a run of its lines costs the run without
/// counting it. Chunks written before have none (NULL), and a pack counts their runs.
const FORMAT_11: &str = "
ALTER TABLE chunks ADD COLUMN o200k_lines BLOB;
";

/// What format 12 adds: chunks indexed by their file version and first line, so the chunk
/// around a hit's first line (for its enclosing line, [`Store::chunk_around`]) is one seek, not
/// a read of every chunk of its file; newest-first order (`ordinal DESC`) is the query's tie
/// order read backwards, and the last line lets it skip a chunk without reading its row.
const FORMAT_12: &str = "
CREATE INDEX chunks_by_line ON chunks (file_id, start_line, ordinal DESC, end_line);
";

/// The `o200k` line counts stored with a chunk whose text is `text` and whose stored `o200k`
/// cost is `cost`, when they were stored and agree with both (anything else is read as not
/// stored: the run is counted).
fn stored_line_counts(bytes: Option<Vec<u8>>, text: &str, cost: Option<u64>) -> Option<LineCounts> {
    let counts = LineCounts::from_bytes(&bytes?)?;
    let lines = text.split_inclusive('\n').count();
    (counts.lines() == lines && Some(counts.total()) == cost).then_some(counts)
}

/// Where the line opening the innermost definition around a chunk's later lines changes: from
/// line `.0` on, inside the definition opened at `.1` (`(1-based number, text)`), or inside none.
pub type InsideRuns = Vec<(u32, Option<(u32, String)>)>;

/// `NewChunk::inside` of a chunk starting at `start` as stored: `[[line, opening line], …]`,
/// with the opening's text (`[line, opening line, text]`) only when it is above the chunk (the
/// text of a line inside it is read back from the chunk's), and `[line]` for lines inside no
/// definition.
pub(crate) fn inside_json(start: u32, inside: &[(u32, Option<(u32, String)>)]) -> String {
    let runs: Vec<serde_json::Value> = inside
        .iter()
        .map(|(line, opening)| match opening {
            Some((at, _)) if *at >= start => serde_json::json!([line, at]),
            Some((at, text)) => serde_json::json!([line, at, text]),
            None => serde_json::json!([line]),
        })
        .collect();
    serde_json::Value::Array(runs).to_string()
}

/// Reads [`inside_json`]'s form back for the chunk of lines `start..=end` whose stored text is
/// `text`; `None` for anything else (a damaged row is worked out by parsing, as a chunk that
/// recorded nothing is): runs out of order or outside the chunk, an opening not above its
/// line, a line inside the chunk with text or one above it without.
pub(crate) fn inside_from_json(json: &str, start: u32, end: u32, text: &str) -> Option<InsideRuns> {
    let runs: Vec<serde_json::Value> = serde_json::from_str(json).ok()?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::with_capacity(runs.len());
    let mut last = start;
    for run in &runs {
        let run = run.as_array().filter(|r| r.len() <= 3)?;
        let line = u32::try_from(run.first()?.as_u64()?).ok()?;
        if line <= last || line > end {
            return None;
        }
        last = line;
        let at = match run.get(1) {
            Some(at) => Some(
                u32::try_from(at.as_u64()?)
                    .ok()
                    .filter(|at| (1..line).contains(at))?,
            ),
            None => None,
        };
        let opening = match (at, run.get(2)) {
            (None, None) => None,
            (Some(at), None) if at >= start => {
                let row = usize::try_from(at - start).ok()?;
                Some((
                    at,
                    lines.get(row)?.trim_end_matches(['\n', '\r']).to_owned(),
                ))
            }
            (Some(at), Some(text)) if at < start => Some((at, text.as_str()?.to_owned())),
            _ => return None,
        };
        out.push((line, opening));
    }
    Some(out)
}

/// The checksum of stored text or bytes: the first 16 bytes of their SHA-256, in hex. It
/// detects damage (a flipped byte, a truncated row), not forgery: a committed store is
/// refused, and `verify` re-derives chunks from the git objects.
pub fn checksum(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The lexical index's directory when the database names none (format 1).
const LEXICAL_DEFAULT: &str = "lexical";

/// An indexed snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotRow {
    /// Full commit SHA.
    pub sha: String,
    /// Unix seconds when it was committed to the store.
    pub indexed_at: i64,
    /// Files in its manifest (skipped ones included).
    pub files: u64,
    /// Chunks of its files.
    pub chunks: u64,
    /// Skipped files by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Seconds the index run took.
    pub seconds: f64,
    /// Whether it is pinned (never removed by a `gc` rule).
    pub pinned: bool,
}

/// Statistics of an index run, recorded with its snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SnapshotStats {
    /// Files in the manifest.
    pub files: u64,
    /// Chunks of those files.
    pub chunks: u64,
    /// Skipped files by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Seconds the run took.
    pub seconds: f64,
}

/// A stored file version: one path with one blob, chunked by one chunker version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileVersion {
    /// Its id.
    pub id: i64,
    /// Whether its lexical entries are committed (false after a crash mid-run).
    pub ready: bool,
}

/// A chunk to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewChunk {
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The symbol it defines, if known.
    pub symbol: Option<String>,
    /// Masked text.
    pub text: String,
    /// Cost per meter, in the order of [`Meter::ALL`]; `None` for meters not configured.
    pub costs: [Option<u64>; 5],
    /// Secrets masked in it, by kind.
    pub redactions: BTreeMap<String, u64>,
    /// The line opening the definition its first line is inside of: `(1-based number, text)`,
    /// kept only when masking leaves the line as it is.
    pub enclosing: Option<(u32, String)>,
    /// The same for its later lines, where it changes: from line `.0` on, inside the
    /// definition opened at `.1` (kept only when masking leaves that line as it is) or none.
    /// `None` when not recorded (a chunk stored before format 9, or published without it).
    pub inside: Option<InsideRuns>,
    /// Its `o200k` tokens before each of its lines, when counted in `o200k`.
    pub o200k_lines: Option<LineCounts>,
}

/// A file version to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewFile {
    /// Repository-relative path.
    pub path: String,
    /// Git blob id (hex).
    pub blob: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Why it was not chunked, if it was skipped.
    pub skip_reason: Option<String>,
    /// Its chunks (empty when skipped).
    pub chunks: Vec<NewChunk>,
}

/// A stored chunk with its file.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRow {
    /// Chunk id.
    pub id: i64,
    /// File version id.
    pub file_id: i64,
    /// Repository-relative path.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Symbol, if known.
    pub symbol: Option<String>,
    /// Masked text.
    pub text: String,
    /// Cost per meter in the order of [`Meter::ALL`].
    pub costs: [Option<u64>; 5],
    /// Secrets masked, by kind.
    pub redactions: BTreeMap<String, u64>,
    /// The chunker version its file version was stored with (which names the masking rules
    /// its text was masked by); 0 for a row not read from the store.
    pub chunker: u32,
    /// Its `o200k` tokens before each of its lines, when stored ([`NewChunk::o200k_lines`]).
    pub o200k_lines: Option<LineCounts>,
}

/// A stored chunk's place and name, without its text: what ranking reads of every chunk it
/// weighs, before it keeps the best and reads those whole ([`Store::chunk_heads`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkHead {
    /// Chunk id.
    pub id: i64,
    /// File version id.
    pub file_id: i64,
    /// Repository-relative path.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Symbol, if known.
    pub symbol: Option<String>,
    /// Whether its text holds one of [`TEST_MARKERS`].
    pub test_marker: bool,
}

impl ChunkRow {
    /// Its head.
    pub fn head(&self) -> ChunkHead {
        ChunkHead {
            id: self.id,
            file_id: self.file_id,
            path: self.path.clone(),
            start_line: self.start_line,
            end_line: self.end_line,
            symbol: self.symbol.clone(),
            test_marker: has_test_marker(&self.text),
        }
    }

    /// The cost in `meter`, computed now if the store was not configured for it.
    pub fn cost(&self, meter: Meter) -> u64 {
        let i = Meter::ALL
            .iter()
            .position(|m| *m == meter)
            .expect("Meter::ALL lists every meter");
        self.costs[i].unwrap_or_else(|| meter.count(&self.text))
    }
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

    /// Fails unless every table of the schema is there and readable: a database whose tables
    /// were dropped or damaged is not rebuilt in place but moved aside.
    fn check_schema(&self) -> Result<(), StoreError> {
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

    /// The open lexical index, if there is one.
    pub(crate) fn lexical_index(&self) -> Option<&Lexical> {
        self.lexical.as_ref()
    }

    /// The directory of the lexical index the database points at.
    fn lexical_name(&self) -> Result<String, StoreError> {
        Ok(self
            .meta("lexical")?
            .unwrap_or_else(|| LEXICAL_DEFAULT.to_owned()))
    }

    /// A value of the `meta` table.
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Cheap checks that the lexical index is the one the database last committed: present
    /// when there are snapshots, and holding at least as many entries as the database
    /// recorded after its last commit (fewer means entries were lost: every pack would
    /// silently miss them).
    fn check_lexical(&self) -> Result<(), StoreError> {
        let corrupt = |detail: String| StoreError::Corrupt {
            dir: self.dir.clone(),
            detail,
        };
        let Some(lexical) = &self.lexical else {
            if self.snapshots()?.is_empty() {
                return Ok(());
            }
            return Err(corrupt("the lexical index directory is missing".into()));
        };
        let expected: u64 = self
            .meta("lexical_docs")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let found = lexical.num_docs();
        if found < expected {
            return Err(corrupt(format!(
                "the lexical index holds {found} entries where {expected} were committed"
            )));
        }
        Ok(())
    }

    /// Records how many entries the lexical index holds after a commit.
    fn set_lexical_docs(&mut self) -> Result<(), StoreError> {
        let docs = self.lexical.as_ref().map_or(0, Lexical::num_docs);
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES ('lexical_docs', ?1) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [docs.to_string()],
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        Ok(())
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
        tx.pragma_update(None, "user_version", FORMAT_VERSION)
            .map_err(|e| sql_error(dir, e))?;
        tx.commit().map_err(|e| sql_error(dir, e))?;
        store.version = FORMAT_VERSION;
        Ok(store)
    }

    /// Brings a store of an older format up to this one, in one transaction: a run killed
    /// part way leaves the old format, whole. Documents, artifacts and the ledger are kept as
    /// they are; what is derived is recomputed.
    fn migrate(&mut self, from: i64) -> Result<(), StoreError> {
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

        tx.pragma_update(None, "user_version", FORMAT_VERSION)
            .map_err(e)?;
        tx.commit().map_err(e)?;
        self.version = FORMAT_VERSION;
        Ok(())
    }

    /// The store's format version (older formats are read as they are until a writer
    /// migrates them).
    pub fn format_version(&self) -> i64 {
        self.version
    }

    fn configure(&mut self) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        self.conn
            .busy_timeout(Duration::from_secs(10))
            .map_err(|e| sql_error(&dir, e))?;
        // A database from an untrusted source may carry triggers and views that call
        // functions with side effects: never run them on ctxpack's behalf.
        self.conn
            .pragma_update(None, "trusted_schema", "OFF")
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

    fn version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| sql_error(&self.dir, e))
    }

    fn check_version(&self, found: i64) -> Result<(), StoreError> {
        if !(0..=FORMAT_VERSION).contains(&found) {
            return Err(StoreError::Unsupported {
                dir: self.dir.clone(),
                found,
                supported: FORMAT_VERSION,
            });
        }
        Ok(())
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

    /// The stored version of a file, if this path, blob and chunker were seen before.
    pub fn file_version(
        &self,
        path: &str,
        blob: &str,
        chunker: u32,
    ) -> Result<Option<FileVersion>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT id, ready FROM files WHERE path = ?1 AND blob = ?2 AND chunker = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![path, blob, chunker], |r| {
                    Ok(FileVersion {
                        id: r.get(0)?,
                        ready: r.get::<_, i64>(1)? != 0,
                    })
                })
                .optional()
            })
            .map_err(|e| sql_error(&self.dir, e))
    }

    /// Stores new file versions and their chunks in one transaction; returns their ids in
    /// order. They are not part of any snapshot until [`Store::commit_snapshot`].
    pub fn insert_files(
        &mut self,
        files: &[NewFile],
        chunker: u32,
    ) -> Result<Vec<i64>, StoreError> {
        self.require_writable()?;
        let dir = self.dir.clone();
        let e = |err| sql_error(&dir, err);
        let tx = self.conn.transaction().map_err(e)?;
        let mut ids = Vec::with_capacity(files.len());
        {
            let mut file_stmt = tx
                .prepare_cached(
                    "INSERT INTO files (path, blob, chunker, bytes, skip_reason, ready) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                )
                .map_err(e)?;
            for file in files {
                // A skipped file has no lexical entries, so it is ready at once.
                let ready = i64::from(file.skip_reason.is_some());
                let id: i64 = file_stmt
                    .query_row(
                        params![
                            file.path,
                            file.blob,
                            chunker,
                            file.bytes as i64,
                            file.skip_reason,
                            ready
                        ],
                        |r| r.get(0),
                    )
                    .map_err(e)?;
                let chunk_ids = insert_chunks(&tx, id, &file.chunks).map_err(e)?;
                if let (Some(writer), None) = (self.open_writer.as_mut(), &file.skip_reason) {
                    writer.delete_file(id);
                    for (chunk, chunk_id) in file.chunks.iter().zip(chunk_ids) {
                        writer.add(LexicalDoc {
                            chunk_id: chunk_id as u64,
                            file_id: id as u64,
                            path: &file.path,
                            symbol: chunk.symbol.as_deref(),
                            text: &chunk.text,
                        })?;
                    }
                }
                ids.push(id);
            }
        }
        tx.commit().map_err(e)?;
        Ok(ids)
    }

    /// Writes the lexical entries of these file versions (replacing any a crashed run left)
    /// and commits the lexical index.
    pub fn index_lexical(&mut self, file_ids: &[i64]) -> Result<(), StoreError> {
        self.index_lexical_with(file_ids, &mut |_| true).map(|_| ())
    }

    /// Opens a lexical writer that [`Store::insert_files`] adds each new file version's
    /// entries to as it stores them, and that the next [`Store::index_lexical_with`] uses and
    /// commits: a run then indexes text it has in hand while it chunks more, instead of
    /// reading it back afterwards. Nothing it adds is committed before that call.
    pub fn begin_lexical(&mut self) -> Result<(), StoreError> {
        self.require_writable()?;
        if self.open_writer.is_none() {
            let lexical = self.lexical.as_ref().ok_or_else(|| StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: "the lexical index is not open".into(),
            })?;
            self.open_writer = Some(lexical.writer()?);
        }
        Ok(())
    }

    /// [`Store::index_lexical`], calling `tick` with the number of file versions done after
    /// each one; when it returns false, nothing is committed and this returns `Ok(false)`.
    /// Commits what an open writer ([`Store::begin_lexical`]) holds too.
    pub fn index_lexical_with(
        &mut self,
        file_ids: &[i64],
        tick: &mut dyn FnMut(usize) -> bool,
    ) -> Result<bool, StoreError> {
        self.require_writable()?;
        if !self.write_lexical(file_ids, tick)? {
            return Ok(false);
        }
        self.set_lexical_docs()?;
        Ok(true)
    }

    fn write_lexical(
        &mut self,
        file_ids: &[i64],
        tick: &mut dyn FnMut(usize) -> bool,
    ) -> Result<bool, StoreError> {
        let mut writer = match self.open_writer.take() {
            Some(writer) => writer,
            None => {
                let lexical = self.lexical.as_ref().ok_or_else(|| StoreError::Corrupt {
                    dir: self.dir.clone(),
                    detail: "the lexical index is not open".into(),
                })?;
                lexical.writer()?
            }
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.id, f.path, c.symbol, c.text FROM chunks c JOIN files f ON f.id = c.file_id \
                 WHERE c.file_id = ?1 ORDER BY c.ordinal",
            )
            .map_err(|e| sql_error(&self.dir, e))?;
        for (done, &file_id) in file_ids.iter().enumerate() {
            writer.delete_file(file_id);
            let rows = stmt
                .query_map([file_id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(|e| sql_error(&self.dir, e))?;
            for row in rows {
                let (chunk_id, path, symbol, text) = row.map_err(|e| sql_error(&self.dir, e))?;
                writer.add(LexicalDoc {
                    chunk_id: chunk_id as u64,
                    file_id: file_id as u64,
                    path: &path,
                    symbol: symbol.as_deref(),
                    text: &text,
                })?;
            }
            if !tick(done + 1) {
                return Ok(false);
            }
        }
        writer.commit()?;
        Ok(true)
    }

    /// Deletes the lexical entries of these file versions and commits the lexical index.
    pub(crate) fn delete_lexical(&mut self, file_ids: &[i64]) -> Result<(), StoreError> {
        let Some(lexical) = self.lexical.as_ref() else {
            return Ok(());
        };
        let mut writer = lexical.writer()?;
        for &id in file_ids {
            writer.delete_file(id);
        }
        writer.commit()?;
        self.set_lexical_docs()
    }

    /// File versions whose lexical entries were never committed (left by a crashed run).
    pub fn pending_files(&self) -> Result<Vec<i64>, StoreError> {
        self.query_ids("SELECT id FROM files WHERE ready = 0", [])
    }

    /// BM25 retrieval over the chunks of one snapshot and the artifacts of `scopes`: the top
    /// `k` chunk ids with scores, with statistics of those chunks alone.
    pub fn search(
        &self,
        sha: &str,
        scopes: &[&str],
        terms: &QueryTerms,
        k: usize,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        let mut files: HashSet<u64> = self
            .manifest_ids(sha)?
            .into_iter()
            .map(|id| id as u64)
            .collect();
        files.extend(self.artifact_files(scopes)?.into_iter().map(|id| id as u64));
        self.search_files(&files, &[], terms, k)
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

    /// Chunks by id, in the order of `ids` (missing ids are left out). Each text is checked
    /// against its stored checksum (rows written before checksums have none): a chunk edited
    /// outside ctxpack is [`StoreError::Corrupt`], never packed. Every hit a pack or query
    /// returns is read here, so this is the read path's check; it hashes only the chunks
    /// retrieval asked for. A chunk whose file version is gone is damage too (`gc` deletes a
    /// version's chunks with it), not a hit without a path.
    pub fn chunks(&self, ids: &[i64]) -> Result<Vec<ChunkRow>, StoreError> {
        self.chunk_rows(ids, true)
    }

    /// The heads of chunks by id, in the order of `ids` (missing ids are left out). Nothing
    /// here is evidence: the text is neither copied nor checked against its checksum, and the
    /// chunks a caller keeps are read with [`chunks`](Store::chunks), which checks them. From
    /// format 10 the heads are read from their index and the text is not read at all (a store
    /// whose index was dropped outside ctxpack reads the text, as older formats do).
    pub fn chunk_heads(&self, ids: &[i64]) -> Result<Vec<ChunkHead>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        // The index is named, so the lookup by id (the table's own key) reads the narrow
        // index rather than each chunk's row; the expression is the index's, so the marker
        // test is read from it, not worked out from the text.
        let has_index = self.version >= 10
            && self
                .conn
                .prepare_cached(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'chunk_heads'",
                )
                .and_then(|mut s| s.exists([]))
                .map_err(e)?;
        let indexed = if has_index {
            "INDEXED BY chunk_heads"
        } else {
            ""
        };
        let mut chunk = self
            .conn
            .prepare_cached(&format!(
                "SELECT file_id, start_line, end_line, symbol, {} FROM chunks {indexed} WHERE id = ?1",
                test_marked()
            ))
            .map_err(e)?;
        let mut file = self
            .conn
            .prepare_cached("SELECT path FROM files WHERE id = ?1")
            .map_err(e)?;
        let _batch = self.read_batch().map_err(e)?;
        // Read in the order of the table (a file's chunks lie together), each file's path once.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i]);
        let mut paths: HashMap<i64, String> = HashMap::new();
        let mut heads: Vec<Option<ChunkHead>> = vec![None; ids.len()];
        for i in order {
            let id = ids[i];
            let Some((file_id, start_line, end_line, symbol, test_marker)) = chunk
                .query_row([id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                    ))
                })
                .optional()
                .map_err(e)?
            else {
                continue;
            };
            let path = match paths.get(&file_id) {
                Some(path) => path.clone(),
                None => {
                    let path: String = file
                        .query_row([file_id], |r| r.get(0))
                        .optional()
                        .map_err(e)?
                        .ok_or_else(|| self.orphan_chunk(id, file_id))?;
                    paths.insert(file_id, path.clone());
                    path
                }
            };
            heads[i] = Some(ChunkHead {
                id,
                file_id,
                path,
                start_line,
                end_line,
                symbol,
                test_marker,
            });
        }
        Ok(heads.into_iter().flatten().collect())
    }

    /// The error for chunk `chunk`, whose file version `file` is gone.
    fn orphan_chunk(&self, chunk: i64, file: i64) -> StoreError {
        StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!(
                "chunk {chunk} belongs to file version {file}, which is missing: the store was changed outside ctxpack"
            ),
        }
    }

    /// [`chunks`](Store::chunks), checked against their checksums when `check` is set (`verify`
    /// reads them unchecked, to report and repair what does not match).
    pub(crate) fn chunk_rows(&self, ids: &[i64], check: bool) -> Result<Vec<ChunkRow>, StoreError> {
        // A store of format 1, read as it is, has no checksums.
        let checksum_column = if self.format_version() >= 2 {
            "c.checksum"
        } else {
            "NULL"
        };
        let lines_column = if self.format_version() >= 11 {
            "c.o200k_lines"
        } else {
            "NULL"
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT c.id, c.file_id, f.path, c.start_line, c.end_line, c.symbol, c.text, \
                 c.cost_o200k, c.cost_cl100k, c.cost_words, c.cost_chars, c.cost_approx, \
                 c.redactions, {checksum_column}, f.chunker, {lines_column} \
                 FROM chunks c LEFT JOIN files f ON f.id = c.file_id \
                 WHERE c.id = ?1"
            ))
            .map_err(|e| sql_error(&self.dir, e))?;
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let row = stmt
                .query_row([id], |r| {
                    let redactions: Option<String> = r.get(12)?;
                    let cost = |i: usize| -> rusqlite::Result<Option<u64>> {
                        Ok(r.get::<_, Option<i64>>(7 + i)?.map(|v| v as u64))
                    };
                    let Some(path) = r.get::<_, Option<String>>(2)? else {
                        return Ok(Err((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)));
                    };
                    let text: String = r.get(6)?;
                    let o200k_lines = stored_line_counts(r.get(15)?, &text, cost(0)?);
                    Ok(Ok((
                        ChunkRow {
                            id: r.get(0)?,
                            file_id: r.get(1)?,
                            path,
                            start_line: r.get(3)?,
                            end_line: r.get(4)?,
                            symbol: r.get(5)?,
                            text,
                            o200k_lines,
                            costs: [cost(0)?, cost(1)?, cost(2)?, cost(3)?, cost(4)?],
                            redactions: redactions
                                .and_then(|s| serde_json::from_str(&s).ok())
                                .unwrap_or_default(),
                            chunker: r.get(14)?,
                        },
                        r.get::<_, Option<String>>(13)?,
                    )))
                })
                .optional()
                .map_err(|e| sql_error(&self.dir, e))?;
            let (row, sum) = match row {
                None => continue,
                Some(Ok(found)) => found,
                Some(Err((chunk, file))) => return Err(self.orphan_chunk(chunk, file)),
            };
            if check && sum.is_some_and(|sum| sum != checksum(row.text.as_bytes())) {
                return Err(StoreError::Corrupt {
                    dir: self.dir.clone(),
                    detail: format!(
                        "chunk {} ({}, lines {}-{}) does not match its checksum: the store was changed outside ctxpack",
                        row.id, row.path, row.start_line, row.end_line
                    ),
                });
            }
            out.push(row);
        }
        Ok(out)
    }

    /// The stored (masked) texts of a file version's chunks, in order; none for an unknown id.
    pub fn chunk_texts(&self, file_id: i64) -> Result<Vec<String>, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM chunks WHERE file_id = ?1 ORDER BY ordinal")
            .map_err(e)?;
        let rows = stmt.query_map([file_id], |r| r.get(0)).map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }

    /// The snapshot's files with the key of each version: `(path, blob, chunker, id)`, by
    /// path. What copying a snapshot to another store needs.
    pub fn manifest_keys(&self, sha: &str) -> Result<Vec<(String, String, u32, i64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT blob, chunker FROM files WHERE id = ?1")
            .map_err(|e| sql_error(&self.dir, e))?;
        let mut out = Vec::new();
        // The manifest and its versions from one read of the database.
        let _batch = self.read_batch().map_err(|e| sql_error(&self.dir, e))?;
        for (path, id) in self.manifest(sha)? {
            let (blob, chunker): (String, u32) = stmt
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| sql_error(&self.dir, e))?
                .ok_or_else(|| self.missing_version(sha, &path, id))?;
            out.push((path, blob, chunker, id));
        }
        Ok(out)
    }

    /// A stored file version as it was written — its size, skip reason and chunks, every field
    /// [`Store::insert_files`] takes — for copying it to another store. Callers take `id` from
    /// a manifest or an artifact, so a version that is not there is damage.
    pub fn export_file(&self, id: i64) -> Result<NewFile, StoreError> {
        let e = |err| sql_error(&self.dir, err);
        let (path, blob, bytes, skip_reason): (String, String, i64, Option<String>) = self
            .conn
            .prepare_cached("SELECT path, blob, bytes, skip_reason FROM files WHERE id = ?1")
            .map_err(e)?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()
            .map_err(e)?
            .ok_or_else(|| StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!(
                    "file version {id} is missing: the store was changed outside ctxpack"
                ),
            })?;
        // A store before format 9 (read-only, not migrated) has no `inside` column.
        let inside = if self.version >= 9 { "inside" } else { "NULL" };
        let lines = if self.version >= 11 {
            "o200k_lines"
        } else {
            "NULL"
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT start_line, end_line, symbol, text, cost_o200k, cost_cl100k, cost_words, \
                 cost_chars, cost_approx, redactions, enclosing_line, enclosing_text, {inside}, \
                 {lines} FROM chunks WHERE file_id = ?1 ORDER BY ordinal"
            ))
            .map_err(e)?;
        let chunks = stmt
            .query_map([id], |r| {
                let cost = |i: usize| -> rusqlite::Result<Option<u64>> {
                    Ok(r.get::<_, Option<i64>>(4 + i)?.map(|v| v as u64))
                };
                let redactions: Option<String> = r.get(9)?;
                let line: Option<u32> = r.get(10)?;
                let text: Option<String> = r.get(11)?;
                let (start_line, end_line) = (r.get(0)?, r.get(1)?);
                let inside: Option<String> = r.get(12)?;
                let chunk_text: String = r.get(3)?;
                let o200k_lines = stored_line_counts(r.get(13)?, &chunk_text, cost(0)?);
                Ok(NewChunk {
                    o200k_lines,
                    start_line,
                    end_line,
                    symbol: r.get(2)?,
                    inside: inside.and_then(|json| {
                        inside_from_json(&json, start_line, end_line, &chunk_text)
                    }),
                    text: chunk_text,
                    costs: [cost(0)?, cost(1)?, cost(2)?, cost(3)?, cost(4)?],
                    redactions: redactions
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or_default(),
                    enclosing: match (line, text) {
                        (Some(line), Some(text)) if line > 0 => Some((line, text)),
                        _ => None,
                    },
                })
            })
            .map_err(e)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        Ok(NewFile {
            path,
            blob,
            bytes: bytes as u64,
            skip_reason,
            chunks,
        })
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

fn snapshot_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SnapshotRow> {
    let skipped: String = r.get(4)?;
    Ok(SnapshotRow {
        sha: r.get(0)?,
        indexed_at: r.get(1)?,
        files: r.get::<_, i64>(2)? as u64,
        chunks: r.get::<_, i64>(3)? as u64,
        skipped: serde_json::from_str(&skipped).unwrap_or_default(),
        seconds: r.get(5)?,
        pinned: r.get::<_, i64>(6)? != 0,
    })
}

/// Inserts a file version's chunks, with their checksums, in order.
pub(crate) fn insert_chunks(
    tx: &rusqlite::Transaction<'_>,
    file_id: i64,
    chunks: &[NewChunk],
) -> rusqlite::Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(chunks.len());
    let mut stmt = tx.prepare_cached(
        "INSERT INTO chunks (file_id, ordinal, start_line, end_line, symbol, text, \
         cost_o200k, cost_cl100k, cost_words, cost_chars, cost_approx, redactions, checksum, \
         enclosing_line, enclosing_text, inside, o200k_lines) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?;
    for (ordinal, c) in chunks.iter().enumerate() {
        let redactions = (!c.redactions.is_empty())
            .then(|| serde_json::to_string(&c.redactions).expect("a map of counts serializes"));
        let cost = |i: usize| c.costs[i].map(|v| v as i64);
        stmt.execute(params![
            file_id,
            ordinal as i64,
            c.start_line,
            c.end_line,
            c.symbol,
            c.text,
            cost(0),
            cost(1),
            cost(2),
            cost(3),
            cost(4),
            redactions,
            checksum(c.text.as_bytes()),
            c.enclosing.as_ref().map_or(0, |(line, _)| *line),
            c.enclosing.as_ref().map(|(_, text)| text),
            c.inside
                .as_deref()
                .map(|inside| inside_json(c.start_line, inside)),
            c.o200k_lines.as_ref().map(LineCounts::to_bytes),
        ])?;
        ids.push(tx.last_insert_rowid());
    }
    Ok(ids)
}

/// A suffix no other run of this or another process picks: the time and the pid.
fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}", std::process::id())
}

/// Removes the lexical directories the database does not point at (best effort: a reader
/// may still have one open, which Unix allows).
fn remove_stale_lexical(dir: &Path, active: &str, old: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let lexical = name == LEXICAL_DEFAULT || name.starts_with("lexical-");
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if lexical && is_dir && name != active && (name == old || name.starts_with("lexical-")) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
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

/// The names of every lexical index directory in the store.
pub(crate) fn lexical_dirs(dir: &Path) -> Vec<String> {
    let mut names = vec![LEXICAL_DEFAULT.to_owned()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        names.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("lexical-")),
        );
    }
    names
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
