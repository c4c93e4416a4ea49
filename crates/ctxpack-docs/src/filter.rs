//! MongoDB-style filters over JSON documents.
//!
//! A filter is compiled once with [`Filter::parse`] (every operator, operand and regex is
//! checked there, so a bad filter fails before any document is read) and then evaluated with
//! [`Filter::matches`], which cannot fail.
//!
//! The semantics follow MongoDB's query language, including its less obvious rules:
//!
//! - **Paths.** `a.b.c` walks nested objects. When a path meets an array before its end, the
//!   rest of the path is applied to every object element of the array (one level: nested arrays
//!   are not entered), and a numeric segment also selects the element at that index. A scalar
//!   in the middle of a path, or a missing field, yields *missing*.
//! - **Leaf arrays.** When a path ends at an array, a predicate is tried against each element
//!   *and* against the array as a whole, and matches if any of them does: `{"tags": "a"}`
//!   matches `{"tags": ["a", "b"]}` and `{"tags": ["a", "b"]}` matches it too.
//! - **Negations.** `$ne`, `$nin` and `$not` are the negations of `$eq`, `$in` and the inner
//!   expression over all those values, so `{"tags": {"$ne": "a"}}` does *not* match
//!   `{"tags": ["a", "b"]}`, and every negation matches a missing field.
//! - **Null.** `{"f": null}` (and `$in: [null]`, `$gte: null`, `$lte: null`) matches a missing
//!   field as well as an explicit `null`.
//! - **Types.** Equality and `$gt`/`$gte`/`$lt`/`$lte` only compare values of the same type
//!   bracket (numbers with numbers, strings with strings, …): `{"n": {"$gt": 1}}` never
//!   matches a string. Integers and floats compare numerically (`1 == 1.0`). Objects compare
//!   field by field *in order*, as BSON does. `{"$oid": "…"}` is an ObjectId, equal to another
//!   by its hex string; `{"$minKey": 1}` and `{"$maxKey": 1}` are MinKey and MaxKey.
//!
//! [`compare_values`] is the full BSON sort order, for sorting:
//! MinKey < null < numbers < strings < objects < arrays < ObjectId < booleans < MaxKey.
//!
//! ```
//! use ctxpack_docs::filter::Filter;
//! use serde_json::json;
//!
//! let filter = Filter::parse(&json!({"tags": "db", "stars": {"$gte": 3}})).unwrap();
//! assert!(filter.matches(&json!({"tags": ["db", "search"], "stars": 4.5})));
//! assert!(!filter.matches(&json!({"tags": ["cake"], "stars": 5})));
//!
//! let err = Filter::parse(&json!({"status": {"$foo": 1}})).unwrap_err();
//! assert_eq!(err.to_string(), "unknown operator `$foo` at `status`");
//! ```

use std::cmp::Ordering;

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Number, Value};

use crate::error::{DocsError, Scope};

/// A compiled filter: the conjunction of its top-level clauses. The empty filter `{}` matches
/// every document.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    clauses: Vec<Clause>,
}

#[derive(Clone, Debug)]
enum Clause {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Nor(Vec<Filter>),
    /// Every operator must hold for the values at the path.
    Field {
        parts: Vec<String>,
        ops: Vec<Op>,
    },
}

#[derive(Clone, Debug)]
enum Op {
    Eq(Value),
    Ne(Value),
    Cmp(CmpOp, Value),
    In(Vec<Value>),
    Nin(Vec<Value>),
    Exists(bool),
    Regex(Regex),
    Not(Vec<Op>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmpOp {
    Gt,
    Gte,
    Lt,
    Lte,
}

impl CmpOp {
    fn holds(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Gt => ord == Ordering::Greater,
            CmpOp::Gte => ord != Ordering::Less,
            CmpOp::Lt => ord == Ordering::Less,
            CmpOp::Lte => ord != Ordering::Greater,
        }
    }

    fn includes_equal(self) -> bool {
        matches!(self, CmpOp::Gte | CmpOp::Lte)
    }
}

/// The equality lookups a field index can answer for a filter, and whether they are all of it.
///
/// A lookup is a path and a set of [`index_key`]s: a document matches the lookup exactly when
/// its own keys at the path ([`index_keys`]) share one with the set. Only equality (`{"f": v}`,
/// `$eq`) and `$in` with strings, numbers, booleans and ObjectIds are lookups; `null`, arrays,
/// objects, ranges, negations, regexes, `$or` and `$nor` are not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexPlan {
    /// Every document that matches the filter matches each of these lookups (a conjunction).
    pub lookups: Vec<Lookup>,
    /// Whether the filter is exactly the conjunction of its lookups, so a document matching
    /// them all needs no further check.
    pub exact: bool,
}

