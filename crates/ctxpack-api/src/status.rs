//! What the store holds and whether HEAD is indexed.

use std::collections::BTreeMap;

use ctxpack_store::FORMAT_VERSION;
use serde::Serialize;

use crate::error::Result;
use crate::workspace::Workspace;

/// The store, HEAD, and every indexed snapshot.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The store directory.
    pub store: String,
    /// Whether the store exists yet.
    pub store_exists: bool,
    /// The store format this build writes.
    pub format_version: i64,
    /// The store's size on disk.
    pub size_bytes: u64,
    /// HEAD's commit, if the repository has one.
    pub head: Option<String>,
    /// HEAD's branch, unless detached.
    pub branch: Option<String>,
    /// Whether HEAD is detached.
    pub detached: bool,
    /// Whether HEAD's snapshot is indexed.
    pub head_indexed: bool,
    /// Whether tracked files differ from HEAD.
    pub worktree_dirty: bool,
    /// The indexed snapshots, oldest first.
    pub snapshots: Vec<SnapshotStatus>,
}

/// One indexed snapshot.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotStatus {
    /// The commit.
    pub sha: String,
    /// Files in its manifest (skipped ones included).
    pub files: u64,
    /// Chunks of its files.
    pub chunks: u64,
    /// Skipped files by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Unix seconds when it was indexed.
    pub indexed_at: i64,
}

impl Status {
    /// The canonical JSON of `status --format json` and the MCP `status` tool.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a status serializes")
    }
}

impl Workspace {
    /// Reads the repository and its store (read-only; a missing store is reported, not made).
    pub fn status(&self) -> Result<Status> {
        let repo = self.repo()?;
        let head = repo.head()?;
        let dirty = repo.is_dirty();
        let dir = self.store_dir()?;
        let (exists, snapshots, size) = match self.try_open_store()? {
            Some(store) => (true, store.snapshots()?, store.size_bytes()),
            None => (false, Vec::new(), 0),
        };
        let head_indexed = head
            .sha
            .as_ref()
            .is_some_and(|sha| snapshots.iter().any(|s| &s.sha == sha));
        Ok(Status {
            store: dir.display().to_string(),
            store_exists: exists,
            format_version: FORMAT_VERSION,
            size_bytes: size,
            head: head.sha,
            branch: head.branch,
            detached: head.detached,
            head_indexed,
            worktree_dirty: dirty,
            snapshots: snapshots
                .into_iter()
                .map(|s| SnapshotStatus {
                    sha: s.sha,
                    files: s.files,
                    chunks: s.chunks,
                    skipped: s.skipped,
                    indexed_at: s.indexed_at,
                })
                .collect(),
        })
    }
}

/// What `status` prints on a terminal.
impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.store_exists {
            let mb = self.size_bytes as f64 / 1_000_000.0;
            writeln!(
                f,
                "store: {} (format {}, {mb:.1} MB)",
                self.store, self.format_version
            )?;
        } else {
            writeln!(
                f,
                "store: {} (not created yet; index a commit to create it)",
                self.store
            )?;
        }
        match &self.head {
            Some(sha) => {
                let branch = self
                    .branch
                    .as_deref()
                    .map_or("detached".to_owned(), |b| format!("branch {b}"));
                let indexed = if self.head_indexed {
                    "indexed"
                } else {
                    "not indexed"
                };
                writeln!(f, "head: {sha} ({branch}, {indexed})")?;
            }
            None => writeln!(f, "head: no commits yet")?,
        }
        let dirty = if self.worktree_dirty {
            "dirty"
        } else {
            "clean"
        };
        writeln!(f, "worktree: {dirty}")?;
        writeln!(f, "snapshots: {}", self.snapshots.len())?;
        for s in &self.snapshots {
            writeln!(f, "  {} {} files, {} chunks", s.sha, s.files, s.chunks)?;
        }
        Ok(())
    }
}
