//! `ctxpack log` and `ctxpack show`: the packs recorded in the ledger.

use std::fmt::Write;

use clap::Args;
use ctxpack_api::{Error, Format, Log, Pack, RenderOptions, Shown, View, render};
use serde_json::json;

use crate::args::{Location, named};
use crate::client::{Remote, ServerArgs, url_segment};
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
    Ok(log_output(&log, args.format == "json"))
}

/// What `ctxpack log` prints for `log`.
pub fn log_output(log: &Log, json: bool) -> String {
    if json {
        let json = serde_json::to_string(&log.entries).expect("log entries serialize");
        return format!("{json}\n");
    }
    let mut out = String::new();
    for r in &log.entries {
        let _ = writeln!(
            out,
            "{}  {}  {:<12} {:>6}/{:<6} {:<6} {:>3} hits  {}{}",
            &r.id[..12],
            utc(r.time),
            r.surface,
            r.used_tokens,
            r.budget,
            r.meter,
            r.selected_hits,
            if r.worktree { "[worktree] " } else { "" },
            r.goal.replace(['\r', '\n'], " ")
        );
    }
    out
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
    Ok(shown_output(
        shown,
        args.dropped,
        args.format,
        args.view,
        args.pretty,
    ))
}

/// What `ctxpack show` prints for a recorded pack: its exact output when the surface kept it
/// and no other rendering is asked for, the dropped list with `dropped`, otherwise the pack
/// rendered as recorded, in the format, view and pretty-printing asked for instead.
pub fn shown_output(
    shown: Shown,
    dropped_only: bool,
    format: Option<Format>,
    view: Option<View>,
    pretty: bool,
) -> String {
    // A surface whose output is not a rendering of the pack kept its exact bytes.
    if let Some(exact) = shown.exact_output
        && !dropped_only
        && format.is_none()
        && view.is_none()
    {
        return exact;
    }
    if dropped_only {
        return dropped(&shown.pack, format == Some(Format::Json));
    }
    render(
        &shown.pack,
        &RenderOptions {
            format: format.unwrap_or(shown.rendering.format),
            view: view.unwrap_or(shown.rendering.view),
            pretty: pretty || shown.rendering.pretty,
        },
    )
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
