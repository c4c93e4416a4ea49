//! Exact flat top-k over 100,000 random unit vectors of 256 dimensions.
//!
//! Run with `cargo bench -p ctxpack-docs`. The matrix is built once outside the measurement;
//! each iteration scans all 100,000 rows (about 100 MB of `f32`s) for the top 10.

use ctxpack_docs::embed::{DIM, Vector};
use ctxpack_docs::knn::{FlatIndex, top_k};

const ROWS: usize = 100_000;

fn main() {
    divan::main();
}

/// A deterministic xorshift64* stream of floats in `[-1, 1)`.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40;
        (bits as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn unit_vector(&mut self) -> Vector {
        let mut v = [0.0f32; DIM];
        for x in &mut v {
            *x = self.next_f32();
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        for x in &mut v {
            *x /= norm;
        }
        Vector(v)
    }
}

fn index() -> FlatIndex {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut index = FlatIndex::with_capacity(ROWS);
    for _ in 0..ROWS {
        index.push(&rng.unit_vector());
    }
    index
}

#[divan::bench(args = [1, 10, 100])]
fn top_k_100k(bencher: divan::Bencher<'_, '_>, k: usize) {
    let index = index();
    let query = Rng(42).unit_vector();
    bencher.bench(|| top_k(divan::black_box(index.as_matrix()), &query, k));
}
