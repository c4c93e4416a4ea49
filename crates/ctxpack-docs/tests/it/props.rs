//! Properties: arbitrary filters never panic, `compare_values` is a total order, and kNN
//! agrees with a brute-force sort.

use std::cmp::Ordering;

use ctxpack_docs::embed::{DIM, Vector};
use ctxpack_docs::filter::{Filter, compare_values, index_keys, index_path};
use ctxpack_docs::knn::{
    PartialSums, dot_columns, dot_le_bytes, rank, sparse_candidates, support, top_k,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys that exercise every branch of the parser, plus arbitrary ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "a", "b", "a.b", "a.0", "a.0.b", "0", "a..b", "", ".", "$and", "$or", "$nor", "$not",
            "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$regex",
            "$options", "$oid", "$minKey", "$maxKey", "$foo", "$elemMatch",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z$.0-9]{0,6}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        prop::sample::select(vec![0.0f64, -0.0, 1.0, 1e300, -1e300, 0.5]).prop_map(|f| json!(f)),
        prop::sample::select(vec![
            "",
            "a",
            "A",
            "^a",
            "(",
            "[",
            "a|b",
            "\\",
            "*",
            "imsx",
            "q",
            "é",
            "000000000000000000000001",
        ])
        .prop_map(|s| json!(s)),
        ".{0,8}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Values that are often equal to one another in different spellings.
fn near_leaf() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-0.0),
        json!(1),
        json!(1.0),
        json!(1.5),
        json!(u64::MAX),
        json!(18_446_744_073_709_551_616.0),
        json!(-1),
        json!("1"),
        json!("a"),
        json!("A"),
        json!({"$oid": "00000000000000000000000A"}),
        json!({"$oid": "00000000000000000000000a"}),
        json!({"$minKey": 1}),
        json!([]),
        json!({}),
    ])
}

/// Documents built from [`near_leaf`]s under the paths [`planned_filter`] uses.
fn near_value() -> impl Strategy<Value = Value> {
    near_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(vec!["a", "b", "0"]), inner), 0..4)
                .prop_map(|pairs| Value::Object(
                    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
        ]
    })
}

/// Objects with the fields [`planned_filter`] looks at.
fn near_document() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(vec!["a", "b"]), near_value()), 0..3).prop_map(
        |pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
    )
}

/// Filters of equalities, `$in`s and a few operators a field index cannot answer.
fn planned_filter() -> impl Strategy<Value = Value> {
    let path = prop::sample::select(vec!["a", "b", "a.b", "a.0", "a.0.b", "b.a.b"]);
    let condition = prop_oneof![
        3 => near_leaf(),
        2 => near_leaf().prop_map(|v| json!({"$eq": v})),
        2 => prop::collection::vec(near_leaf(), 0..3).prop_map(|v| json!({"$in": v})),
        1 => near_leaf().prop_map(|v| json!({"$ne": v})),
        1 => near_leaf().prop_map(|v| json!({"$gte": v})),
    ];
    prop::collection::vec((path, condition), 0..3).prop_map(|pairs| {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    })
}

fn row(seed: &[f32]) -> Vec<f32> {
    (0..DIM)
        .map(|i| seed[i % seed.len()] * ((i % 7) as f32 - 3.0))
        .collect()
}

