//! The one error of this crate: a value that cannot be used.

/// Why a value was refused: a budget, or a selector's, format's or view's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Zero admits nothing and is always a mistake.
    #[error("budget must be a positive integer, got 0")]
    Zero,
    /// Above the largest integer a JSON consumer can represent exactly.
    #[error("budget {0} is above the largest safe integer (2^53 - 1 = 9007199254740991)")]
    TooLarge(String),
    /// Negative numbers.
    #[error("budget must be a positive integer, got {0}")]
    Negative(String),
    /// Fractions, exponents that leave a fraction, NaN and friends.
    #[error("budget must be a whole number, got {0}")]
    NotWhole(String),
    /// Anything that is not a number at all.
    #[error("budget must be a positive integer, got `{0}`")]
    NotANumber(String),
    /// A selector name that is not one of [`Selector::ALL`](crate::Selector::ALL).
    #[error("unknown selector `{0}`: expected one of diverse, prefix, skip, coverage")]
    UnknownSelector(String),
    /// A format name that is not one of [`Format::ALL`](crate::Format::ALL).
    #[error("unknown format `{0}`: expected one of text, json, both, markdown, xml")]
    UnknownFormat(String),
    /// A view name that is not one of [`View::ALL`](crate::View::ALL).
    #[error("unknown view `{0}`: expected one of minimal, default, full")]
    UnknownView(String),
}
