//! Flat vector files: a field's stored embeddings as one contiguous matrix beside the database,
//! derived from SQLite and rebuildable from it at any time.
//!
//! SQLite stays the system of record. A vector file is a copy of the `embeddings` rows of one
//! `(collection, field)` made for speed: a search streams contiguous little-endian `f32` rows
//! instead of visiting one B-tree page per vector. It lives at
//! `<store>/vectors/<collection>/<field>.vec`, each name hex-encoded (or, when long, the hex
//! SHA-256 of it behind `sha256-`), and holds, in this order:
//!
//! | section  | content                                                                    |
//! |----------|----------------------------------------------------------------------------|
//! | header   | [`HEADER_BYTES`]: magic, format version, dimension, row count, generation and token, the summary of the rows it was made from, section sizes |
//! | vectors  | `count × dim` little-endian `f32`s, in embedding rowid order, in blocks of the header's block size ([`BLOCK_ROWS`] when written by this build; the last block may be shorter), each block stored column by column: all of its rows' first components, then all their second ones, … |
//! | rowids   | `count` little-endian `i64`s: each row's embedding rowid                   |
//! | id ends  | `count` little-endian `u64`s: where each row's `_id` key ends in `ids`     |
//! | ids      | the canonical JSON `_id` keys, concatenated                                |
//! | names    | collection, field and embedder, each as a `u32` length and UTF-8 bytes     |
//!
//! Blocks of columns let a search read only the components a query uses: the embedding of a
//! short query has few non-zero components, and the dot products of every row with it need
//! only those columns (a few MB of a GB file at a million rows). A whole scan reads a block at a
//! time either way. A vector with a component that is not a finite number is never written
//! (no file is; searches scan the table).
//!
//! Only non-empty vectors by one embedder are rows; markers and rows of other embedders are
//! only counted, so a reader learns exactly what a scan of the table would have told it.
//!
//! **A file never gives a wrong answer.** The table `vector_generations` holds a generation
//! counter and a random token per `(collection, field)`; every write that changes the
//! embedding rows of a field ([`Store::put_embeddings`], [`Store::delete_documents`],
//! [`Store::delete_orphan_embeddings`]) bumps both in the same transaction. A file records the
//! pair it was made from, and a reader uses it only when both equal the database's (the token
//! makes the pair unique even across a database that was rebuilt or restored, where counters
//! restart). Documents themselves are not in the file: inserting or replacing one does not
//! change it, and readers take documents and counts from SQLite as before. A file is written
//! to a temporary name, synced and renamed, so a reader sees a whole old file or a whole new
//! one; anything else (missing, stale, truncated, garbage, unreadable) is ignored and the
//! caller scans SQLite instead.

use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::VectorRef;
use crate::db::Store;
use crate::error::StoreError;

mod verify;
mod write;

pub(crate) use write::Replacing;

/// The first eight bytes of a vector file.
const MAGIC: [u8; 8] = *b"CTXPVEC\n";

/// The layout version this build writes and reads (files of format 1, row by row, are
/// ignored and rewritten by the next `vsync`).
pub const VECTOR_FILE_FORMAT: u32 = 2;

/// Rows per block of columns in the files this build writes (the header records it).
pub const BLOCK_ROWS: usize = 8192;

/// The largest block size a reader accepts (a block is read into memory whole).
const MAX_BLOCK_ROWS: u32 = 1 << 16;

/// The size of the fixed header.
pub const HEADER_BYTES: usize = 128;

/// The directory of vector files inside the store.
const DIR: &str = "vectors";

/// The table of generations; created on first write, absent in stores never written since.
const GENERATIONS_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS vector_generations (
    collection TEXT NOT NULL,
    field TEXT NOT NULL,
    generation INTEGER NOT NULL,
    token INTEGER NOT NULL,
    PRIMARY KEY (collection, field)
) WITHOUT ROWID";

