//! The budget: a positive safe integer in the units of a meter.

use std::fmt;
use std::str::FromStr;

use crate::error::ValueError;

/// A validated budget: an integer in `1 ..= 2^53 - 1`, the range every JSON consumer can
/// represent exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Budget(u64);

impl Budget {
    /// The largest accepted budget, `2^53 - 1`.
    pub const MAX: u64 = (1 << 53) - 1;

    /// Validates an integer budget.
    pub fn new(value: u64) -> Result<Self, ValueError> {
        match value {
            0 => Err(ValueError::Zero),
            v if v > Self::MAX => Err(ValueError::TooLarge(v.to_string())),
            v => Ok(Budget(v)),
        }
    }

    /// Validates a budget given as a JSON number.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, ValueError> {
        match value {
            serde_json::Value::Number(n) => {
                if let Some(v) = n.as_u64() {
                    Budget::new(v)
                } else if n.as_i64().is_some() {
                    Err(ValueError::Negative(n.to_string()))
                } else {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    if f.fract() != 0.0 || !f.is_finite() {
                        Err(ValueError::NotWhole(n.to_string()))
                    } else if f <= 0.0 {
                        Err(ValueError::Negative(n.to_string()))
                    } else if f > Self::MAX as f64 {
                        Err(ValueError::TooLarge(n.to_string()))
                    } else {
                        // A whole float such as `50.0` in range: exact as an integer.
                        Budget::new(f as u64)
                    }
                }
            }
            other => Err(ValueError::NotANumber(other.to_string())),
        }
    }

    /// The budget as an integer.
    pub fn get(self) -> u64 {
        self.0
    }

    /// Parses a budget as people write one: a positive integer, or a number with a `k`
    /// (thousand) or `m` (million) suffix — `8k`, `32k`, `1.5k`, `1m` — that comes to a whole
    /// number in `1 ..= 2^53 - 1`. Surrounding whitespace is ignored.
    pub fn parse_suffixed(s: &str) -> Result<Budget, ValueError> {
        let text = s.trim();
        let (number, zeros) = match text.as_bytes().last() {
            Some(b'k' | b'K') => (&text[..text.len() - 1], 3),
            Some(b'm' | b'M') => (&text[..text.len() - 1], 6),
            _ => return text.parse(),
        };
        match scaled(number, zeros) {
            Ok(0) => Err(ValueError::Negative(text.to_owned())),
            Ok(value) => Budget::new(value).map_err(|_| ValueError::TooLarge(text.to_owned())),
            Err(Scaled::Negative) => Err(ValueError::Negative(text.to_owned())),
            Err(Scaled::NotWhole) => Err(ValueError::NotWhole(text.to_owned())),
            Err(Scaled::NotANumber) => Err(ValueError::NotANumber(text.to_owned())),
            Err(Scaled::TooLarge) => Err(ValueError::TooLarge(text.to_owned())),
        }
    }
}

/// Why a suffixed number is not a budget.
enum Scaled {
    Negative,
    NotWhole,
    NotANumber,
    TooLarge,
}

/// `number` (digits, optionally with one `.` and more digits) times `10^zeros`, exactly.
fn scaled(number: &str, zeros: u32) -> Result<u64, Scaled> {
    if let Some(rest) = number.strip_prefix('-') {
        return match scaled(rest, zeros) {
            Ok(_) | Err(Scaled::TooLarge | Scaled::NotWhole) => Err(Scaled::Negative),
            Err(other) => Err(other),
        };
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || number.ends_with('.') {
        return Err(Scaled::NotANumber);
    }
    let fraction = fraction.trim_end_matches('0');
    let places = u32::try_from(fraction.len()).map_err(|_| Scaled::NotWhole)?;
    if places > zeros {
        return Err(Scaled::NotWhole);
    }
    let whole = whole.trim_start_matches('0');
    // More digits than any budget has: too large, whatever they are.
    if whole.len() > 20 {
        return Err(Scaled::TooLarge);
    }
    let parse = |part: &str| -> Result<u128, Scaled> {
        if part.is_empty() {
            Ok(0)
        } else {
            part.parse().map_err(|_| Scaled::NotANumber)
        }
    };
    let value = parse(whole)? * 10u128.pow(zeros) + parse(fraction)? * 10u128.pow(zeros - places);
    u64::try_from(value)
        .ok()
        .filter(|v| *v <= Budget::MAX)
        .ok_or(Scaled::TooLarge)
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A budget deserializes from a JSON number with the same checks as [`Budget::from_json`]
/// (any other data format gives a number through `serde_json::Value`).
impl<'de> serde::Deserialize<'de> for Budget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Budget::from_json(&value).map_err(serde::de::Error::custom)
    }
}

