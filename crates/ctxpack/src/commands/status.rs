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

/// What `status` reports, gathered once for every surface.
pub struct Status {
    dir: std::path::PathBuf,
    exists: bool,
    size: u64,
    head: ctxpack_index::git::HeadInfo,
    head_indexed: bool,
    dirty: bool,
    snapshots: Vec<ctxpack_store::SnapshotRow>,
}

impl Status {
    /// Reads the repository and its store (read-only; a missing store is reported, not made).
    pub fn gather(location: &Location) -> Result<Status, Failure> {
        let repo = location.repo()?;
        let head = repo.head()?;
        let dirty = repo.is_dirty();
        let dir = location.store_dir(&repo);
        let (exists, snapshots, size) = match Store::open(&dir) {
            Ok(store) => (true, store.snapshots()?, store.size_bytes()),
            Err(StoreError::NotFound { .. }) => (false, Vec::new(), 0),
            Err(e) => return Err(e.into()),
        };
        let head_indexed = head
            .sha
            .as_ref()
            .is_some_and(|sha| snapshots.iter().any(|s| &s.sha == sha));
        Ok(Status {
            dir,
            exists,
            size,
            head,
            head_indexed,
            dirty,
            snapshots,
        })
    }

    /// The JSON form (`ctxpack status --format json`, the MCP `status` tool).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "store": self.dir.display().to_string(),
            "storeExists": self.exists,
            "formatVersion": FORMAT_VERSION,
            "sizeBytes": self.size,
            "head": self.head.sha,
            "branch": self.head.branch,
            "detached": self.head.detached,
            "headIndexed": self.head_indexed,
            "worktreeDirty": self.dirty,
            "snapshots": self.snapshots.iter().map(|s| json!({
                "sha": s.sha,
                "files": s.files,
                "chunks": s.chunks,
                "skipped": s.skipped,
                "indexedAt": s.indexed_at,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Runs `ctxpack status`.
pub fn run(args: &StatusArgs) -> Result<String, Failure> {
    let status = Status::gather(&args.location)?;
    if args.format == "json" {
        return Ok(format!("{}\n", status.to_json()));
    }
    let Status {
        dir,
        exists,
        size,
        head,
        head_indexed,
        dirty,
        snapshots,
    } = status;
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
