//! `verify`: the full check of a store, and with `repair` the way back to a working store from
//! the git objects.
//!
//! Beyond the store's own checks (the database's integrity, every checksum, every manifest
//! against its record and its file versions, the lexical index against its checksums and the
//! chunks, the vector files against the embeddings, the ledger's records and texts), every
//! file version a snapshot lists is chunked again from its blob: a stored chunk that differs
//! from what the blob gives was damaged or forged. A snapshot whose manifest is damaged is
//! indexed again from its commit, which is what its manifest was made from.

use std::collections::{BTreeSet, HashSet};

use ctxpack_index::indexer::{IndexOptions, STORED_CHUNKER, prepare_text};
use ctxpack_store::verify::{ListedVersion, Problem};
use ctxpack_store::{NewChunk, Store, WriterLock};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::{Control, Progress};
use crate::error::{Error, Result};
use crate::index::IndexRequest;
use crate::workspace::Workspace;

/// Check a store, and repair it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyRequest {
    /// Repair what can be repaired: rebuild the lexical index and the vector files, chunk
    /// damaged file versions again from their blobs, index snapshots whose manifest is
    /// damaged again from their commits, record the manifests of snapshots committed before
    /// stores recorded them, drop damaged embeddings (`vsync` computes them again), and move
    /// an unreadable database aside and index HEAD afresh.
    pub repair: bool,
}

/// One problem found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyProblem {
    /// The part of the store: `store` (it cannot be opened), `database`, `manifest`,
    /// `lexical`, `chunk`, `embedding`, `vectors`, `ledger`.
    pub part: String,
    /// What is wrong.
    pub detail: String,
}

/// What `verify` found, and what it repaired.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The store.
    pub store: String,
    /// File versions chunked again from their blobs and compared.
    pub versions_checked: u64,
    /// What was wrong before any repair.
    pub found: Vec<VerifyProblem>,
    /// What was repaired.
    pub repaired: Vec<String>,
    /// What is still wrong (empty for a sound store).
    pub remaining: Vec<VerifyProblem>,
    /// Snapshots, after any repair, whose manifest has no record to check it against: they
    /// were committed by a ctxpack that kept none, so only their manifests' file versions were
    /// checked. Not a problem; a repair records them as they stand.
    pub unrecorded: u64,
}

impl VerifyReport {
    /// The canonical JSON of `verify --format json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a report serializes")
    }
}

/// The report as `verify` prints it.
impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "store: {}", self.store)?;
        writeln!(
            f,
            "file versions chunked again from their blobs: {}",
            self.versions_checked
        )?;
        for p in &self.found {
            writeln!(f, "found: {}: {}", p.part, p.detail)?;
        }
        for r in &self.repaired {
            writeln!(f, "repaired: {r}")?;
        }
        if self.unrecorded > 0 {
            writeln!(
                f,
                "snapshots whose manifest has no record to check it against (committed by an older ctxpack; a repair records them): {}",
                self.unrecorded
            )?;
        }
        if self.remaining.is_empty() {
            writeln!(f, "ok")
        } else {
            writeln!(f, "{} problems remain", self.remaining.len())
        }
    }
}

fn problem(p: &Problem) -> VerifyProblem {
    VerifyProblem {
        part: p.part.to_owned(),
        detail: p.detail.clone(),
    }
}

impl Workspace {
    /// Checks the store in full; with `repair`, repairs what it can and checks again.
    pub fn verify(&self, request: &VerifyRequest, control: &Control) -> Result<VerifyReport> {
        let dir = self.store_root()?.to_owned();
        let mut report = VerifyReport {
            store: dir.display().to_string(),
            ..VerifyReport::default()
        };
        let mut found = self.check(&mut report, control)?;
        report.found = found.iter().map(problem).collect();
        if request.repair && (!found.is_empty() || report.unrecorded > 0) {
            self.require_write("repairing a store")?;
            self.repair(&found, &mut report, control)?;
            found = self.check(&mut report, control)?;
        }
        report.remaining = found.iter().map(problem).collect();
        Ok(report)
    }

