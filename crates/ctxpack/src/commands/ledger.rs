//! The ledger on the command line: recording packs, `ctxpack log` and `ctxpack show`.

use std::fmt::Write;
use std::io::IsTerminal;
use std::path::Path;

use clap::Args;
use ctxpack_core::{Format, Pack, RenderOptions, View, render};
use ctxpack_store::{Ledger, LedgerRecord, RecordContext};
use serde_json::json;

use crate::cli::{parse_format, parse_view};
use crate::commands::repo::Location;
use crate::failure::{Failure, FailureKind};

/// Records `pack` in the ledger of the store at `store_dir`. A ledger that cannot be written
/// (a read-only medium, a full disk) does not fail the pack: the reason goes to stderr.
pub fn record(store_dir: &Path, pack: &Pack, context: &RecordContext) -> Option<LedgerRecord> {
    use std::io::Write as _;
    match Ledger::new(store_dir).append(pack, context) {
        Ok(record) => {
            if std::io::stderr().is_terminal() {
                let _ = writeln!(
                    std::io::stderr(),
                    "recorded pack {} (ctxpack show {})",
                    &record.id[..12],
                    &record.id[..12]
                );
            }
            Some(record)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warning: the pack was not recorded: {e}");
            None
        }
    }
}

/// The names a pack was rendered with, for its record.
pub fn rendered(options: &RenderOptions) -> (String, String) {
    (
        options.format.name().to_owned(),
        options.view.name().to_owned(),
    )
}

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
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// Render with another view than the pack was built with.
    #[arg(long, value_parser = parse_view)]
    pub view: Option<View>,
    /// Pretty-print JSON.
    #[arg(long)]
    pub pretty: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

fn ledger_of(location: &Location) -> Result<Ledger, Failure> {
    Ok(Ledger::new(&location.resolve_store_dir()?))
}

fn read(ledger: &Ledger) -> Result<Vec<LedgerRecord>, Failure> {
    use std::io::Write as _;
    let contents = ledger.read()?;
    if !contents.torn.is_empty() {
        let lines: Vec<String> = contents.torn.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            std::io::stderr(),
            "warning: ignored {} torn ledger record(s) at line {} (left by a crashed writer); the others are intact",
            contents.torn.len(),
            lines.join(", ")
        );
    }
    Ok(contents.records)
}

/// Runs `ctxpack log`.
pub fn log(args: &LogArgs) -> Result<String, Failure> {
    let records = read(&ledger_of(&args.location)?)?;
    let newest: Vec<&LedgerRecord> = records.iter().rev().take(args.limit).collect();
    if args.format == "json" {
        let v: Vec<_> = newest
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "time": r.time,
                    "surface": r.surface,
                    "goal": r.goal,
                    "snapshot": r.snapshot.as_ref().map(|s| s.resolved_sha.clone()),
                    "budget": r.budget,
                    "meter": r.meter.name(),
                    "selector": r.selector,
                    "usedTokens": r.used,
                    "selectedHits": r.hits.len(),
                    "dropped": r.dropped.len(),
                    "parent": r.parent,
                })
            })
            .collect();
        return Ok(format!("{}\n", serde_json::Value::Array(v)));
    }
    let mut out = String::new();
    for r in newest {
        let _ = writeln!(
            out,
            "{}  {}  {:<12} {:>6}/{:<6} {:<6} {:>3} hits  {}",
            &r.id[..12],
            utc(r.time),
            r.surface,
            r.used,
            r.budget,
            r.meter,
            r.hits.len(),
            r.goal.replace(['\r', '\n'], " ")
        );
    }
    Ok(out)
}

/// Runs `ctxpack show`.
pub fn show(args: &ShowArgs) -> Result<String, Failure> {
    if args.id.len() < 4 || !args.id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Failure::invalid(format!(
            "`{}` is not a pack id: give at least 4 hex digits from `ctxpack log`",
            args.id
        )));
    }
    let ledger = ledger_of(&args.location)?;
    let prefix = args.id.to_ascii_lowercase();
    let records = read(&ledger)?;
    let mut matching: Vec<&LedgerRecord> = records
        .iter()
        .filter(|r| r.id.starts_with(&prefix))
        .collect();
    matching.dedup_by(|a, b| a.id == b.id);
    let distinct: std::collections::BTreeSet<&str> =
        matching.iter().map(|r| r.id.as_str()).collect();
    if distinct.len() > 1 {
        return Err(Failure::invalid(format!(
            "`{}` matches {} packs; give more digits",
            args.id,
            distinct.len()
        )));
    }
    let Some(record) = matching.last() else {
        return Err(Failure::new(
            FailureKind::NotFound,
            format!("no pack `{}` in the ledger", args.id),
        )
        .with_hint("list recorded packs with `ctxpack log`"));
    };
    // A surface whose output is not a rendering of the pack kept its exact bytes.
    if let Some(hash) = &record.output
        && !args.dropped
        && args.format.is_none()
        && args.view.is_none()
    {
        return Ok(ledger.text(hash)?);
    }
    let pack = ledger.replay(record)?;
    if args.dropped {
        return Ok(dropped(&pack, args.format == Some(Format::Json)));
    }
    let format = match args.format {
        Some(f) => f,
        None => record.rendered.0.parse().unwrap_or(Format::Text),
    };
    let view = match args.view {
        Some(v) => v,
        None => record.rendered.1.parse().unwrap_or_default(),
    };
    Ok(render(
        &pack,
        &RenderOptions {
            format,
            view,
            pretty: args.pretty || record.pretty,
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
