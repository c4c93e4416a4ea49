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

use crate::embed::{DIM, Vector};

/// The number of lanes [`dot`] accumulates independently: one 256-bit register of `f32`s, or
/// two 128-bit ones.
const LANES: usize = 8;

/// The dot product of two equally long slices.
///
/// Each chunk of eight lanes feeds two four-lane accumulators, which the compiler keeps in
/// SIMD registers (checked in the assembly: packed `mulps`/`addps` on full 128-bit loads with
/// the baseline x86-64 target). The lanes are summed in a fixed order, so the result is the
/// same on every run.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let (ca, ra) = a.as_chunks::<LANES>();
    let (cb, rb) = b.as_chunks::<LANES>();
    let mut lo = [0.0f32; LANES / 2];
    let mut hi = [0.0f32; LANES / 2];
    for (x, y) in ca.iter().zip(cb) {
        for i in 0..LANES / 2 {
            lo[i] += x[i] * y[i];
            hi[i] += x[i + LANES / 2] * y[i + LANES / 2];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    let s = [lo[0] + hi[0], lo[1] + hi[1], lo[2] + hi[2], lo[3] + hi[3]];
    (s[0] + s[1]) + (s[2] + s[3]) + tail
}

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
