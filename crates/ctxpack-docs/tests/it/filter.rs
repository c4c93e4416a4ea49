//! The filter semantics as data: (document, filter, matches?) checked against MongoDB's
//! documented behaviour. Comments give the rule behind the non-obvious cases.

use std::cmp::Ordering;

use ctxpack_docs::filter::{Filter, compare_values};

use crate::json;

const CASES: &[(&str, &str, bool)] = &[
    // --- implicit equality and $eq -----------------------------------------------------------
    (r#"{"a":1}"#, r#"{"a":1}"#, true),
    (r#"{"a":1}"#, r#"{"a":2}"#, false),
    // Integers and doubles compare numerically.
    (r#"{"a":1}"#, r#"{"a":1.0}"#, true),
    (r#"{"a":1.5}"#, r#"{"a":1.5}"#, true),
    // Different type brackets are never equal.
    (r#"{"a":"1"}"#, r#"{"a":1}"#, false),
    (r#"{"a":true}"#, r#"{"a":1}"#, false),
    (r#"{"a":0}"#, r#"{"a":false}"#, false),
    (r#"{"a":"x"}"#, r#"{"a":"x"}"#, true),
    // Simple collation: case-sensitive.
    (r#"{"a":"x"}"#, r#"{"a":"X"}"#, false),
    (r#"{}"#, r#"{"a":1}"#, false),
    (r#"{"a":null}"#, r#"{"a":null}"#, true),
    // Equality with null matches a missing field.
    (r#"{}"#, r#"{"a":null}"#, true),
    (r#"{"a":0}"#, r#"{"a":null}"#, false),
    (r#"{"a":""}"#, r#"{"a":null}"#, false),
    (r#"{"a":false}"#, r#"{"a":false}"#, true),
    (r#"{"a":{"b":1,"c":2}}"#, r#"{"a":{"b":1,"c":2}}"#, true),
    // Embedded documents must match exactly, field order included.
    (r#"{"a":{"b":1,"c":2}}"#, r#"{"a":{"c":2,"b":1}}"#, false),
    (r#"{"a":{"b":1,"c":2}}"#, r#"{"a":{"b":1}}"#, false),
    (r#"{"a":{"b":1}}"#, r#"{"a":{"b":1.0}}"#, true),
    (r#"{"a":{}}"#, r#"{"a":{}}"#, true),
    (r#"{"a":{"b":1}}"#, r#"{"a":{}}"#, false),
    (r#"{"a":[1,2]}"#, r#"{"a":[1,2]}"#, true),
    // Array equality is ordered.
    (r#"{"a":[1,2]}"#, r#"{"a":[2,1]}"#, false),
    (r#"{"a":[1,2]}"#, r#"{"a":[1]}"#, false),
    // A scalar matches an array that contains it.
    (r#"{"a":[1,2]}"#, r#"{"a":1}"#, true),
    (r#"{"a":[1,2]}"#, r#"{"a":3}"#, false),
    // An array matches an array that contains it as an element.
    (r#"{"a":[[1,2],3]}"#, r#"{"a":[1,2]}"#, true),
    // Only one level of array is expanded.
    (r#"{"a":[[1,2]]}"#, r#"{"a":1}"#, false),
    (r#"{"a":[]}"#, r#"{"a":[]}"#, true),
    // An empty array is neither null nor missing.
    (r#"{"a":[]}"#, r#"{"a":null}"#, false),
    (r#"{"a":[null,1]}"#, r#"{"a":null}"#, true),
    (r#"{"a":1}"#, r#"{"a":{"$eq":1}}"#, true),
    (r#"{"a":[1,2]}"#, r#"{"a":{"$eq":2}}"#, true),
    (r#"{"a":1}"#, r#"{"a":{"$eq":null}}"#, false),
    (r#"{"b":1}"#, r#"{"a":{"$eq":null}}"#, true),
    // `$eq` with an object operand compares the whole object, even one with `$` keys inside.
    (r#"{"a":{"b":{"$gt":1}}}"#, r#"{"a":{"b":{"$gt":1}}}"#, true),
    (r#"{"a":{"b":5}}"#, r#"{"a":{"b":{"$gt":1}}}"#, false),
    (r#"{"a":{"b":1}}"#, r#"{"a":{"$eq":{"b":1}}}"#, true),
    (r#"{"a":1,"b":2}"#, r#"{"a":1,"b":2}"#, true),
    (r#"{"a":1,"b":3}"#, r#"{"a":1,"b":2}"#, false),
    (r#"{}"#, r#"{}"#, true),
    (r#"{"a":1}"#, r#"{}"#, true),
    (r#"{"a":"é"}"#, r#"{"a":"é"}"#, true),
    // --- ObjectIds ({"$oid": ...}) -------------------------------------------------------------
    (
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        true,
    ),
    (
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60719"}}"#,
        false,
    ),
    // An ObjectId is its 12 bytes: hex case does not matter.
    (
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        r#"{"_id":{"$oid":"64B7F0C2A1B2C3D4E5F60718"}}"#,
        true,
    ),
    // A string is not an ObjectId.
    (
        r#"{"_id":"64b7f0c2a1b2c3d4e5f60718"}"#,
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        false,
    ),
    (
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        r#"{"_id":{"$in":[1,{"$oid":"64b7f0c2a1b2c3d4e5f60718"}]}}"#,
        true,
    ),
    (
        r#"{"_id":{"$oid":"000000000000000000000002"}}"#,
        r#"{"_id":{"$gt":{"$oid":"000000000000000000000001"}}}"#,
        true,
    ),
    // ObjectIds only compare with ObjectIds.
    (
        r#"{"_id":"zzz"}"#,
        r#"{"_id":{"$gt":{"$oid":"000000000000000000000001"}}}"#,
        false,
    ),
    (
        r#"{"_id":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}"#,
        r#"{"_id":{"$ne":{"$oid":"64b7f0c2a1b2c3d4e5f60718"}}}"#,
        false,
    ),
    // --- $ne ----------------------------------------------------------------------------------
    (r#"{"a":1}"#, r#"{"a":{"$ne":1}}"#, false),
    (r#"{"a":2}"#, r#"{"a":{"$ne":1}}"#, true),
    // Negations match a missing field.
    (r#"{}"#, r#"{"a":{"$ne":1}}"#, true),
    // $ne is "no element equals": an array holding the value does not match.
    (r#"{"a":[1,2]}"#, r#"{"a":{"$ne":1}}"#, false),
    (r#"{"a":[2,3]}"#, r#"{"a":{"$ne":1}}"#, true),
    (r#"{"a":[1,2]}"#, r#"{"a":{"$ne":[1,2]}}"#, false),
    (r#"{"a":null}"#, r#"{"a":{"$ne":null}}"#, false),
    // Missing equals null, so $ne: null excludes it.
    (r#"{}"#, r#"{"a":{"$ne":null}}"#, false),
    (r#"{"a":0}"#, r#"{"a":{"$ne":null}}"#, true),
    (r#"{"a":[1,null]}"#, r#"{"a":{"$ne":null}}"#, false),
    (r#"{"a":1.0}"#, r#"{"a":{"$ne":1}}"#, false),
    (r#"{"a":"1"}"#, r#"{"a":{"$ne":1}}"#, true),
    // --- $gt $gte $lt $lte ----------------------------------------------------------------------
    (r#"{"a":5}"#, r#"{"a":{"$gt":3}}"#, true),
    (r#"{"a":3}"#, r#"{"a":{"$gt":3}}"#, false),
    (r#"{"a":3}"#, r#"{"a":{"$gte":3}}"#, true),
    (r#"{"a":3.5}"#, r#"{"a":{"$gt":3}}"#, true),
    (r#"{"a":3}"#, r#"{"a":{"$lt":3.5}}"#, true),
    (r#"{"a":3}"#, r#"{"a":{"$lte":3.0}}"#, true),
    (r#"{"a":3}"#, r#"{"a":{"$lt":3}}"#, false),
    (r#"{"a":-1}"#, r#"{"a":{"$lt":0}}"#, true),
    // Comparisons only match within a type bracket: a string is not greater than a number.
    (r#"{"a":"5"}"#, r#"{"a":{"$gt":3}}"#, false),
    (r#"{"a":5}"#, r#"{"a":{"$lt":"3"}}"#, false),
    (r#"{"a":"b"}"#, r#"{"a":{"$gt":"a"}}"#, true),
    // Strings compare by bytes: "B" (0x42) sorts before "a" (0x61).
    (r#"{"a":"B"}"#, r#"{"a":{"$gt":"a"}}"#, false),
    // A prefix sorts first.
    (r#"{"a":"ab"}"#, r#"{"a":{"$gt":"a"}}"#, true),
    (r#"{}"#, r#"{"a":{"$gt":0}}"#, false),
    (r#"{}"#, r#"{"a":{"$lt":0}}"#, false),
    (r#"{"a":null}"#, r#"{"a":{"$gt":0}}"#, false),
    // Any element of an array may satisfy a comparison.
    (r#"{"a":[1,10]}"#, r#"{"a":{"$gt":5}}"#, true),
    (r#"{"a":[1,2]}"#, r#"{"a":{"$gt":5}}"#, false),
    // Without $elemMatch, each operator may be satisfied by a different element.
    (r#"{"a":[1,10]}"#, r#"{"a":{"$gt":3,"$lt":5}}"#, true),
    (r#"{"a":[4]}"#, r#"{"a":{"$gt":3,"$lt":5}}"#, true),
    (r#"{"a":6}"#, r#"{"a":{"$gt":3,"$lt":5}}"#, false),
    (r#"{"a":true}"#, r#"{"a":{"$gt":false}}"#, true),
    (r#"{"a":true}"#, r#"{"a":{"$gt":0}}"#, false),
    (r#"{"a":null}"#, r#"{"a":{"$gte":null}}"#, true),
    // $gte/$lte null include equality with null, so they match a missing field.
    (r#"{}"#, r#"{"a":{"$gte":null}}"#, true),
    (r#"{}"#, r#"{"a":{"$lte":null}}"#, true),
    (r#"{"a":null}"#, r#"{"a":{"$gt":null}}"#, false),
    (r#"{"a":1}"#, r#"{"a":{"$gte":null}}"#, false),
    // Objects compare field by field.
    (r#"{"a":{"b":2}}"#, r#"{"a":{"$gt":{"b":1}}}"#, true),
    (r#"{"a":{"b":1}}"#, r#"{"a":{"$gt":{"b":1}}}"#, false),
    (r#"{"a":{"b":1,"c":0}}"#, r#"{"a":{"$gt":{"b":1}}}"#, true),
    // A leaf array is also compared as a whole.
    (r#"{"a":[2]}"#, r#"{"a":{"$gt":[1]}}"#, true),
    (r#"{"a":[1,2]}"#, r#"{"a":{"$gte":[1,2]}}"#, true),
    // Integers beyond 2^53 compare exactly, also against doubles.
    (
        r#"{"a":9007199254740993}"#,
        r#"{"a":{"$gt":9007199254740992}}"#,
        true,
    ),
    (
        r#"{"a":9007199254740993}"#,
        r#"{"a":{"$gt":9007199254740992.0}}"#,
        true,
    ),
    (r#"{"a":2}"#, r#"{"a":{"$lt":2.000001}}"#, true),
    (r#"{"a":-2}"#, r#"{"a":{"$gt":-2.5}}"#, true),
    // MaxKey is above and MinKey below every value, so these match across brackets.
    (r#"{"a":5}"#, r#"{"a":{"$lt":{"$maxKey":1}}}"#, true),
    (r#"{"a":"x"}"#, r#"{"a":{"$gt":{"$minKey":1}}}"#, true),
    (r#"{"a":"x"}"#, r#"{"a":{"$lt":{"$minKey":1}}}"#, false),
    // --- $in / $nin ---------------------------------------------------------------------------
    (r#"{"a":2}"#, r#"{"a":{"$in":[1,2,3]}}"#, true),
    (r#"{"a":4}"#, r#"{"a":{"$in":[1,2,3]}}"#, false),
    (r#"{"a":[4,2]}"#, r#"{"a":{"$in":[1,2]}}"#, true),
    // $in: [null] matches a missing field.
    (r#"{}"#, r#"{"a":{"$in":[null]}}"#, true),
    (r#"{}"#, r#"{"a":{"$in":[1]}}"#, false),
    (r#"{"a":1}"#, r#"{"a":{"$in":[]}}"#, false),
    (r#"{"a":[1,2]}"#, r#"{"a":{"$in":[[1,2]]}}"#, true),
    (r#"{"a":2.0}"#, r#"{"a":{"$in":[2]}}"#, true),
    (r#"{"a":"x"}"#, r#"{"a":{"$in":["x","y"]}}"#, true),
    (r#"{"a":2}"#, r#"{"a":{"$nin":[1,3]}}"#, true),
    (r#"{"a":3}"#, r#"{"a":{"$nin":[1,3]}}"#, false),
    (r#"{}"#, r#"{"a":{"$nin":[1,3]}}"#, true),
    (r#"{}"#, r#"{"a":{"$nin":[null]}}"#, false),
    // $nin is "no element is in": one matching element excludes the document.
    (r#"{"a":[2,3]}"#, r#"{"a":{"$nin":[3]}}"#, false),
    (r#"{"a":1}"#, r#"{"a":{"$nin":[]}}"#, true),
    // --- $exists ------------------------------------------------------------------------------
    (r#"{"a":1}"#, r#"{"a":{"$exists":true}}"#, true),
    // A null value exists.
    (r#"{"a":null}"#, r#"{"a":{"$exists":true}}"#, true),
    (r#"{}"#, r#"{"a":{"$exists":true}}"#, false),
    (r#"{}"#, r#"{"a":{"$exists":false}}"#, true),
    (r#"{"a":null}"#, r#"{"a":{"$exists":false}}"#, false),
    (r#"{"a":[]}"#, r#"{"a":{"$exists":true}}"#, true),
    (r#"{"a":{"b":1}}"#, r#"{"a.b":{"$exists":true}}"#, true),
    (
        r#"{"a":[{"b":1},{"c":1}]}"#,
        r#"{"a.b":{"$exists":true}}"#,
        true,
    ),
    (r#"{"a":[{"c":1}]}"#, r#"{"a.b":{"$exists":true}}"#, false),
    (r#"{"a":[{"c":1}]}"#, r#"{"a.b":{"$exists":false}}"#, true),
    // Numbers are read as booleans.
    (r#"{"a":1}"#, r#"{"a":{"$exists":1}}"#, true),
    (r#"{"a":1}"#, r#"{"a":{"$exists":0}}"#, false),
    (r#"{"a":[1,2]}"#, r#"{"a.0":{"$exists":true}}"#, true),
    (r#"{"a":[]}"#, r#"{"a.0":{"$exists":true}}"#, false),
    (r#"{"a":[1]}"#, r#"{"a.1":{"$exists":true}}"#, false),
    // --- dotted paths -------------------------------------------------------------------------
    (r#"{"a":{"b":{"c":1}}}"#, r#"{"a.b.c":1}"#, true),
    (r#"{"a":{"b":{"c":1}}}"#, r#"{"a.b":{"c":1}}"#, true),
    (r#"{"a":{"b":1}}"#, r#"{"a.c":null}"#, true),
    // A scalar in the middle of a path: the path is missing.
    (r#"{"a":5}"#, r#"{"a.b":null}"#, true),
    (r#"{"a":5}"#, r#"{"a.b":{"$exists":true}}"#, false),
    // A non-numeric segment over an array maps over its object elements.
    (r#"{"a":[{"b":1},{"b":2}]}"#, r#"{"a.b":2}"#, true),
    (r#"{"a":[{"b":1},{"b":2}]}"#, r#"{"a.b":3}"#, false),
    (r#"{"a":[{"b":[1,2]}]}"#, r#"{"a.b":2}"#, true),
    (r#"{"a":[{"b":[1,2]}]}"#, r#"{"a.b":[1,2]}"#, true),
    // One element without the field is enough for null to match.
    (r#"{"a":[{"b":1},{"c":2}]}"#, r#"{"a.b":null}"#, true),
    (r#"{"a":[{"b":1}]}"#, r#"{"a.b":null}"#, false),
    // Scalar elements have no fields and yield nothing, not "missing" (BSONElementIterator).
    (r#"{"a":[1,2]}"#, r#"{"a.b":null}"#, false),
    (r#"{"a":[]}"#, r#"{"a.b":null}"#, false),
    // Nested arrays are not entered by a field name.
    (r#"{"a":[[{"b":1}]]}"#, r#"{"a.b":1}"#, false),
    // A numeric segment indexes the array.
    (r#"{"a":[10,20]}"#, r#"{"a.1":20}"#, true),
    (r#"{"a":[10,20]}"#, r#"{"a.0":20}"#, false),
    (r#"{"a":[{"b":1},{"b":2}]}"#, r#"{"a.1.b":2}"#, true),
    (r#"{"a":[{"b":1},{"b":2}]}"#, r#"{"a.0.b":2}"#, false),
    (r#"{"a":[[1,2],[3]]}"#, r#"{"a.0":[1,2]}"#, true),
    // An element reached by position is not expanded further.
    (r#"{"a":[[1,2]]}"#, r#"{"a.0":1}"#, false),
    // Positions through nested arrays.
    (r#"{"a":[[1,2],[3]]}"#, r#"{"a.1.0":3}"#, true),
    // A numeric segment over an array also names a field "0" of its object elements.
    (r#"{"a":[{"0":"x"}]}"#, r#"{"a.0":"x"}"#, true),
    (r#"{"a":[{"0":"x"}]}"#, r#"{"a.0":{"0":"x"}}"#, true),
    // Over an object, a numeric segment is just a field name.
    (r#"{"a":{"0":"x"}}"#, r#"{"a.0":"x"}"#, true),
    (
        r#"{"a":[{"b":{"c":1}},{"b":{"c":2}}]}"#,
        r#"{"a.b.c":2}"#,
        true,
    ),
    // Arrays at two levels of the path are both traversed.
    (r#"{"a":[{"b":[{"c":1},{"c":2}]}]}"#, r#"{"a.b.c":2}"#, true),
    (r#"{"a":[{"b":1},{"b":2}]}"#, r#"{"a.b":{"$ne":1}}"#, false),
    (r#"{"a":[{"b":1},{"b":2}]}"#, r#"{"a.b":{"$gt":1}}"#, true),
    // "01" is not the canonical spelling of an index.
    (r#"{"a":[10,20]}"#, r#"{"a.01":10}"#, false),
    (r#"{"a":[{"b":1}]}"#, r#"{"a.b":[1]}"#, false),
    (r#"{"a":{"b":[1,2]}}"#, r#"{"a.b":[1,2]}"#, true),
    (r#"{"a":{"b":[1,2]}}"#, r#"{"a.b":1}"#, true),
    // --- $and $or $nor ------------------------------------------------------------------------
    (r#"{"a":1}"#, r#"{"$and":[{"a":1},{"a":{"$lt":5}}]}"#, true),
    (r#"{"a":1}"#, r#"{"$and":[{"a":1},{"a":2}]}"#, false),
    (r#"{"a":1}"#, r#"{"$or":[{"a":2},{"a":1}]}"#, true),
    (r#"{"a":3}"#, r#"{"$or":[{"a":2},{"a":1}]}"#, false),
    (r#"{"a":1}"#, r#"{"$nor":[{"a":2},{"b":1}]}"#, true),
    (r#"{"a":1}"#, r#"{"$nor":[{"a":1}]}"#, false),
    (r#"{}"#, r#"{"$nor":[{"a":1}]}"#, true),
    (
        r#"{"a":1,"b":2}"#,
        r#"{"a":1,"$or":[{"b":2},{"c":3}]}"#,
        true,
    ),
    (
        r#"{"a":2,"b":2}"#,
        r#"{"a":1,"$or":[{"b":2},{"c":3}]}"#,
        false,
    ),
    // Each clause may be satisfied by a different element.
    (r#"{"a":[1,2]}"#, r#"{"$and":[{"a":1},{"a":2}]}"#, true),
    (
        r#"{"a":1}"#,
        r#"{"$or":[{"$and":[{"a":1},{"b":{"$exists":false}}]}]}"#,
        true,
    ),
    (r#"{"a":1}"#, r#"{"$or":[{}]}"#, true),
    // --- $not ---------------------------------------------------------------------------------
    (r#"{"a":5}"#, r#"{"a":{"$not":{"$gt":3}}}"#, false),
    (r#"{"a":2}"#, r#"{"a":{"$not":{"$gt":3}}}"#, true),
    // $not matches a missing field and values of other types, unlike $lte.
    (r#"{}"#, r#"{"a":{"$not":{"$gt":3}}}"#, true),
    (r#"{"a":"x"}"#, r#"{"a":{"$not":{"$gt":3}}}"#, true),
    (r#"{"a":[1,5]}"#, r#"{"a":{"$not":{"$gt":3}}}"#, false),
    // $not negates the conjunction of its operators.
    (r#"{"a":5}"#, r#"{"a":{"$not":{"$gt":3,"$lt":4}}}"#, true),
    (r#"{"a":"abc"}"#, r#"{"a":{"$not":{"$regex":"^a"}}}"#, false),
    (r#"{"a":"xbc"}"#, r#"{"a":{"$not":{"$regex":"^a"}}}"#, true),
    (r#"{"a":null}"#, r#"{"a":{"$not":{"$eq":null}}}"#, false),
    // --- $regex -------------------------------------------------------------------------------
    (r#"{"name":"alice"}"#, r#"{"name":{"$regex":"^a"}}"#, true),
    (r#"{"name":"Alice"}"#, r#"{"name":{"$regex":"^a"}}"#, false),
    (
        r#"{"name":"Alice"}"#,
        r#"{"name":{"$regex":"^a","$options":"i"}}"#,
        true,
    ),
    // Without m, ^ anchors at the start of the string only.
    (
        r#"{"name":"x\nabc"}"#,
        r#"{"name":{"$regex":"^abc"}}"#,
        false,
    ),
    (
        r#"{"name":"x\nabc"}"#,
        r#"{"name":{"$regex":"^abc","$options":"m"}}"#,
        true,
    ),
    // Without s, . does not match a newline.
    (r#"{"name":"a\nb"}"#, r#"{"name":{"$regex":"a.b"}}"#, false),
    (
        r#"{"name":"a\nb"}"#,
        r#"{"name":{"$regex":"a.b","$options":"s"}}"#,
        true,
    ),
    // x ignores whitespace and # comments in the pattern.
    (
        r#"{"name":"ab"}"#,
        r#"{"name":{"$regex":"a b # comment","$options":"x"}}"#,
        true,
    ),
    (
        r#"{"name":"A\nB"}"#,
        r#"{"name":{"$regex":"^b","$options":"im"}}"#,
        true,
    ),
    (
        r#"{"name":["bob","alice"]}"#,
        r#"{"name":{"$regex":"^al"}}"#,
        true,
    ),
    // A regex only matches strings.
    (r#"{"name":5}"#, r#"{"name":{"$regex":"5"}}"#, false),
    (r#"{}"#, r#"{"name":{"$regex":""}}"#, false),
    (
        r#"{"name":"café"}"#,
        r#"{"name":{"$regex":"^caf.$"}}"#,
        true,
    ),
    (
        r#"{"name":"xyz"}"#,
        r#"{"name":{"$options":"i","$regex":"Y"}}"#,
        true,
    ),
    // Unanchored: matches anywhere.
    (r#"{"name":"abc"}"#, r#"{"name":{"$regex":"b"}}"#, true),
    (
        r#"{"a":[{"name":"x"},{"name":"yes"}]}"#,
        r#"{"a.name":{"$regex":"^y"}}"#,
        true,
    ),
    // --- documents that are not objects have no fields -----------------------------------------
    (r#"[1,2]"#, r#"{}"#, true),
    (r#"[1,2]"#, r#"{"a":null}"#, true),
    (r#""text""#, r#"{"a":{"$exists":true}}"#, false),
];

#[test]
fn table() {
    assert!(CASES.len() >= 120, "{} cases", CASES.len());
    let mut failures = Vec::new();
    for (doc, filter, expected) in CASES {
        let compiled = Filter::parse(&json(filter))
            .unwrap_or_else(|e| panic!("filter {filter} does not parse: {e}"));
        if compiled.matches(&json(doc)) != *expected {
            failures.push(format!("{filter} on {doc}: expected {expected}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The documents of MongoDB's `jstests/core/query/null_query_semantics.js` (those without
/// `undefined`, which JSON cannot hold).
const NULL_DOCS: &[(&str, &str)] = &[
    ("a_empty_subobject", r#"{"a":{}}"#),
    ("a_null", r#"{"a":null}"#),
    ("a_number", r#"{"a":4}"#),
    ("a_subobject_b_not_null", r#"{"a":{"b":"hi"}}"#),
    ("a_subobject_b_null", r#"{"a":{"b":null}}"#),
    ("no_a", r#"{}"#),
    ("a_double_array", r#"{"a":[[]]}"#),
    ("a_empty_array", r#"{"a":[]}"#),
    (
        "a_object_array_no_b_nulls",
        r#"{"a":[{"b":1},{"b":3},{"b":"string"}]}"#,
    ),
    (
        "a_object_array_some_b_nulls",
        r#"{"a":[{"b":null},{"b":3},{"b":null}]}"#,
    ),
    ("a_object_array_some_b_missing", r#"{"a":[{"b":3},{}]}"#),
    ("a_value_array_all_nulls", r#"{"a":[null,null]}"#),
    ("a_value_array_no_nulls", r#"{"a":[1,"string",4]}"#),
    ("a_value_array_with_null", r#"{"a":[1,"string",null,4]}"#),
];

const EQ_NULL: &[&str] = &[
    "a_null",
    "no_a",
    "a_value_array_all_nulls",
    "a_value_array_with_null",
];

const NE_NULL: &[&str] = &[
    "a_empty_subobject",
    "a_number",
    "a_subobject_b_not_null",
    "a_subobject_b_null",
    "a_double_array",
    "a_empty_array",
    "a_object_array_no_b_nulls",
    "a_object_array_some_b_nulls",
    "a_object_array_some_b_missing",
    "a_value_array_no_nulls",
];

const DOTTED_EQ_NULL: &[&str] = &[
    "a_empty_subobject",
    "a_null",
    "a_number",
    "a_subobject_b_null",
    "no_a",
    "a_object_array_some_b_nulls",
    "a_object_array_some_b_missing",
];

const DOTTED_NE_NULL: &[&str] = &[
    "a_subobject_b_not_null",
    "a_double_array",
    "a_empty_array",
    "a_object_array_no_b_nulls",
    "a_value_array_all_nulls",
    "a_value_array_no_nulls",
    "a_value_array_with_null",
];

/// Each query with the ids MongoDB returns for it, from the same test.
const NULL_QUERIES: &[(&str, &[&str])] = &[
    (r#"{"a":{"$eq":null}}"#, EQ_NULL),
    (r#"{"a":{"$ne":null}}"#, NE_NULL),
    (r#"{"a":{"$not":{"$gte":null}}}"#, NE_NULL),
    (r#"{"a":{"$in":[null,75]}}"#, EQ_NULL),
    (r#"{"$or":[{"a":null},{"a":75}]}"#, EQ_NULL),
    (r#"{"a":{"$nin":[null,75]}}"#, NE_NULL),
    (
        r#"{"a":{"$nin":[null,[]]}}"#,
        &[
            "a_empty_subobject",
            "a_number",
            "a_subobject_b_not_null",
            "a_subobject_b_null",
            "a_object_array_no_b_nulls",
            "a_object_array_some_b_nulls",
            "a_object_array_some_b_missing",
            "a_value_array_no_nulls",
        ],
    ),
    (r#"{"a.b":{"$eq":null}}"#, DOTTED_EQ_NULL),
    (r#"{"a.b":{"$ne":null}}"#, DOTTED_NE_NULL),
    (r#"{"a.b":{"$in":[null,75]}}"#, DOTTED_EQ_NULL),
    (r#"{"$or":[{"a.b":null},{"a.b":75}]}"#, DOTTED_EQ_NULL),
    (r#"{"a.b":{"$nin":[null,75]}}"#, DOTTED_NE_NULL),
];

#[test]
fn mongodb_null_query_semantics() {
    let mut failures = Vec::new();
    for (filter, expected) in NULL_QUERIES {
        let compiled = Filter::parse(&json(filter)).expect("the test filters are valid");
        for (id, doc) in NULL_DOCS {
            let wanted = expected.contains(id);
            if compiled.matches(&json(doc)) != wanted {
                failures.push(format!("{filter} on {id} {doc}: expected {wanted}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The non-array part of the same test also pins `$exists: false` over a dotted path.
#[test]
fn mongodb_dotted_exists_false() {
    let compiled = Filter::parse(&json(r#"{"a.b":{"$exists":false}}"#)).expect("valid");
    let expected = ["a_empty_subobject", "a_null", "a_number", "no_a"];
    for (id, doc) in &NULL_DOCS[..6] {
        assert_eq!(
            compiled.matches(&json(doc)),
            expected.contains(id),
            "{id} {doc}"
        );
    }
}

#[test]
fn bson_sort_order() {
    // Ascending, one value per line; equal neighbours are marked with `=`.
    let sorted = [
        r#"{"$minKey":1}"#,
        "null",
        "-1e300",
        "-2",
        "-1.5",
        "0",
        "=0.0",
        "1",
        "=1.0",
        "9007199254740992",
        "9007199254740993",
        "18446744073709551615",
        "1e300",
        r#""""#,
        r#""B""#,
        r#""a""#,
        r#""ab""#,
        r#""é""#,
        "{}",
        r#"{"a":null}"#,
        r#"{"a":1}"#,
        r#"{"a":1,"b":1}"#,
        // Field names decide only between values of one bracket.
        r#"{"b":0}"#,
        r#"{"a":"x"}"#,
        r#"{"a":{}}"#,
        "[]",
        "[null]",
        "[1]",
        "[1,2]",
        "[2]",
        r#"["a"]"#,
        r#"{"$oid":"000000000000000000000001"}"#,
        r#"={"$oid":"000000000000000000000001"}"#,
        r#"{"$oid":"ff0000000000000000000000"}"#,
        "false",
        "true",
        r#"{"$maxKey":1}"#,
    ];
    let values: Vec<(bool, serde_json::Value)> = sorted
        .iter()
        .map(|s| match s.strip_prefix('=') {
            Some(rest) => (true, json(rest)),
            None => (false, json(s)),
        })
        .collect();
    for pair in values.windows(2) {
        let (_, a) = &pair[0];
        let (equal, b) = &pair[1];
        let expected = if *equal {
            Ordering::Equal
        } else {
            Ordering::Less
        };
        assert_eq!(compare_values(a, b), expected, "{a} vs {b}");
        assert_eq!(compare_values(b, a), expected.reverse(), "{b} vs {a}");
    }
    // Sorting a shuffled copy restores the order (stable sort keeps equal neighbours).
    let mut shuffled: Vec<serde_json::Value> =
        values.iter().rev().map(|(_, v)| v.clone()).collect();
    shuffled.sort_by(compare_values);
    for (got, (_, want)) in shuffled.iter().zip(&values) {
        assert_eq!(
            compare_values(got, want),
            Ordering::Equal,
            "{got} vs {want}"
        );
    }
}
