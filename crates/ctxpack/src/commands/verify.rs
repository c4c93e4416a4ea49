//! `ctxpack verify`: check a store in full, and repair it.

use clap::Args;
use ctxpack_api::{Error, ErrorKind, Hint, VerifyRequest};

use crate::args::Location;
use crate::output::progress;

/// Options of `ctxpack verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Repair what can be repaired (from the store and the repository's git objects).
    #[arg(long)]
    pub repair: bool,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Runs `ctxpack verify`: prints the report; exits 4 when problems remain.
pub fn run(args: &VerifyArgs) -> Result<String, Error> {
    let (control, bar) = progress("file versions");
    let request = VerifyRequest {
        repair: args.repair,
    };
    let report = args.location.workspace()?.verify(&request, &control)?;
    drop(bar);
    let out = if args.format == "json" {
        format!("{}\n", report.to_json())
    } else {
        report.to_string()
    };
    if report.remaining.is_empty() {
        return Ok(out);
    }
    crate::output::emit(&out);
    Err(Error::new(
        ErrorKind::Damaged,
        format!("{} problems remain in the store", report.remaining.len()),
    )
    .with_hint(if args.repair {
        Hint::Advice(
            "the problems above cannot be repaired from the store and the repository".into(),
        )
    } else {
        Hint::RebuildStore
    }))
}
