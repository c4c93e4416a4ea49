//! A long query through a field's approximate index: the probed lists' coded rows bound each
//! score, and only rows that can reach the top are scored exactly.

use ctxpack_docs::embed::{DIM, EMBEDDER_ID, Vector};
use ctxpack_docs::knn;
use ctxpack_store::Store;

use crate::error::Result;

use super::sparse::SPARSE_MAX_DIMS;
use super::{Query, Scored, Source, Window};

/// A ranking through the field's approximate index: the lists nearest the query are read,
/// each of their rows scored from its codes to within a bound, and the rows that can rank
/// among the best are scored exactly from their stored vectors, so the scores are the ones a
/// full scan computes, bit for bit; rows in lists not probed are not seen.
pub(super) struct Approximate {
    rowids: Vec<i64>,
    approx: Vec<f32>,
    bound: Vec<f32>,
    /// Exact scores of candidates already scored (`None`: the row is gone from the table).
    exact: std::collections::HashMap<usize, Option<f32>>,
    /// Whether every list was probed (then the ranking is the exact one).
    everything: bool,
}

impl Approximate {
    /// Reads the probed lists; `None` when the index does not apply: none declared or current,
    /// a query the sparse scan answers (few non-zero components), or a collection with
    /// documents that have no stored vector.
    pub(super) fn open(
        store: &Store,
        collection: &str,
        field: &str,
        query: &Query,
    ) -> Result<Option<Approximate>> {
        if knn::support(&query.vector).len() <= SPARSE_MAX_DIMS {
            return Ok(None);
        }
        let Some(declaration) = store.ann_declaration(collection, field)? else {
            return Ok(None);
        };
        let Some(index) = store
            .open_ann_file(collection, field, DIM)?
            .filter(|f| f.is_current())
        else {
            return Ok(None);
        };
        let Some(file) = store.open_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?
        else {
            return Ok(None);
        };
        let summary = file.summary();
        if summary.foreign != 0 || summary.rows != store.count_documents(collection)? {
            return Ok(None);
        }
        // An index holds one entry per stored vector: a header claiming more (a sparse file's
        // length can match any claim) is not read, so no list is allocated beyond the data.
        if index.len() as u64 > summary.rows {
            return Ok(None);
        }
        let q = query.vector.as_slice();
        let coded = &ctxpack_docs::ivf::CodedQuery::new(q);
        let probes = crate::docs::ann::probes(&declaration, index.lists());
        let mut ranking = Approximate {
            rowids: Vec::new(),
            approx: Vec::new(),
            bound: Vec::new(),
            exact: std::collections::HashMap::new(),
            everything: probes >= index.lists(),
        };
        // The probed lists, read and scored on every core, a contiguous share each, and
        // joined in probe order, so the candidates do not depend on the cores.
        let lists = ctxpack_docs::ivf::probe_order(index.centroids(), DIM, q, probes);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let share = lists.len().div_ceil(threads).max(1);
        let index = &index;
        let parts: Vec<Option<Candidates>> = std::thread::scope(|scope| {
            let workers: Vec<_> = lists
                .chunks(share)
                .map(|mine| scope.spawn(move || score_lists(index, mine, coded)))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(None))
                .collect()
        });
        for part in parts {
            let Some(part) = part else {
                return Ok(None);
            };
            ranking.rowids.extend(part.rowids);
            ranking.approx.extend(part.approx);
            ranking.bound.extend(part.bound);
        }
        // A row is in one list once: an index that lists one twice is damaged, not used.
        if ctxpack_docs::ivf::repeats(&ranking.rowids) {
            return Ok(None);
        }
        Ok(Some(ranking))
    }

    /// The first `want` rows in rank order, and whether there are no more; `None` when the
    /// probed lists hold no more than `want` rows and others were not probed (the walk then
    /// ranks the rest exactly).
    pub(super) fn top(
        &mut self,
        store: &Store,
        target: (&str, &str),
        query: &Query,
        want: usize,
    ) -> Result<Option<Window>> {
        let n = self.rowids.len();
        if want >= n && !self.everything {
            return Ok(None);
        }
        let set = ctxpack_docs::ivf::rescore_set(&self.approx, &self.bound, want);
        let missing: Vec<usize> = set
            .iter()
            .copied()
            .filter(|i| !self.exact.contains_key(i))
            .collect();
        let rowids: Vec<i64> = missing.iter().map(|&i| self.rowids[i]).collect();
        let vectors = store.vectors_by_rowid(target.0, target.1, EMBEDDER_ID, &rowids)?;
        for (i, vector) in missing.into_iter().zip(vectors) {
            let score = vector
                .and_then(|v| knn::dot_le_bytes(&v, &query.vector))
                .map(|dot| dot * query.scale);
            self.exact.insert(i, score);
        }
        let mut scored = Scored::default();
        for i in set {
            if let Some(Some(score)) = self.exact.get(&i) {
                scored.push(*score, self.rowids[i], Source::Stored(self.rowids[i]));
            }
        }
        let (rows, _) = scored.top(want);
        Ok(Some((rows, self.everything && want >= n)))
    }
}

/// Rows of probed lists with their approximate scores and error bounds.
#[derive(Default)]
pub(super) struct Candidates {
    rowids: Vec<i64>,
    approx: Vec<f32>,
    bound: Vec<f32>,
}

/// Reads `lists` of `index` and scores their rows against the coded query from their codes;
/// `None` when the file cannot be read.
fn score_lists(
    index: &ctxpack_store::docs::ann::AnnFile,
    lists: &[usize],
    query: &ctxpack_docs::ivf::CodedQuery,
) -> Option<Candidates> {
    let rows: usize = lists.iter().map(|&j| index.list_len(j)).sum();
    let mut out = Candidates {
        rowids: Vec::with_capacity(rows),
        approx: Vec::with_capacity(rows),
        bound: Vec::with_capacity(rows),
    };
    let mut part = Vec::new();
    for &j in lists {
        let read = index.visit_list(j, &mut part, |entry| {
            let (rowid, scale, slack, codes) = ctxpack_store::docs::ann::parse_entry(entry);
            let (approx, bound) = query.score(scale, slack, codes);
            out.rowids.push(rowid);
            out.approx.push(approx);
            out.bound.push(bound);
        });
        if !read {
            return None;
        }
    }
    Some(out)
}