/// What a table scan would have counted, as recorded by a current vector file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorFileSummary {
    /// Every embedding row of the field: vectors, markers and rows of other embedders.
    pub rows: u64,
    /// Rows computed by another embedder (not in the file).
    pub foreign: u64,
    /// The highest rowid among all those rows (0 when there are none).
    pub last_rowid: i64,
    /// The vectors in the file.
    pub vectors: u64,
}

/// A generation of a field's embeddings: the counter and the token of its last bump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Generation {
    pub(crate) counter: i64,
    pub(crate) token: i64,
}

/// A parsed, size-checked header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    dim: u32,
    count: u64,
    generation: Generation,
    summary: VectorFileSummary,
    ids_bytes: u64,
    names_bytes: u64,
    block_rows: u32,
}

impl Header {
    fn row_bytes(&self) -> u64 {
        u64::from(self.dim) * 4
    }

    /// Offsets of the sections after the vectors, and the file length; `None` on overflow.
    fn layout(&self) -> Option<Layout> {
        let header = HEADER_BYTES as u64;
        let rowids = header.checked_add(self.count.checked_mul(self.row_bytes())?)?;
        let id_ends = rowids.checked_add(self.count.checked_mul(8)?)?;
        let ids = id_ends.checked_add(self.count.checked_mul(8)?)?;
        let names = ids.checked_add(self.ids_bytes)?;
        let len = names.checked_add(self.names_bytes)?;
        Some(Layout {
            rowids,
            id_ends,
            ids,
            names,
            len,
        })
    }

    fn to_bytes(self) -> [u8; HEADER_BYTES] {
        let mut out = [0u8; HEADER_BYTES];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&VECTOR_FILE_FORMAT.to_le_bytes());
        out[12..16].copy_from_slice(&self.dim.to_le_bytes());
        out[16..24].copy_from_slice(&self.count.to_le_bytes());
        out[24..32].copy_from_slice(&self.generation.counter.to_le_bytes());
        out[32..40].copy_from_slice(&self.generation.token.to_le_bytes());
        out[40..48].copy_from_slice(&self.summary.rows.to_le_bytes());
        out[48..56].copy_from_slice(&self.summary.foreign.to_le_bytes());
        out[56..64].copy_from_slice(&self.summary.last_rowid.to_le_bytes());
        out[64..72].copy_from_slice(&self.ids_bytes.to_le_bytes());
        out[72..80].copy_from_slice(&self.names_bytes.to_le_bytes());
        out[80..84].copy_from_slice(&self.block_rows.to_le_bytes());
        out
    }

    /// Parses a header; `None` unless the magic and format match.
    fn parse(bytes: &[u8; HEADER_BYTES]) -> Option<Header> {
        let u32_at = |i: usize| bytes[i..i + 4].try_into().ok().map(u32::from_le_bytes);
        let u64_at = |i: usize| bytes[i..i + 8].try_into().ok().map(u64::from_le_bytes);
        let i64_at = |i: usize| bytes[i..i + 8].try_into().ok().map(i64::from_le_bytes);
        if bytes[0..8] != MAGIC || u32_at(8)? != VECTOR_FILE_FORMAT {
            return None;
        }
        let count = u64_at(16)?;
        Some(Header {
            dim: u32_at(12)?,
            count,
            generation: Generation {
                counter: i64_at(24)?,
                token: i64_at(32)?,
            },
            summary: VectorFileSummary {
                rows: u64_at(40)?,
                foreign: u64_at(48)?,
                last_rowid: i64_at(56)?,
                vectors: count,
            },
            ids_bytes: u64_at(64)?,
            names_bytes: u64_at(72)?,
            block_rows: u32_at(80).filter(|b| (1..=MAX_BLOCK_ROWS).contains(b))?,
        })
    }
}

/// Where the sections of a file start, and its length.
#[derive(Clone, Copy, Debug)]
struct Layout {
    rowids: u64,
    id_ends: u64,
    ids: u64,
    names: u64,
    len: u64,
}

/// A new random token: the process-random keys of the standard hasher, the time and the pid.
fn fresh_token() -> i64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish() as i64
}

