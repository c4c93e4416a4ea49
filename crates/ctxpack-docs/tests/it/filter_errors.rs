//! Invalid filters and their exact messages: each names the offending operator and its path.

use ctxpack_docs::filter::Filter;

use crate::json;

const CASES: &[(&str, &str)] = &[
    ("[1]", "filter must be a JSON object, got an array"),
    (r#""x""#, "filter must be a JSON object, got a string"),
    ("null", "filter must be a JSON object, got null"),
    (r#"{"$foo":1}"#, "unknown top-level operator `$foo`"),
    // $not applies to a field, never to a whole filter.
    (r#"{"$not":{"a":1}}"#, "unknown top-level operator `$not`"),
    (r#"{"$where":"1"}"#, "unknown top-level operator `$where`"),
    (
        r#"{"status":{"$foo":1}}"#,
        "unknown operator `$foo` at `status`",
    ),
    // Once the first key is an operator, every key must be one.
    (r#"{"a":{"$gt":1,"b":2}}"#, "unknown operator `b` at `a`"),
    (
        r#"{"a":{"$and":[{"b":1}]}}"#,
        "unknown operator `$and` at `a`",
    ),
    (
        r#"{"a":{"$elemMatch":{"b":1}}}"#,
        "unknown operator `$elemMatch` at `a`",
    ),
    (
        r#"{"a.b":{"$size":1}}"#,
        "unknown operator `$size` at `a.b`",
    ),
    (r#"{"tags":{"$in":"a"}}"#, "`$in` at `tags` needs an array"),
    (
        r#"{"tags":{"$nin":{"a":1}}}"#,
        "`$nin` at `tags` needs an array",
    ),
    (
        r#"{"a":{"$exists":"yes"}}"#,
        "`$exists` at `a` needs a boolean",
    ),
    (
        r#"{"a":{"$exists":null}}"#,
        "`$exists` at `a` needs a boolean",
    ),
    (
        r#"{"name":{"$regex":5}}"#,
        "`$regex` at `name` needs a string",
    ),
    (
        r#"{"name":{"$regex":"a","$options":"q"}}"#,
        "`$options` at `name` has unknown flag `q` (expected i, m, s, x or u)",
    ),
    (
        r#"{"name":{"$regex":"a","$options":1}}"#,
        "`$options` at `name` needs a string",
    ),
    (
        r#"{"name":{"$options":"i"}}"#,
        "`$options` at `name` needs a `$regex` beside it",
    ),
    (r#"{"a":{"$not":{}}}"#, "`$not` at `a` cannot be empty"),
    (
        r#"{"a":{"$not":5}}"#,
        "`$not` at `a` needs an object of operators",
    ),
    (
        r#"{"a":{"$not":{"b":1}}}"#,
        "`$not` at `a` needs an object of operators",
    ),
    (
        r#"{"a":{"$not":{"$foo":1}}}"#,
        "unknown operator `$foo` at `a`",
    ),
    (r#"{"a..b":1}"#, "field path `a..b` has an empty segment"),
    (r#"{".a":1}"#, "field path `.a` has an empty segment"),
    (r#"{"a.":1}"#, "field path `a.` has an empty segment"),
    (r#"{"":1}"#, "field path `` has an empty segment"),
    (
        r#"{"$and":[]}"#,
        "`$and` needs a non-empty array of filter objects",
    ),
    (
        r#"{"$or":{"a":1}}"#,
        "`$or` needs a non-empty array of filter objects",
    ),
    (
        r#"{"$nor":[1]}"#,
        "filter must be a JSON object, got a number (in `$nor.0`)",
    ),
    (
        r#"{"$and":[{"a":1},{"b":{"$foo":1}}]}"#,
        "unknown operator `$foo` at `b` (in `$and.1`)",
    ),
    (
        r#"{"$or":[{"$and":[{"x..y":1}]}]}"#,
        "field path `x..y` has an empty segment (in `$or.0.$and.0`)",
    ),
    (
        r#"{"$or":[{"a":1},{"$nor":[]}]}"#,
        "`$nor` needs a non-empty array of filter objects (in `$or.1`)",
    ),
    (
        r#"{"name":{"$regex":"("}}"#,
        "`$regex` at `name` does not compile: regex parse error:\n    (\n    ^\nerror: unclosed group",
    ),
    // The regex engine has no backreferences (it guarantees linear-time matching).
    (
        r#"{"name":{"$regex":"(a)\\1"}}"#,
        "`$regex` at `name` does not compile: regex parse error:\n    (a)\\1\n       ^^\nerror: backreferences are not supported",
    ),
];

#[test]
fn messages() {
    let mut failures = Vec::new();
    for (filter, expected) in CASES {
        match Filter::parse(&json(filter)) {
            Ok(_) => failures.push(format!("{filter}: parsed, expected {expected:?}")),
            Err(e) if e.to_string() != *expected => failures.push(format!(
                "{filter}: got {:?}, expected {expected:?}",
                e.to_string()
            )),
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
