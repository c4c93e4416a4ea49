//! Tests of the API, run in process against real git repositories built with `git`.

mod ann;
mod backends;
mod config;
mod damage;
pub mod deltas;
mod determinism;
mod docs;
mod eval;
mod fast_paths;
mod field_index;
mod fit;
mod fixture;
mod gc;
mod history;
mod hooks;
mod imports;
mod layering;
mod ledger;
mod masking;
mod plan;
mod progress;
mod select;
mod server;
mod snapshot;
mod trees;
mod upgrade;
mod worktree;