/// Bumps the generation of `field` of `collection` (creating it), or of every field of the
/// collection for `None`, inside the caller's transaction.
pub(crate) fn bump_generation(
    conn: &Connection,
    collection: &str,
    field: Option<&str>,
) -> rusqlite::Result<()> {
    conn.execute_batch(GENERATIONS_SCHEMA)?;
    match field {
        Some(field) => conn.execute(
            "INSERT INTO vector_generations (collection, field, generation, token) \
             VALUES (?1, ?2, 1, ?3) ON CONFLICT (collection, field) \
             DO UPDATE SET generation = generation + 1, token = excluded.token",
            params![collection, field, fresh_token()],
        )?,
        None => conn.execute(
            "UPDATE vector_generations SET generation = generation + 1, token = ?2 \
             WHERE collection = ?1",
            params![collection, fresh_token()],
        )?,
    };
    Ok(())
}

/// The current generation of a field, if one was ever recorded.
pub(crate) fn current_generation(
    conn: &Connection,
    collection: &str,
    field: &str,
) -> rusqlite::Result<Option<Generation>> {
    let exists = conn
        .prepare_cached(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_generations'",
        )?
        .exists([])?;
    if !exists {
        return Ok(None);
    }
    conn.prepare_cached(
        "SELECT generation, token FROM vector_generations WHERE collection = ?1 AND field = ?2",
    )?
    .query_row([collection, field], |r| {
        Ok(Generation {
            counter: r.get(0)?,
            token: r.get(1)?,
        })
    })
    .optional()
}

/// A file or directory name for an arbitrary string: its hex, or the hex of its SHA-256 when
/// the hex would be long (names are limited to 255 bytes on most file systems).
fn file_name(name: &str) -> String {
    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
    if name.len() <= 64 {
        hex(name.as_bytes())
    } else {
        format!("sha256-{}", hex(&Sha256::digest(name.as_bytes())))
    }
}

/// The names section: collection, field and embedder, each length-prefixed.
fn names_section(collection: &str, field: &str, embedder: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for name in [collection, field, embedder] {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    out
}

/// Reads exactly `len` bytes at `offset`; `None` on any failure.
fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    read_exact_at(file, &mut buf, offset).ok()?;
    Some(buf)
}

/// Fills `buf` from `offset` without moving a shared cursor, so threads can read one file.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut done, mut buf) = (0u64, buf);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buf, offset + done) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    done += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (file, buf, offset);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// An open vector file whose header, length and names were checked.
struct Checked {
    file: File,
    header: Header,
    layout: Layout,
}

/// A current vector file, its header, length and names checked: its vectors are read a block
/// of columns at a time, its rowids and `_id` keys when asked for.
#[derive(Debug)]
pub struct VectorFile {
    file: File,
    header: Header,
    layout: Layout,
    count: usize,
    dims: usize,
    /// Every row's rowid, once [`VectorFile::load_rowids`] read them.
    rowids: Option<Vec<i64>>,
    ids: Option<Ids>,
}

impl VectorFile {
    /// The vectors in the file.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// What a scan of the table would have counted.
    pub fn summary(&self) -> VectorFileSummary {
        self.header.summary
    }

    /// The generation of the embeddings it was made from.
    pub(crate) fn generation(&self) -> Generation {
        self.header.generation
    }

    /// Reads every row's rowid (once), for a caller about to visit every row; `None` when the
    /// file cannot be read.
    pub fn load_rowids(&mut self) -> Option<()> {
        if self.rowids.is_none() {
            let raw = read_at(
                &self.file,
                self.layout.rowids,
                self.layout.id_ends - self.layout.rowids,
            )?;
            self.rowids = Some(
                raw.chunks_exact(8)
                    .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                    .collect(),
            );
        }
        Some(())
    }

