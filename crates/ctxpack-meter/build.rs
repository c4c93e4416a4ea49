//! Lays out the vocabularies of the exact meters as compact tables compiled into the crate
//! (see `src/table.rs`): about 4 MB for `o200k_base` where the encoder they come from keeps
//! 32 MB of precomputed state, and nothing to load at run time. Builds each encoding's
//! pre-tokenizing automaton too (see `src/pattern.rs`), which a process would otherwise compile
//! from the pattern before its first count.

use std::path::Path;

#[path = "src/pattern.rs"]
mod pattern;
#[path = "src/table.rs"]
mod table;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/table.rs");
    println!("cargo::rerun-if-changed=src/pattern.rs");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let out = Path::new(&out);
    // The automaton is read in place by the target, in its byte order.
    let little_endian = std::env::var("CARGO_CFG_TARGET_ENDIAN").as_deref() != Ok("big");
    write_tables(out, "o200k", &bpe_openai::o200k_base().bpe);
    write(
        out,
        "o200k.dfa",
        &pattern::serialized(pattern::O200K, little_endian),
    );
    if std::env::var_os("CARGO_FEATURE_CL100K").is_some() {
        write_tables(out, "cl100k", &bpe_openai::cl100k_base().bpe);
        write(
            out,
            "cl100k.dfa",
            &pattern::serialized(pattern::CL100K, little_endian),
        );
    }
}

fn write(out: &Path, name: &str, data: &[u8]) {
    std::fs::write(out.join(name), data).expect("the build directory is writable");
}

fn write_tables(out: &Path, name: &str, bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding) {
    let n = bpe.num_tokens();
    // The table stays at most half full, so a probe sequence is short.
    let bits = (n.max(1) * 2).next_power_of_two().trailing_zeros();
    assert!(bits <= 32, "{name}: too many tokens for a u32 table");
    let mut bytes = Vec::new();
    let mut starts = Vec::with_capacity((n + 1) * 4);
    let mut slots = vec![0u32; 1 << bits];
    let mut single = [false; 256];
    for rank in 0..n {
        let rank = u32::try_from(rank).expect("fewer than 2^32 tokens");
        let token = bpe.token_bytes(rank);
        assert!(!token.is_empty(), "{name}: token {rank} is empty");
        if let [b] = token {
            single[usize::from(*b)] = true;
        }
        let start = u32::try_from(bytes.len()).expect("under 4 GiB of token bytes");
        starts.extend_from_slice(&start.to_le_bytes());
        bytes.extend_from_slice(token);
        let mask = slots.len() - 1;
        let mut slot = table::slot_of(token, bits);
        while slots[slot] != 0 {
            let other = slots[slot] - 1;
            assert_ne!(
                bpe.token_bytes(other),
                token,
                "{name}: token {rank} is repeated"
            );
            slot = (slot + 1) & mask;
        }
        slots[slot] = rank + 1;
    }
    let end = u32::try_from(bytes.len()).expect("under 4 GiB of token bytes");
    starts.extend_from_slice(&end.to_le_bytes());
    // Counting starts every piece from its bytes, so every byte must be a token.
    assert!(
        single.iter().all(|&s| s),
        "{name}: a single byte is not a token"
    );
    let slots: Vec<u8> = slots.iter().flat_map(|s| s.to_le_bytes()).collect();
    for (suffix, data) in [("bytes", &bytes), ("starts", &starts), ("slots", &slots)] {
        write(out, &format!("{name}.{suffix}"), data);
    }
}
