//! Context packs: seed 001's worked example byte for byte, and the budget rules.

use ctxpack_core::{Budget, DropReason, Meter, Selector};
use ctxpack_docs::context::{ContextItem, ContextOptions, build, citation, round_score};
use ctxpack_docs::embed::embed;
use ctxpack_docs::knn::FlatIndex;
use serde_json::{Value, json};

const OID_1: &str = "65a1f0c2a1b2c3d4e5f60001";
const OID_2: &str = "65a1f0c2a1b2c3d4e5f60002";

/// Ranks `(id, text)` documents against `query` with the embedder and flat kNN, as
/// `docs context` does.
fn ranked(query: &str, docs: &[(Value, &str)]) -> Vec<ContextItem> {
    let mut index = FlatIndex::new();
    for (_, text) in docs {
        index.push(&embed(text));
    }
    index
        .top_k(&embed(query), docs.len())
        .into_iter()
        .map(|(row, score)| ContextItem {
            id: docs[row].0.clone(),
            score: f64::from(score),
            text: docs[row].1.to_owned(),
        })
        .collect()
}

fn seed_docs() -> Vec<(Value, &'static str)> {
    vec![
        (json!({"$oid": OID_1}), "database search and indexing"),
        (json!({"$oid": OID_2}), "chocolate cake recipe"),
    ]
}

fn options(budget: u64) -> ContextOptions {
    ContextOptions {
        budget: Budget::new(budget).expect("test budgets are valid"),
        ..ContextOptions::default()
    }
}

#[test]
fn seed_001_worked_example() {
    let items = ranked("database search", &seed_docs());
    let pack = build("database search", "docs", items, &options(500));
    let expected = concat!(
        r#"{"query":"database search","budgetTokens":500,"usedTokens":13,"truncated":false,"#,
        r#""chunks":[{"id":{"$oid":"65a1f0c2a1b2c3d4e5f60001"},"score":0.7071,"tokens":7,"text":"database search and indexing"},"#,
        r#"{"id":{"$oid":"65a1f0c2a1b2c3d4e5f60002"},"score":0.0,"tokens":6,"text":"chocolate cake recipe"}],"#,
        r#""citations":[{"$oid":"65a1f0c2a1b2c3d4e5f60001"},{"$oid":"65a1f0c2a1b2c3d4e5f60002"}]}"#,
    );
    assert_eq!(pack.to_json_line(), expected);
    assert!(!pack.truncated());
    // The same bytes whatever order the documents were inserted in.
    let mut reversed = seed_docs();
    reversed.reverse();
    let again = build(
        "database search",
        "docs",
        ranked("database search", &reversed),
        &options(500),
    );
    assert_eq!(again.to_json_line(), expected);
}

#[test]
fn seed_pretty_keeps_key_order() {
    let pack = build(
        "database search",
        "docs",
        ranked("database search", &seed_docs()),
        &options(500),
    );
    let pretty = pack.to_json_pretty();
    let keys = [
        "\"query\"",
        "\"budgetTokens\"",
        "\"usedTokens\"",
        "\"truncated\"",
        "\"chunks\"",
        "\"citations\"",
    ];
    let positions: Vec<usize> = keys
        .iter()
        .map(|k| pretty.find(k).expect("key present"))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{pretty}");
    let parsed: Value = serde_json::from_str(&pretty).expect("pretty output is JSON");
    assert_eq!(parsed, pack.to_json());
}

#[test]
fn default_options_are_the_seed_defaults() {
    let options = ContextOptions::default();
    assert_eq!(options.budget.get(), 1000);
    assert_eq!(options.meter, Meter::Approx);
    assert_eq!(options.selector, Selector::Prefix);
}

#[test]
fn prefix_stops_at_the_first_chunk_that_does_not_fit() {
    let items = vec![
        item(1, 0.9, "database search and indexing"), // 7
        item(2, 0.8, "a much longer chunk of text that will not fit"), // 12
        item(3, 0.7, "tiny"),                         // 1
    ];
    let pack = build("q", "docs", items, &options(10));
    let json = pack.to_json();
    assert_eq!(json["usedTokens"], json!(7));
    assert_eq!(json["truncated"], json!(true));
    assert_eq!(json["citations"], json!([1]));
    // Nothing is dropped silently: the overflow and everything after it carry a reason.
    let reasons: Vec<DropReason> = pack.pack.dropped.iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons,
        [DropReason::OverBudget, DropReason::PrefixTruncated]
    );
}

