//! The dot product of two vectors, which embedding (for norms) and search both compute.

/// The number of lanes [`dot`] accumulates independently: one 256-bit register of `f32`s, or
/// two 128-bit ones.
pub(crate) const LANES: usize = 8;

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
