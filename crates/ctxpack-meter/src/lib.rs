//! Meters: the units a ctxpack budget is measured in.
//!
//! A [`Meter`] turns text into a cost. Two meters are exact token counts of OpenAI's BPE
//! encodings (`o200k`, `cl100k`), counted from compact vocabulary tables compiled into the
//! binary: no count ever needs the network, and a process loads nothing before its first count
//! (see `bpe.rs`). The other three are the units of the systems ctxpack replaces: `words`
//! (whitespace-delimited content units), `chars` (Unicode scalar values) and `approx`
//! (`ceil(chars / 4)`).
//!
//! The `cl100k_base` tables (about 2 MB) come with the default Cargo feature `cl100k`. A build
//! without it still knows the name — its stored records and cost columns stay readable — but
//! refuses to count in it: parsing the name gives [`MeterError::NotBuilt`], and
//! [`Meter::ensure_built`] checks a meter that came from elsewhere (a deserialized request, a
//! program).
//!
//! ```
//! use ctxpack_meter::Meter;
//!
//! assert_eq!(Meter::Words.count("database search and indexing"), 4);
//! assert_eq!(Meter::Approx.count("database search and indexing"), 7);
//! assert_eq!(Meter::O200k.count("hello world"), 2);
//! let meter: Meter = "o200k".parse().unwrap();
//! assert_eq!(meter, Meter::O200k);
//! assert_eq!(
//!     "cl100k".parse::<Meter>().is_ok(),
//!     cfg!(feature = "cl100k"),
//!     "cl100k parses exactly when it is built in",
//! );
//! ```

use std::fmt;
use std::str::FromStr;

mod bpe;
mod lines;
#[cfg(test)]
mod pattern;
mod table;

pub use lines::{LineCounts, line_count};

/// A unit that budgets are measured in.
///
/// Counting is pure and deterministic: the same text always has the same cost. There is no
/// `Default`: each surface documents its own default meter.
///
/// Serde reads and writes every name in [`Meter::ALL`], whether this build counts in it or
/// not, so data written by another build stays readable; a meter taken from a request must be
/// checked with [`Meter::ensure_built`] before counting.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Meter {
    /// Exact token count of OpenAI's `o200k_base` encoding (GPT-4o and later).
    O200k,
    /// Exact token count of OpenAI's `cl100k_base` encoding (GPT-4, GPT-3.5). Counted only in
    /// builds with the Cargo feature `cl100k` (a default feature).
    Cl100k,
    /// Whitespace-delimited content units.
    Words,
    /// Unicode scalar values.
    Chars,
    /// `ceil(chars / 4)`: a crude estimate of tokens.
    Approx,
}

impl Meter {
    /// Every meter ctxpack knows, built in or not, in a stable order (the order of stored cost
    /// columns).
    pub const ALL: [Meter; 5] = [
        Meter::O200k,
        Meter::Cl100k,
        Meter::Words,
        Meter::Chars,
        Meter::Approx,
    ];

    /// The meters this build counts in, in the order of [`Meter::ALL`]: what help texts and
    /// request schemas offer.
    #[cfg(feature = "cl100k")]
    pub const BUILT: &'static [Meter] = &Meter::ALL;

    /// The meters this build counts in, in the order of [`Meter::ALL`]: what help texts and
    /// request schemas offer.
    #[cfg(not(feature = "cl100k"))]
    pub const BUILT: &'static [Meter] = &[Meter::O200k, Meter::Words, Meter::Chars, Meter::Approx];

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

    /// Whether this build counts in this meter (only `cl100k` can be left out).
    pub const fn is_built(self) -> bool {
        match self {
            Meter::Cl100k => cfg!(feature = "cl100k"),
            Meter::O200k | Meter::Words | Meter::Chars | Meter::Approx => true,
        }
    }

    /// `self` if this build counts in it, else [`MeterError::NotBuilt`]: the check for a meter
    /// that did not come from parsing a name (a deserialized request, a program's constant).
    pub fn ensure_built(self) -> Result<Meter, MeterError> {
        if self.is_built() {
            Ok(self)
        } else {
            Err(MeterError::NotBuilt(self))
        }
    }

    /// The cost of `text` in this meter, or [`MeterError::NotBuilt`] if this build leaves the
    /// meter out.
    pub fn try_count(self, text: &str) -> Result<u64, MeterError> {
        let n = match self {
            Meter::O200k => bpe::O200K.count(text),
            #[cfg(feature = "cl100k")]
            Meter::Cl100k => bpe::CL100K.count(text),
            #[cfg(not(feature = "cl100k"))]
            Meter::Cl100k => return Err(MeterError::NotBuilt(self)),
            Meter::Words => text.split_whitespace().count(),
            Meter::Chars => text.chars().count(),
            Meter::Approx => text.chars().count().div_ceil(4),
        };
        // usize is at most 64 bits on every supported target.
        Ok(n as u64)
    }

    /// The cost of `text` in this meter.
    ///
    /// # Panics
    ///
    /// If this build leaves the meter out ([`Meter::is_built`] is false). A meter named by a
    /// user is parsed with [`FromStr`], which refuses such a meter, and a meter from anywhere
    /// else is checked with [`Meter::ensure_built`] where it enters, so counting never meets
    /// one; [`Meter::try_count`] is the checked form.
    pub fn count(self, text: &str) -> u64 {
        match self.try_count(text) {
            Ok(n) => n,
            Err(e) => panic!("{e} (a meter must be checked with `Meter::ensure_built` first)"),
        }
    }

