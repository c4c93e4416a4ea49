//! `ctxpack select`: pack candidates given as JSON, without an index.
//!
//! The input is a JSON array of candidates in rank order:
//! `{"id" | "citation": "…", "text": "…", "family"?: "…", "score"?: n, "pinned"?: bool,
//! "title"?: "…", "path"?: "…", "startLine"?: n, "endLine"?: n, "symbol"?: "…"}`.

use ctxpack_core::{
    Budget, Candidate, Family, Location, Meter, Pack, PackRequest, RenderOptions, Selector, Tier,
    render,
};
use serde_json::{Map, Value};

use crate::failure::Failure;

/// Options of `ctxpack select`.
#[derive(Clone, Debug)]
pub struct SelectOptions {
    /// A label for the pack.
    pub goal: String,
    /// The hard budget.
    pub budget: Budget,
    /// The unit of the budget.
    pub meter: Meter,
    /// The selection policy.
    pub selector: Selector,
    /// Format, view and pretty-printing.
    pub render: RenderOptions,
    /// Record the pack in the ledger of this store, if set.
    pub ledger: Option<std::path::PathBuf>,
}

const KNOWN_KEYS: &[&str] = &[
    "id",
    "citation",
    "text",
    "family",
    "score",
    "pinned",
    "title",
    "path",
    "startLine",
    "endLine",
    "symbol",
];

/// Parses candidates from raw input bytes (which may be anything, including invalid UTF-8),
/// costing each text with `meter`.
pub fn parse_candidates(input: &[u8], meter: Meter) -> Result<Vec<Candidate>, Failure> {
    let text = std::str::from_utf8(input).map_err(|e| {
        Failure::invalid(format!(
            "input is not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Failure::invalid(format!("input is not valid JSON: {e}"))
            .with_hint("pass a JSON array of {\"id\", \"text\"} objects")
    })?;
    let Value::Array(items) = value else {
        return Err(Failure::invalid(format!(
            "input must be a JSON array of candidates, got {}",
            kind_of(&value)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_candidate(i + 1, item, meter))
        .collect()
}

fn parse_candidate(n: usize, item: &Value, meter: Meter) -> Result<Candidate, Failure> {
    let Value::Object(obj) = item else {
        return Err(Failure::invalid(format!(
            "candidate {n} must be an object, got {}",
            kind_of(item)
        )));
    };
    if let Some(key) = obj.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        return Err(Failure::invalid(format!(
            "candidate {n} has unknown key `{key}`; known keys: {}",
            KNOWN_KEYS.join(", ")
        )));
    }
    let id = opt_str(obj, "id", n)?;
    let citation = opt_str(obj, "citation", n)?;
    let citation = match (id, citation) {
        (Some(a), Some(b)) if a != b => {
            return Err(Failure::invalid(format!(
                "candidate {n} has both `id` ({a:?}) and `citation` ({b:?}) and they differ; give one"
            )));
        }
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => {
            return Err(Failure::invalid(format!(
                "candidate {n} has no `id` or `citation`"
            )));
        }
    };
    if citation.is_empty() {
        return Err(Failure::invalid(format!(
            "candidate {n} has an empty citation id"
        )));
    }
    let text = opt_str(obj, "text", n)?
        .ok_or_else(|| Failure::invalid(format!("candidate {n} ({citation}) has no `text`")))?;
    let mut candidate = Candidate::new(citation, text, meter);
    if let Some(family) = opt_str(obj, "family", n)? {
        candidate.family = Family(family.to_owned());
    }
    match obj.get("score") {
        None | Some(Value::Null) => {}
        Some(Value::Number(s)) => candidate.score = s.as_f64(),
        Some(other) => {
            return Err(Failure::invalid(format!(
                "candidate {n}: `score` must be a number, got {}",
                kind_of(other)
            )));
        }
    }
    match obj.get("pinned") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => candidate.tier = Tier::Pinned,
        Some(other) => {
            return Err(Failure::invalid(format!(
                "candidate {n}: `pinned` must be true or false, got {}",
                kind_of(other)
            )));
        }
    }
    candidate.title = opt_str(obj, "title", n)?.map(str::to_owned);
    if let Some(path) = opt_str(obj, "path", n)? {
        let start_line = opt_line(obj, "startLine", n)?.unwrap_or(1);
        let end_line = opt_line(obj, "endLine", n)?.unwrap_or(start_line);
        if end_line < start_line {
            return Err(Failure::invalid(format!(
                "candidate {n}: `endLine` {end_line} is before `startLine` {start_line}"
            )));
        }
        candidate.location = Some(Location {
            path: path.to_owned(),
            start_line,
            end_line,
            symbol: opt_str(obj, "symbol", n)?.map(str::to_owned),
        });
    }
    Ok(candidate)
}

fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    n: usize,
) -> Result<Option<&'a str>, Failure> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Failure::invalid(format!(
            "candidate {n}: `{key}` must be a string, got {}",
            kind_of(other)
        ))),
    }
}

fn opt_line(obj: &Map<String, Value>, key: &str, n: usize) -> Result<Option<u32>, Failure> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(v)) => match v.as_u64().and_then(|v| u32::try_from(v).ok()) {
            Some(line) if line >= 1 => Ok(Some(line)),
            _ => Err(Failure::invalid(format!(
                "candidate {n}: `{key}` must be a line number >= 1, got {v}"
            ))),
        },
        Some(other) => Err(Failure::invalid(format!(
            "candidate {n}: `{key}` must be a number, got {}",
            kind_of(other)
        ))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Runs `select` over raw input bytes and returns the rendered pack.
pub fn run(input: &[u8], options: &SelectOptions) -> Result<String, Failure> {
    let candidates = parse_candidates(input, options.meter)?;
    let pack = Pack::build(
        PackRequest {
            goal: options.goal.clone(),
            budget: options.budget,
            meter: options.meter,
            selector: options.selector,
        },
        candidates,
    );
    if let Some(store_dir) = &options.ledger {
        let context = ctxpack_store::RecordContext {
            surface: "select".into(),
            rendered: crate::commands::ledger::rendered(&options.render),
            pretty: options.render.pretty,
            ..Default::default()
        };
        crate::commands::ledger::record(store_dir, &pack, &context);
    }
    Ok(render(&pack, &options.render))
}
