//! How an embedding's vector is kept in the `vector` column of `embeddings` (format 6).
//!
//! Callers give and get vectors as little-endian `f32`s; the column holds one of two forms,
//! told apart by length:
//!
//! - **Raw** (a length that is a multiple of 4): the `f32`s themselves. Every vector written
//!   before format 6 is raw, and so is any vector the counted form cannot reproduce.
//! - **Tagged** (any other length): a tag byte, a self-delimiting body, and one zero byte of
//!   padding when the length would otherwise be a multiple of 4.
//!   - Tag 1, *counts*: the vector is a vector of whole counts divided by its Euclidean length
//!     (computed in `f64`, each component then rounded once to `f32`), which is what a
//!     count-based embedder such as ctxpack's hashing embedder produces. The body is the number
//!     of dimensions (LEB128), a bitmap of the non-zero dimensions, and each non-zero count
//!     (LEB128) in dimension order. A 256-dimension embedding of a 200-word text takes about
//!     136 bytes instead of 1,024.
//!   - Tag 0, *verbatim*: bytes that are not a whole number of `f32`s, kept as given (their
//!     length in LEB128, then the bytes).
//!
//! [`encode`] only chooses the counted form after decoding it and comparing the result with
//! the given bytes, so a stored vector always decodes to exactly the bytes that were written,
//! whatever embedder wrote them. [`decode`] reads blobs from an untrusted store: it refuses
//! anything malformed with a reason, and what it allocates is bounded by the blob's length.

use std::borrow::Cow;

/// The tag of the counted form.
const COUNTS: u8 = 1;
/// The tag of bytes kept verbatim.
const VERBATIM: u8 = 0;
/// The most dimensions a counted vector may declare: a bitmap holds 8 of them per byte, so
/// a blob declares at most `8 × its length` dimensions; this bounds it further.
const MAX_DIMS: u64 = 1 << 16;
/// The largest count stored: beyond it the counted form is not tried (and one read is
/// refused), so every count and its square are exact in `f64`; encoder and decoder sum the
/// squares in the same order.
const MAX_COUNT: u64 = 1 << 24;
/// The multiples of the smallest component tried as its count (1 when some word occurs once).
const MULTIPLIERS: u64 = 4;

/// The form to store `vector` (little-endian `f32`s, or any bytes) in.
pub fn encode(vector: &[u8]) -> Cow<'_, [u8]> {
    if vector.is_empty() {
        return Cow::Borrowed(vector);
    }
    if !vector.len().is_multiple_of(4) {
        let mut out = vec![VERBATIM];
        leb128(&mut out, vector.len() as u64);
        out.extend_from_slice(vector);
        return Cow::Owned(pad(out));
    }
    match counted(vector) {
        Some(blob) if blob.len() < vector.len() => Cow::Owned(blob),
        _ => Cow::Borrowed(vector),
    }
}

/// The vector bytes a stored blob holds; a reason when it is malformed.
pub fn decode(blob: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    if blob.len().is_multiple_of(4) {
        return Ok(Cow::Borrowed(blob));
    }
    let mut r = Reader { blob, at: 1 };
    let out = match blob[0] {
        COUNTS => {
            let dims = r.leb128()?;
            if dims > MAX_DIMS || dims > 8 * blob.len() as u64 {
                return Err(format!("it declares {dims} dimensions"));
            }
            let dims = dims as usize;
            let bitmap = r.take(dims.div_ceil(8))?;
            if bitmap.iter().enumerate().any(|(i, b)| {
                let extra = (i * 8 + 8).saturating_sub(dims);
                extra > 0 && b >> (8 - extra) != 0
            }) {
                return Err("its bitmap marks dimensions past the last".into());
            }
            // Two passes over the counts: their length first (summed in dimension order, as
            // `norm` sums), then each component in its place; zeros elsewhere.
            let body = r.at;
            let mut squares = 0.0f64;
            for_each_set(bitmap, |d| {
                let c = r.leb128()?;
                if c == 0 || c > MAX_COUNT {
                    return Err(format!("dimension {d} has a count of {c}"));
                }
                squares += (c as f64) * (c as f64);
                Ok(())
            })?;
            let end = r.at;
            r.at = body;
            let mut components = Components::new(squares.sqrt());
            let mut out = vec![0u8; dims * 4];
            for_each_set(bitmap, |d| {
                let v = components.of(r.leb128()?);
                out[d * 4..d * 4 + 4].copy_from_slice(&v.to_le_bytes());
                Ok(())
            })?;
            debug_assert_eq!(r.at, end);
            out
        }
        VERBATIM => {
            let len = r.leb128()?;
            r.take(usize::try_from(len).map_err(|_| "its length does not fit")?)?
                .to_vec()
        }
        tag => return Err(format!("it has the unknown tag {tag}")),
    };
    // The canonical padding: none, or one zero byte when the length would be a multiple of 4.
    match &blob[r.at..] {
        [] if !r.at.is_multiple_of(4) => Ok(Cow::Owned(out)),
        [0] if r.at.is_multiple_of(4) => Ok(Cow::Owned(out)),
        _ => Err("it has bytes after its body".into()),
    }
}

