//! Meters: the units a ctxpack budget is measured in.
//!
//! A [`Meter`] turns text into a cost. Two meters are exact token counts of OpenAI's BPE
//! encodings (`o200k`, `cl100k`), computed with vocabularies compiled into the binary, so no
//! count ever needs the network. The other three are the units of the systems ctxpack replaces:
//! `words` (whitespace-delimited content units), `chars` (Unicode scalar values) and `approx`
//! (`ceil(chars / 4)`).
//!
//! ```
//! use ctxpack_meter::Meter;
//!
//! assert_eq!(Meter::Words.count("database search and indexing"), 4);
//! assert_eq!(Meter::Approx.count("database search and indexing"), 7);
//! assert_eq!(Meter::Cl100k.count("hello world"), 2);
//! let meter: Meter = "o200k".parse().unwrap();
//! assert_eq!(meter, Meter::O200k);
//! ```

use std::fmt;
use std::str::FromStr;

/// A unit that budgets are measured in.
///
/// Counting is pure and deterministic: the same text always has the same cost. There is no
/// `Default`: each surface documents its own default meter.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Meter {
    /// Exact token count of OpenAI's `o200k_base` encoding (GPT-4o and later).
    O200k,
    /// Exact token count of OpenAI's `cl100k_base` encoding (GPT-4, GPT-3.5).
    Cl100k,
    /// Whitespace-delimited content units.
    Words,
    /// Unicode scalar values.
    Chars,
    /// `ceil(chars / 4)`: a crude estimate of tokens.
    Approx,
}

impl Meter {
    /// Every meter, in a stable order (the order used in help and in stored cost columns).
    pub const ALL: [Meter; 5] = [
        Meter::O200k,
        Meter::Cl100k,
        Meter::Words,
        Meter::Chars,
        Meter::Approx,
    ];

    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Meter::O200k => "o200k",
            Meter::Cl100k => "cl100k",
            Meter::Words => "words",
            Meter::Chars => "chars",
            Meter::Approx => "approx",
        }
    }

    /// The cost of `text` in this meter.
    pub fn count(self, text: &str) -> u64 {
        let n = match self {
            Meter::O200k => bpe_openai::o200k_base().count(text),
            Meter::Cl100k => bpe_openai::cl100k_base().count(text),
            Meter::Words => text.split_whitespace().count(),
            Meter::Chars => text.chars().count(),
            Meter::Approx => text.chars().count().div_ceil(4),
        };
        // usize is at most 64 bits on every supported target.
        n as u64
    }

    /// Whether this meter counts tokens of a real encoding (as opposed to a heuristic unit).
    pub fn is_exact_tokenizer(self) -> bool {
        matches!(self, Meter::O200k | Meter::Cl100k)
    }
}

impl fmt::Display for Meter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a meter name that is not one of [`Meter::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMeter(pub String);

impl fmt::Display for UnknownMeter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown meter `{}`: expected one of o200k, cl100k, words, chars, approx",
            self.0
        )
    }
}

impl std::error::Error for UnknownMeter {}

impl FromStr for Meter {
    type Err = UnknownMeter;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Meter::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMeter(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heuristic_units() {
        let cases: &[(&str, u64, u64, u64)] = &[
            // text, words, chars, approx
            ("", 0, 0, 0),
            ("database search and indexing", 4, 28, 7),
            ("chocolate cake recipe", 3, 21, 6),
            ("  leading\tand\ntrailing  ", 3, 24, 6),
            ("naïve café", 2, 10, 3),
            ("日本語のテキスト", 1, 8, 2),
            ("a", 1, 1, 1),
        ];
        for &(text, words, chars, approx) in cases {
            assert_eq!(Meter::Words.count(text), words, "words of {text:?}");
            assert_eq!(Meter::Chars.count(text), chars, "chars of {text:?}");
            assert_eq!(Meter::Approx.count(text), approx, "approx of {text:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for meter in Meter::ALL {
            assert_eq!(meter.name().parse::<Meter>(), Ok(meter));
        }
        assert_eq!(
            "tokens".parse::<Meter>().unwrap_err().to_string(),
            "unknown meter `tokens`: expected one of o200k, cl100k, words, chars, approx"
        );
    }
}