/// One lookup of an [`IndexPlan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The path, dotted as in the filter (`meta.status`).
    pub path: String,
    /// The keys, sorted; a document matches when it has any of them at the path.
    pub keys: Vec<String>,
}

/// The key of a value in a field index, when equality with it can be looked up: two values
/// are equal under the filter's rules exactly when their keys are (`1` and `1.0` share one, `0`
/// and `-0.0` too; a string never shares one with a number).
pub fn index_key(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(format!("s{s}")),
        Value::Bool(b) => Some(if *b { "t" } else { "f" }.to_owned()),
        Value::Number(n) => Some(format!("n{}", number_key(n))),
        Value::Object(map) if special_scalar(map) == Some(Bracket::ObjectId) => {
            Some(format!("o{}", oid_hex(map)))
        }
        _ => None,
    }
}

/// A number's canonical text: an integer (or a float with no fraction) in decimal, any other
/// float in Rust's shortest round-trip form, which always has a `.` or an `e`.
fn number_key(n: &Number) -> String {
    if let Some(i) = as_integer(n) {
        return i.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    // Every float with no fraction below 2^127 is an exact i128.
    if f.fract() == 0.0 && f.abs() < 170_141_183_460_469_231_731_687_303_715_884_105_728.0 {
        (f as i128).to_string()
    } else {
        format!("{f:?}")
    }
}

/// The keys under which `document` is listed in an index of the path `parts`: the
/// [`index_key`] of every value the filter would test at that path, without repeats, sorted.
pub fn index_keys(document: &Value, parts: &[String]) -> Vec<String> {
    let Value::Object(object) = document else {
        return Vec::new();
    };
    let mut values = Vec::new();
    collect_from_object(object, parts, &mut values);
    let mut keys: Vec<String> = values.into_iter().flatten().filter_map(index_key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Splits an indexable path (`meta.status`) as filters do.
pub fn index_path(path: &str) -> Result<Vec<String>, DocsError> {
    parse_path(path, "")
}

impl Filter {
    /// The lookups a field index could answer for this filter.
    pub fn index_plan(&self) -> IndexPlan {
        let mut plan = IndexPlan {
            lookups: Vec::new(),
            exact: true,
        };
        self.plan_into(&mut plan);
        plan
    }

    fn plan_into(&self, plan: &mut IndexPlan) {
        for clause in &self.clauses {
            match clause {
                Clause::And(filters) => filters.iter().for_each(|f| f.plan_into(plan)),
                Clause::Or(_) | Clause::Nor(_) => plan.exact = false,
                Clause::Field { parts, ops } => {
                    for op in ops {
                        let keys = match op {
                            Op::Eq(value) => index_key(value).map(|k| vec![k]),
                            Op::In(values) => values.iter().map(index_key).collect(),
                            _ => None,
                        };
                        match keys {
                            Some(mut keys) => {
                                keys.sort_unstable();
                                keys.dedup();
                                plan.lookups.push(Lookup {
                                    path: parts.join("."),
                                    keys,
                                });
                            }
                            None => plan.exact = false,
                        }
                    }
                }
            }
        }
    }

    /// Compiles a filter, checking every operator, operand and regular expression.
    pub fn parse(filter: &Value) -> Result<Filter, DocsError> {
        parse_filter(filter, "")
    }

    /// Whether `document` matches. A document that is not a JSON object has no fields, so it
    /// behaves like `{}`.
    pub fn matches(&self, document: &Value) -> bool {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let object = match document {
            Value::Object(object) => object,
            _ => EMPTY.get_or_init(Map::new),
        };
        self.matches_object(object)
    }

    fn matches_object(&self, object: &Map<String, Value>) -> bool {
        self.clauses.iter().all(|clause| match clause {
            Clause::And(filters) => filters.iter().all(|f| f.matches_object(object)),
            Clause::Or(filters) => filters.iter().any(|f| f.matches_object(object)),
            Clause::Nor(filters) => !filters.iter().any(|f| f.matches_object(object)),
            Clause::Field { parts, ops } => {
                let mut values = Vec::new();
                collect_from_object(object, parts, &mut values);
                ops.iter().all(|op| op.matches(&values))
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

fn type_with_article(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_filter(filter: &Value, scope: &str) -> Result<Filter, DocsError> {
    let Value::Object(map) = filter else {
        return Err(DocsError::FilterNotObject {
            found: type_with_article(filter),
            scope: Scope(scope.to_owned()),
        });
    };
    let mut clauses = Vec::with_capacity(map.len());
    for (key, value) in map {
        if key.starts_with('$') {
            let op = match key.as_str() {
                "$and" => "$and",
                "$or" => "$or",
                "$nor" => "$nor",
                _ => {
                    return Err(DocsError::UnknownTopLevelOperator {
                        op: key.clone(),
                        scope: Scope(scope.to_owned()),
                    });
                }
            };
            let filters = parse_logical(op, value, scope)?;
            clauses.push(match op {
                "$and" => Clause::And(filters),
                "$or" => Clause::Or(filters),
                _ => Clause::Nor(filters),
            });
        } else {
            let parts = parse_path(key, scope)?;
            let ops = parse_condition(value, key, scope)?;
            clauses.push(Clause::Field { parts, ops });
        }
    }
    Ok(Filter { clauses })
}

fn parse_logical(op: &'static str, value: &Value, scope: &str) -> Result<Vec<Filter>, DocsError> {
    let bad = || DocsError::BadLogical {
        op,
        scope: Scope(scope.to_owned()),
    };
    let Value::Array(items) = value else {
        return Err(bad());
    };
    if items.is_empty() {
        return Err(bad());
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let inner = if scope.is_empty() {
                format!("{op}.{i}")
            } else {
                format!("{scope}.{op}.{i}")
            };
            parse_filter(item, &inner)
        })
        .collect()
}

fn parse_path(path: &str, scope: &str) -> Result<Vec<String>, DocsError> {
    let parts: Vec<String> = path.split('.').map(str::to_owned).collect();
    if parts.iter().any(String::is_empty) {
        return Err(DocsError::EmptySegment {
            path: path.to_owned(),
            scope: Scope(scope.to_owned()),
        });
    }
    Ok(parts)
}

/// Whether an object is an extended-JSON scalar (`{"$oid": "…"}`, `{"$minKey": 1}`,
/// `{"$maxKey": 1}`) rather than an object.
fn special_scalar(map: &Map<String, Value>) -> Option<Bracket> {
    if map.len() != 1 {
        return None;
    }
    let (key, value) = map.iter().next()?;
    match (key.as_str(), value) {
        ("$oid", Value::String(_)) => Some(Bracket::ObjectId),
        ("$minKey", _) => Some(Bracket::MinKey),
        ("$maxKey", _) => Some(Bracket::MaxKey),
        _ => None,
    }
}

/// An object whose first key starts with `$` is a set of operators, as in MongoDB; any other
/// value (including `{}` and extended-JSON scalars) is compared for equality.
fn is_operator_object(value: &Value) -> Option<&Map<String, Value>> {
    match value {
        Value::Object(map) if special_scalar(map).is_none() => map
            .keys()
            .next()
            .filter(|k| k.starts_with('$'))
            .map(|_| map),
        _ => None,
    }
}

fn parse_condition(value: &Value, path: &str, scope: &str) -> Result<Vec<Op>, DocsError> {
    match is_operator_object(value) {
        Some(map) => parse_operators(map, path, scope),
        None => Ok(vec![Op::Eq(value.clone())]),
    }
}

fn parse_operators(
    map: &Map<String, Value>,
    path: &str,
    scope: &str,
) -> Result<Vec<Op>, DocsError> {
    let scope_of = || Scope(scope.to_owned());
    let bad = |op: &'static str, need: &'static str| DocsError::BadOperand {
        op,
        path: path.to_owned(),
        need,
        scope: scope_of(),
    };
    let mut ops = Vec::with_capacity(map.len());
    for (key, value) in map {
        let op = match key.as_str() {
            "$eq" => Op::Eq(value.clone()),
            "$ne" => Op::Ne(value.clone()),
            "$gt" => Op::Cmp(CmpOp::Gt, value.clone()),
            "$gte" => Op::Cmp(CmpOp::Gte, value.clone()),
            "$lt" => Op::Cmp(CmpOp::Lt, value.clone()),
            "$lte" => Op::Cmp(CmpOp::Lte, value.clone()),
            "$in" => match value {
                Value::Array(items) => Op::In(items.clone()),
                _ => return Err(bad("$in", "an array")),
            },
            "$nin" => match value {
                Value::Array(items) => Op::Nin(items.clone()),
                _ => return Err(bad("$nin", "an array")),
            },
            // MongoDB reads `$exists: 1` and `$exists: 0` as booleans too.
            "$exists" => match value {
                Value::Bool(b) => Op::Exists(*b),
                Value::Number(n) => Op::Exists(n.as_f64().is_some_and(|f| f != 0.0)),
                _ => return Err(bad("$exists", "a boolean")),
            },
            "$regex" => {
                let Value::String(pattern) = value else {
                    return Err(bad("$regex", "a string"));
                };
                let options = match map.get("$options") {
                    None => "",
                    Some(Value::String(options)) => options.as_str(),
                    Some(_) => return Err(bad("$options", "a string")),
                };
                Op::Regex(compile_regex(pattern, options, path, scope)?)
            }
            "$options" => {
                if !map.contains_key("$regex") {
                    return Err(DocsError::OptionsWithoutRegex {
                        path: path.to_owned(),
                        scope: scope_of(),
                    });
                }
                // Compiled together with `$regex`.
                continue;
            }
            "$not" => match value {
                Value::Object(inner) if inner.is_empty() => {
                    return Err(DocsError::EmptyNot {
                        path: path.to_owned(),
                        scope: scope_of(),
                    });
                }
                _ => match is_operator_object(value) {
                    Some(inner) => Op::Not(parse_operators(inner, path, scope)?),
                    None => return Err(bad("$not", "an object of operators")),
                },
            },
            _ => {
                return Err(DocsError::UnknownOperator {
                    op: key.clone(),
                    path: path.to_owned(),
                    scope: scope_of(),
                });
            }
        };
        ops.push(op);
    }
    Ok(ops)
}

fn compile_regex(
    pattern: &str,
    options: &str,
    path: &str,
    scope: &str,
) -> Result<Regex, DocsError> {
    let mut builder = RegexBuilder::new(pattern);
    for flag in options.chars() {
        match flag {
            'i' => builder.case_insensitive(true),
            'm' => builder.multi_line(true),
            's' => builder.dot_matches_new_line(true),
            'x' => builder.ignore_whitespace(true),
            // MongoDB accepts `u` and ignores it: matching is always Unicode-aware.
            'u' => &mut builder,
            flag => {
                return Err(DocsError::UnknownRegexFlag {
                    path: path.to_owned(),
                    flag,
                    scope: Scope(scope.to_owned()),
                });
            }
        };
    }
    builder.build().map_err(|e| DocsError::BadRegex {
        path: path.to_owned(),
        message: e.to_string(),
        scope: Scope(scope.to_owned()),
    })
}

// ---------------------------------------------------------------------------------------------
// Path resolution
//
// This mirrors MongoDB's `BSONElementIterator`: it yields every value a path reaches, with
// `None` standing for a missing value (MongoDB's EOO element).

fn collect_from_object<'a>(
    object: &'a Map<String, Value>,
    parts: &[String],
    out: &mut Vec<Option<&'a Value>>,
) {
    let mut current = object;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match current.get(part) {
            None => {
                out.push(None);
                return;
            }
            Some(value @ Value::Object(inner)) => {
                if last {
                    out.push(Some(value));
                    return;
                }
                current = inner;
            }
            Some(value @ Value::Array(items)) => {
                if last {
                    // A leaf array: each element, then the array itself.
                    out.extend(items.iter().map(Some));
                    out.push(Some(value));
                } else {
                    collect_in_array(items, &parts[i + 1..], out);
                }
                return;
            }
            // A scalar before the end of the path means the path does not exist.
            Some(value) => {
                out.push(last.then_some(value));
                return;
            }
        }
    }
}

/// The rest of a path (never empty) applied to the elements of an array met in its middle.
fn collect_in_array<'a>(items: &'a [Value], rest: &[String], out: &mut Vec<Option<&'a Value>>) {
    let index = array_index(&rest[0]);
    for (i, item) in items.iter().enumerate() {
        let offset_match = index == Some(i);
        match item {
            Value::Object(inner) => {
                // The field of the element, then (for `a.0`) the element at the offset.
                collect_from_object(inner, rest, out);
                if offset_match {
                    if rest.len() == 1 {
                        out.push(Some(item));
                    } else {
                        collect_from_object(inner, &rest[1..], out);
                    }
                }
            }
            _ if offset_match => {
                if rest.len() == 1 {
                    // Reached by position, the element is not expanded even if an array.
                    out.push(Some(item));
                } else if let Value::Array(nested) = item {
                    collect_in_array(nested, &rest[1..], out);
                }
            }
            // Scalars and nested arrays have no fields: they contribute nothing.
            _ => {}
        }
    }
}

/// A path segment names an array offset only when it is all digits, written canonically
/// (MongoDB compares it with the element's field name, `"0"`, `"1"`, …).
fn array_index(segment: &str) -> Option<usize> {
    if segment.is_empty() || !segment.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    segment
        .parse::<usize>()
        .ok()
        .filter(|i| i.to_string() == segment)
}

// ---------------------------------------------------------------------------------------------
// Evaluation

impl Op {
    fn matches(&self, values: &[Option<&Value>]) -> bool {
        match self {
            Op::Eq(q) => values.iter().any(|v| element_eq(*v, q)),
            Op::Ne(q) => !values.iter().any(|v| element_eq(*v, q)),
            Op::Cmp(op, q) => values.iter().any(|v| element_cmp(*v, *op, q)),
            Op::In(qs) => values.iter().any(|v| qs.iter().any(|q| element_eq(*v, q))),
            Op::Nin(qs) => !values.iter().any(|v| qs.iter().any(|q| element_eq(*v, q))),
            Op::Exists(wanted) => values.iter().any(Option::is_some) == *wanted,
            Op::Regex(re) => values
                .iter()
                .any(|v| matches!(v, Some(Value::String(s)) if re.is_match(s))),
            Op::Not(ops) => !ops.iter().all(|op| op.matches(values)),
        }
    }
}

fn element_eq(value: Option<&Value>, query: &Value) -> bool {
    match (value, query) {
        // Equality with null also matches a missing field.
        (None, Value::Null) => true,
        (None, _) => false,
        (Some(v), q) => compare_values(v, q) == Ordering::Equal,
    }
}

fn element_cmp(value: Option<&Value>, op: CmpOp, query: &Value) -> bool {
    let Some(value) = value else {
        return query.is_null() && op.includes_equal();
    };
    let (vb, qb) = (bracket(value), bracket(query));
    if vb != qb {
        // Only MinKey and MaxKey as operands compare across brackets.
        return matches!(
            (qb, op),
            (Bracket::MaxKey, CmpOp::Lt | CmpOp::Lte) | (Bracket::MinKey, CmpOp::Gt | CmpOp::Gte)
        );
    }
    op.holds(compare_values(value, query))
}

// ---------------------------------------------------------------------------------------------
// BSON order

/// The canonical type brackets of BSON, in sort order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Bracket {
    MinKey,
    Null,
    Number,
    String,
    Object,
    Array,
    ObjectId,
    Bool,
    MaxKey,
}

fn bracket(value: &Value) -> Bracket {
    match value {
        Value::Null => Bracket::Null,
        Value::Bool(_) => Bracket::Bool,
        Value::Number(_) => Bracket::Number,
        Value::String(_) => Bracket::String,
        Value::Array(_) => Bracket::Array,
        Value::Object(map) => special_scalar(map).unwrap_or(Bracket::Object),
    }
}

/// The total BSON order of two JSON values, for sorting and equality:
/// MinKey < null < numbers < strings < objects < arrays < ObjectId < booleans < MaxKey.
///
/// Numbers compare by value whatever their representation (`1` equals `1.0`; integers beyond
/// 2^53 are compared exactly). Strings compare by their UTF-8 bytes (MongoDB's simple
/// collation). Objects compare pairwise in field order — first the values' brackets, then the
/// field names, then the values — and a prefix sorts first; arrays compare element-wise.
/// ObjectIds (`{"$oid": "…"}`) compare by their hex string, case-insensitively.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    let (ba, bb) = (bracket(a), bracket(b));
    if ba != bb {
        return ba.cmp(&bb);
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (u, v) in x.iter().zip(y) {
                let ord = compare_values(u, v);
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => match ba {
            Bracket::ObjectId => oid_hex(x).cmp(&oid_hex(y)),
            Bracket::Object => compare_objects(x, y),
            // MinKey and MaxKey are each equal to themselves.
            _ => Ordering::Equal,
        },
        // Null against null; every other pair has different brackets.
        _ => Ordering::Equal,
    }
}

fn compare_objects(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    for ((kx, vx), (ky, vy)) in x.iter().zip(y) {
        let ord = bracket(vx)
            .cmp(&bracket(vy))
            .then_with(|| kx.as_bytes().cmp(ky.as_bytes()))
            .then_with(|| compare_values(vx, vy));
        if ord != Ordering::Equal {
            return ord;
        }
    }
    x.len().cmp(&y.len())
}

fn oid_hex(map: &Map<String, Value>) -> String {
    match map.get("$oid") {
        Some(Value::String(hex)) => hex.to_ascii_lowercase(),
        _ => String::new(),
    }
}

fn compare_numbers(x: &Number, y: &Number) -> Ordering {
    match (as_integer(x), as_integer(y)) {
        (Some(i), Some(j)) => i.cmp(&j),
        (Some(i), None) => compare_int_float(i, y.as_f64().unwrap_or(0.0)),
        (None, Some(j)) => compare_int_float(j, x.as_f64().unwrap_or(0.0)).reverse(),
        (None, None) => {
            let (f, g) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            f.partial_cmp(&g).unwrap_or(Ordering::Equal)
        }
    }
}

fn as_integer(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Exact comparison of an integer (at most 64 bits) with a finite float.
fn compare_int_float(i: i128, f: f64) -> Ordering {
    // Outside the 64-bit range every integer is on one side. 2^64 and -2^63 are exact floats.
    if f >= 18_446_744_073_709_551_616.0 {
        return Ordering::Less;
    }
    if f < -9_223_372_036_854_775_808.0 {
        return Ordering::Greater;
    }
    if f.is_nan() {
        // JSON cannot hold NaN; BSON sorts it below every number.
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // In range, the whole part of the float is an exact integer.
    let t = whole as i128;
    i.cmp(&t).then_with(|| {
        let frac = f - whole;
        if frac > 0.0 {
            Ordering::Less
        } else if frac < 0.0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    })
}
