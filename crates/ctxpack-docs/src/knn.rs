//! Exact flat k-nearest-neighbour search by cosine similarity.
//!
//! Vectors live in one contiguous row-major `Vec<f32>` (n × 256), so a scan streams memory
//! linearly and never touches documents. Rows are expected to be L2-normalised (as
//! [`embed`](crate::embed::embed) returns them, or zero), so the dot product is the cosine;
//! the query is normalised here, so any non-zero query gives cosine scores. The dot product
//! keeps eight independent accumulators so the compiler turns it into SIMD without `unsafe`.
//!
//! Ties are broken by insertion index (lower first), so results are deterministic.
//!
//! ```
//! use ctxpack_docs::embed::embed;
//! use ctxpack_docs::knn::FlatIndex;
//!
//! let mut index = FlatIndex::new();
//! index.push(&embed("chocolate cake recipe"));
//! index.push(&embed("database search and indexing"));
//! let top = index.top_k(&embed("database search"), 1);
//! assert_eq!(top[0].0, 1);
//! assert_eq!((top[0].1 * 10_000.0).round() / 10_000.0, 0.7071);
//! ```

use crate::dot::LANES;
pub use crate::dot::dot;
use crate::embed::{DIM, Vector};

/// A flat matrix of embeddings, one row per document in insertion order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatIndex {
    data: Vec<f32>,
}

impl FlatIndex {
    /// An empty index.
    pub fn new() -> FlatIndex {
        FlatIndex::default()
    }

    /// An empty index with room for `rows` vectors.
    pub fn with_capacity(rows: usize) -> FlatIndex {
        FlatIndex {
            data: Vec::with_capacity(rows * DIM),
        }
    }

    /// Appends a vector and returns its row index.
    pub fn push(&mut self, vector: &Vector) -> usize {
        self.data.extend_from_slice(vector.as_slice());
        self.len() - 1
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.data.len() / DIM
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The row-major matrix.
    pub fn as_matrix(&self) -> &[f32] {
        &self.data
    }

    /// The `k` rows most similar to `query`, best first; see [`top_k`].
    pub fn top_k(&self, query: &Vector, k: usize) -> Vec<(usize, f32)> {
        top_k(&self.data, query, k)
    }
}

/// The `k` rows of a row-major n × 256 `matrix` with the highest cosine similarity to
/// `query`, as `(row index, score)`, best first; equal scores keep insertion order. Rows must
/// be L2-normalised or zero. A trailing partial row (a length that is not a multiple of 256)
/// is ignored. A NaN score ranks below every other score.
pub fn top_k(matrix: &[f32], query: &Vector, k: usize) -> Vec<(usize, f32)> {
    debug_assert_eq!(matrix.len() % DIM, 0, "the matrix holds whole rows");
    if k == 0 {
        return Vec::new();
    }
    let norm = query.norm();
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    let q = &query.0;
    // Best first: higher key, then lower index.
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(k.min(matrix.len() / DIM) + 1);
    for (i, row) in matrix.chunks_exact(DIM).enumerate() {
        let score = dot(row, q) * scale;
        let key = rank_key(score);
        if best.len() == k {
            let worst = best.last().map_or(f32::NEG_INFINITY, |w| rank_key(w.1));
            // Strictly better only: on a tie the earlier row stays.
            if key <= worst {
                continue;
            }
            best.pop();
        }
        // After every element with a key at least as high: earlier rows win ties.
        let at = best.partition_point(|b| rank_key(b.1) >= key);
        best.insert(at, (i, score));
    }
    best
}

/// NaN ranks lowest; everything else by value.
fn rank_key(score: f32) -> f32 {
    if score.is_nan() {
        f32::NEG_INFINITY
    } else {
        score
    }
}

/// The cosine similarity of every row of a row-major n × 256 `matrix` to `query`, in row
/// order. Rows must be L2-normalised or zero; the query is normalised here.
pub fn scores(matrix: &[f32], query: &Vector) -> Vec<f32> {
    debug_assert_eq!(matrix.len() % DIM, 0, "the matrix holds whole rows");
    let norm = query.norm();
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    matrix
        .chunks_exact(DIM)
        .map(|row| dot(row, &query.0) * scale)
        .collect()
}

/// Positions of the `k` best `scores` (all of them for `None`), best first: higher score
/// first (NaN lowest), equal scores by ascending `order` key (for example insertion order),
/// then by position. Runs in `O(n + k log k)`, so ranking a whole collection is cheap.
pub fn rank(scores: &[f32], order: &[i64], k: Option<usize>) -> Vec<usize> {
    debug_assert_eq!(scores.len(), order.len());
    let better = |a: &usize, b: &usize| {
        rank_key(scores[*b])
            .total_cmp(&rank_key(scores[*a]))
            .then(order[*a].cmp(&order[*b]))
            .then(a.cmp(b))
    };
    let mut positions: Vec<usize> = (0..scores.len()).collect();
    let k = k.unwrap_or(positions.len()).min(positions.len());
    if k == 0 {
        return Vec::new();
    }
    if k < positions.len() {
        positions.select_nth_unstable_by(k - 1, better);
        positions.truncate(k);
    }
    positions.sort_unstable_by(better);
    positions
}

/// The dot product of a stored vector (`Vector::BYTES` little-endian `f32` bytes, as
/// [`Vector::to_le_bytes`] writes them) with `query`, read straight from the bytes so a scan
/// never copies a row. Equal to `dot(&Vector::from_le_bytes(bytes)?.0, &query.0)`, bit for
/// bit. `None` when the length is wrong.
pub fn dot_le_bytes(bytes: &[u8], query: &Vector) -> Option<f32> {
    if bytes.len() != Vector::BYTES {
        return None;
    }
    let (chunks, _) = bytes.as_chunks::<{ 4 * LANES }>();
    let (cq, _) = query.0.as_chunks::<LANES>();
    let mut lo = [0.0f32; LANES / 2];
    let mut hi = [0.0f32; LANES / 2];
    for (x, y) in chunks.iter().zip(cq) {
        let lane =
            |i: usize| f32::from_le_bytes([x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]]);
        for i in 0..LANES / 2 {
            lo[i] += lane(i) * y[i];
            hi[i] += lane(i + LANES / 2) * y[i + LANES / 2];
        }
    }
    // DIM is a multiple of LANES, so there is no tail; sum exactly as `dot` does.
    let s = [lo[0] + hi[0], lo[1] + hi[1], lo[2] + hi[2], lo[3] + hi[3]];
    Some((s[0] + s[1]) + (s[2] + s[3]) + 0.0)
}