#[test]
fn a_budget_below_the_top_chunk_gives_an_empty_truncated_pack() {
    let pack = build(
        "q",
        "docs",
        vec![item(1, 0.9, "database search and indexing")],
        &options(6),
    );
    assert_eq!(
        pack.to_json_line(),
        r#"{"query":"q","budgetTokens":6,"usedTokens":0,"truncated":true,"chunks":[],"citations":[]}"#
    );
}

#[test]
fn other_selectors_and_meters() {
    let items = || {
        vec![
            item(1, 0.9, "database search and indexing"),
            item(2, 0.8, "a much longer chunk of text that will not fit"),
            item(3, 0.7, "tiny"),
        ]
    };
    // `skip` drops the overflow and keeps packing.
    let skip = ContextOptions {
        selector: Selector::Skip,
        ..options(10)
    };
    let pack = build("q", "docs", items(), &skip);
    assert_eq!(pack.to_json()["citations"], json!([1, 3]));
    assert_eq!(pack.to_json()["usedTokens"], json!(8));
    assert!(pack.truncated());
    // The meter decides `tokens`.
    let words = ContextOptions {
        meter: Meter::Words,
        ..options(100)
    };
    let pack = build("q", "docs", items(), &words);
    let tokens: Vec<Value> = pack.to_json()["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c["tokens"].clone())
        .collect();
    assert_eq!(tokens, [json!(4), json!(10), json!(1)]);
    assert_eq!(pack.to_json()["usedTokens"], json!(15));
}

#[test]
fn duplicate_ids_are_packed_once() {
    let items = vec![
        item(1, 0.9, "first"),
        item(1, 0.8, "again"),
        item(2, 0.1, "other"),
    ];
    let pack = build("q", "docs", items, &options(100));
    assert_eq!(pack.to_json()["citations"], json!([1, 2]));
    assert!(!pack.truncated());
    assert_eq!(pack.pack.dropped[0].reason, DropReason::Duplicate);
}

#[test]
fn citations_distinguish_id_types() {
    assert_eq!(citation("docs", &json!({"$oid": "ABC"})).0, "doc:docs/abc");
    assert_eq!(citation("docs", &json!(1)).0, "doc:docs/1");
    assert_eq!(citation("docs", &json!("1")).0, r#"doc:docs/"1""#);
    // A plain string is itself; one that another id would print keeps its quotes.
    assert_eq!(citation("docs", &json!("a4")).0, "doc:docs/a4");
    assert_eq!(
        citation("docs", &json!("tickets/2026-01")).0,
        "doc:docs/tickets/2026-01"
    );
    assert_eq!(citation("docs", &json!("true")).0, r#"doc:docs/"true""#);
    assert_eq!(citation("docs", &json!("-1.5")).0, r#"doc:docs/"-1.5""#);
    assert_eq!(citation("docs", &json!("a b")).0, r#"doc:docs/"a b""#);
    assert_eq!(citation("docs", &json!("")).0, r#"doc:docs/"""#);
    let hex = "507f1f77bcf86cd799439011";
    assert_eq!(
        citation("docs", &json!(hex)).0,
        format!("doc:docs/\"{hex}\"")
    );
    assert_eq!(
        citation("docs", &json!({"$oid": hex})).0,
        format!("doc:docs/{hex}")
    );
    let items = vec![item_id(json!(1), "one"), item_id(json!("1"), "string one")];
    let pack = build("q", "docs", items, &options(100));
    assert_eq!(pack.to_json()["citations"], json!([1, "1"]));
}

#[test]
fn scores_round_to_four_decimals() {
    let cases = [
        (0.0, "0.0"),
        (-0.0, "0.0"),
        (-0.00001, "0.0"),
        (std::f64::consts::FRAC_1_SQRT_2, "0.7071"),
        (0.99995, "1.0"),
        (1.0, "1.0"),
        (0.12345, "0.1235"),
        (-0.5, "-0.5"),
        (0.1, "0.1"),
    ];
    for (score, shown) in cases {
        assert_eq!(json!(round_score(score)).to_string(), shown, "{score}");
    }
}

fn item(id: i64, score: f64, text: &str) -> ContextItem {
    ContextItem {
        id: json!(id),
        score,
        text: text.to_owned(),
    }
}

fn item_id(id: Value, text: &str) -> ContextItem {
    ContextItem {
        id,
        score: 0.5,
        text: text.to_owned(),
    }
}
