//! Tests of the API, run in process against real git repositories built with `git`.

mod docs;
mod eval;
mod fixture;
mod layering;
mod ledger;
mod plan;
mod select;
mod snapshot;
