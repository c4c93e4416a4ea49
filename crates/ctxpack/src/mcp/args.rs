//! Reading a tool's arguments: typed getters that fail with the CLI's invalid-input failure
//! (exit code 2), naming the argument, so a model can correct its call.

use std::str::FromStr;

use ctxpack_core::Budget;
use rmcp::model::JsonObject;
use serde_json::Value;

use crate::failure::Failure;

/// The arguments of one call.
pub(crate) struct Args<'a> {
    tool: &'a str,
    map: &'a JsonObject,
}

impl<'a> Args<'a> {
    /// Wraps `map`, refusing keys the tool does not know.
    pub(crate) fn new(tool: &'a str, map: &'a JsonObject, known: &[&str]) -> Result<Self, Failure> {
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(Failure::invalid(format!(
                "`{tool}` has no argument `{key}`; known arguments: {}",
                known.join(", ")
            )));
        }
        Ok(Args { tool, map })
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn wrong(&self, name: &str, expected: &str) -> Failure {
        Failure::invalid(format!(
            "`{}` argument `{name}` must be {expected}",
            self.tool
        ))
    }

    /// The raw value of an optional argument (`null` counts as absent).
    pub(crate) fn value(&self, name: &str) -> Option<&'a Value> {
        self.get(name)
    }

    /// A required non-empty string.
    pub(crate) fn string(&self, name: &str) -> Result<&'a str, Failure> {
        match self.get(name) {
            None => Err(Failure::invalid(format!(
                "`{}` needs the argument `{name}` (a string)",
                self.tool
            ))),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
            Some(Value::String(_)) => Err(self.wrong(name, "a non-empty string")),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    /// An optional string.
    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<&'a str>, Failure> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    /// An optional string parsed with `FromStr` (meter, selector, view).
    pub(crate) fn parsed<T>(&self, name: &str, default: T) -> Result<T, Failure>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        match self.opt_string(name)? {
            None => Ok(default),
            Some(s) => s.parse().map_err(|e: T::Err| {
                Failure::invalid(format!("`{}` argument `{name}`: {e}", self.tool))
            }),
        }
    }

    /// An optional budget: a positive integer at most 2^53 − 1.
    pub(crate) fn budget(&self, name: &str, default: u64) -> Result<Budget, Failure> {
        match self.get(name) {
            None => Budget::new(default).map_err(|e| Failure::invalid(e.to_string())),
            Some(v) => Budget::from_json(v)
                .map_err(|e| Failure::invalid(format!("`{}` argument `{name}`: {e}", self.tool))),
        }
    }

    /// An optional positive integer.
    pub(crate) fn positive(&self, name: &str, default: usize) -> Result<usize, Failure> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| *n >= 1)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| self.wrong(name, "a positive integer")),
        }
    }

    /// An optional boolean.
    pub(crate) fn flag(&self, name: &str) -> Result<bool, Failure> {
        match self.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.wrong(name, "true or false")),
        }
    }
}
