//! Snapshot packs and raw retrieval hits from the exact committed snapshot of a commit.

use std::collections::{HashMap, HashSet};

use ctxpack_core::{
    Budget, Candidate, Meter, Pack, PackRequest, RedactionSummary, RenderOptions, Selector,
    SnapshotInfo, Warning,
};
use ctxpack_index::git::Repo;
use ctxpack_index::retrieve::{Retrieved, retrieve};
use ctxpack_store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::Control;
use crate::error::{Ancestor, Error, ErrorKind, Hint, Result};
use crate::index::{IndexRequest, IndexSummary};
use crate::mask;
use crate::schema;
use crate::workspace::{RecordExtra, Recorded, Workspace};

/// How far back to look for an indexed ancestor to name as guidance.
const ANCESTOR_SEARCH: usize = 1000;

/// What a snapshot pack merges beside the snapshot's own files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PackScope {
    /// The committed snapshot alone.
    #[default]
    Durable,
    /// Also the artifacts of the `session` scope.
    Session,
    /// Also the artifacts of the `harness` scope.
    Harness,
    /// Also the artifacts of the `evidence` scope.
    Evidence,
    /// Also every artifact.
    All,
}

impl PackScope {
    /// `durable`, `session`, `harness`, `evidence` or `all`.
    pub fn name(self) -> &'static str {
        match self {
            PackScope::Durable => "durable",
            PackScope::Session => "session",
            PackScope::Harness => "harness",
            PackScope::Evidence => "evidence",
            PackScope::All => "all",
        }
    }

    /// The artifact scopes merged: none for `durable`.
    pub fn artifact_scopes(self) -> &'static [&'static str] {
        match self {
            PackScope::Durable => &[],
            PackScope::Session => &["session"],
            PackScope::Harness => &["harness"],
            PackScope::Evidence => &["evidence"],
            PackScope::All => &ctxpack_store::artifacts::SCOPES,
        }
    }
}

impl std::fmt::Display for PackScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PackScope {
    type Err = Error;

    fn from_str(s: &str) -> Result<PackScope> {
        match s {
            "durable" => Ok(PackScope::Durable),
            "session" => Ok(PackScope::Session),
            "harness" => Ok(PackScope::Harness),
            "evidence" => Ok(PackScope::Evidence),
            "all" => Ok(PackScope::All),
            other => Err(Error::invalid_field(
                "scope",
                format!(
                    "unknown scope `{other}`: expected durable, session, harness, evidence or all"
                ),
            )),
        }
    }
}

/// A pack from the exact committed snapshot of a commit.
///
/// `Default` is ctxpack's default request; front ends set only what their caller gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["goal"]))]
pub struct SnapshotPackRequest {
    /// The task, in words: what you are about to do or find out, e.g. "add retry to the HTTP
    /// client".
    #[schemars(length(min = 1))]
    pub goal: String,
    /// The hard budget, in units of `meter`.
    #[schemars(with = "schema::Budget")]
    pub budget: Budget,
    /// The commit: HEAD, a full SHA or a unique hexadecimal prefix (branch names, tags and
    /// HEAD~1 are refused).
    pub at: String,
    /// durable: the committed snapshot alone; session, harness, evidence or all also merge
    /// the stored artifacts of that scope.
    pub scope: PackScope,
    /// The budget unit: whitespace words, exact OpenAI token counts (o200k, cl100k),
    /// characters, or ceil(chars/4) (approx).
    #[schemars(with = "schema::Meter")]
    pub meter: Meter,
    /// Selection policy: coverage (relevance per cost, favouring files not yet represented),
    /// diverse (one hit per file first, then fill), prefix (best-first, stop at the first that
    /// does not fit), skip (best-first, skip what does not fit).
    #[schemars(with = "schema::Selector")]
    pub selector: Selector,
    /// Retrieval candidates offered to selection.
    #[schemars(range(min = 1))]
    pub top_k: usize,
}

