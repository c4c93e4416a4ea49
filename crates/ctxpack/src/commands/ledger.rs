//! `ctxpack log` and `ctxpack show`: the packs recorded in the ledger.

use std::fmt::Write;

use clap::Args;
use ctxpack_api::{Error, Format, Pack, RenderOptions, View, render};
use serde_json::json;

use crate::args::{Location, parse};
use crate::output::note;

/// Options of `ctxpack log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Show at most this many packs, newest first.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
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
    #[arg(long, value_parser = parse::<Format>)]
    pub format: Option<Format>,
    /// Render with another view than the pack was built with.
    #[arg(long, value_parser = parse::<View>)]
    pub view: Option<View>,
    /// Pretty-print JSON.
    #[arg(long)]
    pub pretty: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
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
    let log = args.location.workspace()?.log(args.limit)?;
    torn(&log.torn);
    if args.format == "json" {
        let json = serde_json::to_string(&log.entries).expect("log entries serialize");
        return Ok(format!("{json}\n"));
    }
    let mut out = String::new();
    for r in &log.entries {
        let _ = writeln!(
            out,
            "{}  {}  {:<12} {:>6}/{:<6} {:<6} {:>3} hits  {}",
            &r.id[..12],
            utc(r.time),
            r.surface,
            r.used_tokens,
            r.budget,
            r.meter,
            r.selected_hits,
            r.goal.replace(['\r', '\n'], " ")
        );
    }
    Ok(out)
}

/// Runs `ctxpack show`.
pub fn show(args: &ShowArgs) -> Result<String, Error> {
    let shown = args.location.workspace()?.show(&args.id)?;
    torn(&shown.torn);
    // A surface whose output is not a rendering of the pack kept its exact bytes.
    if let Some(exact) = shown.exact_output
        && !args.dropped
        && args.format.is_none()
        && args.view.is_none()
    {
        return Ok(exact);
    }
    if args.dropped {
        return Ok(dropped(&shown.pack, args.format == Some(Format::Json)));
    }
    Ok(render(
        &shown.pack,
        &RenderOptions {
            format: args.format.unwrap_or(shown.rendering.format),
            view: args.view.unwrap_or(shown.rendering.view),
            pretty: args.pretty || shown.rendering.pretty,
        },
    ))
}

fn dropped(pack: &Pack, as_json: bool) -> String {
    if as_json {
        let v: Vec<_> = pack
            .dropped
            .iter()
            .map(|d| {
                json!({
                    "rank": d.rank,
                    "citation": d.citation,
                    "family": d.family,
                    "tokens": d.cost,
                    "reason": d.reason,
                    "remaining": d.remaining,
                })
            })
            .collect();
        return format!("{}\n", serde_json::Value::Array(v));
    }
    let mut out = String::new();
    for d in &pack.dropped {
        let _ = write!(
            out,
            "{} {} ({} {}",
            d.citation, d.reason, d.cost, pack.meter
        );
        if let Some(remaining) = d.remaining {
            let _ = write!(out, ", {remaining} remaining");
        }
        out.push_str(")\n");
    }
    out
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds.
fn utc(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(
            || secs.to_string(),
            |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        )
}
