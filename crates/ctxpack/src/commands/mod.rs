//! One module per subcommand.

pub mod select;