    /// The embedding rowid of a row: from memory after [`VectorFile::load_rowids`], else read
    /// from the file; `None` for a row past the end or a file that cannot be read.
    pub fn rowid(&mut self, row: usize) -> Option<i64> {
        if let Some(rowids) = &self.rowids {
            return rowids.get(row).copied();
        }
        if row >= self.count {
            return None;
        }
        let raw = read_at(&self.file, self.layout.rowids + 8 * row as u64, 8)?;
        Some(i64::from_le_bytes(raw.try_into().ok()?))
    }

    /// Reads and checks the `_id` keys (once); `None` when they are damaged.
    pub fn load_ids(&mut self) -> Option<()> {
        if self.ids.is_none() {
            self.ids = Some(read_ids(&self.file, &self.layout, self.count)?);
        }
        Some(())
    }

    /// The `_id` key of a row; empty until [`VectorFile::load_ids`] succeeded.
    pub fn id_key(&self, row: usize) -> &str {
        self.ids.as_ref().map_or("", |ids| ids.get(row))
    }

    /// Rows per block (the last block may hold fewer).
    fn rows_per_block(&self) -> usize {
        self.header.block_rows as usize
    }

    /// The number of blocks.
    pub fn blocks(&self) -> usize {
        self.count.div_ceil(self.rows_per_block())
    }

    /// The first row of block `b` and how many rows it holds.
    pub fn block_rows(&self, b: usize) -> (usize, usize) {
        let first = b * self.rows_per_block();
        (
            first,
            self.rows_per_block().min(self.count.saturating_sub(first)),
        )
    }

    /// Reads block `b` into `out`: the columns `dims` (every column for `None`), one after
    /// the other, each the block's rows' components as little-endian `f32` bytes. Returns
    /// false when the file cannot be read (the caller then scans the table).
    pub fn read_block(&self, b: usize, dims: Option<&[usize]>, out: &mut Vec<u8>) -> bool {
        let (first, rows) = self.block_rows(b);
        let start = HEADER_BYTES as u64 + (first * self.dims * 4) as u64;
        let column = rows * 4;
        match dims {
            None => {
                sized(out, column * self.dims);
                read_exact_at(&self.file, out, start).is_ok()
            }
            Some(dims) => {
                sized(out, column * dims.len());
                for (i, &d) in dims.iter().enumerate() {
                    if d >= self.dims {
                        return false;
                    }
                    let at = start + (d * column) as u64;
                    if read_exact_at(&self.file, &mut out[i * column..(i + 1) * column], at)
                        .is_err()
                    {
                        return false;
                    }
                }
                true
            }
        }
    }
}

/// Makes `buffer` `len` bytes long for a read to fill: kept when it has that length already,
/// else allocated zeroed (fresh zeroed pages, not a pass writing every byte: a block is
/// megabytes, and it is read over at once).
pub(crate) fn sized(buffer: &mut Vec<u8>, len: usize) {
    if buffer.len() != len {
        *buffer = vec![0; len];
    }
}

/// Opens a derived file for reading, never through a link, and reads its first `N` bytes;
/// `None` when it is missing, a link, shorter or unreadable.
pub(crate) fn open_header<const N: usize>(path: &Path) -> Option<(File, [u8; N])> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
    let mut file = options.open(path).ok()?;
    let mut raw = [0u8; N];
    file.read_exact(&mut raw).ok()?;
    Some((file, raw))
}

/// Opens the file at `path` and checks it against what it must be; `None` if it is not that.
fn open_checked(
    path: &Path,
    names: &[u8],
    generation: Generation,
    row_bytes: usize,
) -> Option<Checked> {
    let (file, raw) = open_header::<HEADER_BYTES>(path)?;
    let header = Header::parse(&raw)?;
    let layout = header.layout()?;
    let len = file.metadata().ok()?.len();
    if header.generation != generation
        || header.row_bytes() != row_bytes as u64
        || header.names_bytes != names.len() as u64
        || len != layout.len
        || header.summary.vectors.checked_add(header.summary.foreign)? > header.summary.rows
    {
        return None;
    }
    if read_at(&file, layout.names, header.names_bytes)? != names {
        return None;
    }
    Some(Checked {
        file,
        header,
        layout,
    })
}

