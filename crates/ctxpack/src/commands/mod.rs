//! One module per subcommand.

pub mod artifact;
pub mod docs;
pub mod eval;
pub mod index;
pub mod ledger;
pub mod pack;
pub mod plan;
pub mod repo;
pub mod select;
pub mod status;
