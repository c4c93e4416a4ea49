//! JSON Schemas for the engine's value types, for `#[schemars(with = …)]` attributes on
//! request types (the API's and a front end's own), so the engine crates need not know about
//! schemas.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A budget: a positive integer at most 2^53 − 1.
pub struct Budget;

impl JsonSchema for Budget {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Budget".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "minimum": 1,
            "maximum": ctxpack_core::Budget::MAX,
        })
    }
}

/// Defines a string enum schema from the names of a list of a type's values (its `ALL`
/// unless another list is named).
macro_rules! names {
    ($name:ident, $ty:path) => {
        names!($name, $ty, ALL);
    };
    ($name:ident, $ty:path, $list:ident) => {
        #[doc = concat!("The names of [`", stringify!($ty), "`].")]
        pub struct $name;

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let names: Vec<&str> = <$ty>::$list.iter().map(|v| v.name()).collect();
                json_schema!({ "type": "string", "enum": names })
            }
        }
    };
}

// A request may only name a meter this build counts in.
names!(Meter, ctxpack_core::Meter, BUILT);
names!(Selector, ctxpack_core::Selector);
names!(View, ctxpack_core::View);
names!(Format, ctxpack_core::Format);

/// A MongoDB-style filter: a JSON object (or its JSON text).
pub struct Filter;

impl JsonSchema for Filter {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Filter".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [{ "type": "object" }, { "type": "string" }],
        })
    }
}
