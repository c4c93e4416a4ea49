//! `ctxpack status`: what the store holds and whether HEAD is indexed.

use std::fmt::Write;

use clap::Args;
use ctxpack_api::{Error, Status};

use crate::cli::Location;

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
    Ok(text(&status))
}

fn text(s: &Status) -> String {
    let mut out = String::new();
    if s.store_exists {
        let _ = writeln!(
            out,
            "store: {} (format {}, {:.1} MB)",
            s.store,
            s.format_version,
            s.size_bytes as f64 / 1_000_000.0
        );
    } else {
        let _ = writeln!(
            out,
            "store: {} (not created yet; run `ctxpack index`)",
            s.store
        );
    }
    let head = match &s.head {
        Some(sha) => format!(
            "{sha} ({}{})",
            s.branch
                .as_deref()
                .map_or("detached".to_owned(), |b| format!("branch {b}")),
            if s.head_indexed {
                ", indexed"
            } else {
                ", not indexed"
            }
        ),
        None => "no commits yet".to_owned(),
    };
    let _ = writeln!(out, "head: {head}");
    let dirty = if s.worktree_dirty { "dirty" } else { "clean" };
    let _ = writeln!(out, "worktree: {dirty}");
    let _ = writeln!(out, "snapshots: {}", s.snapshots.len());
    for snapshot in &s.snapshots {
        let _ = writeln!(
            out,
            "  {} {} files, {} chunks",
            snapshot.sha, snapshot.files, snapshot.chunks
        );
    }
    out
}