/// Calls `f` with every dimension whose bit is set in `bitmap`, in order.
fn for_each_set(
    bitmap: &[u8],
    mut f: impl FnMut(usize) -> Result<(), String>,
) -> Result<(), String> {
    for (i, &byte) in bitmap.iter().enumerate() {
        let mut bits = byte;
        while bits != 0 {
            f(i * 8 + bits.trailing_zeros() as usize)?;
            bits &= bits - 1;
        }
    }
    Ok(())
}

/// The counted form of `vector`, when one reproduces it exactly.
fn counted(vector: &[u8]) -> Option<Vec<u8>> {
    let value = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mut smallest = f32::INFINITY;
    for v in vector.chunks_exact(4).map(value) {
        if !v.is_finite() || v.is_sign_negative() {
            return None;
        }
        if v > 0.0 {
            smallest = smallest.min(v);
        }
    }
    let mut counts = Vec::with_capacity(vector.len() / 4);
    for multiplier in 1..=MULTIPLIERS {
        counts.clear();
        // Each count as a multiple of the smallest component, rounded to the nearest whole
        // number; a wrong guess is caught by the comparison below.
        let scale = multiplier as f64 / f64::from(smallest);
        for v in vector.chunks_exact(4).map(value) {
            let c = f64::from(v) * scale + 0.5;
            if v != 0.0 && !(1.0..MAX_COUNT as f64 + 1.0).contains(&c) {
                return None;
            }
            counts.push(c as u64);
        }
        let mut components = Components::new(norm(&counts));
        let same = counts.iter().zip(vector.chunks_exact(4)).all(|(&c, b)| {
            components.of(c).to_bits() == u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        });
        if same {
            return Some(pad(counts_body(&counts)));
        }
        if smallest == f32::INFINITY {
            // The zero vector: its counts are all zero, and it either matched or never will.
            return None;
        }
    }
    None
}

/// The Euclidean length of counts, in `f64` (exact sums of squares: counts are at most
/// [`MAX_COUNT`]).
fn norm(counts: &[u64]) -> f64 {
    counts
        .iter()
        .map(|&c| (c as f64) * (c as f64))
        .sum::<f64>()
        .sqrt()
}

/// The components of one vector's normalised counts: each count divided by the length in
/// `f64`, rounded once to `f32` (zero for all-zero counts). Counts repeat (most are 1, 2 or
/// 3), so the quotient of each small count is computed once: the same division, so the same
/// bits.
struct Components {
    norm: f64,
    small: [Option<f32>; 32],
}

impl Components {
    fn new(norm: f64) -> Components {
        Components {
            norm,
            small: [None; 32],
        }
    }

    fn of(&mut self, count: u64) -> f32 {
        let divide = |c: u64| {
            if self.norm > 0.0 {
                (c as f64 / self.norm) as f32
            } else {
                0.0
            }
        };
        match self.small.get(count as usize) {
            Some(Some(v)) => *v,
            Some(None) => {
                let v = divide(count);
                self.small[count as usize] = Some(v);
                v
            }
            None => divide(count),
        }
    }
}

fn counts_body(counts: &[u64]) -> Vec<u8> {
    let mut out = vec![COUNTS];
    leb128(&mut out, counts.len() as u64);
    let start = out.len();
    out.resize(start + counts.len().div_ceil(8), 0);
    for (d, &c) in counts.iter().enumerate() {
        if c > 0 {
            out[start + d / 8] |= 1 << (d % 8);
        }
    }
    for &c in counts.iter().filter(|c| **c > 0) {
        leb128(&mut out, c);
    }
    out
}

/// Adds the zero byte that keeps a tagged blob's length off a multiple of 4.
fn pad(mut blob: Vec<u8>) -> Vec<u8> {
    if blob.len().is_multiple_of(4) {
        blob.push(0);
    }
    blob
}

