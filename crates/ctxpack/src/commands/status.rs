//! `ctxpack status`: what the store holds and whether HEAD is indexed.

use clap::Args;
use ctxpack_api::Error;

use crate::args::Location;

/// Options of `ctxpack status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Runs `ctxpack status`.
pub fn run(args: &StatusArgs) -> Result<String, Error> {
    let status = args.location.workspace()?.status()?;
    if args.format == "json" {
        return Ok(format!("{}\n", status.to_json()));
    }
    Ok(status.to_string())
}
