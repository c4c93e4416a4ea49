//! One module per subcommand.

pub mod docs;
pub mod index;
pub mod pack;
pub mod repo;
pub mod select;
pub mod status;
