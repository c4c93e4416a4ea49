//! Tests of the API, run in process against real git repositories built with `git`.

mod damage;
mod determinism;
mod docs;
mod eval;
mod fixture;
mod layering;
mod ledger;
mod masking;
mod plan;
mod select;
mod snapshot;
mod trees;
mod upgrade;