impl Default for SnapshotPackRequest {
    fn default() -> Self {
        SnapshotPackRequest {
            goal: String::new(),
            budget: Budget::new(1200).expect("1200 is a valid budget"),
            at: "HEAD".to_owned(),
            scope: PackScope::Durable,
            meter: Meter::Words,
            selector: Selector::Coverage,
            top_k: 30,
        }
    }
}

/// A snapshot pack's JSON payload `{"goal", "budget"?, "at"?}` (`pack --input`): the fields
/// it gives replace the request's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackPayload {
    /// The goal.
    #[serde(default)]
    pub goal: String,
    /// The budget (`null` means the request's).
    #[serde(default)]
    pub budget: Option<Budget>,
    /// The commit (`null` means the request's).
    #[serde(default)]
    pub at: Option<String>,
}

impl PackPayload {
    /// Parses a payload from raw bytes (anything: they are checked).
    pub fn parse(bytes: &[u8]) -> Result<PackPayload> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::invalid_field(
                "input",
                format!("not a JSON object {{\"goal\", \"budget\"?, \"at\"?}}: {e}"),
            )
        })
    }

    /// `request` with the payload's fields.
    pub fn apply(self, request: SnapshotPackRequest) -> SnapshotPackRequest {
        SnapshotPackRequest {
            goal: self.goal,
            budget: self.budget.unwrap_or(request.budget),
            at: self.at.unwrap_or(request.at),
            ..request
        }
    }
}

/// How a snapshot pack is built beyond what it packs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PackOptions<'a> {
    /// How the caller shows the pack; the pack is recorded in the ledger with it (when the
    /// workspace may write). `None` records nothing.
    pub record: Option<&'a RenderOptions>,
    /// Index the commit first when it is HEAD and not indexed yet (needs a read-write
    /// workspace).
    pub index_if_missing: bool,
}

/// A built snapshot pack.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotPack {
    /// The pack.
    pub pack: Pack,
    /// Whether it was recorded in the ledger.
    pub recorded: Recorded,
    /// What indexing did first, when the commit had to be indexed.
    pub indexed: Option<IndexSummary>,
}

/// Raw retrieval hits, as `query` asks for them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["goal"]))]
pub struct QueryRequest {
    /// What to retrieve for.
    #[schemars(length(min = 1))]
    pub goal: String,
    /// HEAD, a full SHA or a unique hexadecimal prefix.
    pub at: String,
    /// How many hits to return.
    #[schemars(range(min = 1))]
    pub top_k: usize,
    /// The unit each hit's cost is given in.
    #[schemars(with = "schema::Meter")]
    pub meter: Meter,
}

impl Default for QueryRequest {
    fn default() -> Self {
        QueryRequest {
            goal: String::new(),
            at: "HEAD".to_owned(),
            top_k: 10,
            meter: Meter::Words,
        }
    }
}

/// One raw hit with its score's breakdown (scores rounded to four decimals).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryHit {
    /// 1-based rank.
    pub rank: usize,
    /// The hit's citation.
    pub citation: String,
    /// Its file, for snapshot files.
    pub path: Option<String>,
    /// The symbol it defines, when known.
    pub symbol: Option<String>,
    /// Its cost in the request's meter.
    pub tokens: u64,
    /// The blended score.
    pub score: f64,
    /// The score's parts.
    pub score_breakdown: ScoreParts,
}

/// The parts of a hit's score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScoreParts {
    /// BM25 over the chunk's text.
    pub text: f64,
    /// BM25 over its path.
    pub path: f64,
    /// BM25 over its symbol.
    pub symbol: f64,
    /// The chunk's blended lexical score.
    pub chunk: f64,
    /// Its file's evidence.
    pub file: f64,
    /// The prior (tests and fixtures count half).
    pub prior: f64,
}

/// What `query` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryHits {
    /// The goal.
    pub goal: String,
    /// The commit.
    pub snapshot_sha: String,
    /// The meter costs are in.
    #[serde(serialize_with = "meter_name")]
    pub meter: Meter,
    /// The hits, best first.
    pub hits: Vec<QueryHit>,
}

fn meter_name<S: serde::Serializer>(meter: &Meter, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(meter.name())
}