    /// The store's own checks plus the chunks re-derived from the blobs.
    fn check(&self, report: &mut VerifyReport, control: &Control) -> Result<Vec<Problem>> {
        report.unrecorded = 0;
        let store = match self.try_open_store() {
            Ok(Some(store)) => store,
            Ok(None) => return Ok(Vec::new()),
            Err(e) => {
                return Ok(vec![Problem {
                    part: "store",
                    detail: format!("the store cannot be opened: {}", e.message()),
                    file_id: None,
                }]);
            }
        };
        let mut problems = store.verify()?;
        if problems
            .iter()
            .any(|p| p.part == "database" || p.part == "store")
        {
            return Ok(problems);
        }
        report.unrecorded = store.unrecorded_manifests()?.len() as u64;
        let Ok(repo) = self.repo() else {
            return Ok(problems);
        };
        let versions = store.listed_versions()?;
        report.versions_checked = 0;
        for (n, version) in versions.iter().enumerate() {
            if n % 256 == 0 {
                control.report(Progress {
                    phase: "checking",
                    done: n as u64,
                    total: Some(versions.len() as u64),
                });
                control.check()?;
            }
            let Some(expected) = rederive(&repo, version) else {
                continue;
            };
            report.versions_checked += 1;
            let stored = store.export_file(version.id)?.chunks;
            // What a chunk records of the definitions around its lines is compared where it
            // was recorded (a chunk of an older format has none, and packs parse its file).
            let same = stored.len() == expected.len()
                && stored.iter().zip(&expected).all(|(s, e)| {
                    s.text == e.text
                        && s.start_line == e.start_line
                        && s.end_line == e.end_line
                        && s.symbol == e.symbol
                        && s.costs == e.costs
                        && (s.inside.is_none() || s.inside == e.inside)
                });
            let known = problems.iter().any(|p| p.file_id == Some(version.id));
            if !same && !known {
                problems.push(Problem {
                    part: "chunk",
                    detail: format!(
                        "the chunks of {} (blob {}) differ from what the blob gives",
                        version.path, version.blob
                    ),
                    file_id: Some(version.id),
                });
            }
        }
        Ok(problems)
    }

