//! Approximate vector indexes: declared per `(collection, field)`, kept as a list file beside
//! the field's vector file.
//!
//! SQLite records only the declaration (`ann_indexes`: the lists and probes asked for, 0 for
//! the default). The index itself is a derived file at `<store>/vectors/<collection>/<field>.ivf`
//! (names hex-encoded as for vector files), made from one generation of the field's vector
//! file and used only while that generation is current, exactly like the vector file: a
//! stale, missing, truncated or garbage index is ignored and searches are exact. It holds, in
//! this order:
//!
//! | section   | content                                                               |
//! |-----------|-----------------------------------------------------------------------|
//! | header    | [`HEADER_BYTES`]: magic, format, dimension, lists, rows, the generation and token it was made from, the rows it was trained on |
//! | centroids | `lists × dim` little-endian `f32`s                                    |
//! | offsets   | `lists + 1` little-endian `u64`s: the first entry of each list, then the entry count |
//! | entries   | per list, in rowid order: the embedding rowid (`i64`), the scale and the slack (`f32`s) and `dim` `i8` codes |
//!
//! A reader checks the header, the sizes against the file's length and the offsets before it
//! uses anything, and reads only the centroids, the offsets and the lists it probes, by
//! offset: a process never loads the whole index. Every read is bounds-checked Rust, so a
//! damaged file can make a search miss rows but cannot make it read outside the file; rows are
//! rescored from the table, so a damaged entry cannot invent a score either.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};

use crate::db::Store;
use crate::docs::vectors::{
    Generation, Replacing, VectorFile, current_generation, io, open_header, read_exact_at,
};
use crate::error::StoreError;

/// The first eight bytes of an index file.
const MAGIC: [u8; 8] = *b"CTXPIVF\n";

/// The layout version this build writes and reads.
pub const ANN_FILE_FORMAT: u32 = 1;

/// The size of the fixed header.
pub const HEADER_BYTES: usize = 64;

/// The most lists a reader accepts.
const MAX_LISTS: u32 = 16_384;

/// The table of declarations; created on first declaration.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS ann_indexes (
    collection TEXT NOT NULL,
    field TEXT NOT NULL,
    lists INTEGER NOT NULL,
    probes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (collection, field)
) WITHOUT ROWID";

/// A declared approximate index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnDeclaration {
    /// The field, as declared.
    pub field: String,
    /// Lists asked for (0: the default for the collection's size).
    pub lists: u32,
    /// Lists a search probes (0: the default for the lists).
    pub probes: u32,
    /// Unix seconds when it was declared.
    pub created_at: i64,
}

/// What an index file holds, as a writer gives it: `lists` centroids, and each entry's list.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnData {
    /// The vector dimension.
    pub dim: usize,
    /// Centroids, row-major.
    pub centroids: Vec<f32>,
    /// The rows the centroids were trained on.
    pub trained: u64,
    /// Each entry's list, in the order of `rowids`.
    pub lists: Vec<u32>,
    /// Each entry's rowid, ascending.
    pub rowids: Vec<i64>,
    /// Each entry's scale.
    pub scales: Vec<f32>,
    /// Each entry's slack: how far its coded dot product can be from the exact one, per unit
    /// of the query's length.
    pub slacks: Vec<f32>,
    /// Each entry's `dim` codes (`i8`s in two's complement), concatenated.
    pub codes: Vec<u8>,
}

/// A parsed, checked header.
#[derive(Clone, Copy, Debug)]
struct Header {
    dim: u32,
    lists: u32,
    count: u64,
    generation: Generation,
    trained: u64,
}

impl Header {
    fn entry_bytes(&self) -> u64 {
        16 + u64::from(self.dim)
    }