/// Reads the little-endian `f32` at position `i` of a column.
fn component(column: &[u8], i: usize) -> f32 {
    let b = &column[4 * i..4 * i + 4];
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The dot product of each row of a block with `query`, bit for bit as [`dot_le_bytes`]
/// computes it from the row: `columns` holds the block's [`DIM`] columns one after the other,
/// each `rows` little-endian `f32`s. Every accumulator adds the same products in the same
/// order as the row-wise loop, so the scores (and hence the ranking) are the same whichever
/// way a vector was stored. `out` receives `rows` scores; a short `columns` yields none.
pub fn dot_columns(columns: &[u8], rows: usize, query: &Vector, out: &mut Vec<f32>) {
    out.clear();
    let column = rows * 4;
    if columns.len() != column * DIM {
        return;
    }
    let mut lo = vec![[0.0f32; LANES / 2]; rows];
    let mut hi = vec![[0.0f32; LANES / 2]; rows];
    for chunk in 0..DIM / LANES {
        for i in 0..LANES / 2 {
            let (d_lo, d_hi) = (chunk * LANES + i, chunk * LANES + i + LANES / 2);
            let (q_lo, q_hi) = (query.0[d_lo], query.0[d_hi]);
            let c_lo = &columns[d_lo * column..(d_lo + 1) * column];
            let c_hi = &columns[d_hi * column..(d_hi + 1) * column];
            for r in 0..rows {
                lo[r][i] += component(c_lo, r) * q_lo;
                hi[r][i] += component(c_hi, r) * q_hi;
            }
        }
    }
    out.extend(lo.iter().zip(&hi).map(|(lo, hi)| {
        let s = [lo[0] + hi[0], lo[1] + hi[1], lo[2] + hi[2], lo[3] + hi[3]];
        (s[0] + s[1]) + (s[2] + s[3]) + 0.0
    }));
}

/// The dimensions where `query` is not zero, ascending: the only columns whose components
/// can change a dot product with it. The embedding of a short query has few.
pub fn support(query: &Vector) -> Vec<usize> {
    (0..DIM).filter(|&d| query.0[d] != 0.0).collect()
}

/// The partial sums of a sparse scan: each row's sum of its products with the query over the
/// query's support (in support order), whether any of those products is non-zero, and per
/// block the largest sum of product magnitudes, which bounds how far each row's sum can be
/// from its dot product.
#[derive(Clone, Debug, Default)]
pub struct PartialSums {
    sums: Vec<f32>,
    nonzero: Vec<bool>,
    /// Per block: the row after its last, and its error bound.
    blocks: Vec<(usize, f32)>,
    finite: bool,
    /// The magnitudes of the block being added.
    scratch: Vec<f32>,
}

impl PartialSums {
    /// Room for `rows` rows.
    pub fn with_capacity(rows: usize) -> PartialSums {
        PartialSums {
            sums: Vec::with_capacity(rows),
            nonzero: Vec::with_capacity(rows),
            blocks: Vec::new(),
            finite: true,
            scratch: Vec::new(),
        }
    }

    /// Adds a block of `rows` rows whose `support` columns `columns` holds one after the other
    /// (`rows` little-endian `f32`s each). A block of the wrong size, or a sum that is not a
    /// finite number, makes [`sparse_candidates`] refuse the scan.
    pub fn push_block(&mut self, columns: &[u8], rows: usize, support: &[usize], query: &Vector) {
        let column = rows * 4;
        if columns.len() != column * support.len() {
            self.finite = false;
            return;
        }
        // Column by column (the loop the compiler vectorises), into this block's sums and a
        // scratch row of magnitudes. The first column starts both (added to zero, as every
        // later one is added to what is there), so neither is zeroed first.
        let start = self.sums.len();
        let col = |k: usize| columns[k * column..(k + 1) * column].as_chunks::<4>().0;
        self.scratch.clear();
        match support.first() {
            Some(&d) => {
                let q = query.0[d];
                let products = || col(0).iter().map(|bytes| f32::from_le_bytes(*bytes) * q);
                self.sums.extend(products().map(|product| 0.0 + product));
                self.scratch
                    .extend(products().map(|product| 0.0 + product.abs()));
            }
            None => {
                self.sums.resize(start + rows, 0.0);
                self.scratch.resize(rows, 0.0);
            }
        }
        let sums = &mut self.sums[start..];
        for (k, &d) in support.iter().enumerate().skip(1) {
            let q = query.0[d];
            for ((sum, magnitude), bytes) in sums.iter_mut().zip(&mut self.scratch).zip(col(k)) {
                let product = f32::from_le_bytes(*bytes) * q;
                *sum += product;
                *magnitude += product.abs();
            }
        }
        let mut largest = 0.0f32;
        for (&sum, &magnitude) in sums.iter().zip(&self.scratch) {
            self.nonzero.push(magnitude > 0.0);
            largest = largest.max(magnitude);
            self.finite &= sum.is_finite() && magnitude.is_finite();
        }
        let error = PARTIAL_ERROR * largest + f32::MIN_POSITIVE;
        self.blocks.push((self.sums.len(), error));
    }

    /// Every row as `(row, sum, error bound)`, non-zero rows only.
    fn nonzero_rows(&self) -> impl Iterator<Item = (usize, f32, f32)> + '_ {
        let mut start = 0;
        self.blocks.iter().flat_map(move |&(end, error)| {
            let rows = start..end;
            start = end;
            rows.filter(|&r| self.nonzero[r])
                .map(move |r| (r, self.sums[r], error))
        })
    }
}

