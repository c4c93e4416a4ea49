//! What a command's result looks like, as text or JSON. The command line prints it and the
//! server's JSON API answers it, so the two cannot differ; neither front end renders it itself.

use std::fmt::Write;

use ctxpack_api::{
    Error, Format, Log, Pack, QueryRequest, RenderOptions, Shown, View, Workspace, render,
};
use serde_json::json;

/// What `ctxpack status` prints for `workspace`.
pub fn status(workspace: &Workspace, json: bool) -> Result<String, Error> {
    let status = workspace.status()?;
    if json {
        return Ok(format!("{}\n", status.to_json()));
    }
    Ok(status.to_string())
}

/// What `ctxpack query` prints for `request` on `workspace`.
pub fn query(workspace: &Workspace, request: &QueryRequest, json: bool) -> Result<String, Error> {
    let hits = workspace.query(request)?;
    if json {
        return Ok(format!("{}\n", hits.to_json()));
    }
    Ok(hits.to_string())
}

/// What `ctxpack log` prints for `log`.
pub fn log(log: &Log, json: bool) -> String {
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

/// What `ctxpack show` prints for a recorded pack: its exact output when the surface kept it
/// and no other rendering is asked for, the dropped list with `dropped`, otherwise the pack
/// rendered as recorded, in the format, view and pretty-printing asked for instead.
pub fn shown(
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
    utc_as(secs, "%Y-%m-%dT%H:%M:%SZ")
}

/// Unix seconds as UTC in `strftime` `format`; the number itself when it is no time.
pub(crate) fn utc_as(secs: u64, format: &str) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(|| secs.to_string(), |t| t.strftime(format).to_string())
}
