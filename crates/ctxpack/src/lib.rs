//! ctxpack: the best evidence for a task, inside a hard token budget, every piece cited.
//!
//! This crate is the `ctxpack` command line and the library behind it. Each subcommand lives
//! in [`commands`]; [`failure`] holds the typed failures and their exit codes. The pack engine
//! itself is [`ctxpack_core`], re-exported here as [`core`].
//!
//! ```
//! use ctxpack::commands::select::{SelectOptions, run};
//! use ctxpack::core::{Budget, Meter, RenderOptions, Selector, Format};
//!
//! let input = br#"[{"id": "a", "text": "one two"}, {"id": "b", "text": "three"}]"#;
//! let options = SelectOptions {
//!     goal: "demo".into(),
//!     budget: Budget::new(2).unwrap(),
//!     meter: Meter::Words,
//!     selector: Selector::Skip,
//!     render: RenderOptions { format: Format::Json, ..Default::default() },
//!     ledger: None,
//! };
//! let out = run(input, &options).unwrap();
//! assert!(out.contains(r#""usedTokens":2"#));
//! ```

pub mod cli;
pub mod commands;
pub mod failure;
pub mod mcp;

pub use ctxpack_core as core;
