//! The exact scan of a short query: only the vector file's columns its few non-zero
//! components use, and the rows whose bound can reach the top scored in full.

use ctxpack_docs::embed::{EMBEDDER_ID, Vector};
use ctxpack_docs::knn;
use ctxpack_store::Store;

use crate::error::Result;

use super::{Allowed, Query, Scored, Source, Window};

/// The most non-zero query components a sparse scan reads; a query with more is scored in
/// full (it would read a large share of the columns anyway).
pub(super) const SPARSE_MAX_DIMS: usize = 64;

/// The most rows a sparse scan scores one by one from their stored vectors before it gives
/// way to a full scan (a context pack that offers every document walks the whole ranking).
const SPARSE_MAX_RESCORE: usize = 4096;

/// A sparse scan of a field's vector file: the partial dot product of every row over the
/// query's non-zero components, from which [`knn::sparse_candidates`] finds the rows that can
/// rank among the best; only those are scored exactly, from their stored vectors, and the
/// scores are the ones a full scan computes, bit for bit.
pub(super) struct Sparse {
    file: ctxpack_store::docs::vectors::VectorFile,
    partial: knn::PartialSums,
    /// Exact scores and rowids of rows already scored (`None`: the row is gone from the
    /// table).
    exact: std::collections::HashMap<usize, Option<(f32, i64)>>,
}

impl Sparse {
    /// Reads the partial sums; `None` when a sparse scan does not apply: no current file, a
    /// collection with documents that have no stored vector, a query with no or too many
    /// non-zero components, or a file that cannot be read.
    pub(super) fn open(
        store: &Store,
        collection: &str,
        field: &str,
        query: &Query,
        allowed: Allowed<'_>,
    ) -> Result<Option<Sparse>> {
        let support = knn::support(&query.vector);
        if support.is_empty() || support.len() > SPARSE_MAX_DIMS {
            return Ok(None);
        }
        let Some(mut file) =
            store.open_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?
        else {
            return Ok(None);
        };
        let summary = file.summary();
        if summary.foreign != 0 || summary.rows != store.count_documents(collection)? {
            return Ok(None);
        }
        if allowed.is_some() && file.load_ids().is_none() {
            return Ok(None);
        }
        let mut partial = knn::PartialSums::with_capacity(file.len());
        let mut block = Vec::new();
        for b in 0..file.blocks() {
            let (_, rows) = file.block_rows(b);
            if !file.read_block(b, Some(&support), &mut block) {
                return Ok(None);
            }
            partial.push_block(&block, rows, &support, &query.vector);
        }
        Ok(Some(Sparse {
            file,
            partial,
            exact: std::collections::HashMap::new(),
        }))
    }

    /// The first `want` allowed rows in rank order, and whether there are no more; `None`
    /// when so many rows would be scored one by one that a full scan is cheaper, or the file
    /// cannot be read any more.
    pub(super) fn top(
        &mut self,
        store: &Store,
        target: (&str, &str),
        query: &Query,
        allowed: Allowed<'_>,
        want: usize,
    ) -> Result<Option<Window>> {
        if want > SPARSE_MAX_RESCORE {
            return Ok(None);
        }
        let file = &self.file;
        let Some(found) = knn::sparse_candidates(&self.partial, want, |row| {
            allowed.is_none_or(|a| a.contains(file.id_key(row)))
        }) else {
            // A sum that is not a finite number: score every row instead.
            return Ok(None);
        };
        let missing: Vec<usize> = found
            .rescore
            .iter()
            .copied()
            .filter(|row| !self.exact.contains_key(row))
            .collect();
        if missing.len() > SPARSE_MAX_RESCORE {
            return Ok(None);
        }
        let mut rowids = Vec::with_capacity(missing.len());
        for &row in &missing {
            // A file that fails part way gives way to a full scan (which scans the table).
            let Some(rowid) = self.file.rowid(row) else {
                return Ok(None);
            };
            rowids.push(rowid);
        }
        let vectors = store.vectors_by_rowid(target.0, target.1, EMBEDDER_ID, &rowids)?;
        for ((row, rowid), vector) in missing.into_iter().zip(rowids).zip(vectors) {
            let score = vector
                .and_then(|v| knn::dot_le_bytes(&v, &query.vector))
                .map(|dot| dot * query.scale);
            self.exact.insert(row, score.map(|s| (s, rowid)));
        }
        let mut scored = Scored::default();
        for &row in &found.rescore {
            if let Some(Some((score, rowid))) = self.exact.get(&row) {
                scored.push(*score, *rowid, Source::Stored(*rowid));
            }
        }
        for &row in &found.zero {
            let Some(rowid) = self.file.rowid(row) else {
                return Ok(None);
            };
            scored.push(0.0, rowid, Source::Stored(rowid));
        }
        let (rows, _) = scored.top(want);
        let complete = found.rescore.len() + found.zero.len() < want;
        Ok(Some((rows, complete)))
    }
}
