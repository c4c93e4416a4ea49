//! `ctxpack status`: what the store holds and whether HEAD is indexed.

use std::fmt::Write;

use clap::Args;
use ctxpack_store::{FORMAT_VERSION, Store, StoreError};
use serde_json::json;

use crate::commands::repo::Location;
use crate::failure::Failure;

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
pub fn run(args: &StatusArgs) -> Result<String, Failure> {
    let repo = args.location.repo()?;
    let head = repo.head()?;
    let dirty = repo.is_dirty();
    let dir = args.location.store_dir(&repo);
    let (exists, snapshots, size) = match Store::open(&dir) {
        Ok(store) => (true, store.snapshots()?, store.size_bytes()),
        Err(StoreError::NotFound { .. }) => (false, Vec::new(), 0),
        Err(e) => return Err(e.into()),
    };
    let head_indexed = head
        .sha
        .as_ref()
        .is_some_and(|sha| snapshots.iter().any(|s| &s.sha == sha));
    if args.format == "json" {
        let v = json!({
            "store": dir.display().to_string(),
            "storeExists": exists,
            "formatVersion": FORMAT_VERSION,
            "sizeBytes": size,
            "head": head.sha,
            "branch": head.branch,
            "detached": head.detached,
            "headIndexed": head_indexed,
            "worktreeDirty": dirty,
            "snapshots": snapshots.iter().map(|s| json!({
                "sha": s.sha,
                "files": s.files,
                "chunks": s.chunks,
                "skipped": s.skipped,
                "indexedAt": s.indexed_at,
            })).collect::<Vec<_>>(),
        });
        return Ok(format!("{v}\n"));
    }
    let mut out = String::new();
    if exists {
        let _ = writeln!(
            out,
            "store: {} (format {FORMAT_VERSION}, {:.1} MB)",
            dir.display(),
            size as f64 / 1_000_000.0
        );
    } else {
        let _ = writeln!(
            out,
            "store: {} (not created yet; run `ctxpack index`)",
            dir.display()
        );
    }
    let head_line = match &head.sha {
        Some(sha) => format!(
            "{sha} ({}{})",
            head.branch
                .as_deref()
                .map_or("detached".to_owned(), |b| format!("branch {b}")),
            if head_indexed {
                ", indexed"
            } else {
                ", not indexed"
            }
        ),
        None => "no commits yet".to_owned(),
    };
    let _ = writeln!(out, "head: {head_line}");
    let _ = writeln!(out, "worktree: {}", if dirty { "dirty" } else { "clean" });
    let _ = writeln!(out, "snapshots: {}", snapshots.len());
    for s in &snapshots {
        let _ = writeln!(out, "  {} {} files, {} chunks", s.sha, s.files, s.chunks);
    }
    Ok(out)
}
