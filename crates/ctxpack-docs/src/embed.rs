//! The offline hashing embedder: deterministic, dependency-free, 256 dimensions.
//!
//! A text is lowercased and split on every character that is not alphanumeric (Unicode-aware,
//! so `café` and `日本語` are words); each word is hashed with 64-bit FNV-1a over its UTF-8
//! bytes, and the hash modulo 256 picks the dimension whose count it increments. The count
//! vector is then L2-normalised, so the cosine of two embeddings is their dot product. An
//! empty text (or one with no words) is the zero vector, whose cosine with anything is 0.
//!
//! This is a bag of words, not a neural model: two texts are similar exactly when they share
//! words (up to hash collisions).
//!
//! ```
//! use ctxpack_docs::embed::{cosine, embed};
//!
//! let query = embed("database search");
//! let score = cosine(&query, &embed("database search and indexing"));
//! assert_eq!((score * 10_000.0).round() / 10_000.0, 0.7071);
//! assert_eq!(cosine(&query, &embed("chocolate cake recipe")), 0.0);
//! ```

use sha2::{Digest, Sha256};

use crate::dot::dot;
use crate::error::DocsError;

/// The number of dimensions of an embedding.
pub const DIM: usize = 256;

/// The identity of this embedder, to store beside embeddings: a store that finds another
/// identity must recompute them.
pub const EMBEDDER_ID: &str = "hashing-fnv1a64-256-v1";

/// An embedding: 256 `f32`s, L2-normalised (or all zero for a text without words).
#[derive(Clone, Debug, PartialEq)]
pub struct Vector(pub [f32; DIM]);

impl Default for Vector {
    fn default() -> Self {
        Vector([0.0; DIM])
    }
}

impl Vector {
    /// The size of [`Vector::to_le_bytes`]: 1024.
    pub const BYTES: usize = DIM * 4;

    /// The components.
    pub fn as_slice(&self) -> &[f32] {
        &self.0
    }

    /// The Euclidean length: 1 for the embedding of a text with words, 0 otherwise.
    pub fn norm(&self) -> f32 {
        dot(&self.0, &self.0).sqrt()
    }

    /// The vector as 1024 bytes, each component little-endian, for storage.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Reads a vector written by [`Vector::to_le_bytes`]. Fails on a length other than 1024
    /// or a component that is not finite (both mean the stored blob is corrupt).
    pub fn from_le_bytes(bytes: &[u8]) -> Result<Vector, DocsError> {
        if bytes.len() != Self::BYTES {
            return Err(DocsError::VectorLength {
                len: bytes.len(),
                expected: Self::BYTES,
            });
        }
        let mut out = [0.0f32; DIM];
        for (i, (slot, chunk)) in out.iter_mut().zip(bytes.chunks_exact(4)).enumerate() {
            let x = f32::from_le_bytes(chunk.try_into().expect("chunks_exact(4) yields 4 bytes"));
            if !x.is_finite() {
                return Err(DocsError::VectorNotFinite { dimension: i });
            }
            *slot = x;
        }
        Ok(Vector(out))
    }
}

/// 64-bit FNV-1a of `bytes` (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = FNV_BASIS;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The words of a text as the embedder sees them: lowercased, split on every character that
/// is not alphanumeric, empty pieces dropped.
pub fn tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The dimension a word lands in.
pub fn dimension(token: &str) -> usize {
    // The modulus keeps the low 8 bits, which is exact in u64 -> usize.
    (fnv1a64(token.as_bytes()) % DIM as u64) as usize
}

/// FNV-1a's offset basis and prime (see [`fnv1a64`]).
const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Adds one to the dimension of every word of `text`, as [`tokens`] and [`dimension`] define
/// them, without allocating a string per word. ASCII text (the common case) is lowercased and
/// hashed a byte at a time; any other text is lowercased whole first, since lowercasing can
/// change its length.
fn count_words(text: &str, counts: &mut [f64; DIM]) {
    if !text.is_ascii() {
        let lower = text.to_lowercase();
        for token in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
        {
            counts[dimension(token)] += 1.0;
        }
        return;
    }
    // For ASCII, `char::is_alphanumeric` and `to_lowercase` are their ASCII forms.
    let (mut hash, mut in_word) = (FNV_BASIS, false);
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() {
            hash = (hash ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
            in_word = true;
        } else if in_word {
            counts[(hash % DIM as u64) as usize] += 1.0;
            (hash, in_word) = (FNV_BASIS, false);
        }
    }
    if in_word {
        counts[(hash % DIM as u64) as usize] += 1.0;
    }
}

/// Embeds a text: word counts per hashed dimension, L2-normalised.
pub fn embed(text: &str) -> Vector {
    let mut counts = [0.0f64; DIM];
    count_words(text, &mut counts);
    let norm = counts.iter().map(|c| c * c).sum::<f64>().sqrt();
    let mut out = [0.0f32; DIM];
    if norm > 0.0 {
        for (o, c) in out.iter_mut().zip(counts) {
            // Normalise in f64, then round once to f32.
            *o = (c / norm) as f32;
        }
    }
    Vector(out)
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &Vector, b: &Vector) -> f32 {
    let (na, nb) = (a.norm(), b.norm());
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot(&a.0, &b.0) / (na * nb)
}

/// The content hash an embedding was computed from: lowercase hex SHA-256 of the text's UTF-8
/// bytes (64 characters). An embedding is stale when the field's current text hashes
/// differently.
pub fn text_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";
