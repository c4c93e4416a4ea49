//! Packing candidates the caller already has (from any retriever), without an index.
//!
//! The input is a JSON array of candidates in rank order:
//! `{"id" | "citation": "…", "text": "…", "family"?: "…", "score"?: n, "pinned"?: bool,
//! "title"?: "…", "path"?: "…", "startLine"?: n, "endLine"?: n, "symbol"?: "…"}`.

use ctxpack_core::{
    Budget, Candidate, Family, Location, Meter, Pack, PackRequest, RenderOptions, Selector, Tier,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Hint, Result, no_store};
use crate::schema;
use crate::workspace::{RecordExtra, Recorded, Workspace};

/// Pack given candidates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SelectRequest {
    /// A label for the pack (its goal).
    pub goal: String,
    /// The hard budget, in units of `meter`.
    #[schemars(with = "schema::Budget")]
    pub budget: Budget,
    /// The budget unit.
    #[schemars(with = "schema::Meter")]
    pub meter: Meter,
    /// The selection policy.
    #[schemars(with = "schema::Selector")]
    pub selector: Selector,
}

impl Default for SelectRequest {
    fn default() -> Self {
        SelectRequest {
            goal: String::new(),
            budget: Budget::new(1200).expect("1200 is a valid budget"),
            meter: Meter::O200k,
            selector: Selector::Coverage,
        }
    }
}

/// Packs the candidates in `input` (raw bytes, which may be anything: they are checked).
pub fn select(request: &SelectRequest, input: &[u8]) -> Result<Pack> {
    crate::limits::check_goal_size("goal", &request.goal)?;
    let mut redactions = ctxpack_core::RedactionSummary::default();
    let mut candidates = parse_candidates(input, request.meter)?;
    for candidate in &mut candidates {
        crate::mask::candidate(candidate, request.meter, &mut redactions);
    }
    let mut pack = Pack::build(
        PackRequest {
            goal: crate::mask::text(&request.goal, &mut redactions),
            budget: request.budget,
            meter: request.meter,
            selector: request.selector,
        },
        candidates,
    );
    pack.set_redactions(redactions);
    Ok(pack)
}

impl Workspace {
    /// Packs the candidates in `input` and records the pack in this workspace's ledger with
    /// `rendering` (a workspace over a store directory needs no repository).
    pub fn select(
        &self,
        request: &SelectRequest,
        input: &[u8],
        rendering: &RenderOptions,
    ) -> Result<(Pack, Recorded)> {
        crate::limits::check_meter(request.meter)?;
        self.admit_record(Some(rendering))?;
        // A store directory that is not there is a mistake, not a place to start one.
        let dir = self.store_root()?;
        if !dir.is_dir() {
            return Err(no_store(dir.to_owned(), true));
        }
        let pack = select(request, input)?;
        let recorded = self.record(&pack, "select", Some(rendering), RecordExtra::default());
        Ok((pack, recorded))
    }
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
pub fn parse_candidates(input: &[u8], meter: Meter) -> Result<Vec<Candidate>> {
    let text = std::str::from_utf8(input).map_err(|e| {
        Error::invalid(format!(
            "input is not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Error::invalid(format!("input is not valid JSON: {e}")).with_hint(Hint::Advice(
            "give a JSON array of {\"id\", \"text\"} objects".into(),
        ))
    })?;
    let Value::Array(items) = value else {
        return Err(Error::invalid(format!(
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

fn parse_candidate(n: usize, item: &Value, meter: Meter) -> Result<Candidate> {
    let Value::Object(obj) = item else {
        return Err(Error::invalid(format!(
            "candidate {n} must be an object, got {}",
            kind_of(item)
        )));
    };
    if let Some(key) = obj.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        return Err(Error::invalid(format!(
            "candidate {n} has unknown key `{key}`; known keys: {}",
            KNOWN_KEYS.join(", ")
        )));
    }
    let id = opt_str(obj, "id", n)?;
    let citation = opt_str(obj, "citation", n)?;
    let citation = match (id, citation) {
        (Some(a), Some(b)) if a != b => {
            return Err(Error::invalid(format!(
                "candidate {n} has both `id` ({a:?}) and `citation` ({b:?}) and they differ; give one"
            )));
        }
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => {
            return Err(Error::invalid(format!(
                "candidate {n} has no `id` or `citation`"
            )));
        }
    };
    if citation.is_empty() {
        return Err(Error::invalid(format!(
            "candidate {n} has an empty citation id"
        )));
    }
    let text = opt_str(obj, "text", n)?
        .ok_or_else(|| Error::invalid(format!("candidate {n} ({citation}) has no `text`")))?;
    let mut candidate = Candidate::new(citation, text, meter);
    if let Some(family) = opt_str(obj, "family", n)? {
        candidate.family = Family(family.to_owned());
    }
    match obj.get("score") {
        None | Some(Value::Null) => {}
        Some(Value::Number(s)) => candidate.score = s.as_f64(),
        Some(other) => {
            return Err(Error::invalid(format!(
                "candidate {n}: `score` must be a number, got {}",
                kind_of(other)
            )));
        }
    }
    match obj.get("pinned") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => candidate.tier = Tier::Pinned,
        Some(other) => {
            return Err(Error::invalid(format!(
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
            return Err(Error::invalid(format!(
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

fn opt_str<'a>(obj: &'a Map<String, Value>, key: &str, n: usize) -> Result<Option<&'a str>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Error::invalid(format!(
            "candidate {n}: `{key}` must be a string, got {}",
            kind_of(other)
        ))),
    }
}

fn opt_line(obj: &Map<String, Value>, key: &str, n: usize) -> Result<Option<u32>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(v)) => match v.as_u64().and_then(|v| u32::try_from(v).ok()) {
            Some(line) if line >= 1 => Ok(Some(line)),
            _ => Err(Error::invalid(format!(
                "candidate {n}: `{key}` must be a line number >= 1, got {v}"
            ))),
        },
        Some(other) => Err(Error::invalid(format!(
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
