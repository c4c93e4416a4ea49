//! Documents as text: parsing, the canonical `_id` key, exact round-trips, field paths and
//! ObjectIds.
//!
//! A document is stored as the text it was given, minus insignificant whitespace
//! ([`minify`]), so key order, number spelling (`1.50`, `1e400`, 20-digit integers) and string
//! escapes come back exactly. When it has no `_id`, one is generated and put first
//! ([`with_id_first`]). The key of a document in its collection is [`id_key`]: the canonical
//! JSON of its `_id`, under which `1` and `1.0` are the same id (as in MongoDB) while `1` and
//! `"1"` are not.
//!
//! ```
//! use ctxpack_docs::document::{ParsedDocument, object_id};
//!
//! let doc = ParsedDocument::parse("{ \"text\" : \"café\", \"n\": 1.50 }").unwrap();
//! assert!(doc.id_key.is_none());
//! let id = object_id(0x65a1_f0c2, [0xa1, 0xb2, 0xc3, 0xd4, 0xe5], 0xf6_0001);
//! assert_eq!(id.to_string(), r#"{"$oid":"65a1f0c2a1b2c3d4e5f60001"}"#);
//! assert_eq!(
//!     doc.body_with_id(&id),
//!     r#"{"_id":{"$oid":"65a1f0c2a1b2c3d4e5f60001"},"text":"café","n":1.50}"#
//! );
//! ```

use serde_json::{Value, json};

use crate::error::{DocsError, Scope};

/// A document read from JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedDocument {
    /// The parsed value (always an object).
    pub value: Value,
    /// The text without insignificant whitespace.
    pub body: String,
    /// The canonical key of its `_id`, when it has one.
    pub id_key: Option<String>,
}

impl ParsedDocument {
    /// Parses a document: valid JSON, an object, and an `_id` (if any) that is a scalar or
    /// `{"$oid": "<24 hex digits>"}`.
    pub fn parse(text: &str) -> Result<ParsedDocument, DocsError> {
        let (value, id_key) = parse_value(text)?;
        Ok(ParsedDocument {
            body: minify(text),
            value,
            id_key,
        })
    }

    /// Checks a document exactly as [`ParsedDocument::parse`] does (the same JSON value is
    /// read, so the same errors) and returns the canonical key of its `_id`, without building
    /// its stored text.
    pub fn check(text: &str) -> Result<Option<String>, DocsError> {
        Ok(parse_value(text)?.1)
    }

    /// The stored text: the body as given, or with `id` inserted first when it had no `_id`.
    pub fn body_with_id(&self, id: &Value) -> String {
        if self.id_key.is_some() {
            self.body.clone()
        } else {
            with_id_first(&self.body, id)
        }
    }
}

/// Reads a document's JSON value: an object, with an `_id` (if any) that is a scalar or
/// `{"$oid": "<24 hex digits>"}`, whose canonical key comes with it.
fn parse_value(text: &str) -> Result<(Value, Option<String>), DocsError> {
    let value: Value = serde_json::from_str(text).map_err(|e| DocsError::InvalidJson {
        message: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(DocsError::NotAnObject {
            found: type_name(&value),
        });
    }
    let id_key = match value.get("_id") {
        Some(id) => Some(id_key(id)?),
        None => None,
    };
    Ok((value, id_key))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The canonical JSON of an `_id`: compact; an integral number as an integer (`1.0` and `-0`
/// are `1` and `0`); an ObjectId as `{"$oid":"<lowercase hex>"}`. Arrays and other objects
/// are refused.
pub fn id_key(id: &Value) -> Result<String, DocsError> {
    match id {
        Value::Array(_) => Err(DocsError::BadId {
            found: id.to_string(),
            reason: "an `_id` cannot be an array",
        }),
        Value::Object(map) => {
            let hex = match (map.len(), map.get("$oid")) {
                (1, Some(Value::String(hex))) => hex,
                _ => {
                    return Err(DocsError::BadId {
                        found: id.to_string(),
                        reason: "an object `_id` must be {\"$oid\": \"<24 hex digits>\"}",
                    });
                }
            };
            if hex.len() != 24 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(DocsError::BadId {
                    found: id.to_string(),
                    reason: "an ObjectId has exactly 24 hex digits",
                });
            }
            Ok(json!({"$oid": hex.to_ascii_lowercase()}).to_string())
        }
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_none() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // Integral floats in the 64-bit range equal the integer of the same value.
            if f.fract() == 0.0 && (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
                Ok((f as i64).to_string())
            } else if f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                Ok((f as u64).to_string())
            } else {
                Ok(id.to_string())
            }
        }
        _ => Ok(id.to_string()),
    }
}

/// The JSON value of a stored document's body (text the store wrote, which a damaged store may
/// have changed): the one parse every reader of stored documents uses.
pub fn parse_body(body: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(body)
}

/// Removes the whitespace between tokens of valid JSON text, keeping every other byte
/// (strings with their escapes, numbers as spelled). String literals are copied whole, a run
/// at a time; outside them the bytes of valid JSON are ASCII, plus a byte-order mark, which
/// goes like whitespace.
pub fn minify(text: &str) -> String {
    const BOM: &[u8] = "\u{feff}".as_bytes();
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i;
                i += 1;
                // To the closing quote, stepping over every escaped character; an unterminated
                // string runs to the end.
                loop {
                    match bytes[i..].iter().position(|&b| b == b'"' || b == b'\\') {
                        None => {
                            i = bytes.len();
                            break;
                        }
                        Some(at) if bytes[i + at] == b'\\' => i = (i + at + 2).min(bytes.len()),
                        Some(at) => {
                            i += at + 1;
                            break;
                        }
                    }
                }
                out.extend_from_slice(&bytes[start..i]);
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            _ if bytes[i..].starts_with(BOM) => i += BOM.len(),
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    // Only whole characters were copied or skipped, so the bytes are UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Puts `"_id": id` first in a minified object text.
pub fn with_id_first(body: &str, id: &Value) -> String {
    let rest = body.strip_prefix('{').unwrap_or(body);
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!("{{\"_id\":{id}{sep}{rest}")
}

/// An ObjectId value `{"$oid": "…"}` from its parts: seconds since the epoch (4 bytes,
/// big-endian), 5 random bytes, and a counter (its low 3 bytes).
pub fn object_id(seconds: u32, random: [u8; 5], counter: u32) -> Value {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&seconds.to_be_bytes());
    bytes[4..9].copy_from_slice(&random);
    bytes[9..].copy_from_slice(&counter.to_be_bytes()[1..]);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    json!({ "$oid": hex })
}

/// A field path such as `meta.summary`, checked for empty segments.
pub fn field_path(path: &str) -> Result<Vec<String>, DocsError> {
    let parts: Vec<String> = path.split('.').map(str::to_owned).collect();
    if parts.iter().any(String::is_empty) {
        return Err(DocsError::EmptySegment {
            path: path.to_owned(),
            scope: Scope::default(),
        });
    }
    Ok(parts)
}

/// The string at a field path: each segment names a field of an object, or (all digits) an
/// element of an array. `None` when the path is missing or ends at anything but a string.
pub fn string_at<'a>(document: &'a Value, path: &[String]) -> Option<&'a str> {
    let mut current = document;
    for part in path {
        current = match current {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    current.as_str()
}

/// The `_id` of a parsed document as its canonical value (the parsed [`id_key`]).
pub fn id_value(id_key: &str) -> Value {
    serde_json::from_str(id_key).unwrap_or_else(|_| Value::String(id_key.to_owned()))
}
