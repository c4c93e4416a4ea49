//! One module per subcommand: its clap arguments, the request it builds, and how its result
//! reads on a terminal.

pub mod artifact;
pub mod completions;
pub mod config;
pub mod docs;
pub mod eval;
pub mod gc;
pub mod hook;
pub mod index;
pub mod ledger;
pub mod pack;
pub mod plan;
mod search;
pub mod select;
pub mod status;
pub mod verify;
