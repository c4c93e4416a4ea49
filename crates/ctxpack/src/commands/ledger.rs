//! `ctxpack log` and `ctxpack show`: the packs recorded in the ledger.

use clap::Args;
use ctxpack_api::{Error, Format, View};

use crate::args::{Location, named};
use crate::client::{Remote, ServerArgs, url_segment};
use crate::output::note;

/// Options of `ctxpack log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Show at most this many packs, newest first (1 to 1,000).
    #[arg(long, default_value_t = ctxpack_api::DEFAULT_LOG_LIMIT)]
    pub limit: usize,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Ask a ctxpack server instead.
    #[command(flatten)]
    pub remote: ServerArgs,
}

/// Options of `ctxpack show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The pack id (or a unique prefix of at least 4 characters) from `ctxpack log`.
    pub id: String,
    /// List what was left out and why, instead of the pack.
    #[arg(long)]
    pub dropped: bool,
    /// Render in another format than the pack was built with.
    #[arg(long, value_parser = named::<Format>())]
    pub format: Option<Format>,
    /// Render with another view than the pack was built with.
    #[arg(long, value_parser = named::<View>())]
    pub view: Option<View>,
    /// Pretty-print JSON.
    #[arg(long)]
    pub pretty: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Ask a ctxpack server instead.
    #[command(flatten)]
    pub remote: ServerArgs,
}

fn torn(lines: &[usize]) {
    if !lines.is_empty() {
        let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
        note(&format!(
            "warning: ignored {} torn ledger record(s) at line {} (left by a crashed writer); the others are intact\n",
            lines.len(),
            lines.join(", ")
        ));
    }
}

/// Runs `ctxpack log`.
pub fn log(args: &LogArgs) -> Result<String, Error> {
    if let Some(remote) = Remote::from_args(&args.remote)? {
        return remote.get(
            "ledger",
            &[
                ("limit", args.limit.to_string()),
                ("format", args.format.clone()),
            ],
        );
    }
    let log = args.location.workspace()?.log(args.limit)?;
    torn(&log.torn);
    Ok(crate::present::log(&log, args.format == "json"))
}

/// Runs `ctxpack show`.
pub fn show(args: &ShowArgs) -> Result<String, Error> {
    if let Some(remote) = Remote::from_args(&args.remote)? {
        let mut query = Vec::new();
        if let Some(format) = args.format {
            query.push(("format", format.name().to_owned()));
        }
        if let Some(view) = args.view {
            query.push(("view", view.name().to_owned()));
        }
        if args.pretty {
            query.push(("pretty", "true".to_owned()));
        }
        if args.dropped {
            query.push(("dropped", "true".to_owned()));
        }
        return remote.get(&format!("ledger/{}", url_segment(&args.id)), &query);
    }
    let shown = args.location.workspace()?.show(&args.id)?;
    torn(&shown.torn);
    Ok(crate::present::shown(
        shown,
        args.dropped,
        args.format,
        args.view,
        args.pretty,
    ))
}
