//! `select` over arbitrary input: a typed invalid-input error or a pack whose counters hold,
//! never a panic.

use ctxpack_api::{
    Budget, Error, ErrorKind, Format, Meter, RenderOptions, SelectRequest, Selector, View, render,
    select,
};
use proptest::prelude::*;
use serde_json::Value;

/// Packs `bytes` as `select` does and renders the pack in `format`.
fn run(bytes: &[u8], selector: Selector, format: Format) -> Result<String, Error> {
    let request = SelectRequest {
        goal: "g".into(),
        budget: Budget::new(25).expect("valid"),
        meter: Meter::Words,
        selector,
    };
    let pack = select(&request, bytes)?;
    let options = RenderOptions {
        format,
        view: View::Full,
        pretty: false,
    };
    Ok(render(&pack, &options))
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "id", "citation", "text", "family", "score", "pinned", "path"
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "id",
                    "citation",
                    "text",
                    "family",
                    "score",
                    "pinned",
                    "path",
                    "startLine",
                    "x"
                ])
                .prop_map(str::to_owned),
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Arbitrary bytes (mostly not UTF-8, mostly not JSON) never panic: a typed invalid-input
    /// failure or a pack.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        match run(&bytes, Selector::Diverse, Format::Json) {
            Ok(out) => { let _: Value = serde_json::from_str(&out).expect("a pack is JSON"); }
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidInput),
        }
    }

    /// Arbitrary JSON shaped like candidates: a typed failure or a valid pack whose counters
    /// hold.
    #[test]
    fn arbitrary_json_is_a_pack_or_a_typed_failure(value in arb_json(), selector in prop::sample::select(Selector::ALL.to_vec())) {
        let bytes = serde_json::to_vec(&value).expect("serializes");
        match run(&bytes, selector, Format::Json) {
            Ok(out) => {
                let (candidates, unique, duplicates, rejected, selected) = counters(&out);
                prop_assert_eq!(unique, selected + rejected);
                prop_assert_eq!(candidates, unique + duplicates);
            }
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidInput),
        }
    }

    /// Arbitrary strings as texts and ids render in every format without panicking.
    #[test]
    fn arbitrary_texts_render(id in ".{1,20}", text in "(?s).{0,200}") {
        let input = serde_json::json!([{"id": id, "text": text}]).to_string();
        for format in Format::ALL {
            prop_assert!(run(input.as_bytes(), Selector::Skip, format).is_ok());
        }
    }
}

fn counters(stdout: &str) -> (u64, u64, u64, u64, u64) {
    let v: Value = serde_json::from_str(stdout).expect("stdout is one JSON document");
    let s = &v["selection"];
    let n = |k: &str| s[k].as_u64().expect("counter");
    (
        n("candidateHits"),
        n("uniqueCitations"),
        n("duplicateCitationsSkipped"),
        n("budgetRejectedHits"),
        v["selectedHits"].as_u64().expect("selectedHits"),
    )
}
