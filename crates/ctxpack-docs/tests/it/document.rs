//! Documents as text: `_id` keys, exact round-trips, field paths, ObjectIds.

use ctxpack_docs::DocsError;
use ctxpack_docs::document::{ParsedDocument, field_path, id_key, minify, object_id, string_at};

use crate::json;

#[test]
fn id_keys() {
    // (`_id` as JSON, canonical key or None when refused)
    let cases: &[(&str, Option<&str>)] = &[
        ("1", Some("1")),
        ("1.0", Some("1")),
        ("-0.0", Some("0")),
        ("-3.0", Some("-3")),
        ("1.5", Some("1.5")),
        ("18446744073709551615", Some("18446744073709551615")),
        ("1e20", Some("1e+20")),
        ("1e19", Some("10000000000000000000")),
        (r#""1""#, Some(r#""1""#)),
        (r#""é\u00e9""#, Some(r#""éé""#)),
        ("true", Some("true")),
        ("null", Some("null")),
        (
            r#"{"$oid":"65A1F0C2A1B2C3D4E5F60001"}"#,
            Some(r#"{"$oid":"65a1f0c2a1b2c3d4e5f60001"}"#),
        ),
        (r#"{"$oid":"65a1"}"#, None),
        (r#"{"$oid":"zza1f0c2a1b2c3d4e5f60001"}"#, None),
        (r#"{"a":1}"#, None),
        ("[1]", None),
    ];
    for (id, expected) in cases {
        let got = id_key(&json(id)).ok();
        assert_eq!(got.as_deref(), *expected, "{id}");
    }
}

#[test]
fn bodies_round_trip_as_written() {
    // (input text, stored body)
    let cases: &[(&str, &str)] = &[
        ("{ \"b\" : 1, \"a\" : 2 }", r#"{"b":1,"a":2}"#),
        (
            "{\"n\": 123456789012345678901234567890, \"f\": 1.50, \"e\": 1E+3}",
            r#"{"n":123456789012345678901234567890,"f":1.50,"e":1E+3}"#,
        ),
        (
            "{\"s\": \"a b\\\" \\n é \\u00e9 😀\"}",
            r#"{"s":"a b\" \n é \u00e9 😀"}"#,
        ),
        (
            "\n\t{\"x\": [1, {\"y\" : null}]}\r\n",
            r#"{"x":[1,{"y":null}]}"#,
        ),
    ];
    for (input, body) in cases {
        assert_eq!(minify(input), *body, "{input}");
        let doc = ParsedDocument::parse(input).expect("valid");
        assert_eq!(doc.body, *body);
    }
}

#[test]
fn generated_id_goes_first() {
    let id = object_id(1, [2, 3, 4, 5, 6], 0x0107_0809);
    assert_eq!(id, json(r#"{"$oid":"000000010203040506070809"}"#));
    // (document, stored body)
    let cases: &[(&str, &str)] = &[
        ("{}", r#"{"_id":{"$oid":"000000010203040506070809"}}"#),
        (
            r#"{"text": "x"}"#,
            r#"{"_id":{"$oid":"000000010203040506070809"},"text":"x"}"#,
        ),
        // A given `_id` stays where it was written.
        (r#"{"text": "x", "_id": 7}"#, r#"{"text":"x","_id":7}"#),
    ];
    for (input, body) in cases {
        let doc = ParsedDocument::parse(input).expect("valid");
        assert_eq!(doc.body_with_id(&id), *body, "{input}");
    }
}

#[test]
fn bad_documents() {
    // (input, error message)
    let cases: &[(&str, &str)] = &[
        ("[1]", "a document must be a JSON object, got an array"),
        ("\"x\"", "a document must be a JSON object, got a string"),
        (
            r#"{"_id": [1]}"#,
            "invalid _id [1]: an `_id` cannot be an array",
        ),
        (
            "{\"a\": }",
            "invalid JSON: expected value at line 1 column 7",
        ),
    ];
    for (input, message) in cases {
        let err = ParsedDocument::parse(input).expect_err(input);
        assert_eq!(err.to_string(), *message, "{input}");
    }
}

#[test]
fn field_paths() {
    let doc =
        json(r#"{"text": "t", "meta": {"summary": "s", "n": 1}, "parts": ["p0", {"t": "p1"}]}"#);
    // (path, string found)
    let cases: &[(&str, Option<&str>)] = &[
        ("text", Some("t")),
        ("meta.summary", Some("s")),
        ("meta.n", None),
        ("meta", None),
        ("parts.0", Some("p0")),
        ("parts.1.t", Some("p1")),
        ("parts.2", None),
        ("missing.x", None),
    ];
    for (path, expected) in cases {
        let parts = field_path(path).expect("valid path");
        assert_eq!(string_at(&doc, &parts), *expected, "{path}");
    }
    for bad in ["", "a..b", ".a", "a."] {
        assert!(
            matches!(field_path(bad), Err(DocsError::EmptySegment { .. })),
            "{bad:?}"
        );
    }
}