    /// Where the offsets and entries start, and the file's length; `None` on overflow.
    fn layout(&self) -> Option<(u64, u64, u64)> {
        let offsets = (HEADER_BYTES as u64).checked_add(
            u64::from(self.lists)
                .checked_mul(u64::from(self.dim))?
                .checked_mul(4)?,
        )?;
        let entries = offsets.checked_add((u64::from(self.lists) + 1).checked_mul(8)?)?;
        let end = entries.checked_add(self.count.checked_mul(self.entry_bytes())?)?;
        Some((offsets, entries, end))
    }

    fn to_bytes(self) -> [u8; HEADER_BYTES] {
        let mut out = [0u8; HEADER_BYTES];
        out[..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&ANN_FILE_FORMAT.to_le_bytes());
        out[12..16].copy_from_slice(&self.dim.to_le_bytes());
        out[16..20].copy_from_slice(&self.lists.to_le_bytes());
        out[24..32].copy_from_slice(&self.count.to_le_bytes());
        out[32..40].copy_from_slice(&self.generation.counter.to_le_bytes());
        out[40..48].copy_from_slice(&self.generation.token.to_le_bytes());
        out[48..56].copy_from_slice(&self.trained.to_le_bytes());
        out
    }

    fn parse(raw: &[u8; HEADER_BYTES]) -> Option<Header> {
        let u32_at = |at: usize| u32::from_le_bytes(raw[at..at + 4].try_into().unwrap_or_default());
        let u64_at = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().unwrap_or_default());
        if raw[..8] != MAGIC || u32_at(8) != ANN_FILE_FORMAT {
            return None;
        }
        Some(Header {
            dim: u32_at(12),
            lists: u32_at(16),
            count: u64_at(24),
            generation: Generation {
                counter: u64_at(32) as i64,
                token: u64_at(40) as i64,
            },
            trained: u64_at(48),
        })
    }
}

/// An open, checked index file.
#[derive(Debug)]
pub struct AnnFile {
    file: File,
    header: Header,
    centroids: Vec<f32>,
    offsets: Vec<u64>,
    entries: u64,
    /// Whether it was made from the field's current generation.
    current: bool,
}

impl AnnFile {
    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.header.dim as usize
    }

    /// The number of lists.
    pub fn lists(&self) -> usize {
        self.header.lists as usize
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.header.count as usize
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.header.count == 0
    }

    /// The rows the centroids were trained on.
    pub fn trained(&self) -> u64 {
        self.header.trained
    }

    /// Whether it was made from the field's current embeddings (only then may a search use
    /// it; an older one can still seed an update).
    pub fn is_current(&self) -> bool {
        self.current
    }

    /// The centroids, row-major.
    pub fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// The bytes of one entry: rowid, scale, slack, codes.
    pub fn entry_bytes(&self) -> usize {
        self.header.entry_bytes() as usize
    }

    /// The number of entries in list `j` (0 for a list it does not have).
    pub fn list_len(&self, j: usize) -> usize {
        match (self.offsets.get(j), self.offsets.get(j + 1)) {
            (Some(&from), Some(&to)) => usize::try_from(to.saturating_sub(from)).unwrap_or(0),
            _ => 0,
        }
    }

    /// Calls `visit` with each entry of list `j`, in order, reading them a part of at most
    /// [`PART_BYTES`] at a time into `buffer`; false when the file cannot be read (entries
    /// already visited stay visited). A part is small enough to stay in the processor's cache
    /// between its read and its use, and one buffer serves every list: a list's worth of
    /// fresh memory each time cost as much as scoring it.
    pub fn visit_list(&self, j: usize, buffer: &mut Vec<u8>, mut visit: impl FnMut(&[u8])) -> bool {
        let (Some(&from), Some(&to)) = (self.offsets.get(j), self.offsets.get(j + 1)) else {
            return false;
        };
        let size = self.header.entry_bytes();
        let per_part = (PART_BYTES / size).max(1);
        let mut at = from;
        while at < to {
            let n = per_part.min(to - at);
            let Ok(len) = usize::try_from(n * size) else {
                return false;
            };
            buffer.resize(len, 0);
            if read_exact_at(&self.file, buffer, self.entries + at * size).is_err() {
                return false;
            }
            buffer.chunks_exact(size as usize).for_each(&mut visit);
            at += n;
        }
        true
    }
}

