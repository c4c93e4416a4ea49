//! Tool input schemas generated from the request types, and arguments read back into them.
//!
//! Clients pass these schemas to model APIs that refuse a whole request over one keyword, so
//! each keeps to what OpenAI's strict mode and Gemini's function declarations both accept
//! (rules, sources and check: `tool_schemas_keep_to_openai_strict_and_gemini`, tests/it/mcp.rs):
//! every object closed with every property required, an optional one `anyOf: [its schema,
//! {"type": "null"}]` (`null` means absent) with its default described; one `type` per schema;
//! an open object (a filter, a document) published as its JSON text (the object still works).

use ctxpack_api::Error;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The input schema of `T`, in that subset.
pub(crate) fn schema_of<T: JsonSchema>() -> JsonObject {
    // Inlined: Gemini's OpenAPI form of a schema has no `$ref`.
    let settings =
        schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let root = settings.into_generator().into_root_schema_for::<T>();
    let Value::Object(mut object) = serde_json::to_value(root).expect("a schema serializes") else {
        unreachable!("a struct's schema is an object")
    };
    close(&mut object);
    object.remove("description");
    object
}

/// Removes the named properties (from `properties` and `required`). Every name must be a
/// property of the schema.
pub(crate) fn withhold(schema: &mut JsonObject, names: &[&str]) {
    let properties = schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .expect("an object schema");
    for name in names {
        assert!(
            properties.shift_remove(*name).is_some(),
            "no argument `{name}` to withhold"
        );
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !names.contains(&r)));
    }
}

/// Gives each named property the text `text` in place of the library's, keeping what the
/// description says a `null` means unless `text` says it. Every name must be a property of
/// the schema.
pub(crate) fn describe(schema: &mut JsonObject, texts: &[(&str, &str)]) {
    let properties = schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .expect("an object schema");
    for (name, text) in texts {
        let property = properties
            .get_mut(*name)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("no argument `{name}` to describe"));
        let old = property
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // A text that says what `null` means here replaces the library's.
        let new = match old.rfind("Null: ") {
            Some(at) if !text.contains("Null: ") => format!("{text} {}", &old[at..]),
            _ => (*text).to_owned(),
        };
        property.insert("description".into(), Value::String(new));
    }
}

/// Closes an object schema: every property required, the optional ones nullable.
fn close(object: &mut JsonObject) {
    let required: Vec<String> =
        serde_json::from_value(object.remove("required").unwrap_or_default()).unwrap_or_default();
    let mut properties: JsonObject =
        serde_json::from_value(object.remove("properties").unwrap_or_default()).unwrap_or_default();
    for (name, property) in &mut properties {
        let schema = property.as_object_mut().expect("an object schema");
        let default = schema.remove("default").filter(|d| !d.is_null());
        plain(schema);
        if !required.contains(name) {
            // A string default is written bare: its quotes would be escaped in the JSON.
            let note = match default {
                None => "Null: none.".to_owned(),
                Some(Value::String(d)) => format!("Null: {d}."),
                Some(d) => format!("Null: {d}."),
            };
            let text = match schema.remove("description") {
                Some(Value::String(text)) => format!("{text} {note}"),
                _ => note,
            };
            *property = json!({"description": text, "anyOf": [schema, {"type": "null"}]});
        }
    }
    object.retain(|key, _| key == "description");
    object.insert("type".into(), json!("object"));
    object.insert("required".into(), properties.keys().cloned().collect());
    object.insert("properties".into(), Value::Object(properties));
    object.insert("additionalProperties".into(), json!(false));
}

/// One schema in the subset: one `type`, enums inlined, no keyword either API refuses.
fn plain(schema: &mut JsonObject) {
    for key in "title format minLength default additionalProperties".split(' ') {
        schema.remove(key);
    }
    if let Some(Value::Array(types)) = schema.get("type") {
        let one = types.iter().find(|t| *t != "null").cloned();
        schema.insert("type".into(), one.expect("an option of one type"));
    }
    if let Some(Value::Array(mut variants)) = schema.remove("anyOf").or(schema.remove("oneOf")) {
        variants.retain(|v| v.get("type") != Some(&json!("null")));
        if let [Value::Object(only)] = variants.as_slice() {
            for (key, value) in only {
                schema.entry(key).or_insert_with(|| value.clone());
            }
            return plain(schema);
        }
        // Unit variants are a string enum; another union (an object or its JSON text) is
        // published as text.
        let names: Option<Vec<Value>> = variants.iter().map(|v| v.get("const").cloned()).collect();
        schema.insert("type".into(), json!("string"));
        schema.extend(names.map(|names| ("enum".into(), json!(names))));
    }
    if schema.contains_key("properties") {
        close(schema);
    } else if schema.get("type") == Some(&json!("object")) {
        // Strict mode has no open object (a document): it is published as its JSON text.
        schema.insert("type".into(), json!("string"));
    }
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        plain(items);
    }
}

/// The arguments of `A` and the protocol-only arguments of `B`, for their schema only.
#[derive(JsonSchema)]
#[allow(dead_code, reason = "never built: only its schema is used")]
struct Both<A, B> {
    #[serde(flatten)]
    a: A,
    #[serde(flatten)]
    b: B,
}

/// The schema of `A` with the protocol-only arguments of `B` added.
pub(crate) fn merged<A: JsonSchema, B: JsonSchema>() -> JsonObject {
    schema_of::<Both<A, B>>()
}

/// Deserializes the arguments that belong to `T` (those its schema lists), naming the
/// argument at fault.
pub(crate) fn take<T: JsonSchema + DeserializeOwned>(arguments: &JsonObject) -> Result<T, Error> {
    let names = schema_of::<T>()["properties"].clone();
    let mut mine = arguments.clone();
    mine.retain(|key, _| names.get(key).is_some());
    serde_path_to_error::deserialize(Value::Object(mine)).map_err(|e| {
        let field = e.path().to_string();
        let message = e.into_inner().to_string();
        match field.as_str() {
            "." => Error::invalid(message),
            _ => Error::invalid_field(field, message),
        }
    })
}
