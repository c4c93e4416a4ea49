//! `ctxpack mcp`: the Model Context Protocol server over stdio.

use clap::Args;

use crate::commands::repo::Location;
use crate::failure::Failure;

/// Options of `ctxpack mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// `read` (packs, queries, status; never writes) or `write` (also indexing and imports).
    #[arg(long, default_value = "read", value_parser = ["read", "write"])]
    pub scope: String,
    /// Which repository and store the server serves.
    #[command(flatten)]
    pub location: Location,
}

/// Runs the server until the client closes stdin.
pub fn run(_args: &McpArgs) -> Result<String, Failure> {
    Err(Failure::new(
        crate::failure::FailureKind::Internal,
        "the MCP server is not built in this version",
    ))
}
