//! Rendering a pack for people, prompts and programs.
//!
//! Every renderer is a pure function of the pack and the options, so the same pack always
//! renders to the same bytes.

mod json;
mod markdown;
mod text;
mod xml;

use std::fmt;
use std::str::FromStr;

use crate::pack::Pack;

pub use json::pack_json;

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
    /// An XML document with each hit in a `<hit citation="…">` element.
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

        #[doc = concat!("The error for an unknown ", stringify!($ty), " name.")]
        #[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
        #[error("unknown {kind} `{0}`: expected one of {expected}", kind = stringify!($ty).to_lowercase(), expected = $expected)]
        pub struct $err(pub String);

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
            type Err = $err;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL
                    .into_iter()
                    .find(|v| v.name() == s)
                    .ok_or_else(|| $err(s.to_owned()))
            }
        }
    };
}

named_enum!(Format, UnknownFormat, "text, json, both, markdown, xml");
named_enum!(View, UnknownView, "minimal, default, full");

/// Rendering options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// The output format.
    pub format: Format,
    /// How much of each hit to project.
    pub view: View,
    /// Pretty-print JSON over several lines instead of one canonical line.
    pub pretty: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            format: Format::Text,
            view: View::Default,
            pretty: false,
        }
    }
}

/// Renders a pack. The result always ends with a newline.
pub fn render(pack: &Pack, options: &RenderOptions) -> String {
    let json = || {
        let value = pack_json(pack, options.view);
        let mut out = if options.pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        }
        .expect("a JSON value always serializes");
        out.push('\n');
        out
    };
    match options.format {
        Format::Text => text::render(pack, options.view),
        Format::Json => json(),
        Format::Both => format!("{}\n{}", text::render(pack, options.view), json()),
        Format::Markdown => markdown::render(pack, options.view),
        Format::Xml => xml::render(pack, options.view),
    }
}