    fn repair(
        &self,
        found: &[Problem],
        report: &mut VerifyReport,
        control: &Control,
    ) -> Result<()> {
        let dir = self.store_root()?.to_owned();
        let lock = WriterLock::acquire(&dir, false)?;
        let parts: BTreeSet<&str> = found.iter().map(|p| p.part).collect();
        let mut moved = None;
        if ["store", "database", "lexical"]
            .iter()
            .any(|p| parts.contains(p))
        {
            // Builds a new lexical index beside the old one (and moves an unreadable database
            // aside, after which HEAD is indexed afresh from the git objects).
            let (store, aside) = Store::rebuild(&dir, &lock)?;
            drop(store);
            if let Some(aside) = &aside {
                report.repaired.push(format!(
                    "moved the unreadable database to {}",
                    aside.display()
                ));
            }
            report.repaired.push("rebuilt the lexical index".into());
            moved = aside;
        }
        let mut store = Store::open_or_create(&dir)?;
        if parts.contains("chunk")
            && let Ok(repo) = self.repo()
        {
            let damaged: BTreeSet<i64> = found.iter().filter_map(|p| p.file_id).collect();
            for version in store.listed_versions()? {
                if !damaged.contains(&version.id) {
                    continue;
                }
                control.check()?;
                match rederive(&repo, &version) {
                    Some(chunks) => {
                        store.replace_chunks(version.id, &chunks)?;
                        report.repaired.push(format!(
                            "chunked {} again from blob {}",
                            version.path, version.blob
                        ));
                    }
                    None => report.repaired.push(format!(
                        "could not chunk {} again: blob {} is not in the repository",
                        version.path, version.blob
                    )),
                }
            }
        }
        if parts.contains("chunk") {
            // Chunks of a file version that is missing would otherwise come back with the next
            // version given its id.
            let dropped = store.drop_orphan_chunks()?;
            if dropped > 0 {
                report.repaired.push(format!(
                    "removed {dropped} chunks whose file version is missing"
                ));
            }
        }
        // Snapshots whose manifest is damaged go, and their commits are indexed again below
        // (the writer lock is released first: indexing takes it), oldest first.
        let mut again: Vec<(String, bool)> = Vec::new();
        if parts.contains("manifest") {
            let repo = self.repo().ok();
            let pinned: HashSet<String> = store
                .snapshots()?
                .into_iter()
                .filter(|s| s.pinned)
                .map(|s| s.sha)
                .collect();
            let mut doomed = Vec::new();
            for (sha, _) in store.damaged_manifests()? {
                let in_repository = repo
                    .as_ref()
                    .is_some_and(|repo| repo.resolve(&sha).is_ok_and(|found| found == sha));
                if in_repository {
                    doomed.push(sha);
                } else {
                    report.repaired.push(format!(
                        "could not index snapshot {sha} again: the commit is not in the repository"
                    ));
                }
            }
            if !doomed.is_empty() {
                control.check()?;
                store.remove_snapshots(&doomed)?;
                again = doomed
                    .into_iter()
                    .rev()
                    .map(|sha| {
                        let pinned = pinned.contains(&sha);
                        (sha, pinned)
                    })
                    .collect();
            }
        }
        let recorded = store.record_manifests()?;
        if !recorded.is_empty() {
            report.repaired.push(match recorded.len() {
                1 => "recorded the manifest of 1 snapshot as it stands".to_owned(),
                n => format!("recorded the manifests of {n} snapshots as they stand"),
            });
        }
        if parts.contains("embedding") {
            let dropped = store.drop_damaged_embeddings()?;
            report.repaired.push(format!(
                "dropped {dropped} damaged embeddings (vsync computes them again)"
            ));
        }
        if parts.contains("vectors") {
            let vectors = dir.join("vectors");
            if vectors.is_dir() {
                std::fs::remove_dir_all(&vectors).map_err(|e| Error::io(&vectors, &e))?;
            }
            report.repaired.push(
                "removed the vector files (searches read the embeddings; vsync writes them again)"
                    .into(),
            );
        }
        if parts.contains(ctxpack_store::verify::LEDGER_INDEX) {
            ctxpack_store::Ledger::new(&dir).rebuild_index()?;
            report
                .repaired
                .push("wrote the ledger's index again from its records".into());
        }
        drop(store);
        drop(lock);
        for (sha, pinned) in again {
            let request = IndexRequest {
                at: sha.clone(),
                // The snapshot is gone already: a writer that took the lock in between (a
                // hook indexing a new commit) is waited for rather than left to fail this.
                wait: true,
                ..IndexRequest::default()
            };
            self.index(&request, control)?;
            if pinned {
                self.pin(&sha, true)?;
            }
            report.repaired.push(format!(
                "indexed snapshot {sha} again from its commit: its manifest was damaged"
            ));
        }
        if moved.is_some() {
            let summary = self.index(&IndexRequest::default(), control)?;
            report
                .repaired
                .push(format!("indexed HEAD {} afresh", summary.sha));
        }
        Ok(())
    }
}

/// The chunks a file version's blob gives with this build's chunker; `None` when they cannot
/// be compared (another chunker version, a skipped file, a blob not in the repository).
fn rederive(repo: &ctxpack_index::git::Repo, version: &ListedVersion) -> Option<Vec<NewChunk>> {
    if version.chunker != STORED_CHUNKER || version.skip_reason.is_some() {
        return None;
    }
    let bytes = repo.read_blob(&version.blob).ok()?;
    prepare_text(&version.path, &bytes, &IndexOptions::default()).ok()
}
