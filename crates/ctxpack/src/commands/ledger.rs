//! `ctxpack log` and `ctxpack show`: the packs recorded in the ledger.

use std::fmt::Write;

use clap::Args;
use ctxpack_api::{Error, Format, Pack, RenderOptions, View, render};
use serde_json::json;

use crate::cli::{Location, parse};
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

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds (proleptic Gregorian, UTC).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc(1_796_083_199), "2026-11-30T23:59:59Z");
    }
}
