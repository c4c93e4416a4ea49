//! The layout of a vocabulary table, shared by the build script that writes the tables and the
//! code that reads them, so the two cannot disagree.
//!
//! A vocabulary of `n` tokens is three little-endian blobs:
//! - `bytes`: every token's bytes, concatenated in rank order;
//! - `starts`: `n + 1` `u32` offsets into `bytes` (token `r` is `bytes[starts[r]..starts[r + 1]]`);
//! - `slots`: an open-addressing hash table of `2^k` `u32` slots, each `0` (empty) or a token's
//!   rank plus one, placed at [`slot_of`] of the token's bytes and probed linearly.

/// The home slot of `bytes` in a table of `2^bits` slots: FNV-1a over the bytes, finished with
/// a multiply-xorshift so that the high bits (the ones used) depend on every byte.
pub(crate) fn slot_of(bytes: &[u8], bits: u32) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 31;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // `bits` is at most 32 (checked where the table is laid out), so the shift is in range and
    // the result fits a usize on every supported target.
    (h >> (64 - bits)) as usize
}
