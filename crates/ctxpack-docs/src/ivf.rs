//! An inverted-file (IVF) index: approximate nearest neighbours by lists of similar vectors.
//!
//! Vectors are grouped into lists around unit-length centroids trained by spherical k-means
//! on a sample of them. A search ranks the centroids by their dot product with the query,
//! reads the vectors of the best `probes` lists only, and ranks those exactly: each vector is
//! kept as `i8` codes and a scale, and the query is coded the same way ([`CodedQuery`]); the
//! integer dot product of the two is within a bound of the exact one, so only the rows whose
//! bound reaches the `k`-th best lower bound need their exact vector ([`rescore_set`]). The
//! one approximation is the lists not probed; probing every list gives the exact ranking.
//!
//! Everything here is deterministic: training starts from evenly spaced sample rows, runs a
//! fixed number of iterations, sums in row order and breaks ties by the lower list, and work
//! split over threads is merged in a fixed order.

use crate::dot::dot;

/// Sample rows per list that k-means trains on.
pub const SAMPLE_PER_LIST: usize = 16;

/// Lloyd iterations of training.
pub const ITERATIONS: usize = 8;

/// The most lists an index may have (bounds the centroids a reader loads).
pub const MAX_LISTS: usize = 16_384;

/// The largest code magnitude.
const CODE_MAX: f32 = 127.0;

/// The lists for `rows` vectors when none are asked for: about the square root of the rows,
/// so a list and the centroids cost about the same to scan.
pub fn default_lists(rows: usize) -> usize {
    ((rows as f64).sqrt().round() as usize).clamp(1, MAX_LISTS)
}

/// The lists probed when none are asked for: √(10 × lists), rounded up, and all of them for a
/// collection of ten lists or fewer. A larger collection's lists hold more rows each, and a
/// query's nearest rows fall in a smaller share of them: with about √rows lists this reads
/// one list in six at 100,000 rows and one in ten at a million, for a recall@10 of 0.985–0.990
/// against the exact scan on the benchmark collections, where one in six throughout gave
/// 0.987–0.998 and read two thirds more at a million (`docs/performance.md`).
pub fn default_probes(lists: usize) -> usize {
    let wanted = lists.saturating_mul(10);
    let root = wanted.isqrt();
    let up = if root * root < wanted { root + 1 } else { root };
    up.clamp(1, lists.max(1))
}

/// The stride that picks about `lists × SAMPLE_PER_LIST` of `rows` rows for training.
pub fn sample_stride(rows: usize, lists: usize) -> usize {
    (rows / lists.saturating_mul(SAMPLE_PER_LIST).max(1)).max(1)
}

/// Scales `v` to unit length; a zero vector stays zero.
fn normalise(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v {
            *x /= norm;
        }
    }
}

/// The list of `centroids` (row-major, `dim` wide) whose dot product with `row` is largest;
/// ties (and non-finite products) go to the lower list.
pub fn nearest(centroids: &[f32], dim: usize, row: &[f32]) -> usize {
    let mut best = (0, f32::NEG_INFINITY);
    for (j, c) in centroids.chunks_exact(dim).enumerate() {
        let d = dot(c, row);
        if d > best.1 {
            best = (j, d);
        }
    }
    best.0
}

/// The nearest list of every row of `rows` (row-major, `dim` wide), computed on up to
/// `threads` threads; the result does not depend on how many.
pub fn assign(centroids: &[f32], dim: usize, rows: &[f32], threads: usize) -> Vec<u32> {
    let n = rows.len() / dim;
    let mut out = vec![0u32; n];
    let per = n.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        for (part, slots) in rows.chunks(per * dim).zip(out.chunks_mut(per)) {
            scope.spawn(move || {
                for (row, slot) in part.chunks_exact(dim).zip(slots) {
                    *slot = nearest(centroids, dim, row) as u32;
                }
            });
        }
    });
    out
}