impl Store {
    /// The path of the vector file of `field` of `collection` (which may not exist).
    pub fn vector_file_path(&self, collection: &str, field: &str) -> PathBuf {
        self.dir
            .join(DIR)
            .join(file_name(collection))
            .join(format!("{}.vec", file_name(field)))
    }

    /// Opens the current vector file of `field` of `collection` by `embedder` (vectors of
    /// `row_bytes` bytes); `Ok(None)` when there is no current file (none was written, the
    /// embeddings changed since, or it is truncated, garbage or unreadable), so the caller
    /// scans the table instead.
    pub fn open_vector_file(
        &self,
        collection: &str,
        field: &str,
        embedder: &str,
        row_bytes: usize,
    ) -> Result<Option<VectorFile>, StoreError> {
        crate::guard::no_links_below(&self.dir, Path::new(DIR))?;
        let Some(generation) =
            current_generation(&self.conn, collection, field).map_err(self.sql())?
        else {
            return Ok(None);
        };
        if row_bytes == 0 || !row_bytes.is_multiple_of(4) {
            return Ok(None);
        }
        let path = self.vector_file_path(collection, field);
        let names = names_section(collection, field, embedder);
        let Some(Checked {
            file,
            header,
            layout,
        }) = open_checked(&path, &names, generation, row_bytes)
        else {
            return Ok(None);
        };
        let Ok(count) = usize::try_from(header.count) else {
            return Ok(None);
        };
        Ok(Some(VectorFile {
            file,
            header,
            layout,
            count,
            dims: row_bytes / 4,
            rowids: None,
            ids: None,
        }))
    }