/// The rows that can be among the `want` best of a sparse scan, as found by
/// [`sparse_candidates`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseCandidates {
    /// Rows whose exact dot product must be computed from their stored vector.
    pub rescore: Vec<usize>,
    /// Rows none of whose products with the query's support is non-zero: their dot product
    /// is exactly `+0.0`, as [`dot_le_bytes`] computes it for a finite vector.
    pub zero: Vec<usize>,
}

/// How far a partial sum may be from the dot product of the same row, as a multiple of the
/// sum of the products' magnitudes (a block's largest, for every row of the block). Both add the same non-zero products (every other product
/// is an exact zero) in different orders; each order is within `(n - 1) · 2⁻²⁴` of the exact
/// sum for n ≤ 256 terms, so the two are within `2 · 255 · 2⁻²⁴ ≈ 3.1e-5` of each other.
/// Twice that again covers the rounding of the magnitudes and of the query's scale.
const PARTIAL_ERROR: f32 = 1e-4;

/// Which rows can be among the `want` best by dot product, given the [`PartialSums`] of every
/// row, among the rows `eligible` accepts; `None` when a sum is not finite (the caller then
/// scores every row).
///
/// The exact dot product of a row lies within its block's error bound of its partial sum.
/// With `T` the `want`-th highest lower bound among eligible rows, at least `want` eligible
/// rows score at least `T`, so every row of the `want` best (ties included) has an upper
/// bound of at least `T`: those rows are the candidates. Rows none of whose products is
/// non-zero score exactly zero and are candidates only when `T` is not positive. Rows are asked
/// about eligibility best lower bound first, and only as far as needed.
pub fn sparse_candidates(
    partial: &PartialSums,
    want: usize,
    mut eligible: impl FnMut(usize) -> bool,
) -> Option<SparseCandidates> {
    if !partial.finite {
        return None;
    }
    if want == 0 {
        return Some(SparseCandidates::default());
    }
    let mut asked = std::collections::HashMap::new();
    let mut is_eligible = |r: usize| *asked.entry(r).or_insert_with(|| eligible(r));
    // The `want`-th highest lower bound among eligible non-zero rows: the best lower bounds
    // first, in windows that double until `want` of them are eligible.
    let mut threshold = None;
    let nonzero = partial.nonzero.iter().filter(|&&n| n).count();
    let mut window = want.saturating_mul(2).max(16);
    while threshold.is_none() && nonzero > 0 {
        let mut found = 0;
        for (lower, r) in best_lower(partial, window) {
            if is_eligible(r) {
                found += 1;
                if found == want {
                    threshold = Some(lower);
                    break;
                }
            }
        }
        if window >= nonzero {
            break;
        }
        window = window.saturating_mul(2);
    }
    // Fewer than `want` eligible non-zero rows: every one of them ranks, and zero rows too.
    let threshold = threshold.unwrap_or(f32::NEG_INFINITY);
    let mut out = SparseCandidates::default();
    for (r, sum, error) in partial.nonzero_rows() {
        if sum + error >= threshold && is_eligible(r) {
            out.rescore.push(r);
        }
    }
    if threshold <= 0.0 {
        // Zero rows tie at exactly zero and rank by key, which follows row order: only the
        // first `want` eligible ones can be among the best.
        for (r, &nonzero) in partial.nonzero.iter().enumerate() {
            if out.zero.len() == want {
                break;
            }
            if !nonzero && is_eligible(r) {
                out.zero.push(r);
            }
        }
    }
    Some(out)
}

