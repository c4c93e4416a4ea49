//! Tool input schemas generated from the request types, and arguments read back into them.

use ctxpack_api::Error;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The input schema of `T`, in the subset of JSON Schema that every client accepts: one type
/// per property (a `null` argument means "absent", so optional arguments are simply not
/// required), no integer formats, and defaults only where a value may be left out.
pub(crate) fn schema_of<T: JsonSchema>() -> JsonObject {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut value =
        serde_json::to_value(generator.into_root_schema_for::<T>()).expect("a schema serializes");
    simplify(&mut value);
    let Value::Object(mut object) = value else {
        unreachable!("a struct's schema is an object")
    };
    for key in ["$schema", "title", "description"] {
        object.remove(key);
    }
    object.insert("additionalProperties".into(), json!(false));
    let required: Vec<Value> = object
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for name in required.iter().filter_map(Value::as_str) {
            if let Some(Value::Object(property)) = properties.get_mut(name) {
                property.remove("default");
            }
        }
    } else {
        object.insert("properties".into(), json!({}));
    }
    object
}

fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [one] = types.as_slice() {
                    let one = one.clone();
                    map.insert("type".into(), one);
                }
            }
            if let Some(Value::Array(any)) = map.get_mut("anyOf") {
                any.retain(|s| s.get("type") != Some(&json!("null")));
                if let [Value::Object(only)] = any.as_slice() {
                    let only = only.clone();
                    map.remove("anyOf");
                    map.extend(only);
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.contains("int"))
            {
                map.remove("format");
            }
            map.values_mut().for_each(simplify);
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

/// The schema of `A` with the protocol-only arguments of `B` added.
pub(crate) fn merged<A: JsonSchema, B: JsonSchema>() -> JsonObject {
    let mut a = schema_of::<A>();
    let b = schema_of::<B>();
    for key in ["properties", "required"] {
        match (a.get_mut(key), b.get(key)) {
            (Some(Value::Object(into)), Some(Value::Object(from))) => into.extend(from.clone()),
            (Some(Value::Array(into)), Some(Value::Array(from))) => into.extend(from.clone()),
            (None, Some(from)) => {
                a.insert(key.into(), from.clone());
            }
            _ => {}
        }
    }
    a
}

/// Deserializes the arguments that belong to `T` (those its schema lists), naming the
/// argument at fault.
pub(crate) fn take<T: JsonSchema + DeserializeOwned>(arguments: &JsonObject) -> Result<T, Error> {
    let own = schema_of::<T>();
    let names = own.get("properties").and_then(Value::as_object);
    let mine: JsonObject = arguments
        .iter()
        .filter(|(k, _)| names.is_some_and(|n| n.contains_key(k.as_str())))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_path_to_error::deserialize(Value::Object(mine)).map_err(|e| {
        let field = e.path().to_string();
        let message = e.into_inner().to_string();
        if field == "." {
            Error::invalid(message)
        } else {
            Error::invalid_field(field, message)
        }
    })
}
