//! The hashing embedder: the seed's scores, tokenisation, stability and storage.

use ctxpack_docs::embed::{
    DIM, EMBEDDER_ID, Vector, cosine, dimension, embed, fnv1a64, text_hash, tokens,
};

/// Four decimals, as a pack shows them.
fn round4(x: f32) -> String {
    format!("{:.4}", f64::from(x))
}

#[test]
fn seed_scores() {
    let query = embed("database search");
    assert_eq!(
        round4(cosine(&query, &embed("database search and indexing"))),
        "0.7071"
    );
    assert_eq!(cosine(&query, &embed("chocolate cake recipe")), 0.0);
}

#[test]
fn the_seed_words_do_not_collide() {
    let words = [
        "database",
        "search",
        "and",
        "indexing",
        "chocolate",
        "cake",
        "recipe",
    ];
    let dims: Vec<usize> = words.iter().map(|w| dimension(w)).collect();
    // Pinned: a change of hash would move every stored embedding.
    assert_eq!(dims, [88, 233, 134, 237, 249, 121, 15]);
    let mut unique = dims.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), words.len());
}

#[test]
fn fnv1a64_reference_values() {
    // The published FNV-1a 64 test vectors.
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn tokenisation() {
    let cases: &[(&str, &[&str])] = &[
        ("", &[]),
        ("Database SEARCH", &["database", "search"]),
        ("a-b_c.d", &["a", "b", "c", "d"]),
        ("  leading, trailing!  ", &["leading", "trailing"]),
        ("naïve café 2024", &["naïve", "café", "2024"]),
        ("日本語のテキスト", &["日本語のテキスト"]),
        ("ÀÉÎ", &["àéî"]),
        ("x1y2", &["x1y2"]),
    ];
    for (text, expected) in cases {
        assert_eq!(tokens(text), *expected, "{text:?}");
    }
}

#[test]
fn embeddings_are_unit_or_zero() {
    assert_eq!(embed(""), Vector::default());
    assert_eq!(embed("  ... !!! "), Vector::default());
    assert_eq!(cosine(&embed(""), &embed("anything")), 0.0);
    for text in ["a", "database search", "the the the cat", "ünïcödé wörds"] {
        let norm = embed(text).norm();
        assert!((norm - 1.0).abs() < 1e-6, "{text}: {norm}");
    }
    // Counts, not presence: "the the cat" weighs "the" twice.
    let v = embed("the the cat");
    let (the, cat) = (v.0[dimension("the")], v.0[dimension("cat")]);
    assert!((the - 2.0 / 5f32.sqrt()).abs() < 1e-6);
    assert!((cat - 1.0 / 5f32.sqrt()).abs() < 1e-6);
    // Case and punctuation do not matter.
    assert_eq!(embed("Database, search!"), embed("database search"));
}

#[test]
fn cosine_of_a_text_with_itself_is_one() {
    let v = embed("database search and indexing");
    assert!((cosine(&v, &v) - 1.0).abs() < 1e-6);
}

#[test]
fn bytes_round_trip() {
    let v = embed("database search");
    let bytes = v.to_le_bytes();
    assert_eq!(bytes.len(), Vector::BYTES);
    assert_eq!(bytes.len(), DIM * 4);
    assert_eq!(Vector::from_le_bytes(&bytes), Ok(v.clone()));
    // Little-endian, component by component.
    let d = dimension("database") * 4;
    assert_eq!(&bytes[d..d + 4], &v.0[dimension("database")].to_le_bytes());
    assert_eq!(
        Vector::from_le_bytes(&bytes[..1000])
            .unwrap_err()
            .to_string(),
        "a stored vector must be 1024 bytes (256 little-endian f32), got 1000"
    );
    let mut bad = bytes.clone();
    bad[8..12].copy_from_slice(&f32::NAN.to_le_bytes());
    assert_eq!(
        Vector::from_le_bytes(&bad).unwrap_err().to_string(),
        "a stored vector holds a non-finite value at dimension 2"
    );
}

#[test]
fn text_hash_is_sha256_hex() {
    assert_eq!(
        text_hash(""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        text_hash("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_ne!(text_hash("database search"), text_hash("database  search"));
    assert_eq!(EMBEDDER_ID, "hashing-fnv1a64-256-v1");
}