/// The most bytes [`AnnFile::visit_list`] reads at a time (whole entries, at least one).
pub const PART_BYTES: u64 = 64 * 1024;

/// One entry [`AnnFile::visit_list`] visits: its rowid, scale, slack and codes (each an
/// `i8` in two's complement).
pub fn parse_entry(entry: &[u8]) -> (i64, f32, f32, &[u8]) {
    let rowid = i64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
    let scale = f32::from_le_bytes(entry[8..12].try_into().unwrap_or_default());
    let slack = f32::from_le_bytes(entry[12..16].try_into().unwrap_or_default());
    (rowid, scale, slack, &entry[16..])
}

impl Store {
    /// The path of the index file of `field` of `collection` (which may not exist).
    pub fn ann_file_path(&self, collection: &str, field: &str) -> PathBuf {
        self.vector_file_path(collection, field)
            .with_extension("ivf")
    }

    fn has_ann_table(&self) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ann_indexes'",
            )
            .and_then(|mut s| s.exists([]))
            .map_err(self.sql())
    }

    /// Declares an approximate index of `field` of `collection` (or updates its lists and
    /// probes); returns false when it was declared already with the same ones.
    pub fn declare_ann(
        &mut self,
        collection: &str,
        field: &str,
        lists: u32,
        probes: u32,
    ) -> Result<bool, StoreError> {
        self.require_writable()?;
        let e = self.sql();
        self.conn.execute_batch(SCHEMA).map_err(&e)?;
        let before = self.ann_declaration(collection, field)?;
        if before
            .as_ref()
            .is_some_and(|d| d.lists == lists && d.probes == probes)
        {
            return Ok(false);
        }
        self.conn
            .execute(
                "INSERT INTO ann_indexes (collection, field, lists, probes, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (collection, field) \
                 DO UPDATE SET lists = excluded.lists, probes = excluded.probes",
                params![collection, field, lists, probes, crate::docs::now_seconds()],
            )
            .map_err(&e)?;
        if before.is_some() {
            // Other lists: the file must be trained again.
            self.remove_ann_file(collection, field)?;
        }
        Ok(true)
    }

    /// Removes the declaration and the file of an approximate index; returns whether one was
    /// declared.
    pub fn drop_ann(&mut self, collection: &str, field: &str) -> Result<bool, StoreError> {
        self.require_writable()?;
        if !self.has_ann_table()? {
            return Ok(false);
        }
        let dropped = self
            .conn
            .execute(
                "DELETE FROM ann_indexes WHERE collection = ?1 AND field = ?2",
                [collection, field],
            )
            .map_err(self.sql())?
            > 0;
        self.remove_ann_file(collection, field)?;
        Ok(dropped)
    }

    fn remove_ann_file(&self, collection: &str, field: &str) -> Result<(), StoreError> {
        crate::guard::no_links_below(&self.dir, Path::new("vectors"))?;
        let path = self.ann_file_path(collection, field);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(StoreError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    /// The approximate indexes declared on `collection`, by field.
    pub fn ann_declarations(&self, collection: &str) -> Result<Vec<AnnDeclaration>, StoreError> {
        if !self.has_ann_table()? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT field, lists, probes, created_at FROM ann_indexes \
                 WHERE collection = ?1 ORDER BY field",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([collection], declaration)
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// The approximate index declared on `field` of `collection`, if any.
    pub fn ann_declaration(
        &self,
        collection: &str,
        field: &str,
    ) -> Result<Option<AnnDeclaration>, StoreError> {
        if !self.has_ann_table()? {
            return Ok(None);
        }
        self.conn
            .prepare_cached(
                "SELECT field, lists, probes, created_at FROM ann_indexes \
                 WHERE collection = ?1 AND field = ?2",
            )
            .and_then(|mut s| s.query_row([collection, field], declaration).optional())
            .map_err(self.sql())
    }

    /// Opens the index file of `field` of `collection` for vectors of `dim` components;
    /// `Ok(None)` when there is none or it is damaged. A file made from an older generation
    /// opens too (for an update), marked not current.
    pub fn open_ann_file(
        &self,
        collection: &str,
        field: &str,
        dim: usize,
    ) -> Result<Option<AnnFile>, StoreError> {
        crate::guard::no_links_below(&self.dir, Path::new("vectors"))?;
        let generation = current_generation(&self.conn, collection, field).map_err(self.sql())?;
        let path = self.ann_file_path(collection, field);
        Ok(open_checked(&path, dim).map(|mut f| {
            f.current = generation == Some(f.header.generation);
            f
        }))
    }

    /// Writes the index file of `field` of `collection` from `data`, made from the vectors of
    /// `source` (whose generation it records), to a temporary name, synced and renamed.
    pub fn write_ann_file(
        &self,
        collection: &str,
        field: &str,
        source: &VectorFile,
        data: &AnnData,
    ) -> Result<(), StoreError> {
        self.require_writable()?;
        let lists = data.centroids.len() / data.dim.max(1);
        let header = Header {
            dim: u32::try_from(data.dim).unwrap_or(u32::MAX),
            lists: u32::try_from(lists).unwrap_or(u32::MAX),
            count: data.rowids.len() as u64,
            generation: source.generation(),
            trained: data.trained,
        };
        // Entries by list, in rowid order inside each (a stable sort of rowid-ordered rows).
        let mut order: Vec<usize> = (0..data.rowids.len()).collect();
        order.sort_by_key(|&i| data.lists[i]);
        let mut offsets = vec![0u64; lists + 1];
        for &j in &data.lists {
            offsets[j as usize + 1] += 1;
        }
        for j in 0..lists {
            offsets[j + 1] += offsets[j];
        }
        let (created, replacing) =
            Replacing::begin(&self.dir, &self.ann_file_path(collection, field))?;
        let tmp = replacing.tmp.clone();
        let mut out = BufWriter::with_capacity(1 << 20, created);
        out.write_all(&header.to_bytes()).map_err(io(&tmp))?;
        for c in &data.centroids {
            out.write_all(&c.to_le_bytes()).map_err(io(&tmp))?;
        }
        for o in &offsets {
            out.write_all(&o.to_le_bytes()).map_err(io(&tmp))?;
        }
        for i in order {
            out.write_all(&data.rowids[i].to_le_bytes())
                .map_err(io(&tmp))?;
            out.write_all(&data.scales[i].to_le_bytes())
                .map_err(io(&tmp))?;
            out.write_all(&data.slacks[i].to_le_bytes())
                .map_err(io(&tmp))?;
            let codes = &data.codes[i * data.dim..(i + 1) * data.dim];
            out.write_all(codes).map_err(io(&tmp))?;
        }
        let file = out.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        replacing.publish(file)
    }
}

/// A declaration from a row of `field, lists, probes, created_at`.
fn declaration(r: &rusqlite::Row<'_>) -> rusqlite::Result<AnnDeclaration> {
    Ok(AnnDeclaration {
        field: r.get(0)?,
        lists: r.get(1)?,
        probes: r.get(2)?,
        created_at: r.get(3)?,
    })
}

impl Store {
    /// Checks every approximate index file there is (`verify`): its header, sizes and
    /// offsets, and that its entries name each embedded row of its field at most once, and no
    /// other row. A missing file is no problem (searches scan exactly until it is built);
    /// a damaged one is reported as part of the vector files, which `verify --repair` removes.
    pub(crate) fn verify_ann(
        &self,
        problems: &mut Vec<crate::verify::Problem>,
    ) -> Result<(), StoreError> {
        let e = |err| crate::db::sql_error(&self.dir, err);
        if !self.has_ann_table()? {
            return Ok(());
        }
        let declared: Vec<(String, String)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT collection, field FROM ann_indexes ORDER BY collection, field")
                .map_err(e)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(e)?
                .collect::<Result<_, _>>()
                .map_err(e)?
        };
        for (collection, field) in declared {
            let path = self.ann_file_path(&collection, &field);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let problem = |detail: String| crate::verify::Problem {
                part: "vectors",
                detail: format!("the approximate index file of {collection}.{field}: {detail}"),
                file_id: None,
            };
            let opened = crate::docs::vectors::open_header::<HEADER_BYTES>(&path)
                .and_then(|(_, raw)| Header::parse(&raw))
                .and_then(|header| open_checked(&path, header.dim as usize));
            let Some(file) = opened else {
                problems.push(problem("its header, size or offsets are damaged".into()));
                continue;
            };
            // A file of an older generation is stale, not damaged: its rows may be gone since.
            let current = current_generation(&self.conn, &collection, &field).map_err(e)?
                == Some(file.header.generation);
            let rows: HashSet<i64> = {
                let mut stmt = self
                    .conn
                    .prepare(
                        "SELECT rowid FROM embeddings \
                         WHERE collection = ?1 AND field = ?2 AND length(vector) > 0",
                    )
                    .map_err(e)?;
                stmt.query_map([&collection, &field], |r| r.get(0))
                    .map_err(e)?
                    .collect::<Result<_, _>>()
                    .map_err(e)?
            };
            // Never more entries than rows (a sparse file may claim billions): no list of it
            // is read then.
            if file.len() > rows.len() {
                if current {
                    problems.push(problem(format!(
                        "it claims {} entries for {} embedded rows",
                        file.len(),
                        rows.len()
                    )));
                }
                continue;
            }
            let mut seen = HashSet::new();
            let (mut duplicate, mut unknown, mut unreadable) = (0u64, 0u64, false);
            let mut list = Vec::new();
            for j in 0..file.lists() {
                let read = file.visit_list(j, &mut list, |entry| {
                    let (rowid, ..) = parse_entry(entry);
                    if !seen.insert(rowid) {
                        duplicate += 1;
                    } else if current && !rows.contains(&rowid) {
                        unknown += 1;
                    }
                });
                if !read {
                    unreadable = true;
                    break;
                }
            }
            if unreadable {
                problems.push(problem("a list cannot be read".into()));
            } else if duplicate > 0 {
                problems.push(problem(format!("{duplicate} entries repeat a row")));
            } else if unknown > 0 {
                problems.push(problem(format!(
                    "{unknown} entries name rows that hold no embedding"
                )));
            }
        }
        Ok(())
    }
}

/// Opens and checks an index file: header, sizes and offsets.
fn open_checked(path: &Path, dim: usize) -> Option<AnnFile> {
    let (file, raw) = open_header::<HEADER_BYTES>(path)?;
    let header = Header::parse(&raw)?;
    if header.dim as usize != dim
        || header.dim == 0
        || header.lists == 0
        || header.lists > MAX_LISTS
    {
        return None;
    }
    let (offsets_at, entries, end) = header.layout()?;
    if file.metadata().ok()?.len() != end {
        return None;
    }
    let mut bytes = vec![0u8; usize::try_from(entries - HEADER_BYTES as u64).ok()?];
    read_exact_at(&file, &mut bytes, HEADER_BYTES as u64).ok()?;
    let split = usize::try_from(offsets_at - HEADER_BYTES as u64).ok()?;
    let centroids: Vec<f32> = bytes[..split]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let offsets: Vec<u64> = bytes[split..]
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .collect();
    let ordered = offsets.first() == Some(&0)
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && offsets.last() == Some(&header.count);
    if !ordered || !centroids.iter().all(|c| c.is_finite()) {
        return None;
    }
    Some(AnnFile {
        file,
        header,
        centroids,
        offsets,
        entries,
        current: false,
    })
}