proptest! {
    #[test]
    fn filters_never_panic(filter in value(), docs in prop::collection::vec(value(), 1..4)) {
        if let Ok(compiled) = Filter::parse(&filter) {
            for doc in &docs {
                let _ = compiled.matches(doc);
            }
        }
    }

    #[test]
    fn object_filters_never_panic(
        pairs in prop::collection::vec((key(), value()), 0..4),
        docs in prop::collection::vec(value(), 1..4),
    ) {
        let filter = Value::Object(pairs.into_iter().collect());
        if let Ok(compiled) = Filter::parse(&filter) {
            for doc in &docs {
                let _ = compiled.matches(doc);
            }
        }
    }

    #[test]
    fn compare_values_is_a_total_order(a in value(), b in value(), c in value()) {
        prop_assert_eq!(compare_values(&a, &a), Ordering::Equal);
        prop_assert_eq!(compare_values(&a, &b), compare_values(&b, &a).reverse());
        if compare_values(&a, &b) != Ordering::Greater && compare_values(&b, &c) != Ordering::Greater {
            prop_assert_ne!(compare_values(&a, &c), Ordering::Greater);
        }
    }

    #[test]
    fn equality_filter_matches_the_value_itself(v in value()) {
        // `{"f": {"$eq": v}}` always matches `{"f": v}`.
        let filter = json!({"f": {"$eq": v.clone()}});
        let compiled = Filter::parse(&filter).expect("$eq accepts any operand");
        let doc = json!({"f": v});
        prop_assert!(compiled.matches(&doc), "{} on {}", filter, doc);
    }

    #[test]
    fn top_k_is_a_stable_sort(
        seeds in prop::collection::vec(prop::collection::vec(-4i8..4, 1..4), 0..40),
        k in 0usize..12,
    ) {
        // Small integer components make many exact ties.
        let mut matrix = Vec::new();
        for seed in &seeds {
            let s: Vec<f32> = seed.iter().map(|&x| f32::from(x)).collect();
            matrix.extend(row(&s));
        }
        let mut q = [0.0f32; DIM];
        q[0] = 1.0;
        q[3] = 1.0;
        let query = Vector(q);
        let got = top_k(&matrix, &query, k);
        let norm = 2f32.sqrt();
        let mut all: Vec<(usize, f32)> = matrix
            .chunks_exact(DIM)
            .enumerate()
            .map(|(i, r)| (i, r.iter().zip(&q).map(|(x, y)| x * y).sum::<f32>() / norm))
            .collect();
        all.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        all.truncate(k);
        let got_idx: Vec<usize> = got.iter().map(|g| g.0).collect();
        let want_idx: Vec<usize> = all.iter().map(|w| w.0).collect();
        prop_assert_eq!(got_idx, want_idx);
    }
}

proptest! {
    // Equal values in different spellings must meet often enough to be tested.
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn index_plans_agree_with_the_filter(
        filter in planned_filter(),
        docs in prop::collection::vec(near_document(), 1..6),
    ) {
        let compiled = Filter::parse(&filter).expect("planned filters are valid");
        let plan = compiled.index_plan();
        for doc in &docs {
            let hits = plan.lookups.iter().all(|lookup| {
                let parts = index_path(&lookup.path).expect("a filter path");
                index_keys(doc, &parts).iter().any(|k| lookup.keys.binary_search(k).is_ok())
            });
            let matches = compiled.matches(doc);
            // Lookups never lose a match; an exact plan is the filter itself.
            prop_assert!(!matches || hits, "{} matches {} but misses a lookup", filter, doc);
            if plan.exact {
                prop_assert_eq!(matches, hits, "{} on {}", filter, doc);
            }
        }
    }
}

/// Rows as a vector file stores them: one block, column after column.
fn columns_of(rows: &[Vector], dims: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    for &d in dims {
        for row in rows {
            out.extend_from_slice(&row.0[d].to_le_bytes());
        }
    }
    out
}

/// Rows of a few repeated values, so that ties, zero rows and sums that cancel are common.
fn rows_strategy() -> impl Strategy<Value = Vec<Vector>> {
    let row = prop_oneof![
        1 => Just(Vector::default()),
        4 => prop::collection::vec((0usize..DIM, -3i8..4), 0..12).prop_map(|entries| {
            let mut v = [0.0f32; DIM];
            for (d, x) in entries {
                v[d] = f32::from(x) * 0.25;
            }
            Vector(v)
        }),
        // Sums that round differently in different orders.
        2 => prop::collection::vec((0usize..8, -1.0f32..1.0), 0..8).prop_map(|entries| {
            let mut v = [0.0f32; DIM];
            for (d, x) in entries {
                v[d * 3] = x;
            }
            Vector(v)
        }),
    ];
    prop::collection::vec(row, 0..60).prop_map(|mut rows| {
        // Repeat some rows exactly.
        let n = rows.len();
        for i in (0..n).step_by(5).skip(1) {
            rows[i] = rows[i / 2].clone();
        }
        rows
    })
}

