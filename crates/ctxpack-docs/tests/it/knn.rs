//! Flat kNN: ranking, ties, edge cases.

use ctxpack_docs::embed::{DIM, Vector, embed};
use ctxpack_docs::knn::{FlatIndex, dot, top_k};

fn index(texts: &[&str]) -> FlatIndex {
    let mut index = FlatIndex::with_capacity(texts.len());
    for text in texts {
        index.push(&embed(text));
    }
    index
}

#[test]
fn ranks_by_cosine_best_first() {
    let index = index(&[
        "chocolate cake recipe",
        "database search and indexing",
        "search",
        "database search",
    ]);
    assert_eq!(index.len(), 4);
    let top = index.top_k(&embed("database search"), 10);
    let order: Vec<usize> = top.iter().map(|t| t.0).collect();
    // Row 3 is identical to the query; rows 1 and 2 both score 0.7071 and keep insertion
    // order; the cake shares nothing.
    assert_eq!(order, [3, 1, 2, 0]);
    assert!((top[0].1 - 1.0).abs() < 1e-6);
    assert_eq!(top[1].1, top[2].1);
    assert_eq!(top[3].1, 0.0);
}

#[test]
fn k_limits_and_edges() {
    let index = index(&["a", "b", "a b", "c"]);
    assert!(index.top_k(&embed("a"), 0).is_empty());
    assert_eq!(index.top_k(&embed("a"), 2).len(), 2);
    assert_eq!(index.top_k(&embed("a"), 100).len(), 4);
    assert!(FlatIndex::new().top_k(&embed("a"), 3).is_empty());
    // A zero query scores every row 0: insertion order.
    let zero: Vec<usize> = index
        .top_k(&Vector::default(), 4)
        .iter()
        .map(|t| t.0)
        .collect();
    assert_eq!(zero, [0, 1, 2, 3]);
}

#[test]
fn ties_keep_insertion_order_when_k_cuts() {
    let index = index(&["x", "a", "a", "a", "a"]);
    let top: Vec<usize> = index.top_k(&embed("a"), 2).iter().map(|t| t.0).collect();
    assert_eq!(top, [1, 2]);
}

#[test]
fn nan_rows_rank_last() {
    let mut matrix = embed("a").0.to_vec();
    matrix.extend(std::iter::repeat_n(f32::NAN, DIM));
    matrix.extend(embed("b").0);
    let top: Vec<usize> = top_k(&matrix, &embed("a"), 3).iter().map(|t| t.0).collect();
    assert_eq!(top, [0, 2, 1]);
    let top: Vec<usize> = top_k(&matrix, &embed("a"), 2).iter().map(|t| t.0).collect();
    assert_eq!(top, [0, 2]);
}

#[test]
fn unnormalised_query_gives_cosines() {
    let index = index(&["database search and indexing"]);
    let mut q = embed("database search");
    for x in &mut q.0 {
        *x *= 3.0;
    }
    let score = index.top_k(&q, 1)[0].1;
    assert!((score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
}

#[test]
fn dot_handles_any_length() {
    let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
    let b = vec![1.0f32; 19];
    assert_eq!(dot(&a, &b), 171.0);
    assert_eq!(dot(&[], &[]), 0.0);
}

#[test]
fn rank_orders_by_score_then_order_key() {
    use ctxpack_docs::knn::rank;
    /// Scores, order keys, k, expected positions.
    type Case<'a> = (&'a [f32], &'a [i64], Option<usize>, &'a [usize]);
    let cases: &[Case<'_>] = &[
        (&[0.1, 0.9, 0.5], &[1, 2, 3], None, &[1, 2, 0]),
        (&[0.1, 0.9, 0.5], &[1, 2, 3], Some(2), &[1, 2]),
        (&[0.5, 0.5, 0.5], &[3, 1, 2], None, &[1, 2, 0]),
        (&[0.5, 0.5, 0.9], &[3, 1, 2], Some(2), &[2, 1]),
        (&[f32::NAN, 0.0, -1.0], &[1, 2, 3], None, &[1, 2, 0]),
        (&[0.3], &[7], Some(0), &[]),
        (&[], &[], Some(3), &[]),
    ];
    for (scores, order, k, expected) in cases {
        assert_eq!(
            rank(scores, order, *k),
            *expected,
            "{scores:?} {order:?} {k:?}"
        );
    }
}

#[test]
fn scores_match_top_k() {
    use ctxpack_docs::knn::scores;
    let index = index(&["chocolate cake recipe", "database search and indexing"]);
    let query = embed("database search");
    let all = scores(index.as_matrix(), &query);
    let top = index.top_k(&query, 2);
    assert_eq!(all[1], top[0].1);
    assert_eq!(all[0], 0.0);
}

#[test]
fn dot_le_bytes_matches_dot_bit_for_bit() {
    use ctxpack_docs::knn::dot_le_bytes;
    let query = embed("database search with many words and some more words");
    for text in [
        "database search and indexing",
        "chocolate cake recipe",
        "",
        "a b c d e f g",
    ] {
        let row = embed(text);
        let expected = dot(&row.0, &query.0);
        let got = dot_le_bytes(&row.to_le_bytes(), &query).expect("1024 bytes");
        assert_eq!(got.to_bits(), expected.to_bits(), "{text:?}");
    }
    assert_eq!(dot_le_bytes(&[0u8; 12], &query), None);
}
