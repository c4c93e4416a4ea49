//! The pure parts of ctxpack's document packs.
//!
//! Document packs give a model the JSON documents most relevant to a query, under a budget and
//! cited by `_id`. This crate holds everything about them that is a function of data: the
//! MongoDB-style [`filter`] language, the offline hashing embedder ([`embed`]), exact flat
//! cosine top-k ([`knn`]), an approximate inverted-file index's arithmetic ([`ivf`]), the assembly of a context pack through the pack engine
//! ([`context`]) and documents as text ([`document`]: `_id` keys, exact round-trips, field
//! paths). It does no IO: the document store that feeds it lives elsewhere.
//!
//! ```
//! use ctxpack_docs::context::{self, ContextItem, ContextOptions};
//! use ctxpack_docs::embed::embed;
//! use ctxpack_docs::filter::Filter;
//! use ctxpack_docs::knn::FlatIndex;
//! use serde_json::json;
//!
//! let docs = [
//!     json!({"_id": 1, "status": "published", "text": "database search and indexing"}),
//!     json!({"_id": 2, "status": "draft", "text": "database search internals"}),
//!     json!({"_id": 3, "status": "published", "text": "chocolate cake recipe"}),
//! ];
//! // Pre-filter, embed, rank, pack.
//! let filter = Filter::parse(&json!({"status": "published"})).unwrap();
//! let eligible: Vec<&serde_json::Value> = docs.iter().filter(|d| filter.matches(d)).collect();
//! let mut index = FlatIndex::new();
//! for doc in &eligible {
//!     index.push(&embed(doc["text"].as_str().unwrap()));
//! }
//! let items = index
//!     .top_k(&embed("database search"), 10)
//!     .into_iter()
//!     .map(|(row, score)| ContextItem {
//!         id: eligible[row]["_id"].clone(),
//!         score: f64::from(score),
//!         text: eligible[row]["text"].as_str().unwrap().to_owned(),
//!     })
//!     .collect();
//! let pack = context::build("database search", "docs", items, &ContextOptions::default());
//! assert_eq!(pack.to_json()["citations"], json!([1, 3]));
//! assert_eq!(pack.to_json()["usedTokens"], json!(13));
//! ```

pub mod context;
pub mod document;
mod dot;
pub mod embed;
mod error;
pub mod filter;
pub mod ivf;
pub mod knn;

pub use error::{DocsError, FilterError, Scope};
