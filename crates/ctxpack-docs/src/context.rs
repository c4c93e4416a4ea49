//! Context packs over documents: ranked `(id, score, text)` items through the pack engine,
//! rendered as the document-pack JSON.
//!
//! The items become [`Candidate`]s (cited as `doc:<collection>/<id>`, one source family per
//! document), the engine selects whole chunks under the budget, and [`ContextPack::to_json`]
//! renders one object with the keys `query`, `budgetTokens`, `usedTokens`, `truncated`,
//! `chunks` (each `id`, `score`, `tokens`, `text`) and `citations`, in that order. Scores are
//! rounded to four decimals. The defaults ([`ContextOptions::default`]) are a budget of 1000,
//! the `approx` meter (`ceil(chars / 4)`) and the `prefix` selector, which stops at the first
//! chunk that does not fit.
//!
//! ```
//! use ctxpack_docs::context::{ContextItem, ContextOptions, build};
//! use serde_json::json;
//!
//! let items = vec![ContextItem { id: json!(1), score: 0.70710678, text: "database search".into() }];
//! let pack = build("search", "docs", items, &ContextOptions::default());
//! assert_eq!(
//!     pack.to_json_line(),
//!     r#"{"query":"search","budgetTokens":1000,"usedTokens":4,"truncated":false,"chunks":[{"id":1,"score":0.7071,"tokens":4,"text":"database search"}],"citations":[1]}"#
//! );
//! ```

use ctxpack_core::{Budget, Candidate, Citation, Family, Meter, Pack, PackRequest, Selector};
use serde_json::{Map, Value, json};

/// One ranked document chunk offered to a pack.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextItem {
    /// The document's `_id`, rendered as given (e.g. `{"$oid": "…"}`).
    pub id: Value,
    /// Its similarity to the query; higher is better.
    pub score: f64,
    /// The chunk text.
    pub text: String,
}

/// How a pack is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextOptions {
    /// The hard budget, in `meter` units.
    pub budget: Budget,
    /// The unit of the budget and of every chunk's `tokens`.
    pub meter: Meter,
    /// The selection policy.
    pub selector: Selector,
}

impl ContextOptions {
    /// The default budget: 1000.
    pub const DEFAULT_BUDGET: u64 = 1000;
}

impl Default for ContextOptions {
    /// Budget 1000, the `approx` meter, the `prefix` selector.
    fn default() -> Self {
        ContextOptions {
            budget: Budget::new(Self::DEFAULT_BUDGET).expect("1000 is a valid budget"),
            meter: Meter::Approx,
            selector: Selector::Prefix,
        }
    }
}

/// A built context pack: the engine's [`Pack`] plus the document ids and scores it renders.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextPack {
    /// The query the pack was built for.
    pub query: String,
    /// The engine's pack: hits, drops, counters, warnings.
    pub pack: Pack,
    /// The items' ids, by incoming position (a hit's `rank - 1`).
    ids: Vec<Value>,
}

/// The citation of a document: `doc:<collection>/<id>`, where an ObjectId is its hex string, a
/// plain string id is itself (`doc:docs/a4`), and any other id is its compact JSON. A string
/// keeps its JSON quotes when its bare form could be another id's: the string `"1"` and the
/// number `1` differ, as do the string of 24 hexadecimal digits and the ObjectId.
pub fn citation(collection: &str, id: &Value) -> Citation {
    Citation(format!("doc:{collection}/{}", id_key(id)))
}

fn id_key(id: &Value) -> String {
    match id {
        Value::Object(map) if map.len() == 1 => match map.get("$oid") {
            Some(Value::String(hex)) => hex.to_ascii_lowercase(),
            _ => id.to_string(),
        },
        Value::String(text) if plain(text) => text.clone(),
        _ => id.to_string(),
    }
}

/// Whether a string id can be shown bare: letters, digits and `._~:@+-/` only, and not what
/// another id would print (JSON by itself, such as a number or `true`, or an ObjectId's 24
/// hexadecimal digits).
fn plain(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._~:@+-/".contains(c))
        && serde_json::from_str::<Value>(text).is_err()
        && !(text.len() == 24 && text.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Builds a pack from items in rank order (best first). Items with the same id are
/// deduplicated by the engine (the first stays).
pub fn build(
    query: &str,
    collection: &str,
    items: Vec<ContextItem>,
    options: &ContextOptions,
) -> ContextPack {
    let mut ids = Vec::with_capacity(items.len());
    let candidates = items
        .into_iter()
        .map(|item| {
            let key = id_key(&item.id);
            let candidate =
                Candidate::new(citation(collection, &item.id).0, item.text, options.meter)
                    .with_family(Family::collection(collection, &key))
                    .with_score(item.score);
            ids.push(item.id);
            candidate
        })
        .collect();
    let request = PackRequest {
        goal: query.to_owned(),
        budget: options.budget,
        meter: options.meter,
        selector: options.selector,
    };
    ContextPack {
        query: query.to_owned(),
        pack: Pack::build(request, candidates),
        ids,
    }
}

/// Rounds to four decimals, with `-0.0` shown as `0.0`. A non-finite score renders as `null`.
pub fn round_score(score: f64) -> f64 {
    let rounded = (score * 10_000.0).round() / 10_000.0;
    if rounded == 0.0 { 0.0 } else { rounded }
}

impl ContextPack {
    /// Whether a unique chunk was left out because the budget filled up.
    pub fn truncated(&self) -> bool {
        self.pack.truncated()
    }

    /// The pack as a JSON object with the document-pack key order.
    pub fn to_json(&self) -> Value {
        let mut chunks = Vec::with_capacity(self.pack.hits.len());
        let mut citations = Vec::with_capacity(self.pack.hits.len());
        for hit in &self.pack.hits {
            let id = self
                .ids
                .get(hit.rank - 1)
                .cloned()
                .expect("a hit's rank is a 1-based position among the items");
            let score = hit.candidate.score.map(round_score);
            let mut chunk = Map::new();
            chunk.insert("id".into(), id.clone());
            chunk.insert("score".into(), json!(score));
            chunk.insert("tokens".into(), json!(hit.candidate.cost));
            chunk.insert("text".into(), json!(hit.candidate.text));
            chunks.push(Value::Object(chunk));
            citations.push(id);
        }
        let mut out = Map::new();
        out.insert("query".into(), json!(self.query));
        out.insert("budgetTokens".into(), json!(self.pack.budget.get()));
        out.insert("usedTokens".into(), json!(self.pack.used));
        out.insert("truncated".into(), json!(self.truncated()));
        out.insert("chunks".into(), Value::Array(chunks));
        out.insert("citations".into(), Value::Array(citations));
        Value::Object(out)
    }

    /// The pack as one line of canonical JSON.
    pub fn to_json_line(&self) -> String {
        self.to_json().to_string()
    }

    /// The pack as indented JSON, same key order.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.to_json())
            .expect("a JSON value with string keys always serialises")
    }
}