proptest! {
    #[test]
    fn column_scores_are_the_row_scores_bit_for_bit(rows in rows_strategy(), seed in prop::collection::vec(-4i8..4, 1..8)) {
        let q: Vec<f32> = seed.iter().map(|&x| f32::from(x) / 3.0).collect();
        let query = Vector(std::array::from_fn(|d| q[d % q.len()] * ((d % 5) as f32 - 2.0)));
        let all: Vec<usize> = (0..DIM).collect();
        let mut out = Vec::new();
        dot_columns(&columns_of(&rows, &all), rows.len(), &query, &mut out);
        let want: Vec<u32> = rows.iter().map(|r| dot_le_bytes(&r.to_le_bytes(), &query).expect("a row").to_bits()).collect();
        let got: Vec<u32> = out.iter().map(|s| s.to_bits()).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn sparse_candidates_hold_the_exact_top_k(
        rows in rows_strategy(),
        entries in prop::collection::vec((0usize..DIM, -3i8..4), 0..6),
        dense in prop::collection::vec(-1.0f32..1.0, 8),
        want in 0usize..12,
        mask in prop::collection::vec(any::<bool>(), 60),
        filtered in any::<bool>(),
    ) {
        let mut q = [0.0f32; DIM];
        for (d, x) in entries {
            q[d] = f32::from(x) / 7.0;
        }
        if filtered {
            for (d, x) in dense.into_iter().enumerate() {
                q[d * 3] = x;
            }
        }
        let query = Vector(q);
        let eligible = |r: usize| !filtered || mask[r];
        let exact: Vec<f32> = rows.iter().map(|r| dot_le_bytes(&r.to_le_bytes(), &query).expect("a row")).collect();
        let keys: Vec<i64> = (0..rows.len() as i64).collect();
        let pool: Vec<usize> = (0..rows.len()).filter(|&r| eligible(r)).collect();
        let pool_scores: Vec<f32> = pool.iter().map(|&r| exact[r]).collect();
        let pool_keys: Vec<i64> = pool.iter().map(|&r| keys[r]).collect();
        let truth: Vec<usize> = rank(&pool_scores, &pool_keys, Some(want)).into_iter().map(|i| pool[i]).collect();

        let dims = support(&query);
        // Blocks of 7 rows: a row's error bound is its block's.
        let mut partial = PartialSums::with_capacity(rows.len());
        for block in rows.chunks(7) {
            partial.push_block(&columns_of(block, &dims), block.len(), &dims, &query);
        }
        let found = sparse_candidates(&partial, want, eligible).expect("finite sums");
        let mut cand: Vec<usize> = found.rescore.clone();
        for &r in &found.zero {
            prop_assert_eq!(exact[r].to_bits(), 0.0f32.to_bits(), "row {} is not an exact zero", r);
            cand.push(r);
        }
        prop_assert!(cand.iter().all(|&r| eligible(r)));
        let cand_scores: Vec<f32> = cand.iter().map(|&r| exact[r]).collect();
        let cand_keys: Vec<i64> = cand.iter().map(|&r| keys[r]).collect();
        let got: Vec<usize> = rank(&cand_scores, &cand_keys, Some(want)).into_iter().map(|i| cand[i]).collect();
        prop_assert_eq!(got, truth);
    }
}

#[test]
fn a_partial_sum_that_rounds_away_from_the_exact_one_keeps_its_rivals() {
    // Row 1 sums to 1e-8 in support order, ((1 + 1e-8) - 1) + 1e-8, but to exactly 0 in the
    // row-wise lanes, (1 + 1e-8) + (-1 + 1e-8): it ties with the zero row 0, which ranks
    // first by key. Trusting the partial sum would put row 1 alone on top.
    let mut a = [0.0f32; DIM];
    a[..4].copy_from_slice(&[1.0, 1e-8, -1.0, 1e-8]);
    let rows = [Vector::default(), Vector(a)];
    let mut q = [0.0f32; DIM];
    q[..4].fill(1.0);
    let query = Vector(q);
    assert_eq!(dot_le_bytes(&rows[1].to_le_bytes(), &query), Some(0.0));
    let dims = support(&query);
    let mut partial = PartialSums::with_capacity(2);
    partial.push_block(&columns_of(&rows, &dims), 2, &dims, &query);
    let found = sparse_candidates(&partial, 1, |_| true).expect("finite");
    assert_eq!(found.zero, [0], "{found:?}");
    assert_eq!(found.rescore, [1], "{found:?}");
}

/// The character-by-character definition of `minify`, which the byte-level one must match.
fn minify_reference(text: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{feff}') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

proptest! {
    #[test]
    fn minify_matches_its_definition(text in "[ \t\r\n\"\\\\a{}:,é\u{feff}0-9]{0,40}") {
        prop_assert_eq!(ctxpack_docs::document::minify(&text), minify_reference(&text));
    }
}

proptest! {
    #[test]
    fn checking_a_document_agrees_with_parsing_it(
        doc in value(),
        id in prop::option::of(leaf()),
        raw in "[{}\\[\\]\":,_id0-9ae+.\\\\u ]{0,24}",
    ) {
        use ctxpack_docs::document::ParsedDocument;
        let mut texts = vec![raw, doc.to_string()];
        if let (Some(id), Value::Object(mut map)) = (id, doc) {
            map.insert("_id".into(), id);
            texts.push(Value::Object(map.clone()).to_string());
            // A repeated `_id`: the last one counts.
            let text = Value::Object(map).to_string();
            texts.push(text.replacen('{', "{\"_id\":\"first\",", 1));
        }
        for text in texts {
            let parsed = ParsedDocument::parse(&text).map(|d| d.id_key).map_err(|e| e.to_string());
            let checked = ParsedDocument::check(&text).map_err(|e| e.to_string());
            prop_assert_eq!(checked, parsed, "{}", text);
        }
    }
}

proptest! {
    #[test]
    fn embedding_counts_the_words_tokens_lists(text in "[ a-zA-Z0-9_.,'\n-]{0,60}|[ aZ9éÉßİ日本-]{0,30}") {
        use ctxpack_docs::embed::{DIM, dimension, embed, tokens};
        let mut counts = [0.0f64; DIM];
        for token in tokens(&text) {
            counts[dimension(&token)] += 1.0;
        }
        let norm = counts.iter().map(|c| c * c).sum::<f64>().sqrt();
        let want: Vec<f32> = counts
            .iter()
            .map(|c| if norm > 0.0 { (c / norm) as f32 } else { 0.0 })
            .collect();
        prop_assert_eq!(embed(&text).0.to_vec(), want);
    }
}

#[test]
fn checking_rejects_what_parsing_rejects_deep_inside_a_document() {
    use ctxpack_docs::document::ParsedDocument;
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
    for text in [r#"{"a":1e400}"#, r#"{"a":"\ud800"}"#, deep.as_str()] {
        let parsed = ParsedDocument::parse(text)
            .map(|d| d.id_key)
            .map_err(|e| e.to_string());
        assert!(parsed.is_err(), "{text}");
        let checked = ParsedDocument::check(text).map_err(|e| e.to_string());
        assert_eq!(checked, parsed, "{text}");
    }
}