    /// Calls `f` with every row of the current vector file of `field` of `collection` by
    /// `embedder` (vectors of `row_bytes` bytes, in rowid order) and returns what a scan of
    /// the table would have counted besides; `Ok(None)` when there is no current file (see
    /// [`Store::open_vector_file`]).
    ///
    /// Each row's `id_key` is filled only `with_ids`, and is empty otherwise; `embedder` is
    /// always the one asked for. The file is checked before the first row is passed on; if
    /// reading still fails part way, the result is `Ok(None)` and the rows already passed
    /// must be discarded. Errors of `f` stop the scan and are returned.
    pub fn scan_vector_file<E: From<StoreError>>(
        &self,
        collection: &str,
        field: &str,
        embedder: &str,
        row_bytes: usize,
        with_ids: bool,
        mut f: impl FnMut(VectorRef<'_>) -> Result<(), E>,
    ) -> Result<Option<VectorFileSummary>, E> {
        let Some(mut file) = self.open_vector_file(collection, field, embedder, row_bytes)? else {
            return Ok(None);
        };
        if file.load_rowids().is_none() || (with_ids && file.load_ids().is_none()) {
            return Ok(None);
        }
        let dims = row_bytes / 4;
        let (mut block, mut row) = (Vec::new(), vec![0u8; row_bytes]);
        for b in 0..file.blocks() {
            let (first, rows) = file.block_rows(b);
            if !file.read_block(b, None, &mut block) {
                return Ok(None);
            }
            for i in 0..rows {
                for d in 0..dims {
                    let from = (d * rows + i) * 4;
                    row[d * 4..d * 4 + 4].copy_from_slice(&block[from..from + 4]);
                }
                let Some(rowid) = file.rowid(first + i) else {
                    return Ok(None);
                };
                f(VectorRef {
                    rowid,
                    id_key: file.id_key(first + i),
                    embedder,
                    vector: &row,
                })?;
            }
        }
        Ok(Some(file.summary()))
    }
}

/// The error of an IO failure on `path`.
pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + use<> {
    let path = path.to_owned();
    move |source| StoreError::Io { path, source }
}

/// The `_id` keys of a checked file, validated whole before any is used.
#[derive(Debug)]
struct Ids {
    ends: Vec<usize>,
    text: String,
}

impl Ids {
    fn get(&self, row: usize) -> &str {
        let start = if row == 0 { 0 } else { self.ends[row - 1] };
        self.text.get(start..self.ends[row]).unwrap_or("")
    }
}

/// Reads and checks the id sections: ends ascending within the text, every key UTF-8.
fn read_ids(file: &File, layout: &Layout, count: usize) -> Option<Ids> {
    let raw_ends = read_at(file, layout.id_ends, layout.ids - layout.id_ends)?;
    let text = String::from_utf8(read_at(file, layout.ids, layout.names - layout.ids)?).ok()?;
    let mut ends = Vec::with_capacity(count);
    let mut last = 0usize;
    for b in raw_ends.chunks_exact(8) {
        let end = usize::try_from(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
        .ok()?;
        if end < last || end > text.len() || !text.is_char_boundary(end) {
            return None;
        }
        ends.push(end);
        last = end;
    }
    Some(Ids { ends, text })
}

#[cfg(test)]
mod tests {
    use super::super::{NewDocument, NewEmbedding};
    use super::*;

    const ROW: usize = 8;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open_or_create(&dir.path().join("s")).expect("create");
        (dir, store)
    }

    fn insert(store: &mut Store, ids: &[&str]) {
        let docs: Vec<_> = ids
            .iter()
            .map(|id| NewDocument {
                id_key: (*id).into(),
                body: "{}".into(),
                index_keys: Vec::new(),
            })
            .collect();
        store.insert_documents("c", &docs).expect("insert");
    }

    fn row(id: &str, fill: u8) -> NewEmbedding {
        NewEmbedding {
            id_key: id.into(),
            text_hash: "h".into(),
            vector: vec![fill; ROW],
        }
    }

    fn generation(store: &Store, field: &str) -> Option<Generation> {
        current_generation(&store.conn, "c", field).expect("generation")
    }

    /// A row read back: rowid, `_id` key, first vector byte.
    type Row = (i64, String, u8);

    /// Every row of the current file, and its summary.
    fn read(store: &Store, field: &str, with_ids: bool) -> Option<(Vec<Row>, VectorFileSummary)> {
        let mut rows = Vec::new();
        let summary = store
            .scan_vector_file("c", field, "e", ROW, with_ids, |r| {
                assert_eq!(r.embedder, "e");
                rows.push((r.rowid, r.id_key.to_owned(), r.vector[0]));
                Ok::<_, StoreError>(())
            })
            .expect("scan");
        summary.map(|s| (rows, s))
    }

    #[test]
    fn blocks_of_columns_hold_every_row_across_blocks() {
        let (_dir, mut store) = store();
        // Two full blocks and a short one; each row's components are distinct numbers.
        let n = 2 * BLOCK_ROWS + 3;
        let ids: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let docs: Vec<_> = ids
            .iter()
            .map(|id| NewDocument {
                id_key: id.clone(),
                body: "{}".into(),
                index_keys: Vec::new(),
            })
            .collect();
        store.insert_documents("c", &docs).expect("insert");
        let vector = |i: usize| -> Vec<u8> {
            [i as f32, -(i as f32)]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect()
        };
        let rows: Vec<NewEmbedding> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| NewEmbedding {
                id_key: id.clone(),
                text_hash: "h".into(),
                vector: vector(i),
            })
            .collect();
        store.put_embeddings("c", "f", "e", &rows).expect("put");
        assert!(store.sync_vector_file("c", "f", "e", ROW).expect("sync"));
        // Row by row, in rowid order, with their ids.
        let mut seen = Vec::new();
        store
            .scan_vector_file("c", "f", "e", ROW, true, |row| {
                seen.push((row.id_key.to_owned(), row.vector.to_vec()));
                Ok::<_, StoreError>(())
            })
            .expect("scan")
            .expect("a current file");
        let want: Vec<(String, Vec<u8>)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), vector(i)))
            .collect();
        assert_eq!(seen, want);
        // One column of each block, and the rowids read one at a time.
        let mut file = store
            .open_vector_file("c", "f", "e", ROW)
            .expect("open")
            .expect("current");
        assert_eq!((file.len(), file.blocks()), (n, 3));
        let mut column = Vec::new();
        for b in 0..file.blocks() {
            let (first, rows) = file.block_rows(b);
            assert!(file.read_block(b, Some(&[1]), &mut column));
            let got: Vec<f32> = column
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let want: Vec<f32> = (first..first + rows).map(|i| -(i as f32)).collect();
            assert_eq!(got, want, "block {b}");
            assert!(
                !file.read_block(b, Some(&[2]), &mut column),
                "no third column"
            );
        }
        let last = file.rowid(n - 1).expect("a rowid");
        assert!(file.rowid(n).is_none());
        file.load_rowids().expect("rowids");
        assert_eq!(file.rowid(n - 1), Some(last));
    }

    #[test]
    fn every_write_of_embeddings_bumps_their_generation() {
        let (_dir, mut store) = store();
        insert(&mut store, &["1", "2", "3"]);
        assert_eq!(
            generation(&store, "f"),
            None,
            "documents alone record nothing"
        );
        store
            .put_embeddings("c", "f", "e", &[row("1", 1)])
            .expect("put");
        let first = generation(&store, "f").expect("recorded");
        assert_eq!(first.counter, 1);
        store
            .put_embeddings("c", "g", "e", &[row("1", 1)])
            .expect("put");
        store
            .put_embeddings("c", "f", "e", &[row("2", 2)])
            .expect("put");
        let second = generation(&store, "f").expect("recorded");
        assert_eq!(second.counter, 2);
        assert_ne!(second.token, first.token);
        // Documents written without touching embeddings change nothing.
        insert(&mut store, &["4"]);
        let replaced = NewDocument {
            id_key: "1".into(),
            body: r#"{"new":1}"#.into(),
            index_keys: Vec::new(),
        };
        store.replace_document("c", &replaced).expect("replace");
        store.delete_documents("c", &["3".into()]).expect("delete");
        assert_eq!(generation(&store, "f"), Some(second));
        assert_eq!(
            store.delete_orphan_embeddings("c", "f").expect("orphans"),
            0
        );
        assert_eq!(generation(&store, "f"), Some(second));
        // Deleting a document with embeddings bumps every field of the collection.
        let g = generation(&store, "g").expect("recorded");
        store.delete_documents("c", &["1".into()]).expect("delete");
        assert_eq!(generation(&store, "f").map(|g| g.counter), Some(3));
        assert_eq!(
            generation(&store, "g").map(|g| g.counter),
            Some(g.counter + 1)
        );
        // Orphans (left by another writer) are removed with a bump.
        store
            .conn
            .execute(
                "INSERT INTO embeddings (collection, id_key, field, embedder, text_hash, vector) \
                 VALUES ('c', 'gone', 'f', 'e', 'h', x'00')",
                [],
            )
            .expect("orphan");
        assert_eq!(
            store.delete_orphan_embeddings("c", "f").expect("orphans"),
            1
        );
        assert_eq!(generation(&store, "f").map(|g| g.counter), Some(4));
    }

    #[test]
    fn a_file_serves_exactly_its_generation() {
        let (dir, mut store) = store();
        assert!(read(&store, "f", false).is_none(), "no table yet");
        insert(&mut store, &["1", "2", "3", "4"]);
        store
            .put_embeddings(
                "c",
                "f",
                "e",
                &[row("2", 2), NewEmbedding::marker("3".into()), row("1", 1)],
            )
            .expect("put");
        store
            .put_embeddings("c", "f", "other", &[row("4", 4)])
            .expect("put");
        assert!(read(&store, "f", false).is_none(), "not written yet");
        assert!(store.sync_vector_file("c", "f", "e", ROW).expect("sync"));
        assert!(!store.sync_vector_file("c", "f", "e", ROW).expect("sync"));
        let expected_summary = VectorFileSummary {
            rows: 4,
            foreign: 1,
            last_rowid: 4,
            vectors: 2,
        };
        let (rows, summary) = read(&store, "f", true).expect("current");
        assert_eq!(summary, expected_summary);
        assert_eq!(rows, [(1, "2".to_owned(), 2), (3, "1".to_owned(), 1)]);
        let (rows, _) = read(&store, "f", false).expect("current");
        assert_eq!(rows, [(1, String::new(), 2), (3, String::new(), 1)]);
        // Another row length, embedder or field is not this file.
        assert!(
            store
                .scan_vector_file("c", "f", "e", ROW * 2, false, |_| Ok::<_, StoreError>(()))
                .expect("scan")
                .is_none()
        );
        assert!(
            store
                .scan_vector_file("c", "f", "x", ROW, false, |_| Ok::<_, StoreError>(()))
                .expect("scan")
                .is_none()
        );
        // Read-only stores read it.
        drop(store);
        let mut store = Store::open(&dir.path().join("s")).expect("open");
        assert_eq!(
            read(&store, "f", false).map(|r| r.1),
            Some(expected_summary)
        );
        assert!(matches!(
            store.sync_vector_file("c", "f", "e", ROW),
            Err(StoreError::ReadOnly { .. })
        ));
        drop(store);
        // A write makes it stale until the next sync.
        let mut store = Store::open_or_create(&dir.path().join("s")).expect("open");
        store
            .put_embeddings("c", "f", "e", &[row("1", 9)])
            .expect("put");
        assert!(read(&store, "f", true).is_none());
        assert!(store.sync_vector_file("c", "f", "e", ROW).expect("sync"));
        let (rows, _) = read(&store, "f", true).expect("current");
        assert_eq!(rows, [(1, "2".to_owned(), 2), (5, "1".to_owned(), 9)]);
    }

    #[test]
    fn rows_of_another_length_write_no_file() {
        let (_dir, mut store) = store();
        insert(&mut store, &["1", "2"]);
        let short = NewEmbedding {
            vector: vec![0; ROW - 1],
            ..row("2", 0)
        };
        store
            .put_embeddings("c", "f", "e", &[row("1", 1), short])
            .expect("put");
        assert!(!store.sync_vector_file("c", "f", "e", ROW).expect("sync"));
        assert!(!store.vector_file_path("c", "f").exists());
        assert!(read(&store, "f", false).is_none());
    }

    #[test]
    fn a_rebuilt_database_does_not_match_an_old_file() {
        let (dir, mut store) = store();
        insert(&mut store, &["1"]);
        store
            .put_embeddings("c", "f", "e", &[row("1", 1)])
            .expect("put");
        assert!(store.sync_vector_file("c", "f", "e", ROW).expect("sync"));
        let path = store.vector_file_path("c", "f");
        let old = std::fs::read(&path).expect("read");
        drop(store);
        // A new database whose counter restarts at the same value.
        std::fs::remove_file(dir.path().join("s").join("ctxpack.sqlite")).expect("remove");
        let mut store = Store::open_or_create(&dir.path().join("s")).expect("create");
        insert(&mut store, &["1"]);
        store
            .put_embeddings("c", "f", "e", &[row("1", 7)])
            .expect("put");
        assert_eq!(generation(&store, "f").map(|g| g.counter), Some(1));
        assert_eq!(std::fs::read(&path).expect("read"), old);
        assert!(read(&store, "f", false).is_none());
    }

    #[test]
    fn long_names_are_hashed_into_file_names() {
        let (_dir, store) = store();
        let long = "x".repeat(255);
        let path = store.vector_file_path(&long, &long);
        let names: Vec<_> = path
            .iter()
            .rev()
            .take(2)
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        assert!(names[0].starts_with("sha256-") && names[0].ends_with(".vec"));
        assert!(names.iter().all(|n| n.len() < 100), "{names:?}");
        assert!(
            store
                .vector_file_path("c", "f")
                .ends_with(Path::new("vectors/63/66.vec"))
        );
    }
}
