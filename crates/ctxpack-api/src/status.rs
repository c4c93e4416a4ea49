//! What the store holds and whether HEAD is indexed.

use std::collections::BTreeMap;

use ctxpack_core::Warning;
use ctxpack_index::git::Repo;
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
    /// Whether the worktree differs from HEAD: tracked files changed, or untracked files
    /// that git does not ignore.
    pub worktree_dirty: bool,
    /// How many tracked files differ from HEAD (staged or not, deleted ones included).
    pub worktree_modified: u64,
    /// How many untracked files git does not ignore.
    pub worktree_untracked: u64,
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

/// How the worktree differs from HEAD: what a pack of the committed snapshot leaves out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WorktreeCounts {
    /// Tracked files that differ from HEAD, staged or not (deleted ones included).
    pub(crate) modified: u64,
    /// Untracked files that git does not ignore (`.gitignore`, `.git/info/exclude`,
    /// `core.excludesFile`).
    pub(crate) untracked: u64,
}

impl WorktreeCounts {
    /// Counts the changes of `repo`'s worktree against its HEAD commit `head` (none without a
    /// commit or a worktree). Files below `store` (the store directory, relative to the root
    /// and `/`-separated, when it lies inside the worktree) are ctxpack's own and not counted.
    /// No file is read: paths are compared by git's status alone. A status that cannot be
    /// computed (a damaged index) counts as clean, as a pack reads committed objects either
    /// way.
    pub(crate) fn of(repo: &Repo, head: Option<&str>, store: Option<&str>) -> WorktreeCounts {
        // A bare repository has no worktree to differ.
        let (Some(head), Some(_)) = (head, repo.workdir()) else {
            return WorktreeCounts::default();
        };
        // A size limit of 0 bytes: every changed file is classified, none is read.
        let Ok(changes) = repo.worktree_changes(head, 0) else {
            return WorktreeCounts::default();
        };
        // A store is never tracked (one that git tracks is refused), so its files can only be
        // among the untracked ones: a store written before it kept its own `.gitignore`.
        let own = store.map_or(0, |store| {
            let prefix = format!("{}/", store.trim_end_matches('/'));
            changes
                .files
                .keys()
                .filter(|path| path.starts_with(&prefix))
                .count()
        });
        WorktreeCounts {
            modified: (changes.modified + changes.deleted.len()) as u64,
            untracked: changes.added.saturating_sub(own) as u64,
        }
    }

    /// Whether anything differs from HEAD.
    pub(crate) fn is_dirty(self) -> bool {
        self.modified + self.untracked > 0
    }

    /// The warning a pack of the committed snapshot carries when the worktree differs from
    /// it: `worktree has uncommitted changes (2 modified, 1 untracked); the pack reads the
    /// committed snapshot and excludes them`.
    pub(crate) fn warning(self) -> Option<Warning> {
        self.is_dirty().then(|| {
            Warning::Notice(format!(
                "worktree has uncommitted changes ({} modified, {} untracked); the pack reads the committed snapshot and excludes them",
                self.modified, self.untracked
            ))
        })
    }
}

impl Workspace {
    /// Reads the repository and its store (read-only; a missing store is reported, not made).
    pub fn status(&self) -> Result<Status> {
        let repo = self.repo()?;
        let head = repo.head()?;
        let changes = self.worktree_counts(&repo, head.sha.as_deref());
        let dir = self.store_dir()?;
        let (exists, mut snapshots, size) = match self.try_open_store()? {
            Some(store) => (
                true,
                store
                    .snapshots()?
                    .into_iter()
                    .map(|s| SnapshotStatus {
                        sha: s.sha,
                        files: s.files,
                        chunks: s.chunks,
                        skipped: s.skipped,
                        indexed_at: s.indexed_at,
                    })
                    .collect(),
                store.size_bytes(),
            ),
            None => (false, Vec::new(), 0),
        };
        // With a database as the system of record, what is indexed is what it published; the
        // store is only this process's cache.
        if let Some(record) = &self.snapshots {
            snapshots = record
                .list()?
                .into_iter()
                .map(|(p, published)| SnapshotStatus {
                    sha: p.sha,
                    files: p.stats.files,
                    chunks: p.stats.chunks,
                    skipped: p.stats.skipped,
                    indexed_at: published,
                })
                .collect();
        }
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
            worktree_dirty: changes.is_dirty(),
            worktree_modified: changes.modified,
            worktree_untracked: changes.untracked,
            snapshots,
        })
    }
}

impl Workspace {
    /// How this workspace's worktree differs from HEAD's commit `head`, its store left out.
    pub(crate) fn worktree_counts(&self, repo: &Repo, head: Option<&str>) -> WorktreeCounts {
        WorktreeCounts::of(repo, head, self.store_in_worktree().as_deref())
    }

    /// Where the store lies in the working tree, relative to its root, when it lies there
    /// (so a status can leave its files out).
    pub(crate) fn store_in_worktree(&self) -> Option<String> {
        self.repo_root()
            .zip(self.store_dir().ok())
            .and_then(|(root, dir)| {
                let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
                let rel = dir.strip_prefix(root).ok()?;
                let parts: Option<Vec<&str>> =
                    rel.components().map(|c| c.as_os_str().to_str()).collect();
                parts
                    .map(|parts| parts.join("/"))
                    .filter(|rel| !rel.is_empty())
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
        if self.worktree_dirty {
            writeln!(
                f,
                "worktree: dirty ({} modified, {} untracked)",
                self.worktree_modified, self.worktree_untracked
            )?;
        } else {
            writeln!(f, "worktree: clean")?;
        }
        writeln!(f, "snapshots: {}", self.snapshots.len())?;
        for s in &self.snapshots {
            writeln!(f, "  {} {} files, {} chunks", s.sha, s.files, s.chunks)?;
        }
        Ok(())
    }
}
