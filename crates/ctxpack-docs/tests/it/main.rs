//! Integration tests of the document-pack core: the filter semantics as a table of MongoDB
//! cases, filter errors as data, properties (no panics, BSON order laws), the embedder, kNN,
//! and the seed's context pack byte for byte.

mod context;
mod document;
mod embed;
mod filter;
mod filter_errors;
mod knn;
mod props;

/// Parses test JSON.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("test JSON {text:?} does not parse: {e}"))
}
