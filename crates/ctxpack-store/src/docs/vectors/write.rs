//! Writing a field's vector file: the embedding rows read in rowid order and written in
//! blocks of columns beside the file they replace, published by a rename only when whole.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rusqlite::{Transaction, TransactionBehavior};

use crate::db::Store;
use crate::error::StoreError;

use super::{
    BLOCK_ROWS, DIR, Generation, HEADER_BYTES, Header, VectorFileSummary, bump_generation,
    current_generation, io, names_section, open_checked,
};

impl Store {
    /// Makes the vector file of `field` of `collection` current: rewrites it from the table
    /// unless the one on disk already matches the field's generation. Rows by `embedder` must
    /// be `row_bytes` long (markers aside); if one is not, no file is written (searches scan
    /// the table, which reports the bad row). Returns whether a file was written.
    ///
    /// Runs in one immediate transaction, so the rows and the generation written are those of
    /// one state of the table. The file is written to a temporary name, synced and renamed
    /// into place, so a crash leaves the old file (stale, hence ignored) or the new one.
    pub fn sync_vector_file(
        &mut self,
        collection: &str,
        field: &str,
        embedder: &str,
        row_bytes: usize,
    ) -> Result<bool, StoreError> {
        self.require_writable()?;
        crate::guard::no_links_below(&self.dir, Path::new(DIR))?;
        let target = Target {
            collection,
            field,
            embedder,
            row_bytes,
        };
        let e = self.sql();
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(&e)?;
        let generation = match current_generation(&tx, collection, field).map_err(&e)? {
            Some(generation) => generation,
            None => {
                // Embeddings written before generations were recorded: start counting.
                bump_generation(&tx, collection, Some(field)).map_err(&e)?;
                current_generation(&tx, collection, field)
                    .map_err(&e)?
                    .ok_or_else(|| StoreError::Corrupt {
                        dir: self.dir.clone(),
                        detail: "a vector generation just written is gone".into(),
                    })?
            }
        };
        let path = self.vector_file_path(collection, field);
        let names = names_section(collection, field, embedder);
        let written =
            if row_bytes == 0 || open_checked(&path, &names, generation, row_bytes).is_some() {
                false
            } else {
                self.write_vector_file(&target, generation)?
            };
        tx.commit().map_err(&e)?;
        Ok(written)
    }

    /// Writes the file of [`Store::sync_vector_file`] from a scan of the table.
    fn write_vector_file(
        &self,
        target: &Target<'_>,
        generation: Generation,
    ) -> Result<bool, StoreError> {
        let names = names_section(target.collection, target.field, target.embedder);
        let (created, replacing) = Replacing::begin(
            &self.dir,
            &self.vector_file_path(target.collection, target.field),
        )?;
        let tmp = replacing.tmp.clone();
        let mut out = BufWriter::with_capacity(1 << 20, created);
        out.write_all(&[0u8; HEADER_BYTES]).map_err(io(&tmp))?;
        let mut summary = VectorFileSummary {
            rows: 0,
            foreign: 0,
            last_rowid: 0,
            vectors: 0,
        };
        let (mut rowids, mut id_ends, mut ids) = (Vec::new(), Vec::new(), Vec::new());
        let mut fits = target.row_bytes.is_multiple_of(4);
        // Rows as they come, then written column by column a block at a time.
        let mut block = Vec::with_capacity(BLOCK_ROWS * target.row_bytes);
        let mut columns = Vec::with_capacity(block.capacity());
        // Through the page cache, not a memory map: at a million rows the map's pages would
        // count as a gigabyte of this process's memory.
        self.scan_vectors_mapped(target.collection, target.field, 0, |row| {
            summary.rows += 1;
            summary.last_rowid = summary.last_rowid.max(row.rowid);
            if row.embedder != target.embedder {
                summary.foreign += 1;
                return Ok(());
            }
            if row.vector.is_empty() {
                return Ok(());
            }
            if row.vector.len() != target.row_bytes || !all_finite(row.vector) {
                fits = false;
            }
            if fits {
                block.extend_from_slice(row.vector);
                if block.len() == BLOCK_ROWS * target.row_bytes {
                    write_columns(&block, target.row_bytes, &mut columns);
                    out.write_all(&columns).map_err(io(&tmp))?;
                    block.clear();
                }
                rowids.extend_from_slice(&row.rowid.to_le_bytes());
                ids.extend_from_slice(row.id_key.as_bytes());
                id_ends.extend_from_slice(&(ids.len() as u64).to_le_bytes());
                summary.vectors += 1;
            }
            Ok::<_, StoreError>(())
        })?;
        if fits && !block.is_empty() {
            write_columns(&block, target.row_bytes, &mut columns);
            out.write_all(&columns).map_err(io(&tmp))?;
        }
        if !fits {
            drop(out);
            let _ = std::fs::remove_file(&tmp);
            return Ok(false);
        }
        let header = Header {
            dim: u32::try_from(target.row_bytes / 4).unwrap_or(u32::MAX),
            count: summary.vectors,
            generation,
            summary,
            ids_bytes: ids.len() as u64,
            names_bytes: names.len() as u64,
            block_rows: BLOCK_ROWS as u32,
        };
        for section in [&rowids[..], &id_ends, &ids, &names] {
            out.write_all(section).map_err(io(&tmp))?;
        }
        let mut file = out.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io(&tmp))?;
        file.write_all(&header.to_bytes()).map_err(io(&tmp))?;
        replacing.publish(file)?;
        Ok(true)
    }
}