/// Appends `n` to `out` as an unsigned LEB128 number.
pub(crate) fn leb128(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

struct Reader<'a> {
    blob: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.blob.len())
            .ok_or("it ends early")?;
        let out = &self.blob[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn leb128(&mut self) -> Result<u64, String> {
        // One byte: the common case (a count under 128).
        if let Some(&byte) = self.blob.get(self.at)
            && byte & 0x80 == 0
        {
            self.at += 1;
            return Ok(u64::from(byte));
        }
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.take(1)?[0];
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("it holds a number longer than 64 bits".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// What a count-based embedder makes of `counts` (written out here, apart from the
    /// module's own arithmetic): each count divided by their length in `f64`, rounded to `f32`.
    fn normalised(counts: &[u64]) -> Vec<u8> {
        let norm = counts
            .iter()
            .map(|&c| (c as f64) * (c as f64))
            .sum::<f64>()
            .sqrt();
        counts
            .iter()
            .flat_map(|&c| {
                let v = if norm > 0.0 {
                    (c as f64 / norm) as f32
                } else {
                    0.0
                };
                v.to_le_bytes()
            })
            .collect()
    }

    #[test]
    fn a_vector_of_counts_is_stored_as_its_counts_and_read_back_exactly() {
        let mut counts = vec![0u64; 256];
        for (i, c) in counts.iter_mut().enumerate() {
            *c = [0, 1, 0, 2, 1, 0, 7][i % 7];
        }
        let vector = normalised(&counts);
        let blob = encode(&vector);
        assert!(blob.len() < 200, "{} bytes", blob.len());
        assert!(!blob.len().is_multiple_of(4));
        assert_eq!(decode(&blob).expect("decodes").as_ref(), vector.as_slice());
    }

    #[test]
    fn counts_without_a_single_occurrence_are_found_too() {
        let vector = normalised(&[0, 2, 4, 0, 6, 2, 2, 2]);
        let blob = encode(&vector);
        assert_eq!(blob[0], COUNTS);
        assert_eq!(decode(&blob).expect("decodes").as_ref(), vector.as_slice());
    }

    #[test]
    fn the_zero_vector_and_the_empty_marker_round_trip() {
        let zero = bytes(&[0.0; 16]);
        assert_eq!(
            decode(&encode(&zero)).expect("zero").as_ref(),
            zero.as_slice()
        );
        assert!(encode(&[]).is_empty());
        assert!(decode(&[]).expect("marker").is_empty());
    }

    #[test]
    fn vectors_that_are_not_counts_stay_raw() {
        for values in [
            vec![0.1f32, -0.5, 0.25, 0.75],
            vec![0.3, 0.3, 0.4, 1e-30],
            vec![f32::NAN, 1.0, 0.0, 0.0],
        ] {
            let vector = bytes(&values);
            assert!(matches!(encode(&vector), Cow::Borrowed(_)), "{values:?}");
        }
    }

    #[test]
    fn bytes_that_are_not_whole_floats_are_kept_verbatim() {
        for len in 1..12 {
            let odd: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(37)).collect();
            if odd.len().is_multiple_of(4) {
                continue;
            }
            let blob = encode(&odd);
            assert_eq!(blob[0], VERBATIM);
            assert_eq!(decode(&blob).expect("decodes").as_ref(), odd.as_slice());
        }
    }

    #[test]
    fn malformed_blobs_are_refused_with_a_reason() {
        let good = encode(&normalised(&[1, 0, 3, 1, 0, 0, 2, 5, 1])).into_owned();
        let cases: Vec<Vec<u8>> = vec![
            vec![9, 0, 0],                             // unknown tag
            vec![COUNTS, 0xff, 0xff, 0xff, 1],         // dimensions past the blob
            good[..good.len() - 2].to_vec(),           // cut short
            [good.clone(), vec![7, 7, 7, 7]].concat(), // trailing bytes
            vec![COUNTS, 3, 0b1111_1000, 1, 1],        // bitmap past the last dimension
            vec![COUNTS, 2, 0b01, 0, 0],               // a zero count
            vec![VERBATIM, 200, 1, 2, 3],              // verbatim longer than the blob
        ];
        for blob in cases {
            if blob.len().is_multiple_of(4) {
                continue;
            }
            assert!(decode(&blob).is_err(), "{blob:?} was accepted");
        }
    }

    proptest! {
        #[test]
        fn every_stored_vector_reads_back_as_written(values in prop::collection::vec(any::<f32>(), 0..64)) {
            let vector = bytes(&values);
            let blob = encode(&vector);
            let read = decode(&blob).expect("decodes");
            prop_assert_eq!(read.as_ref(), vector.as_slice());
        }

        // Counts that share a factor above the multipliers tried may stay raw (still exact);
        // a text in which some word occurs once never does.
        #[test]
        fn every_count_vector_with_a_single_occurrence_is_stored_shorter(
            mut counts in prop::collection::vec(0u64..50, 1..300),
            one in any::<prop::sample::Index>(),
        ) {
            let at = one.index(counts.len());
            counts[at] = 1;
            let vector = normalised(&counts);
            let blob = encode(&vector);
            let read = decode(&blob).expect("decodes");
            prop_assert_eq!(read.as_ref(), vector.as_slice());
            prop_assert!(blob.len() < vector.len() || vector.len() < 16);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(blob in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = decode(&blob);
        }
    }
}