impl FromStr for Budget {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Ok(v) = t.parse::<u64>() {
            return Budget::new(v);
        }
        if t.starts_with('-') && t[1..].chars().all(|c| c.is_ascii_digit()) && t.len() > 1 {
            return Err(ValueError::Negative(t.to_owned()));
        }
        if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
            return Err(ValueError::TooLarge(t.to_owned()));
        }
        match t.parse::<f64>() {
            Ok(f) if f.is_finite() && f.fract() != 0.0 => Err(ValueError::NotWhole(t.to_owned())),
            Ok(f) if f.is_finite() && f <= 0.0 => Err(ValueError::Negative(t.to_owned())),
            Ok(f) if f.is_finite() => {
                let json = serde_json::Number::from_f64(f).map(serde_json::Value::Number);
                json.map_or(Err(ValueError::NotANumber(t.to_owned())), |v| {
                    Budget::from_json(&v)
                })
            }
            _ => Err(ValueError::NotANumber(t.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_cases() {
        let cases: &[(&str, Result<u64, &str>)] = &[
            ("1", Ok(1)),
            ("1200", Ok(1200)),
            ("9007199254740991", Ok(Budget::MAX)),
            ("1e3", Ok(1000)),
            ("0", Err("budget must be a positive integer, got 0")),
            ("-5", Err("budget must be a positive integer, got -5")),
            ("2.5", Err("budget must be a whole number, got 2.5")),
            (
                "9007199254740992",
                Err(
                    "budget 9007199254740992 is above the largest safe integer (2^53 - 1 = 9007199254740991)",
                ),
            ),
            (
                "99999999999999999999999",
                Err(
                    "budget 99999999999999999999999 is above the largest safe integer (2^53 - 1 = 9007199254740991)",
                ),
            ),
            ("ten", Err("budget must be a positive integer, got `ten`")),
            ("", Err("budget must be a positive integer, got ``")),
            ("NaN", Err("budget must be a positive integer, got `NaN`")),
        ];
        for (input, expected) in cases {
            let got = input
                .parse::<Budget>()
                .map(Budget::get)
                .map_err(|e| e.to_string());
            assert_eq!(got, expected.map_err(str::to_owned), "input {input:?}");
        }
    }

    #[test]
    fn json_cases() {
        let cases: &[(&str, Result<u64, &str>)] = &[
            ("50", Ok(50)),
            ("50.0", Ok(50)),
            ("0", Err("budget must be a positive integer, got 0")),
            ("-1", Err("budget must be a positive integer, got -1")),
            ("0.5", Err("budget must be a whole number, got 0.5")),
            (
                "1e300",
                Err(
                    "budget 1e+300 is above the largest safe integer (2^53 - 1 = 9007199254740991)",
                ),
            ),
            (
                "\"50\"",
                Err("budget must be a positive integer, got `\"50\"`"),
            ),
            ("null", Err("budget must be a positive integer, got `null`")),
        ];
        for (input, expected) in cases {
            let value: serde_json::Value = serde_json::from_str(input).expect("test input is JSON");
            let got = Budget::from_json(&value)
                .map(Budget::get)
                .map_err(|e| e.to_string());
            assert_eq!(got, expected.map_err(str::to_owned), "input {input}");
        }
    }
}