/// Trains `lists` unit-length centroids (fewer when the sample has fewer rows) on `sample`
/// (row-major, `dim` wide) by spherical k-means: each row joins the centroid with the largest
/// dot product, each centroid becomes the normalised sum of its rows, [`ITERATIONS`] times;
/// a centroid that lost every row keeps its place. Returns the centroids, row-major.
pub fn train(sample: &[f32], dim: usize, lists: usize, threads: usize) -> Vec<f32> {
    let n = sample.len() / dim;
    let lists = lists.min(n);
    if lists == 0 || dim == 0 {
        return Vec::new();
    }
    let mut centroids = Vec::with_capacity(lists * dim);
    for j in 0..lists {
        let at = j * n / lists * dim;
        centroids.extend_from_slice(&sample[at..at + dim]);
    }
    for c in centroids.chunks_exact_mut(dim) {
        normalise(c);
    }
    let mut sums = vec![0.0f32; lists * dim];
    let mut counts = vec![0usize; lists];
    for _ in 0..ITERATIONS {
        let owners = assign(&centroids, dim, &sample[..n * dim], threads);
        sums.fill(0.0);
        counts.fill(0);
        for (row, &j) in sample.chunks_exact(dim).zip(&owners) {
            let j = j as usize;
            counts[j] += 1;
            for (s, x) in sums[j * dim..(j + 1) * dim].iter_mut().zip(row) {
                *s += x;
            }
        }
        for (j, &count) in counts.iter().enumerate() {
            if count > 0 {
                let c = &mut centroids[j * dim..(j + 1) * dim];
                c.copy_from_slice(&sums[j * dim..(j + 1) * dim]);
                normalise(c);
            }
        }
    }
    centroids
}

/// The `probes` lists whose centroids have the largest dot product with `query`, best first
/// (ties by the lower list).
pub fn probe_order(centroids: &[f32], dim: usize, query: &[f32], probes: usize) -> Vec<usize> {
    let scores: Vec<f32> = centroids.chunks_exact(dim).map(|c| dot(c, query)).collect();
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.truncate(probes);
    order
}

/// Writes the `i8` codes of `row` into `codes` (in two's complement) and returns their scale
/// and their slack: for every query `q`, the dot product of `row` with `q` as an `f32` scan
/// computes it is within `slack × ‖q‖₂` of `scale × Σ qᵢcodesᵢ` (computed exactly; what coding
/// the query and rounding the score add is [`CodedQuery::score`]'s).
///
/// Two scales are tried: the largest component over 127, and the smallest non-zero one (a
/// row of whole counts divided by a length, as the hashing embedder makes, is then coded
/// exactly); the one that leaves the smaller residual is kept. The slack is that residual's
/// length `r` plus the rounding of both `f32` sums of `n` products: each is within `γₙ` times
/// the sum of its terms' magnitudes, at most `‖q‖₂‖row‖₂` and `scale × ‖q‖₂‖codes‖₂` by
/// Cauchy–Schwarz, with `γₙ ≤ 1.01 nε`; the slack takes `4nε`, computed in `f64` and rounded
/// up. A row with a component that is not finite gets an infinite slack, so it is always
/// rescored.
pub fn quantize(row: &[f32], codes: &mut [u8]) -> (f32, f32) {
    let peak = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !peak.is_finite() {
        codes.fill(0);
        return (0.0, f32::INFINITY);
    }
    if peak == 0.0 {
        codes.fill(0);
        return (0.0, 0.0);
    }
    let least = row
        .iter()
        .filter(|x| **x != 0.0)
        .fold(peak, |m, x| m.min(x.abs()));
    let coarse = peak / CODE_MAX;
    let scale = if least / coarse <= 1.0 + 1e-6 || residual(row, least) >= residual(row, coarse) {
        coarse
    } else {
        least
    };
    let (mut norm_x, mut norm_c) = (0.0f64, 0.0f64);
    for (c, &x) in codes.iter_mut().zip(row) {
        let code = code(x, scale);
        *c = (code as i8) as u8;
        norm_x += f64::from(x) * f64::from(x);
        norm_c += f64::from(code) * f64::from(code);
    }
    let n = row.len() as f64;
    let slack = residual(row, scale)
        + 4.0 * n * f64::from(f32::EPSILON) * (norm_x.sqrt() + f64::from(scale) * norm_c.sqrt());
    (scale, (slack * (1.0 + 1e-6)) as f32)
}

/// The code of `x` at `scale`: the nearest whole multiple, within the codes' range.
fn code(x: f32, scale: f32) -> f32 {
    (x / scale).round().clamp(-CODE_MAX, CODE_MAX)
}

/// `‖row − scale × codes‖₂`, computed in `f64` from the exact values.
fn residual(row: &[f32], scale: f32) -> f64 {
    row.iter()
        .map(|&x| {
            let d = f64::from(x) - f64::from(scale) * f64::from(code(x, scale));
            d * d
        })
        .sum::<f64>()
        .sqrt()
}

