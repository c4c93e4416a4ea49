//! The encodings' pre-tokenizing patterns and the automaton built from them. The build script
//! builds each automaton once and compiles it into the crate (see `build.rs`); the tests build
//! it again from these patterns and check that the two are the same bytes.
//!
//! Both published patterns end in `|\s*[\r\n]+|\s+(?!\S)|\s+` after their own alternatives. A
//! look-ahead is not available in a finite automaton, so the pattern is searched as three, in
//! priority order: the encoding's alternatives with `|\s*[\r\n]+|\s+$`, then `\s+\s` with its
//! last character given back (exactly what `\s+(?!\S)` matches before a non-space), then `\s+`.
//! Every search is anchored at the start of the rest of the text and needs only where the
//! match ends and which pattern matched: a forward DFA with anchored starts alone.

use regex_automata::dfa::{StartKind, dense};
use regex_automata::nfa::thompson;

/// `o200k_base`'s own alternatives.
pub const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
);

/// `cl100k_base`'s own alternatives.
#[cfg_attr(
    not(feature = "cl100k"),
    allow(
        dead_code,
        reason = "the crate's tests read it only when cl100k is built"
    )
)]
pub const CL100K: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    r"|[^\r\n\p{L}\p{N}]?\p{L}+",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
);

/// The DFA that splits text by the pattern whose own alternatives are `head`, serialized in
/// the byte order `little_endian` says, with the padding before it that
/// `dense::DFA::to_bytes_*` adds for alignment removed (the caller aligns the bytes itself).
pub fn serialized(head: &str, little_endian: bool) -> Vec<u8> {
    let first = format!(r"{head}|\s*[\r\n]+|\s+$");
    let dfa = dense::Builder::new()
        .configure(dense::Config::new().start_kind(StartKind::Anchored))
        .thompson(thompson::Config::new().which_captures(thompson::WhichCaptures::None))
        .build_many(&[first.as_str(), r"\s+\s", r"\s+"])
        .expect("the encodings' patterns are valid");
    let (bytes, pad) = if little_endian {
        dfa.to_bytes_little_endian()
    } else {
        dfa.to_bytes_big_endian()
    };
    bytes[pad..].to_vec()
}
