//! The pure pack engine of ctxpack.
//!
//! This crate turns ranked candidates into a pack: it deduplicates exact citation ids, admits
//! whole hits under a hard budget with one of the [`Selector`]s, counts what it did, records
//! every candidate it left out with a [`DropReason`], and renders the result as text, canonical
//! JSON, Markdown or XML. It does no IO, knows nothing about git, SQLite or async, and every
//! function is deterministic, so it cannot fail on a bad repository or store.
//!
//! ```
//! use ctxpack_core::{Budget, Candidate, Pack, PackRequest, Selector, render, RenderOptions, Format};
//! use ctxpack_meter::Meter;
//!
//! let meter = Meter::Words;
//! let candidates = vec![
//!     Candidate::new("src/a.rs#L1-L3", "fn a() { budget() }", meter),
//!     Candidate::new("src/b.rs#L1-L2", "fn b() {}", meter),
//! ];
//! let request = PackRequest {
//!     goal: "budget".into(),
//!     budget: Budget::new(8).unwrap(),
//!     meter,
//!     selector: Selector::Diverse,
//! };
//! let pack = Pack::build(request, candidates);
//! assert_eq!(pack.used, 8);
//! assert_eq!(pack.hits.len(), 2);
//! let json = render(&pack, &RenderOptions { format: Format::Json, ..Default::default() });
//! assert!(json.starts_with(r#"{"goal":"budget","budget":8,"#));
//! ```

mod budget;
mod error;
mod mask;
mod model;
mod pack;
mod render;
mod select;

pub use budget::Budget;
pub use ctxpack_meter::Meter;
pub use error::ValueError;
pub use mask::{MASK_RULES_VERSION, Masker, Rule};
pub use model::{
    Candidate, Citation, DropReason, Dropped, Family, Hit, Location, Seen, Tier, WORKTREE,
};
pub use pack::{
    Enclosing, Fitted, Pack, PackRequest, Presentation, RedactionSummary, SnapshotInfo, Warning,
};
pub use render::{
    FIRST_DROPPED, Format, RenderOptions, SHORT_PACK_ID, View, around_the_evidence,
    evidence_tokens, json_text, markup, pack_json, render, short_pack_id, visible,
};
pub use select::{Counters, Selection, Selector, select};
