//! Removing snapshots by rule, and pinning the ones to keep.

use std::collections::HashSet;

use ctxpack_store::{Ledger, Reclaimed};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Hint, Result};
use crate::workspace::Workspace;

/// Remove snapshots by rule. A snapshot is kept when any rule keeps it: it is one of the
/// `keep_last` most recently indexed, it is younger than `keep_younger_than`, it is pinned, or
/// it is HEAD's. The ledger keeps every recorded pack's texts unless `ledger_texts` asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GcRequest {
    /// Keep this many of the most recently indexed snapshots.
    pub keep_last: u64,
    /// Keep snapshots indexed less than this long ago: a whole number with a unit, `s`, `m`,
    /// `h`, `d` or `w` (`30d`); none keeps no snapshot for its age.
    pub keep_younger_than: Option<String>,
    /// Also delete the ledger texts that only packs of snapshots no longer indexed name; their
    /// records stay, and such a text shows as reclaimed.
    pub ledger_texts: bool,
    /// Say what would be removed, and remove nothing.
    pub dry_run: bool,
    /// Wait for another writer instead of failing.
    #[schemars(skip)]
    pub wait: bool,
}

impl Default for GcRequest {
    fn default() -> Self {
        GcRequest {
            keep_last: 10,
            keep_younger_than: Some("30d".to_owned()),
            ledger_texts: false,
            dry_run: false,
            wait: false,
        }
    }
}

/// What a `gc` run removed (or, in a dry run, would remove).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcSummary {
    /// The snapshots removed, most recent first.
    pub removed: Vec<String>,
    /// The snapshots kept.
    pub kept: u64,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Kept snapshots whose stored manifest was rewritten because their base was removed.
    pub rebased: u64,
    /// File versions deleted (with their chunks and full-text entries).
    pub file_versions: u64,
    /// Chunks deleted.
    pub chunks: u64,
    /// Ledger texts deleted (with `ledger_texts`).
    pub ledger_texts: u64,
    /// The store's size on disk before and after.
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

impl GcSummary {
    /// The canonical JSON of `gc --format json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a gc summary serializes")
    }
}

impl std::fmt::Display for GcSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = if self.dry_run {
            "would remove"
        } else {
            "removed"
        };
        writeln!(
            f,
            "{verb} {} snapshot{}, kept {}",
            self.removed.len(),
            if self.removed.len() == 1 { "" } else { "s" },
            self.kept
        )?;
        for sha in &self.removed {
            writeln!(f, "  {sha}")?;
        }
        if !self.dry_run {
            writeln!(
                f,
                "reclaimed {} file versions, {} chunks and {} ledger texts; the store went from {} to {} bytes",
                self.file_versions,
                self.chunks,
                self.ledger_texts,
                self.bytes_before,
                self.bytes_after
            )?;
        }
        Ok(())
    }
}

impl Workspace {
    /// Removes the snapshots no rule of `request` keeps, and reclaims the file versions,
    /// chunks and full-text entries only they used. Packs already recorded in the ledger keep
    /// their texts. Holds the writer lock; crash-safe like indexing.
    pub fn gc(&self, request: &GcRequest) -> Result<GcSummary> {
        let max_age = match &request.keep_younger_than {
            None => None,
            Some(text) => Some(crate::parse_duration(text).ok_or_else(|| {
                Error::invalid_field(
                    "keep_younger_than",
                    format!(
                        "`{text}` is not an age: use a whole number and s, m, h, d or w, like 30d"
                    ),
                )
            })?),
        };
        let mut writer = self.writer("gc", request.wait, false)?;
        let snapshots = writer.store.snapshots()?;
        let head = self
            .repo()
            .ok()
            .and_then(|repo| repo.head().ok())
            .and_then(|h| h.sha);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let mut summary = GcSummary {
            dry_run: request.dry_run,
            bytes_before: writer.store.size_bytes(),
            ..GcSummary::default()
        };
        // Most recent first.
        for (rank, snapshot) in snapshots.iter().enumerate() {
            let young =
                max_age.is_some_and(|age| now.saturating_sub(snapshot.indexed_at) < age as i64);
            let keep = (rank as u64) < request.keep_last
                || young
                || snapshot.pinned
                || head.as_deref() == Some(snapshot.sha.as_str());
            if keep {
                summary.kept += 1;
            } else {
                summary.removed.push(snapshot.sha.clone());
            }
        }
        let mut ledger = Ledger::new(writer.store.dir());
        let mut ledger_texts = |summary: &GcSummary| -> Result<u64> {
            if !request.ledger_texts {
                return Ok(0);
            }
            let indexed: HashSet<&str> = snapshots
                .iter()
                .map(|s| s.sha.as_str())
                .filter(|sha| !summary.removed.iter().any(|r| r == sha))
                .collect();
            Ok(ledger.reclaim_texts(&indexed, request.dry_run)?)
        };
        if request.dry_run {
            summary.ledger_texts = ledger_texts(&summary)?;
            summary.bytes_after = summary.bytes_before;
            return Ok(summary);
        }
        let Reclaimed {
            rebased,
            file_versions,
            chunks,
            ..
        } = writer.store.remove_snapshots(&summary.removed)?;
        (summary.rebased, summary.file_versions, summary.chunks) = (rebased, file_versions, chunks);
        summary.ledger_texts = ledger_texts(&summary)?;
        summary.bytes_after = writer.store.size_bytes();
        Ok(summary)
    }

    /// Pins the snapshot of commit `at` (HEAD, a full SHA or a unique prefix), so no `gc`
    /// rule removes it, or unpins it. Returns the full SHA.
    pub fn pin(&self, at: &str, pinned: bool) -> Result<String> {
        let sha = self.repo()?.resolve(at)?;
        let mut writer = self.writer("pinning", false, false)?;
        if writer.store.set_pinned(&sha, pinned)? {
            Ok(sha)
        } else {
            Err(Error::new(
                ErrorKind::NotIndexed,
                format!("snapshot {sha} is not indexed, so it cannot be pinned"),
            )
            .with_hint(Hint::IndexCommit { sha, nearest: None }))
        }
    }
}