/// A query coded like a row ([`quantize`]), so that a row's approximate score is an integer
/// dot product of two sets of codes, exact in `i32`, rather than a product in `f32` per
/// component: a long query through the index scores hundreds of thousands of rows.
///
/// Coding the query adds its residual `r` (`query − scale × codes`) to the error: the row's
/// codes `c` meet it in `Σ rᵢcᵢ`, at most `‖r‖₂‖c‖₂ ≤ ‖r‖₂ × 127√n` by Cauchy–Schwarz, times
/// the row's scale. A query the hashing embedder made (whole counts over a length) is coded
/// exactly but for the rounding of its components to `f32`, so the term is about 10⁻⁷ of a
/// score.
pub struct CodedQuery {
    codes: Vec<i8>,
    scale: f32,
    l2: f32,
    /// `‖r‖₂ × 127√n`, rounded up; infinite when a component is not finite.
    spread: f32,
}

impl CodedQuery {
    /// Codes `query`.
    pub fn new(query: &[f32]) -> CodedQuery {
        let mut codes = vec![0u8; query.len()];
        let (scale, slack) = quantize(query, &mut codes);
        let spread = if slack.is_finite() {
            let most = CODE_MAX as f64 * (query.len() as f64).sqrt();
            (residual(query, scale) * most * (1.0 + 1e-6)) as f32
        } else {
            f32::INFINITY
        };
        CodedQuery {
            codes: codes.into_iter().map(|c| c as i8).collect(),
            scale,
            l2: dot(query, query).sqrt(),
            spread,
        }
    }

    /// A row's approximate score from its `scale`, `slack` and `codes` ([`quantize`]), and how
    /// far the dot product an `f32` scan computes for the row can be from it: the row's slack
    /// times the query's length, the query's residual against the row's codes, and the
    /// rounding of the integer sum to an `f32` and of the two products that make the score
    /// (six ulps of it). The bound is not a finite number when the row or the query has a
    /// component that is not.
    pub fn score(&self, scale: f32, slack: f32, codes: &[u8]) -> (f32, f32) {
        // The integer sum is exact; as an `f32` it is exact up to 2²⁴ (1,040 components of
        // 127² each) and within half an ulp beyond, which the bound's six ulps cover together
        // with the two products' roundings.
        let dot = code_dot(&self.codes, codes) as f32;
        let approx = scale * self.scale * dot;
        let bound = slack * self.l2 + scale * self.spread + approx.abs() * 6.0 * f32::EPSILON;
        (approx, bound)
    }
}

/// `Σ query[i] × codes[i]`, both `i8` codes (a row's in two's complement), in `i32`: exact
/// for rows of up to 133,000 components (each product is at most 127²). Sixteen independent
/// lanes of pairs, a shape the compiler turns into SIMD multiply-adds.
pub fn code_dot(query: &[i8], codes: &[u8]) -> i32 {
    let (cq, rq) = query.as_chunks::<16>();
    let (cc, rc) = codes.as_chunks::<16>();
    let mut acc = [0i32; 16];
    for (q, c) in cq.iter().zip(cc) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(q[i]) * i16::from(c[i] as i8));
        }
    }
    let tail: i32 = rq
        .iter()
        .zip(rc)
        .map(|(&q, &c)| i32::from(q) * i32::from(c as i8))
        .sum();
    acc.iter().sum::<i32>() + tail
}

/// Whether a rowid occurs twice in `rowids`. Rowids of a collection lie close together, so a
/// bitmap of their span answers in one pass (an index's probed lists hold hundreds of
/// thousands, whose sort took a sixth of a long query); a span wider than 64 bits a rowid,
/// which a bitmap would not repay, is sorted instead. Either way it takes at most 8 bytes a
/// rowid.
pub fn repeats(rowids: &[i64]) -> bool {
    let (Some(&least), Some(&most)) = (rowids.iter().min(), rowids.iter().max()) else {
        return false;
    };
    let span = most.abs_diff(least);
    if span >= (rowids.len() as u64).saturating_mul(64) {
        let mut sorted = rowids.to_vec();
        sorted.sort_unstable();
        return sorted.windows(2).any(|w| w[0] == w[1]);
    }
    let mut bits = vec![0u64; (span / 64 + 1) as usize];
    for &rowid in rowids {
        let at = rowid.abs_diff(least);
        let (word, bit) = ((at / 64) as usize, 1u64 << (at % 64));
        if bits[word] & bit != 0 {
            return true;
        }
        bits[word] |= bit;
    }
    false
}