    /// The cost of `text` in this meter line by line ([`LineCounts`]; its total is
    /// [`count`](Meter::count)'s), for a byte-pair encoding built in; `None` for the other
    /// meters.
    pub fn count_lines(self, text: &str) -> Option<LineCounts> {
        match self {
            Meter::O200k => Some(bpe::O200K.count_lines(text)),
            #[cfg(feature = "cl100k")]
            Meter::Cl100k => Some(bpe::CL100K.count_lines(text)),
            _ => None,
        }
    }

    /// The cost of `run`, the lines from line `first` (0-based) of a text whose line counts in
    /// this meter are `counts` (as [`count_lines`](Meter::count_lines) made them): read from
    /// the counts where they tell it ([`LineCounts::window`]), else counting only the lines at
    /// its ends that they do not tell. It is always [`count`](Meter::count)'s for the run.
    ///
    /// # Panics
    ///
    /// As [`count`](Meter::count) does, for a meter this build leaves out.
    pub fn count_run(self, run: &str, first: usize, counts: &LineCounts) -> u64 {
        let lines = line_count(run);
        if let Some(n) = counts.window(first, lines) {
            return n;
        }
        let n = match self {
            Meter::O200k => bpe::O200K.count_run(run, first, counts),
            #[cfg(feature = "cl100k")]
            Meter::Cl100k => bpe::CL100K.count_run(run, first, counts),
            _ => return self.count(run),
        };
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

/// Why a meter name was refused or a meter cannot count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MeterError {
    /// A name that is none of [`Meter::ALL`].
    Unknown(String),
    /// A meter this build was compiled without (`cl100k` without the Cargo feature `cl100k`).
    NotBuilt(Meter),
}

impl fmt::Display for MeterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MeterError::Unknown(name) => {
                write!(f, "unknown meter `{name}`: expected one of ")?;
                for (i, meter) in Meter::BUILT.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(meter.name())?;
                }
                Ok(())
            }
            MeterError::NotBuilt(meter) => write!(
                f,
                "this build has no {meter}; rebuild with --features {meter}"
            ),
        }
    }
}

impl std::error::Error for MeterError {}

impl FromStr for Meter {
    type Err = MeterError;

    /// Parses a meter name; a meter this build leaves out is [`MeterError::NotBuilt`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Meter::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| MeterError::Unknown(s.to_owned()))?
            .ensure_built()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_count_is_the_lines_a_split_gives() {
        for text in [
            "",
            "a",
            "a\n",
            "a\nb",
            "\n",
            "\n\n",
            "a\r\nb\r\n",
            "é\nü",
            "a\n\nb\n",
        ] {
            assert_eq!(
                line_count(text),
                text.split_inclusive('\n').count(),
                "{text:?}"
            );
        }
    }

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
        for meter in Meter::BUILT.iter().copied() {
            assert_eq!(meter.name().parse::<Meter>(), Ok(meter));
        }
        let expected = if cfg!(feature = "cl100k") {
            "unknown meter `tokens`: expected one of o200k, cl100k, words, chars, approx"
        } else {
            "unknown meter `tokens`: expected one of o200k, words, chars, approx"
        };
        assert_eq!("tokens".parse::<Meter>().unwrap_err().to_string(), expected);
    }

    #[test]
    fn built_lists_the_meters_that_count_in_the_order_of_all() {
        let built: Vec<Meter> = Meter::ALL.into_iter().filter(|m| m.is_built()).collect();
        assert_eq!(Meter::BUILT, built.as_slice());
        for meter in Meter::ALL {
            assert_eq!(meter.ensure_built().is_ok(), meter.is_built(), "{meter}");
            assert_eq!(meter.try_count("a b").is_ok(), meter.is_built(), "{meter}");
        }
        assert_eq!(Meter::Cl100k.is_built(), cfg!(feature = "cl100k"));
    }

    #[test]
    fn serde_reads_every_name_built_or_not() {
        for meter in Meter::ALL {
            let json = serde_json::to_string(&meter).expect("a meter serializes");
            assert_eq!(json, format!("\"{}\"", meter.name()));
            assert_eq!(serde_json::from_str::<Meter>(&json).ok(), Some(meter));
        }
    }

    #[cfg(not(feature = "cl100k"))]
    #[test]
    fn a_build_without_cl100k_refuses_it_with_the_feature_to_enable() {
        let expected = "this build has no cl100k; rebuild with --features cl100k";
        let parsed = "cl100k".parse::<Meter>();
        assert_eq!(parsed, Err(MeterError::NotBuilt(Meter::Cl100k)));
        assert_eq!(parsed.unwrap_err().to_string(), expected);
        assert_eq!(
            Meter::Cl100k.ensure_built(),
            Err(MeterError::NotBuilt(Meter::Cl100k))
        );
        assert_eq!(
            Meter::Cl100k.try_count("hello world"),
            Err(MeterError::NotBuilt(Meter::Cl100k))
        );
        assert!(!Meter::BUILT.contains(&Meter::Cl100k));
    }

    #[cfg(not(feature = "cl100k"))]
    #[test]
    #[should_panic(expected = "this build has no cl100k; rebuild with --features cl100k")]
    fn counting_an_unchecked_meter_that_is_not_built_panics_with_the_reason() {
        Meter::Cl100k.count("hello world");
    }
}