/// The `window` non-zero rows with the highest lower bound (sum minus error bound), best
/// first, as `(bound, row)`; one pass over the rows, keeping the best in a bounded heap.
fn best_lower(partial: &PartialSums, window: usize) -> Vec<(f32, usize)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    /// A bound ordered by `total_cmp`, ties by row (the earlier row is the better).
    #[derive(PartialEq)]
    struct Key(f32, usize);
    impl Eq for Key {}
    impl PartialOrd for Key {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Key {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
        }
    }
    let mut heap: BinaryHeap<Reverse<Key>> = BinaryHeap::with_capacity(window + 1);
    // Rows at or below the worst kept bound cannot enter: one comparison for most rows.
    let mut floor = f32::NEG_INFINITY;
    for (r, sum, error) in partial.nonzero_rows() {
        let lower = sum - error;
        if heap.len() == window && lower <= floor {
            continue;
        }
        heap.push(Reverse(Key(lower, r)));
        if heap.len() > window {
            heap.pop();
        }
        if heap.len() == window {
            floor = heap
                .peek()
                .map_or(f32::NEG_INFINITY, |Reverse(Key(l, _))| *l);
        }
    }
    let mut out: Vec<(f32, usize)> = heap.into_iter().map(|Reverse(Key(l, r))| (l, r)).collect();
    out.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    out
}