/// The candidates that can rank among the best `want` by their exact score, given each one's
/// approximate score and error bound: those whose upper bound reaches the `want`-th largest
/// lower bound (all of them when there are no more than `want`, and any whose bound is not a
/// finite number).
pub fn rescore_set(approx: &[f32], bound: &[f32], want: usize) -> Vec<usize> {
    let n = approx.len();
    if n <= want {
        return (0..n).collect();
    }
    let mut lower: Vec<f32> = approx
        .iter()
        .zip(bound)
        .map(|(a, b)| {
            let l = a - b;
            if l.is_finite() { l } else { f32::NEG_INFINITY }
        })
        .collect();
    let threshold = if want == 0 {
        f32::INFINITY
    } else {
        let (_, t, _) = lower.select_nth_unstable_by(want - 1, |a, b| b.total_cmp(a));
        *t
    };
    lower.clear();
    // Scores equal after the exact scan scales them may differ by an ulp before.
    let threshold = threshold - threshold.abs() * 4.0 * f32::EPSILON;
    (0..n)
        .filter(|&i| {
            let upper = approx[i] + bound[i];
            !upper.is_finite() || upper >= threshold
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of a tiny deterministic generator, `dim` wide.
    fn rows(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..n * dim)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    #[test]
    fn training_is_deterministic_and_threads_do_not_matter() {
        let sample = rows(400, 16, 7);
        let one = train(&sample, 16, 20, 1);
        let two = train(&sample, 16, 20, 2);
        assert_eq!(one, two);
        assert_eq!(one.len(), 20 * 16);
        for c in one.chunks_exact(16) {
            assert!((dot(c, c) - 1.0).abs() < 1e-4);
        }
        assert_eq!(assign(&one, 16, &sample, 1), assign(&one, 16, &sample, 3));
    }

    #[test]
    fn fewer_rows_than_lists_train_one_list_per_row() {
        let sample = rows(3, 8, 1);
        assert_eq!(train(&sample, 8, 10, 2).len(), 3 * 8);
        assert!(train(&[], 8, 10, 2).is_empty());
    }

    /// Whole counts over their length, as the hashing embedder makes them: coded exactly but
    /// for rounding.
    fn embedded(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut out = rows(n, dim, seed);
        for row in out.chunks_exact_mut(dim) {
            for x in row.iter_mut() {
                *x = ((*x + 0.5) * 6.0).floor();
            }
            let len = dot(row, row).sqrt();
            for x in row.iter_mut() {
                *x /= len;
            }
        }
        out
    }

    #[test]
    fn the_bound_holds_for_the_exact_dot_product() {
        // Rows of any shape and rows coded almost exactly (whose slack is small, so a query's
        // residual would show), against a query of any shape and one of whole counts.
        let mut data = rows(500, 32, 3);
        data.extend(embedded(500, 32, 4));
        for query in [rows(1, 32, 9), embedded(1, 32, 10)] {
            let coded = CodedQuery::new(&query);
            let mut codes = vec![0u8; 32];
            for row in data.chunks_exact(32) {
                let (scale, slack) = quantize(row, &mut codes);
                let (approx, bound) = coded.score(scale, slack, &codes);
                let exact = dot(row, &query);
                assert!((exact - approx).abs() <= bound, "{exact} {approx} {bound}");
            }
        }
    }

    #[test]
    fn the_integer_dot_product_is_the_sum_of_the_products() {
        let query: Vec<i8> = (0..37).map(|i| ((i * 53) % 255 - 127) as i8).collect();
        let codes: Vec<u8> = (0..37)
            .map(|i| (((i * 29) % 255 - 127) as i8) as u8)
            .collect();
        let sum: i32 = query
            .iter()
            .zip(&codes)
            .map(|(&q, &c)| i32::from(q) * i32::from(c as i8))
            .sum();
        assert_eq!(code_dot(&query, &codes), sum);
        assert_eq!(code_dot(&[127; 256], &[127; 256]), 256 * 127 * 127);
        assert_eq!(code_dot(&[-127; 256], &[127; 256]), -256 * 127 * 127);
    }

    #[test]
    fn a_query_of_whole_counts_adds_almost_nothing_to_the_bound() {
        let coded = CodedQuery::new(&embedded(1, 256, 12));
        assert!(coded.spread < 1e-3, "spread {}", coded.spread);
        assert!(CodedQuery::new(&rows(1, 256, 12)).spread > 1.0);
    }

    #[test]
    fn the_rescore_set_holds_the_exact_top() {
        let data = rows(2000, 32, 5);
        let query = rows(1, 32, 11);
        let coded = CodedQuery::new(&query);
        let mut codes = vec![0u8; 32];
        let (mut approx, mut bound, mut exact) = (vec![], vec![], vec![]);
        for row in data.chunks_exact(32) {
            let (scale, slack) = quantize(row, &mut codes);
            let (a, b) = coded.score(scale, slack, &codes);
            approx.push(a);
            bound.push(b);
            exact.push(dot(row, &query));
        }
        let set = rescore_set(&approx, &bound, 10);
        assert!(set.len() < 2000, "the bound prunes");
        let mut best: Vec<usize> = (0..2000).collect();
        best.sort_by(|&a, &b| exact[b].total_cmp(&exact[a]));
        for i in &best[..10] {
            assert!(set.contains(i), "row {i} of the exact top 10 is rescored");
        }
        assert_eq!(
            rescore_set(&approx[..5], &bound[..5], 10),
            vec![0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn a_row_that_is_not_finite_is_always_rescored() {
        let mut codes = vec![0u8; 4];
        let (scale, slack) = quantize(&[1.0, f32::NAN, 0.0, 0.0], &mut codes);
        let (approx, bound) = CodedQuery::new(&[1.0; 4]).score(scale, slack, &codes);
        let set = rescore_set(&[approx, 5.0, 4.0], &[bound, 0.0, 0.0], 1);
        assert!(set.contains(&0));
    }

    #[test]
    fn whole_counts_over_a_length_are_coded_exactly() {
        // Word counts divided by their length, as the hashing embedder makes them.
        let counts = [3.0f32, 0.0, 1.0, 7.0, 0.0, 2.0, 1.0, 0.0];
        let len = counts.iter().map(|c| c * c).sum::<f32>().sqrt();
        let row: Vec<f32> = counts.iter().map(|c| c / len).collect();
        let mut codes = vec![0u8; 8];
        let (scale, slack) = quantize(&row, &mut codes);
        let decoded: Vec<i8> = codes.iter().map(|&c| c as i8).collect();
        assert_eq!(decoded, [3, 0, 1, 7, 0, 2, 1, 0]);
        assert!((scale - 1.0 / len).abs() < 1e-6);
        assert!(slack < 1e-4, "slack {slack}");
    }

    #[test]
    fn repeated_rowids_are_found_in_a_narrow_span_and_a_wide_one() {
        assert!(!repeats(&[]));
        assert!(!repeats(&[5]));
        assert!(!repeats(&[3, 1, 2, 100]));
        assert!(repeats(&[3, 1, 2, 100, 2]));
        // Spans wider than 64 bits a rowid are sorted.
        assert!(!repeats(&[i64::MIN, i64::MAX, 0]));
        assert!(repeats(&[i64::MIN, i64::MAX, 0, i64::MIN]));
        let many: Vec<i64> = (0..10_000).map(|i| i * 37 % 10_007).collect();
        assert!(!repeats(&many));
        let mut twice = many.clone();
        twice.push(many[4_321]);
        assert!(repeats(&twice));
    }

    #[test]
    fn default_probes_grow_as_the_root_of_ten_times_the_lists() {
        assert_eq!(default_probes(0), 1);
        assert_eq!(default_probes(1), 1);
        assert_eq!(default_probes(10), 10);
        assert_eq!(default_probes(54), 24);
        assert_eq!(default_probes(316), 57);
        assert_eq!(default_probes(1000), 100);
        assert_eq!(default_probes(MAX_LISTS), 405);
    }

    #[test]
    fn probes_rank_centroids_best_first() {
        let centroids = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8];
        assert_eq!(probe_order(&centroids, 2, &[0.0, 1.0], 2), vec![1, 2]);
        assert_eq!(nearest(&centroids, 2, &[1.0, 0.0]), 0);
    }
}
