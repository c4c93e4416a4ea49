//! The values a plan binds: a text, or a ranked list of cited hits.

use std::collections::BTreeMap;

use ctxpack_core::{Citation, Family, Location, Pack};

/// What a source produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// One text (`read`, `text`, `artifact`, `run`). In a ctx it is one member, cited
    /// `plan:<ctx>/<member>`.
    Text(Text),
    /// Retrieval hits in rank order (`query`, `docs`, or a ctx used as a member). In a ctx each
    /// hit is its own candidate, keeping its own citation.
    Hits(Vec<SourceHit>),
}

impl Value {
    /// A plain text value.
    pub fn text(text: impl Into<String>) -> Value {
        Value::Text(Text::new(text))
    }

    /// The hits a pack selected, in pack order: how a ctx is seen when another ctx includes
    /// it.
    pub fn from_pack(pack: &Pack) -> Value {
        Value::Hits(
            pack.hits
                .iter()
                .map(|h| {
                    let c = &h.candidate;
                    SourceHit {
                        citation: c.citation.clone(),
                        family: c.family.clone(),
                        text: c.text.clone(),
                        score: c.score,
                        location: c.location.clone(),
                        title: c.title.clone(),
                        artifact: None,
                        redactions: BTreeMap::new(),
                    }
                })
                .collect(),
        )
    }

    /// `text` or `hits`.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Text(_) => "text",
            Value::Hits(_) => "hits",
        }
    }
}

/// A text value and where it came from.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Text {
    /// The text.
    pub text: String,
    /// A human title naming its origin (`crates/x.rs@3fa9c1e`, `run: cargo test (exit 1)`).
    pub title: Option<String>,
    /// The file span it was read from, if any.
    pub location: Option<Location>,
    /// The artifact it is, if any.
    pub artifact: Option<String>,
}

impl Text {
    /// A text with no provenance.
    pub fn new(text: impl Into<String>) -> Text {
        Text {
            text: text.into(),
            ..Text::default()
        }
    }
}

/// One retrieval hit.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceHit {
    /// Its own citation (`src/a.rs#L1-L9@3fa9c1e`, `doc:tickets/7`).
    pub citation: Citation,
    /// Its source family.
    pub family: Family,
    /// The text.
    pub text: String,
    /// The retrieval score, if any.
    pub score: Option<f64>,
    /// The file span, if any.
    pub location: Option<Location>,
    /// A human title, if any.
    pub title: Option<String>,
    /// The artifact it belongs to, if any.
    pub artifact: Option<String>,
    /// Secrets masked in the text before it got here, by kind.
    pub redactions: BTreeMap<String, u64>,
}

impl SourceHit {
    /// A hit whose family is derived from its citation.
    pub fn new(citation: impl Into<String>, text: impl Into<String>) -> SourceHit {
        let citation = Citation(citation.into());
        SourceHit {
            family: Family::from_citation(&citation),
            citation,
            text: text.into(),
            score: None,
            location: None,
            title: None,
            artifact: None,
            redactions: BTreeMap::new(),
        }
    }
}
