//! `ctxpack status`: what the store holds and whether HEAD is indexed.

use clap::Args;
use ctxpack_api::Error;

use crate::args::Location;
use crate::client::{Remote, ServerArgs};

/// Options of `ctxpack status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Ask a ctxpack server instead.
    #[command(flatten)]
    pub remote: ServerArgs,
}

/// Runs `ctxpack status`.
pub fn run(args: &StatusArgs) -> Result<String, Error> {
    if let Some(remote) = Remote::from_args(&args.remote)? {
        return remote.get("snapshots", &[("format", args.format.clone())]);
    }
    crate::present::status(&args.location.workspace()?, args.format == "json")
}
