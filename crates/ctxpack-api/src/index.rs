//! Indexing a commit into the store, and rebuilding a damaged store.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;

use ctxpack_index::indexer::{IndexOptions, IndexReport, index_commit};
use ctxpack_store::{Store, WriterLock};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::{Control, Progress};
use crate::error::{Error, Result};
use crate::workspace::Workspace;

/// Index a commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IndexRequest {
    /// The commit to index: HEAD, a full SHA or a unique hexadecimal prefix.
    pub at: String,
    /// Rebuild the lexical index from the stored chunks first (after it was damaged or
    /// deleted); a database that cannot be read is moved aside, never deleted.
    pub rebuild: bool,
    /// Wait for another writer instead of failing.
    #[schemars(skip)]
    pub wait: bool,
    /// Files larger than this many bytes are skipped as `too_large`.
    #[schemars(range(min = 1))]
    pub max_file_bytes: u64,
}

impl Default for IndexRequest {
    fn default() -> Self {
        IndexRequest {
            at: "HEAD".to_owned(),
            rebuild: false,
            wait: false,
            max_file_bytes: IndexOptions::default().max_file_bytes,
        }
    }
}

/// What an index run did.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexSummary {
    /// The commit.
    pub sha: String,
    /// Whether the snapshot was already indexed (nothing was done).
    pub already_indexed: bool,
    /// Files in the commit's tree.
    pub files: u64,
    /// File versions read and chunked in this run.
    pub processed: u64,
    /// File versions reused from earlier snapshots.
    pub reused: u64,
    /// Chunks in the snapshot's files (0 when already indexed).
    pub chunks: u64,
    /// Files skipped, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Wall-clock seconds, rounded to milliseconds.
    pub seconds: f64,
    /// Where a rebuild moved an unreadable database (it is never deleted).
    #[serde(skip)]
    pub moved_aside: Option<PathBuf>,
}

impl IndexSummary {
    fn new(r: IndexReport, moved_aside: Option<PathBuf>) -> IndexSummary {
        IndexSummary {
            sha: r.sha,
            already_indexed: r.already_indexed,
            files: r.files,
            processed: r.processed,
            reused: r.reused,
            chunks: r.chunks,
            skipped: r.skipped,
            seconds: (r.seconds * 1000.0).round() / 1000.0,
            moved_aside,
        }
    }

    /// The canonical JSON of `index --format json` and the MCP `index` tool.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("an index summary serializes")
    }
}

impl Workspace {
    /// Indexes the commit `request.at` into the store, creating the store if needed, and
    /// holding the writer lock while it works. Incremental: file versions the store has seen
    /// are reused. Reports progress in files by phase (`reading`, `chunking`,
    /// `lexical`, `committing`): when each starts and ends, and at least every 256 files or
    /// 8 MiB of content in between (see [`Progress`]). Stops at the next file or batch once
    /// `control` is cancelled, committing nothing.
    pub fn index(&self, request: &IndexRequest, control: &Control) -> Result<IndexSummary> {
        if request.max_file_bytes == 0 {
            return Err(Error::invalid_field("max_file_bytes", "must be at least 1"));
        }
        if !self.may_index() {
            self.require_write("indexing")?;
        }
        if let (Some((url, schemes)), Some(root)) = (&self.remote, self.repo_root()) {
            crate::remote::fetch(url, root, schemes)?;
        }
        let repo = self.repo()?;
        let sha = repo.resolve(&request.at)?;
        let Some(record) = &self.snapshots else {
            return self.index_into_store(&repo, &sha, request, control);
        };
        // One writer per repository across every process on the database: the lock is held
        // until the snapshot is published (a process that dies releases it with its session).
        let _lock = record.lock()?;
        let published = record.published(&sha)?;
        if let Some(published) = &published {
            self.fill_cache(record, published)?;
        }
        let summary = self.index_into_store(&repo, &sha, request, control)?;
        if published.is_none() {
            self.publish(record, &repo, &sha)?;
        }
        Ok(summary)
    }

    /// Indexes `sha` into the store.
    fn index_into_store(
        &self,
        repo: &ctxpack_index::git::Repo,
        sha: &str,
        request: &IndexRequest,
        control: &Control,
    ) -> Result<IndexSummary> {
        let dir = self.store_root()?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(dir, &e).context("cannot create the store directory"))?;
        let lock = WriterLock::acquire(dir, request.wait)?;
        let (mut store, moved) = if request.rebuild {
            Store::rebuild(dir, &lock)?
        } else {
            (Store::open_or_create(dir)?, None)
        };
        let options = IndexOptions {
            max_file_bytes: request.max_file_bytes,
            ..IndexOptions::default()
        };
        let report = index_commit(
            repo,
            &mut store,
            sha,
            &options,
            &mut |phase, done, total| {
                control.report(Progress {
                    phase: phase.name(),
                    done,
                    total: Some(total),
                });
                if control.is_cancelled() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?;
        drop(lock);
        Ok(IndexSummary::new(report, moved))
    }
}

/// The one-line summary of an index run.
impl std::fmt::Display for IndexSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.sha.get(..12).unwrap_or(&self.sha);
        if self.already_indexed {
            return write!(
                f,
                "snapshot {short} is already indexed: {} files, {} chunks",
                self.files, self.chunks
            );
        }
        let skipped: u64 = self.skipped.values().sum();
        let reasons: Vec<String> = self
            .skipped
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let reasons = if reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", reasons.join(", "))
        };
        write!(
            f,
            "indexed {short}: {} files ({} new, {} reused), {} chunks, {skipped} skipped{reasons}, {:.2} s",
            self.files, self.processed, self.reused, self.chunks, self.seconds
        )
    }
}
