//! The output formats and views a pack is rendered in, named as flags and settings name them.

use std::fmt;
use std::str::FromStr;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Header lines (`selection_strategy: …`) followed by each hit.
    Text,
    /// Canonical JSON.
    Json,
    /// Text, a blank line, then JSON.
    Both,
    /// A Markdown document with each hit fenced under its citation.
    Markdown,
    /// An XML document with the hits grouped by file, each range in a
    /// `<file path="…" lines="…">` element.
    Xml,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 5] = [
        Format::Text,
        Format::Json,
        Format::Both,
        Format::Markdown,
        Format::Xml,
    ];

    /// The text format whose printed output a budget covering the output is fitted to, when
    /// a pack is shown in this format: itself for `text`, `markdown` and `xml`; `text` for
    /// `both` (its text part is what fits; the JSON after it reports what that text
    /// measured); `markdown` for `json` (the JSON carries the hits of the Markdown pack, the
    /// form a chat or an MCP client shows, and reports what that Markdown measured).
    pub fn fitted(self) -> Format {
        match self {
            Format::Text | Format::Both => Format::Text,
            Format::Markdown | Format::Json => Format::Markdown,
            Format::Xml => Format::Xml,
        }
    }

    /// The name accepted by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Both => "both",
            Format::Markdown => "markdown",
            Format::Xml => "xml",
        }
    }
}

/// How much of each hit is projected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum View {
    /// Citation and text only: the leanest form for an agent's context window.
    Minimal,
    /// Also family, cost and location.
    #[default]
    Default,
    /// Also rank, tier, title, and the full list of dropped candidates with remaining budget.
    Full,
}

impl View {
    /// Every view.
    pub const ALL: [View; 3] = [View::Minimal, View::Default, View::Full];

    /// The name accepted by `--view`.
    pub fn name(self) -> &'static str {
        match self {
            View::Minimal => "minimal",
            View::Default => "default",
            View::Full => "full",
        }
    }
}

macro_rules! named_enum {
    ($ty:ident, $err:ident, $expected:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = String::deserialize(deserializer)?;
                name.parse().map_err(serde::de::Error::custom)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl FromStr for $ty {
            type Err = crate::ValueError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL
                    .into_iter()
                    .find(|v| v.name() == s)
                    .ok_or_else(|| crate::ValueError::$err(s.to_owned()))
            }
        }
    };
}

named_enum!(Format, UnknownFormat, "text, json, both, markdown, xml");
named_enum!(View, UnknownView, "minimal, default, full");