/// A derived file being replaced: written whole under a temporary name beside it, then
/// synced and renamed into place, so a reader sees the old file or the new one.
pub(crate) struct Replacing {
    /// The temporary name.
    pub(crate) tmp: PathBuf,
    path: PathBuf,
}

impl Replacing {
    /// Creates the directories below `store` and the temporary file of `path` (inside
    /// `store`), exclusively: a stale temporary file (or a link planted there) is removed
    /// first; unlinking never follows a link.
    pub(crate) fn begin(store: &Path, path: &Path) -> Result<(File, Replacing), StoreError> {
        let parent = path.parent().unwrap_or(store);
        let rel_parent = parent.strip_prefix(store).unwrap_or(Path::new(DIR));
        crate::guard::create_dirs(store, rel_parent)?;
        let mut tmp_name = path.file_name().unwrap_or_default().to_owned();
        tmp_name.push(".tmp");
        let tmp = parent.join(&tmp_name);
        let _ = std::fs::remove_file(&tmp);
        let created = crate::guard::create_new(store, &rel_parent.join(&tmp_name))?;
        Ok((
            created,
            Replacing {
                tmp,
                path: path.to_owned(),
            },
        ))
    }

    /// Syncs the written temporary file and renames it into place.
    pub(crate) fn publish(self, file: File) -> Result<(), StoreError> {
        file.sync_all().map_err(io(&self.tmp))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(io(&self.path))?;
        // Make the rename durable where a directory can be synced (not on every platform).
        if let Some(dir) = self.path.parent().and_then(|p| File::open(p).ok()) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

/// Whether every little-endian `f32` in `bytes` is a finite number.
fn all_finite(bytes: &[u8]) -> bool {
    bytes
        .chunks_exact(4)
        .all(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite())
}

/// Lays out a block of rows (row after row, each `row_bytes` long) column by column in `out`.
fn write_columns(block: &[u8], row_bytes: usize, out: &mut Vec<u8>) {
    let rows = block.len() / row_bytes;
    out.clear();
    out.resize(block.len(), 0);
    for (i, row) in block.chunks_exact(row_bytes).enumerate() {
        for (d, component) in row.chunks_exact(4).enumerate() {
            let at = (d * rows + i) * 4;
            out[at..at + 4].copy_from_slice(component);
        }
    }
}

/// What a vector file is made of: one field's rows by one embedder, each `row_bytes` long.
#[derive(Clone, Copy, Debug)]
struct Target<'a> {
    collection: &'a str,
    field: &'a str,
    embedder: &'a str,
    row_bytes: usize,
}
