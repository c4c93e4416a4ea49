//! `ctxpack gc` and `ctxpack pin`: remove snapshots by rule, and keep chosen ones.

use clap::Args;
use ctxpack_api::{Error, GcRequest};

use crate::args::Location;

/// Options of `ctxpack gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Keep this many of the most recently indexed snapshots.
    #[arg(long, default_value_t = GcRequest::default().keep_last)]
    pub keep_last: u64,
    /// Keep snapshots indexed less than this long ago: a number and s, m, h, d or w.
    #[arg(
        long,
        value_name = "AGE",
        conflicts_with = "no_age_rule",
        default_value_t = GcRequest::default().keep_younger_than.unwrap_or_default()
    )]
    pub keep_younger_than: String,
    /// Keep no snapshot for its age (only --keep-last, pins and HEAD keep one).
    #[arg(long)]
    pub no_age_rule: bool,
    /// Also delete the ledger texts that only packs of removed snapshots name; their records
    /// stay, and `ctxpack show` marks each such text as reclaimed.
    #[arg(long)]
    pub ledger_texts: bool,
    /// Say what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format of the summary: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Runs `ctxpack gc`.
pub fn run(args: &GcArgs) -> Result<String, Error> {
    let request = GcRequest {
        keep_last: args.keep_last,
        keep_younger_than: if args.no_age_rule {
            None
        } else {
            Some(args.keep_younger_than.clone())
        },
        ledger_texts: args.ledger_texts,
        dry_run: args.dry_run,
        wait: args.wait,
    };
    let summary = args.location.workspace()?.gc(&request)?;
    Ok(if args.format == "json" {
        format!("{}\n", summary.to_json())
    } else {
        summary.to_string()
    })
}

/// Options of `ctxpack pin`.
#[derive(Debug, Args)]
pub struct PinArgs {
    /// The indexed commit to pin: HEAD, a full SHA or a unique hex prefix.
    #[arg(default_value = "HEAD")]
    pub at: String,
    /// Unpin it instead, so the rules of `gc` decide again.
    #[arg(long)]
    pub remove: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Runs `ctxpack pin`.
pub fn pin(args: &PinArgs) -> Result<String, Error> {
    let sha = args.location.workspace()?.pin(&args.at, !args.remove)?;
    let verb = if args.remove { "unpinned" } else { "pinned" };
    Ok(format!("{verb} {sha}\n"))
}