impl QueryHits {
    /// The canonical JSON of `query --format json` and the MCP `query` tool.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("query hits serialize")
    }
}

fn round4(x: f32) -> f64 {
    (f64::from(x) * 10_000.0).round() / 10_000.0
}

/// Refuses an empty goal.
pub(crate) fn check_goal(goal: &str) -> Result<()> {
    crate::limits::check_goal_size("goal", goal)?;
    if goal.trim().is_empty() {
        Err(Error::invalid_field("goal", "the goal is empty"))
    } else {
        Ok(())
    }
}

impl Workspace {
    /// Builds a pack from the exact snapshot `request.at` resolves to.
    ///
    /// The snapshot must be indexed: when it is not, the error is
    /// [`ErrorKind::NotIndexed`] with a [`Hint::IndexCommit`] naming the nearest indexed
    /// ancestor (never packed automatically), unless `options.index_if_missing` indexes HEAD
    /// first. Artifacts of the request's scope are merged only after the exact snapshot is
    /// known to be indexed.
    pub fn snapshot_pack(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
    ) -> Result<SnapshotPack> {
        check_goal(&request.goal)?;
        if request.top_k == 0 {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        let repo = self.repo()?;
        let sha = repo.resolve(&request.at)?;
        let indexed = if options.index_if_missing {
            self.index_head_if_missing(&repo, &sha)?
        } else {
            None
        };
        let store = self.exact_snapshot(&repo, &sha)?;
        let retrieved = retrieve(
            &store,
            &sha,
            request.scope.artifact_scopes(),
            &request.goal,
            request.top_k,
            request.meter,
        )?;
        let mut redactions = RedactionSummary::default();
        let mut artifact_of = HashMap::new();
        let candidates: Vec<Candidate> = retrieved
            .into_iter()
            .map(|r: Retrieved| {
                for (kind, n) in &r.redactions {
                    redactions.add(kind, *n);
                }
                if let Some(id) = r.artifact {
                    artifact_of.insert(r.candidate.citation.clone(), id);
                }
                let mut candidate = r.candidate;
                // Stored text was masked by the rules of its day: mask with today's.
                mask::candidate(&mut candidate, request.meter, &mut redactions);
                candidate
            })
            .collect();
        let mut pack = Pack::build(
            PackRequest {
                goal: mask::text(&request.goal, &mut redactions),
                budget: request.budget,
                meter: request.meter,
                selector: request.selector,
            },
            candidates,
        );
        let head = repo.head()?;
        let dirty = repo.is_dirty();
        pack.snapshot = Some(SnapshotInfo {
            requested_ref: request.at.clone(),
            resolved_sha: sha,
            selection: "exact".into(),
            status: "indexed".into(),
            branch: head.branch,
            detached: head.detached,
            worktree_dirty: dirty,
        });
        if dirty {
            pack.warnings.push(Warning::DirtyWorktree);
        }
        pack.redactions = redactions;
        let mut used: Vec<String> = pack
            .hits
            .iter()
            .filter_map(|h| artifact_of.get(&h.candidate.citation).cloned())
            .collect();
        used.sort();
        used.dedup();
        pack.artifacts = used;
        let recorded = self.record(&pack, "pack", options.record, RecordExtra::default());
        Ok(SnapshotPack {
            pack,
            recorded,
            indexed,
        })
    }

    /// Raw retrieval hits of the exact snapshot `request.at` resolves to, with each score's
    /// breakdown.
    pub fn query(&self, request: &QueryRequest) -> Result<QueryHits> {
        let (sha, hits) =
            self.retrieve_exact(&request.goal, &request.at, request.top_k, request.meter)?;
        Ok(QueryHits {
            goal: mask::text(&request.goal, &mut RedactionSummary::default()),
            snapshot_sha: sha,
            meter: request.meter,
            hits: hits
                .iter()
                .enumerate()
                .map(|(i, h)| QueryHit {
                    rank: i + 1,
                    citation: h.candidate.citation.0.clone(),
                    path: h.candidate.location.as_ref().map(|l| l.path.clone()),
                    symbol: h.candidate.location.as_ref().and_then(|l| l.symbol.clone()),
                    tokens: h.candidate.cost,
                    score: round4(h.score),
                    score_breakdown: ScoreParts {
                        text: round4(h.breakdown.bm25.text),
                        path: round4(h.breakdown.bm25.path),
                        symbol: round4(h.breakdown.bm25.symbol),
                        chunk: round4(h.breakdown.chunk),
                        file: round4(h.breakdown.file),
                        prior: round4(h.breakdown.prior),
                    },
                })
                .collect(),
        })
    }

    /// Retrieval candidates of the exact snapshot `at` resolves to, with the resolved SHA.
    pub(crate) fn retrieve_exact(
        &self,
        goal: &str,
        at: &str,
        top_k: usize,
        meter: Meter,
    ) -> Result<(String, Vec<Retrieved>)> {
        check_goal(goal)?;
        if top_k == 0 {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        let repo = self.repo()?;
        let sha = repo.resolve(at)?;
        let store = self.exact_snapshot(&repo, &sha)?;
        let hits = retrieve(&store, &sha, &[], goal, top_k, meter)?;
        Ok((sha, hits))
    }

    /// Opens the store and checks that the exact snapshot `sha` is indexed; names the nearest
    /// indexed ancestor as guidance when it is not (never packs it).
    fn exact_snapshot(&self, repo: &Repo, sha: &str) -> Result<Store> {
        let not_indexed = |message: String, nearest: Option<Ancestor>| {
            Error::new(ErrorKind::NotIndexed, message).with_hint(Hint::IndexCommit {
                sha: sha.to_owned(),
                nearest,
            })
        };
        let Some(store) = self.try_open_store()? else {
            return Err(not_indexed(
                format!(
                    "snapshot {sha} is not indexed: no store at {}",
                    self.store_dir()?.display()
                ),
                None,
            ));
        };
        if store.snapshot(sha)?.is_some() {
            return Ok(store);
        }
        let indexed: HashSet<String> = store.snapshots()?.into_iter().map(|s| s.sha).collect();
        let nearest = repo
            .ancestors(sha, ANCESTOR_SEARCH)
            .into_iter()
            .enumerate()
            .find(|(_, a)| indexed.contains(a))
            .map(|(n, a)| Ancestor {
                sha: a,
                distance: n + 1,
            });
        Err(not_indexed(
            format!("snapshot {sha} is not indexed"),
            nearest,
        ))
    }

    /// Indexes `sha` when it is HEAD and not indexed yet.
    fn index_head_if_missing(&self, repo: &Repo, sha: &str) -> Result<Option<IndexSummary>> {
        let missing = match self.try_open_store()? {
            Some(store) => store.snapshot(sha)?.is_none(),
            None => true,
        };
        if !missing {
            return Ok(None);
        }
        if repo.head()?.sha.as_deref() != Some(sha) {
            return Err(Error::invalid_field(
                "at",
                "indexing before packing indexes HEAD only; index the commit first",
            ));
        }
        let request = IndexRequest {
            at: sha.to_owned(),
            ..IndexRequest::default()
        };
        self.index(&request, &Control::new()).map(Some)
    }
}

/// The hits with their score breakdowns, one line each, as `query` prints them.
impl std::fmt::Display for QueryHits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "goal: {}", self.goal.replace('\n', " "))?;
        writeln!(f, "snapshot: {}", self.snapshot_sha)?;
        for h in &self.hits {
            let symbol = h
                .symbol
                .as_deref()
                .map(|s| format!("  [{s}]"))
                .unwrap_or_default();
            let b = &h.score_breakdown;
            writeln!(
                f,
                "{:>3}. {}  score {:.4} (chunk {:.4} = text {:.4} + path {:.4} + symbol {:.4}; file {:.4}; prior {:.2})  ({} {}){symbol}",
                h.rank,
                h.citation,
                h.score,
                b.chunk,
                b.text,
                b.path,
                b.symbol,
                b.file,
                b.prior,
                h.tokens,
                self.meter
            )?;
        }
        Ok(())
    }
}
