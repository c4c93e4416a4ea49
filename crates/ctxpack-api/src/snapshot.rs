//! Snapshot packs and raw retrieval hits from the exact committed snapshot of a commit.

use std::collections::{HashMap, HashSet};

use ctxpack_core::{
    Budget, Candidate, Citation, DropReason, Dropped, Family, Hit, Location, Meter, Pack,
    PackRequest, RedactionSummary, RenderOptions, Selector, SnapshotInfo, Warning,
};
use ctxpack_index::git::Repo;
use ctxpack_index::history::{HISTORY_COMMITS, History};
use ctxpack_index::indexer::IndexOptions;
use ctxpack_index::paths::PathFilter;
use ctxpack_index::retrieve::{RetrieveOptions, Retrieved, Scope, retrieve_in};
use ctxpack_meter::LineCounts;
use ctxpack_store::{QueryTerms, Store, TermReader};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::Control;
use crate::error::{Ancestor, Error, ErrorKind, Hint, Result};
use crate::fit::Fit;
use crate::index::{IndexRequest, IndexSummary};
use crate::mask;
use crate::schema;
use crate::status::WorktreeCounts;
use crate::workspace::{RecordExtra, Recorded, Workspace};
use crate::worktree;

/// How far back to look for an indexed ancestor to name as guidance.
pub(crate) const ANCESTOR_SEARCH: usize = 1000;

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
    /// Every scope, in the order they widen.
    pub const ALL: [PackScope; 5] = [
        PackScope::Durable,
        PackScope::Session,
        PackScope::Harness,
        PackScope::Evidence,
        PackScope::All,
    ];

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

/// How many retrieval candidates one retrieval offers per budget unit: one per 20 units.
const UNITS_PER_CANDIDATE: u64 = 20;

/// The smallest pool sized to a budget: seed 000's 30 candidates.
const MIN_CANDIDATES: usize = 30;

/// How far a pool sized to the budget may grow: to this many times its first size, doubling
/// each time (so at most three more retrievals).
pub const MAX_POOL_GROWTH: usize = 8;

/// How many candidates retrieval offers for a budget: one per 20 budget units (a pool several
/// times what fits, so the selector can trade relevance against cost and repeated files), and
/// never fewer than 30. Measured best in `ctxpack eval` (docs/quality.md); every surface that
/// sizes a pool to the budget ([`TopK::SizedToBudget`]) starts from it.
pub fn candidates_for(budget: u64) -> usize {
    usize::try_from(budget / UNITS_PER_CANDIDATE)
        .unwrap_or(usize::MAX)
        .max(MIN_CANDIDATES)
}

/// How many retrieval candidates a snapshot pack offers to selection.
///
/// In JSON (and the MCP tool's arguments) a fixed pool is its number and a pool sized to the
/// budget is `null` (or absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TopK {
    /// A pool sized to the budget: [`candidates_for`] the budget first, then — while
    /// selection leaves more than a tenth of the budget unused and retrieval returned as many
    /// candidates as asked (so more may match) — retrieved again with twice the pool, up to
    /// [`MAX_POOL_GROWTH`] times the first size. Deterministic: the same snapshot, goal and
    /// options take the same steps.
    #[default]
    SizedToBudget,
    /// Exactly this many candidates (at least 1), never widened.
    Fixed(usize),
}

impl TopK {
    /// The first pool for `budget`.
    pub fn first_pool(self, budget: Budget) -> usize {
        match self {
            TopK::SizedToBudget => candidates_for(budget.get()),
            TopK::Fixed(n) => n,
        }
    }

    /// The fixed number of candidates, if the pool is fixed.
    pub fn fixed(self) -> Option<usize> {
        match self {
            TopK::SizedToBudget => None,
            TopK::Fixed(n) => Some(n),
        }
    }

    /// The next, larger pool after `pool` when selection left budget unused, if this top-k
    /// may grow and has not reached its cap.
    fn widened(self, budget: Budget, pool: usize) -> Option<usize> {
        let cap = match self {
            TopK::SizedToBudget => candidates_for(budget.get()).saturating_mul(MAX_POOL_GROWTH),
            TopK::Fixed(_) => return None,
        };
        (pool < cap).then(|| pool.saturating_mul(2).min(cap))
    }
}

impl From<usize> for TopK {
    /// A fixed pool of `n` candidates.
    fn from(n: usize) -> TopK {
        TopK::Fixed(n)
    }
}

/// `sized to the budget`, or the fixed number.
impl std::fmt::Display for TopK {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TopK::SizedToBudget => f.write_str("sized to the budget"),
            TopK::Fixed(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for TopK {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            TopK::SizedToBudget => s.serialize_none(),
            TopK::Fixed(n) => s.serialize_some(n),
        }
    }
}

impl<'de> Deserialize<'de> for TopK {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<TopK, D::Error> {
        Ok(Option::<usize>::deserialize(d)?.map_or(TopK::SizedToBudget, TopK::Fixed))
    }
}

impl JsonSchema for TopK {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TopK".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": ["integer", "null"], "minimum": 1 })
    }
}

/// What a pack's budget is spent on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BudgetCovers {
    /// The whole printed output: the hits' text and the markup, headers and citations the
    /// chosen format wraps them in, so what a model reads fits the budget.
    #[default]
    Output,
    /// The hits' content alone (seed 000's unit: complete hit text, not the serialized
    /// payload); the printed output is larger than the budget.
    Content,
}

impl BudgetCovers {
    /// `output` or `content`.
    pub fn name(self) -> &'static str {
        match self {
            BudgetCovers::Output => "output",
            BudgetCovers::Content => "content",
        }
    }
}

impl std::fmt::Display for BudgetCovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BudgetCovers {
    type Err = Error;

    fn from_str(s: &str) -> Result<BudgetCovers> {
        match s {
            "output" => Ok(BudgetCovers::Output),
            "content" => Ok(BudgetCovers::Content),
            other => Err(Error::invalid_field(
                "budget_covers",
                format!("unknown value `{other}`: expected output or content"),
            )),
        }
    }
}

/// A pack from the exact committed snapshot of a commit.
///
/// Two presets of this one request: [`Default`] is ctxpack's measured-best pipeline
/// (`o200k` tokens, a budget of 8,000, the `coverage` selector, a candidate pool sized to the
/// budget and widened when it runs out first, the budget covering the whole printed output,
/// and the commit indexed first when it is not); [`SnapshotPackRequest::context_pack`] is
/// seed 000's `context pack` contract exactly. Front ends set only what their caller gave.
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
    /// Retrieval candidates offered to selection, when fixed (at least 1). Absent or null
    /// sizes the pool to the budget (one candidate per 20 budget units, at least 30), and
    /// retrieves again with a larger pool while the pool runs out before the budget does.
    pub top_k: TopK,
    /// What the budget is spent on: output (the whole printed pack, markup included) or
    /// content (the hits' text alone).
    pub budget_covers: BudgetCovers,
    /// Index the commit first when it is not indexed yet (incremental). A read-only caller
    /// never writes: the commit is reported as not indexed instead.
    pub index: bool,
    /// Only files whose path matches one of these globs (git's wildmatch: `src/**`,
    /// `*.rs`); empty means every file.
    pub include: Vec<String>,
    /// Leave out files whose path matches one of these globs (git's wildmatch).
    pub exclude: Vec<String>,
    /// Pack the working tree as it is now: modified and untracked files (as git ignores them,
    /// and `.ctxpackignore`) overlaid on the HEAD snapshot, cited `path#L…@worktree`.
    pub worktree: bool,
    /// A session to pack in: a hit whose exact lines the session was shown before comes back
    /// as a reference (its citation and the pack that showed it, a few tokens), and a hit
    /// partly shown before shows only its new lines; the budget goes to new evidence.
    pub session: Option<String>,
    /// Show every hit whole, even what the session was shown before (it is still
    /// remembered as shown).
    pub fresh: bool,
    /// Instead of searching, show again what the session was shown under these citations or
    /// pack ids (at least 4 hex digits), within the budget.
    pub recall: Vec<String>,
    /// How the pack is shaped beyond selection. Not a field of the JSON request: each preset
    /// states it (`pack` focuses, `context pack`'s contract offers every candidate whole).
    #[serde(skip)]
    #[schemars(skip)]
    pub shaping: Shaping,
}

/// How a pack is shaped beyond selection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shaping {
    /// ctxpack's measured pipeline (docs/quality.md, "Show the code the task changes"):
    /// candidates scoring under a fifth of the best with no history or import evidence are left
    /// out as weak; under a budget too small for whole chunks (below 12,000), a chunk is cut to
    /// the run of its lines that holds most of the goal's terms (its first lines when none
    /// does), cited by exactly the lines it shows; a tenth of the budget goes to one line of
    /// each file selection did not reach; and what is left shows cut hits whole again.
    #[default]
    Focused,
    /// Every candidate is offered whole; a hit that does not fit is skipped.
    Whole,
}

impl Default for SnapshotPackRequest {
    /// ctxpack's measured-best pipeline (docs/quality.md): `o200k` tokens, a budget of
    /// 8,000, the `coverage` selector, a pool sized to the budget, the budget covering the
    /// whole output, and the commit indexed first where the caller may write.
    fn default() -> Self {
        SnapshotPackRequest {
            goal: String::new(),
            budget: Budget::new(8000).expect("8000 is a valid budget"),
            at: "HEAD".to_owned(),
            scope: PackScope::Durable,
            meter: Meter::O200k,
            selector: Selector::Coverage,
            top_k: TopK::SizedToBudget,
            budget_covers: BudgetCovers::Output,
            index: true,
            include: Vec::new(),
            exclude: Vec::new(),
            worktree: false,
            session: None,
            fresh: false,
            recall: Vec::new(),
            shaping: Shaping::Focused,
        }
    }
}

impl SnapshotPackRequest {
    /// Seed 000's `context pack` contract, exactly: whitespace `words`, a budget of 1,200
    /// counted over the hits' content alone, the `diverse` selector (citation-diverse-v2),
    /// 30 retrieval candidates, every hit whole (one that does not fit is skipped, never
    /// cut), and no indexing (an unindexed commit is not found).
    pub fn context_pack() -> SnapshotPackRequest {
        SnapshotPackRequest {
            budget: Budget::new(1200).expect("1200 is a valid budget"),
            meter: Meter::Words,
            selector: Selector::Diverse,
            top_k: TopK::Fixed(30),
            budget_covers: BudgetCovers::Content,
            index: false,
            shaping: Shaping::Whole,
            ..SnapshotPackRequest::default()
        }
    }
}

/// A snapshot pack's JSON payload `{"goal", "budget"?, "at"?}` (`pack --input`): the fields
/// it gives replace the request's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackPayload {
    /// The goal.
    pub goal: String,
    /// The budget (`None` means the request's).
    pub budget: Option<Budget>,
    /// The commit (`None` means the request's).
    pub at: Option<String>,
}

/// The payload as written, its budget not yet read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPayload {
    #[serde(default)]
    goal: String,
    #[serde(default)]
    budget: Option<serde_json::Value>,
    #[serde(default)]
    at: Option<String>,
}

/// How a payload may write its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadBudget {
    /// A positive safe integer only (the compatibility preset's contract).
    Integer,
    /// Also a string as the command line takes it: `"2k"`, `"1.5m"`, `"800"`.
    Suffixed,
}

impl PackPayload {
    /// Parses a payload from raw bytes (anything: they are checked).
    pub fn parse(bytes: &[u8], budgets: PayloadBudget) -> Result<PackPayload> {
        let raw: RawPayload = serde_json::from_slice(bytes).map_err(|e| {
            Error::invalid_field(
                "input",
                format!("not a JSON object {{\"goal\", \"budget\"?, \"at\"?}}: {e}"),
            )
        })?;
        let budget = match raw.budget {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(text)) if budgets == PayloadBudget::Suffixed => Some(
                Budget::parse_suffixed(&text)
                    .map_err(|e| Error::invalid_field("budget", e.to_string()))?,
            ),
            Some(value) => Some(serde_json::from_value::<Budget>(value).map_err(|e| {
                let accepted = match budgets {
                    PayloadBudget::Integer => "a positive integer",
                    PayloadBudget::Suffixed => "a positive integer or a string such as \"2k\"",
                };
                Error::invalid_field("budget", format!("{e}; the budget is {accepted}"))
            })?),
        };
        Ok(PackPayload {
            goal: raw.goal,
            budget,
            at: raw.at,
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
    /// Index the commit first when it is not indexed, even when the request's
    /// [`index`](SnapshotPackRequest::index) is off. As with the request's field, a read-only
    /// workspace never writes: the commit is reported as not indexed instead.
    pub index_if_missing: bool,
    /// How the caller shows the pack, when it differs from `record` or nothing is recorded:
    /// a budget that covers the output ([`BudgetCovers::Output`]) is fitted to this
    /// rendering's [text format](ctxpack_core::Format::fitted). `None` means `record`'s
    /// rendering, or else Markdown in the default view (what the MCP tool shows).
    pub rendering: Option<&'a RenderOptions>,
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
    /// Whether the snapshot's past was read from git for the history signals (a snapshot
    /// indexed from a full clone has it stored, and a pack reads none).
    pub past_read: bool,
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
    /// Its file's evidence from past commit messages (0 to 1).
    pub history: f64,
    /// How much its file changed together with the best files (0 to 1).
    pub cochange: f64,
    /// Whether one of the best files imports its file, by that file's evidence (0 to 1).
    pub imported: f64,
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
        Err(
            Error::invalid_field("goal", "the goal is empty").with_hint(Hint::Advice(
                "say what you are about to do or find out, in words: \"add retry to the HTTP client\""
                    .into(),
            )),
        )
    } else {
        Ok(())
    }
}

impl Workspace {
    /// Builds a pack from the exact snapshot `request.at` resolves to; see
    /// [`Workspace::snapshot_pack_with`], here with no progress reports and no cancellation.
    pub fn snapshot_pack(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
    ) -> Result<SnapshotPack> {
        self.snapshot_pack_with(request, options, &Control::new())
    }

    /// Builds a pack from the exact snapshot `request.at` resolves to.
    ///
    /// When that snapshot is not indexed and the request's `index` (or
    /// `options.index_if_missing`) is set, the commit is indexed first, incrementally, with
    /// `control`'s progress reports and cancellation (waiting for another writer to finish).
    /// A read-only workspace never writes; an unindexed snapshot is then
    /// [`ErrorKind::NotIndexed`] with a [`Hint::IndexCommit`] naming the nearest indexed
    /// ancestor, which is never packed instead. Artifacts of the request's scope are merged
    /// only after the exact snapshot is known to be indexed.
    pub fn snapshot_pack_with(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
        control: &Control,
    ) -> Result<SnapshotPack> {
        if request.recall.is_empty() {
            check_goal(&request.goal)?;
        }
        crate::limits::check_meter(request.meter)?;
        crate::session::check_request(request)?;
        self.admit_record(options.record)?;
        let session = self.open_session(request)?;
        if let Some(session) = &session
            && !request.recall.is_empty()
        {
            return self.recall(request, options, session);
        }
        if request.top_k == TopK::Fixed(0) {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        let paths = path_filter(request)?;
        if request.worktree && request.at != "HEAD" {
            return Err(Error::invalid_field(
                "at",
                format!(
                    "the working tree is packed over HEAD, not over {}; drop `at` or `worktree`",
                    request.at
                ),
            ));
        }
        let repo = self.repo()?;
        let sha = repo.resolve(&request.at)?;
        let indexed = if request.index || options.index_if_missing {
            self.index_if_missing(&repo, &sha, control)?
        } else {
            None
        };
        // Artifacts come from the database too, before the store is opened to read them.
        if let Some(record) = &self.snapshots
            && !request.scope.artifact_scopes().is_empty()
        {
            self.sync_artifacts(record)?;
        }
        let store = self.exact_snapshot(&repo, &sha)?;
        let overlay = if request.worktree {
            Some(worktree::overlay(&repo, &sha, &IndexOptions::default())?)
        } else {
            None
        };
        let fit = Fit::new(request.budget_covers, options.rendering.or(options.record));
        let retrieve_options = RetrieveOptions::default();
        let stored = stored_past(&store, &sha, &retrieve_options);
        let past_read = stored.is_none() && wants_past(&retrieve_options);
        let store_in_worktree = self.store_in_worktree();
        let (selected, head) = std::thread::scope(|threads| {
            // HEAD and the working tree's status (for the "uncommitted changes" warning) are
            // read on the second core while this one ranks and selects: the status stats
            // every tracked file and walks the tree for new ones, a third of a pack on a
            // large repository, and neither needs the other. A repository handle stays on
            // its thread: the status opens its own.
            let source = repo.source();
            let status = threads.spawn(move || -> Result<_> {
                let repo = source.open()?;
                let head = repo.head()?;
                let changes =
                    WorktreeCounts::of(&repo, head.sha.as_deref(), store_in_worktree.as_deref());
                Ok((head, changes))
            });
            let history = stored.or_else(|| past(&repo, &sha, &retrieve_options));
            let selected = retrieve_and_select(
                &store,
                &Scope {
                    sha: &sha,
                    artifacts: request.scope.artifact_scopes(),
                    paths: paths.as_ref(),
                    overlay: overlay.as_ref().map(|o| &o.overlay),
                    history: history.as_ref(),
                },
                &PackRequest {
                    goal: request.goal.clone(),
                    budget: request.budget,
                    meter: request.meter,
                    selector: request.selector,
                },
                request.top_k,
                request.shaping,
                &retrieve_options,
                &fit,
                session.as_ref(),
            );
            let head = status
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (selected, head)
        });
        let (head, changes) = head?;
        let Selected {
            mut pack,
            artifact_of,
        } = selected?;
        if pack.hits.is_empty()
            && !request.worktree
            && let Some(filter) = &paths
        {
            no_path_matches(&store, &sha, filter, request)?;
        }
        pack.snapshot = Some(SnapshotInfo {
            requested_ref: request.at.clone(),
            resolved_sha: sha.clone(),
            selection: "exact".into(),
            status: "indexed".into(),
            branch: head.branch,
            detached: head.detached,
            worktree_dirty: changes.is_dirty(),
        });
        match &overlay {
            // The changes are in the pack: say which, instead of warning they are not.
            Some(overlay) => pack.warnings.push(Warning::Notice(overlay.notice(&sha))),
            None => pack.warnings.extend(changes.warning()),
        }
        let mut used: Vec<String> = pack
            .hits
            .iter()
            .filter_map(|h| artifact_of.get(&h.candidate.citation).cloned())
            .collect();
        used.sort();
        used.dedup();
        pack.artifacts = used;
        crate::fit::add_enclosing(&repo, &store, &sha, &mut pack);
        fit.finish(&mut pack)?;
        // Cutting, widening and fitting changed what the hits show.
        pack.recount_redactions();
        pack.session = session.as_ref().map(|s| s.id().to_owned());
        let recorded = self.record(&pack, "pack", options.record, RecordExtra::default());
        if let Some(session) = &session {
            session.remember(&pack, &pack_id(&recorded))?;
        }
        Ok(SnapshotPack {
            pack,
            recorded,
            indexed,
            past_read,
        })
    }

    /// The pack of what `session` was shown under the request's `recall` citations and pack
    /// ids, best first within the budget (what does not fit is dropped as over budget).
    fn recall(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
        session: &crate::session::Open,
    ) -> Result<SnapshotPack> {
        // A recall needs no goal: it says what it recalls.
        let goal = if request.goal.trim().is_empty() {
            let mut goal = format!("recall {}", request.recall.join(" "));
            goal.truncate(goal.floor_char_boundary(200));
            goal
        } else {
            request.goal.clone()
        };
        check_goal(&goal)?;
        let candidates = session.recall(&request.recall, request.meter)?;
        let fit = Fit::new(request.budget_covers, options.rendering.or(options.record));
        let mut redactions = RedactionSummary::default();
        let (mut pack, _) = fit.select(
            PackRequest {
                goal: mask::text(&goal, &mut redactions),
                budget: request.budget,
                meter: request.meter,
                selector: Selector::Skip,
            },
            candidates,
            0,
        );
        fit.finish(&mut pack)?;
        pack.set_redactions(redactions);
        pack.session = Some(session.id().to_owned());
        let recorded = self.record(&pack, "pack", options.record, RecordExtra::default());
        session.remember(&pack, &pack_id(&recorded))?;
        Ok(SnapshotPack {
            pack,
            recorded,
            indexed: None,
            past_read: false,
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
                        history: round4(h.breakdown.history),
                        cochange: round4(h.breakdown.cochange),
                        imported: round4(h.breakdown.imported),
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
        crate::limits::check_meter(meter)?;
        if top_k == 0 {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        let repo = self.repo()?;
        let sha = repo.resolve(at)?;
        let store = self.exact_snapshot(&repo, &sha)?;
        let options = RetrieveOptions::default();
        let history = stored_past(&store, &sha, &options).or_else(|| past(&repo, &sha, &options));
        let scope = Scope {
            sha: &sha,
            artifacts: &[],
            paths: None,
            overlay: None,
            history: history.as_ref(),
        };
        let hits = retrieve_in(&store, &scope, goal, top_k, meter, &options)?;
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
        if let Some(record) = &self.snapshots {
            // The database decides what is indexed; the store is its cache.
            let Some(published) = record.published(sha)? else {
                let published: HashSet<String> = record.shas()?.into_iter().collect();
                return Err(not_indexed(
                    format!("snapshot {sha} is not indexed"),
                    nearest(repo, sha, &published),
                ));
            };
            // The cache usually has it: open the store once, and fill it only when it does not.
            if let Some(store) = self.try_open_store_with(Some(repo))?
                && store.snapshot(sha)?.is_some()
            {
                return Ok(store);
            }
            self.fill_cache(record, &published)?;
        }
        let Some(store) = self.try_open_store_with(Some(repo))? else {
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
        Err(not_indexed(
            format!("snapshot {sha} is not indexed"),
            nearest(repo, sha, &indexed),
        ))
    }

    /// Indexes `sha` when it is not indexed yet and the workspace may index (see
    /// [`Access`]); otherwise it writes nothing (the caller then finds the snapshot missing).
    fn index_if_missing(
        &self,
        repo: &Repo,
        sha: &str,
        control: &Control,
    ) -> Result<Option<IndexSummary>> {
        if !self.may_index() {
            return Ok(None);
        }
        let missing = match (&self.snapshots, self.try_open_store_with(Some(repo))?) {
            (Some(record), _) => record.published(sha)?.is_none(),
            (None, Some(store)) => store.snapshot(sha)?.is_none(),
            (None, None) => true,
        };
        if !missing {
            return Ok(None);
        }
        let request = IndexRequest {
            at: sha.to_owned(),
            // A writer already at work (a hook indexing the new commit, say) is waited for;
            // the snapshot is then usually there and indexing it again is a no-op.
            wait: true,
            ..IndexRequest::default()
        };
        self.index(&request, control).map(Some)
    }
}

/// The nearest first-parent ancestor of `sha` among `indexed`, within [`ANCESTOR_SEARCH`]
/// commits: what a "not indexed" error suggests instead.
fn nearest(repo: &Repo, sha: &str, indexed: &HashSet<String>) -> Option<Ancestor> {
    repo.ancestors(sha, ANCESTOR_SEARCH)
        .into_iter()
        .enumerate()
        .find(|(_, a)| indexed.contains(a))
        .map(|(n, a)| Ancestor {
            sha: a,
            distance: n + 1,
        })
}

/// Fails when no file of snapshot `sha` passes the request's path filter: an empty pack would
/// say that nothing matched the goal, when the globs are what matched nothing.
fn no_path_matches(
    store: &Store,
    sha: &str,
    filter: &PathFilter,
    request: &SnapshotPackRequest,
) -> Result<()> {
    if store
        .manifest(sha)?
        .iter()
        .any(|(path, _)| filter.accepts(path))
    {
        return Ok(());
    }
    let quoted = |globs: &[String]| {
        globs
            .iter()
            .map(|g| format!("'{g}'"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let (field, message) = match (request.include.is_empty(), request.exclude.is_empty()) {
        (false, true) => (
            "include",
            format!("no file matches {}", quoted(&request.include)),
        ),
        (false, false) => (
            "include",
            format!(
                "no file matches {} once {} are left out",
                quoted(&request.include),
                quoted(&request.exclude)
            ),
        ),
        (true, _) => (
            "exclude",
            format!("{} leaves out every file", quoted(&request.exclude)),
        ),
    };
    let short = &sha[..sha.len().min(12)];
    Err(
        Error::invalid_field(field, format!("{message} in snapshot {short}"))
            .with_hint(Hint::Advice(
            "globs follow git's wildmatch from the repository root: `src/**`, `*.rs`, `docs/*.md`"
                .into(),
        )),
    )
}

/// The request's include and exclude globs, parsed; `None` when there are none. A bad glob
/// is invalid input on its field.
fn path_filter(request: &SnapshotPackRequest) -> Result<Option<PathFilter>> {
    if request.include.is_empty() && request.exclude.is_empty() {
        return Ok(None);
    }
    PathFilter::new(&request.include, &request.exclude)
        .map(Some)
        .map_err(|e| {
            Error::invalid_field(e.field, e.to_string()).with_hint(Hint::Advice(
                "globs follow git's wildmatch: `src/**`, `*.rs`, `docs/*.md`".into(),
            ))
        })
}

/// Budget units per line a candidate may show: a chunk is cut to `budget / BUDGET_PER_LINE`
/// of its lines (at least [`MIN_CUT_LINES`]), so a pack shows the matching part of more chunks
/// instead of the whole of a few. Chunks are at most 60 lines long, so from a budget of 12,000
/// nothing is cut.
const BUDGET_PER_LINE: u64 = 200;
/// The fewest lines a cut candidate keeps.
const MIN_CUT_LINES: u64 = 10;

/// How many lines a candidate of a pack with `budget` may show.
fn cut_lines(budget: Budget) -> usize {
    usize::try_from((budget.get() / BUDGET_PER_LINE).max(MIN_CUT_LINES)).unwrap_or(usize::MAX)
}

/// The goal's terms (as the index analyses text), each weighted by how rare it is among the
/// texts of a retrieval's candidates: a term most candidates hold ("add", "config") says little
/// about which of a chunk's lines matter.
struct GoalTerms {
    /// Each term's position in `weights`.
    index: HashMap<String, usize>,
    weights: Vec<f64>,
    /// Per term, text that any line holding it contains once lowercased: the term itself, or
    /// for a term stemmed from `-ies` to `-y`, the term without its `y`. Finding none in a
    /// line is enough to know it holds no term, without analysing it.
    roots: Vec<String>,
}

impl GoalTerms {
    fn new(goal: &str, texts: &[&str]) -> GoalTerms {
        let terms = QueryTerms::from_goal(goal).0;
        let roots: Vec<String> = terms
            .iter()
            .map(|t| match t.strip_suffix('y') {
                Some(root) if !root.is_empty() => root.to_owned(),
                _ => t.clone(),
            })
            .collect();
        // How many texts may hold each term (its root in their lowercased text): a weight
        // needs the proportion, not an exact count, and a pack must not analyse every text.
        let mut holding = vec![0usize; terms.len()];
        for text in texts {
            let lower = text.to_lowercase();
            for (n, root) in holding.iter_mut().zip(&roots) {
                *n += usize::from(lower.contains(root.as_str()));
            }
        }
        let all = texts.len() as f64;
        let weights = holding
            .into_iter()
            .map(|n| (1.0 + (1.0 + all) / (1.0 + n as f64)).ln())
            .collect();
        let index = terms.into_iter().enumerate().map(|(i, t)| (t, i)).collect();
        GoalTerms {
            index,
            weights,
            roots,
        }
    }

    /// The weight of the distinct goal terms on each line of `text`. The text is lowercased
    /// once, and only a line holding some term's root is analysed.
    fn lines(&self, text: &str) -> Vec<f64> {
        let lower = text.to_lowercase();
        // Lowercasing never adds or removes a line break: the lines pair up.
        let pairs = text.split_inclusive('\n').zip(lower.split_inclusive('\n'));
        if !self.roots.iter().any(|r| lower.contains(r.as_str())) {
            return vec![0.0; pairs.count()];
        }
        let mut reader = TermReader::default();
        let mut seen = vec![false; self.weights.len()];
        pairs
            .map(|(line, lower)| {
                if !self.roots.iter().any(|r| lower.contains(r.as_str())) {
                    return 0.0;
                }
                seen.fill(false);
                let mut weight = 0.0;
                for term in reader.terms(line) {
                    if let Some(&i) = self.index.get(term)
                        && !std::mem::replace(&mut seen[i], true)
                    {
                        weight += self.weights[i];
                    }
                }
                weight
            })
            .collect()
    }
}

/// The first line (0-based) and length of the run of `lines` lines of `text` to show: the
/// run whose lines hold the most goal-term weight, centred on its matches (the chunk's start
/// when a run from there holds as much, so its signature stays in view); the first lines
/// when no line matches.
fn matching_run(text: &str, lines: usize, terms: &GoalTerms) -> (usize, usize) {
    let weights = terms.lines(text);
    if weights.len() <= lines {
        return (0, weights.len());
    }
    let sums: Vec<f64> = weights
        .windows(lines)
        .map(|w| w.iter().sum::<f64>())
        .collect();
    let best = sums.iter().copied().fold(0.0, f64::max);
    if best <= 0.0 {
        return (0, lines);
    }
    // Runs of equal weight differ only in unmatched lines at their ends: compare with a
    // tolerance, since sums of the same weights in another order may differ in the last bit.
    let equal = |v: f64| (best - v).abs() <= best * 1e-9;
    let first = sums.iter().position(|&v| equal(v)).unwrap_or(0);
    let last = first
        + sums[first..]
            .iter()
            .take_while(|&&v| equal(v))
            .count()
            .saturating_sub(1);
    let start = if first == 0 { 0 } else { (first + last) / 2 };
    (start, lines)
}

/// Cuts a file's candidate (a snapshot's or the working tree's) to `lines` of its lines around
/// the goal's matches ([`matching_run`]): its citation then names exactly the lines it shows,
/// and its cost is that of those lines (from the `o200k` counts stored with its text, where
/// they tell it, else counted again). Returns the candidate as it was when it was cut.
/// Artifacts are left whole.
fn cut_to_matches(
    candidate: &mut Candidate,
    lines: usize,
    terms: &GoalTerms,
    meter: Meter,
    sha: &str,
    o200k_lines: Option<&LineCounts>,
) -> Option<Candidate> {
    let source = Source::of(candidate, sha)?;
    if candidate.text.split_inclusive('\n').count() <= lines {
        return None;
    }
    let uncut = candidate.clone();
    let (first, count) = matching_run(&candidate.text, lines, terms);
    let text: String = candidate
        .text
        .split_inclusive('\n')
        .skip(first)
        .take(count)
        .collect();
    let location = candidate.location.as_mut()?;
    location.start_line += first as u32;
    location.end_line = location.start_line + count as u32 - 1;
    candidate.citation = source.cite(&location.path, location.start_line, location.end_line);
    candidate.cost = o200k_lines
        .filter(|_| meter == Meter::O200k)
        .and_then(|counts| counts.window(first, count))
        .unwrap_or_else(|| meter.count(&text));
    candidate.text = text;
    Some(uncut)
}

/// Where a file candidate cited whole comes from: the snapshot's commit, or the working tree
/// (a `--worktree` pack's edited files, cut and glimpsed exactly like committed ones).
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    Commit(&'a str),
    Worktree,
}

impl<'a> Source<'a> {
    /// The source of `candidate` when it is a file's lines cited by exactly its location (a
    /// chunk, whole or cut; not an artifact), in snapshot `sha` or the working tree over it.
    pub(crate) fn of(candidate: &Candidate, sha: &'a str) -> Option<Source<'a>> {
        let l = candidate.location.as_ref()?;
        [Source::Commit(sha), Source::Worktree]
            .into_iter()
            .find(|s| candidate.citation == s.cite(&l.path, l.start_line, l.end_line))
    }

    /// The citation of lines `start..=end` of `path` here.
    pub(crate) fn cite(self, path: &str, start: u32, end: u32) -> Citation {
        match self {
            Source::Commit(sha) => Citation::code(path, start, end, sha),
            Source::Worktree => Citation::worktree(path, start, end),
        }
    }
}

/// The id `recorded` gave a pack, or a new one for a pack no ledger recorded.
fn pack_id(recorded: &Recorded) -> String {
    recorded
        .id()
        .map_or_else(crate::session::unrecorded_pack_id, str::to_owned)
}

/// Whether ranking with `options` reads a snapshot's past at all.
fn wants_past(options: &RetrieveOptions) -> bool {
    options.history_weight > 0.0 || options.cochange_weight > 0.0
}

/// The past of snapshot `sha` that ranking reads, read from git, when its options weigh past
/// messages or co-change at all.
pub(crate) fn past(repo: &Repo, sha: &str, options: &RetrieveOptions) -> Option<History> {
    wants_past(options).then(|| History::load(repo, sha, HISTORY_COMMITS))
}

/// The past of snapshot `sha` as stored when it was indexed, when ranking reads one and the
/// store has it.
fn stored_past(store: &Store, sha: &str, options: &RetrieveOptions) -> Option<History> {
    wants_past(options)
        .then(|| History::stored(store, sha))
        .flatten()
}

/// A pack selected from one snapshot's retrieval, before the snapshot's details are added.
pub(crate) struct Selected {
    /// The pack, its redactions counted.
    pub(crate) pack: Pack,
    /// The artifact each artifact candidate came from, by citation.
    pub(crate) artifact_of: HashMap<Citation, String>,
}

/// Selection leaves budget unused, for widening a pool sized to the budget, when more than
/// this fraction (1 / n) of it is left.
const UNUSED_SHARE_TO_WIDEN: u64 = 10;

/// Retrieves the candidates of snapshot `sha` (and of the artifact `scopes`) for the goal,
/// masks them with today's rules, and selects under the budget. A pool
/// [sized to the budget](TopK::SizedToBudget) is retrieved again, twice as large, while
/// selection leaves more than a tenth of the budget unused and retrieval returned as many
/// candidates as asked, none of them weak, up to [`MAX_POOL_GROWTH`] times the first pool; the
/// pack of the last retrieval is the result.
#[allow(clippy::too_many_arguments)]
pub(crate) fn retrieve_and_select(
    store: &Store,
    scope: &Scope<'_>,
    request: &PackRequest,
    top_k: TopK,
    shaping: Shaping,
    options: &RetrieveOptions,
    fit: &Fit,
    session: Option<&crate::session::Open>,
) -> Result<Selected> {
    let budget = request.budget;
    let mut pool = top_k.first_pool(budget);
    let lines = cut_lines(budget);
    let focused = shaping == Shaping::Focused;
    loop {
        let mut retrieved = retrieve_in(store, scope, &request.goal, pool, request.meter, options)?;
        let asked = retrieved.len() == pool;
        let weak = if focused {
            split_weak(&mut retrieved)
        } else {
            Vec::new()
        };
        // Retrieval is best first: once some are weak, a larger pool adds weaker ones.
        let ran_dry = !asked || !weak.is_empty();
        // Only what may be cut needs the goal's terms weighed; what may be cut may also be
        // glimpsed.
        let terms = focused.then(|| {
            let texts: Vec<&str> = retrieved
                .iter()
                .map(|r| r.candidate.text.as_str())
                .collect();
            GoalTerms::new(&request.goal, &texts)
        });
        let mut redactions = RedactionSummary::default();
        let mut artifact_of = HashMap::new();
        let mut glimpses = Vec::new();
        // Each cut candidate as it was, by rank, for a pack with budget left.
        let mut uncut = Vec::new();
        let mut candidates = Vec::with_capacity(retrieved.len());
        let shaped = shape_all(retrieved, terms.as_ref(), lines, request.meter, scope.sha);
        for (i, s) in shaped.into_iter().enumerate() {
            for (kind, n) in &s.redactions.by_kind {
                redactions.add(kind, *n);
            }
            if let Some(id) = s.artifact {
                artifact_of.insert(s.candidate.citation.clone(), id);
            }
            if let Some(g) = s.glimpse {
                glimpses.push((i + 1, g));
            }
            uncut.push(s.uncut);
            candidates.push(s.candidate);
        }
        // What the session was shown becomes references, before anything is counted.
        let seen = session
            .map(|s| {
                s.mark(
                    &mut candidates,
                    &mut uncut,
                    &mut glimpses,
                    request.meter,
                    scope.sha,
                    focused,
                )
            })
            .unwrap_or_default();
        let offered = candidates.len();
        let withhold = if glimpses.is_empty() {
            0
        } else {
            GLIMPSE_SHARE
        };
        let (mut pack, spent) = fit.select(
            PackRequest {
                goal: mask::text(&request.goal, &mut redactions),
                ..request.clone()
            },
            candidates,
            withhold,
        );
        // References are shown as such from here on: what the output adds is measured on them.
        for hit in &mut pack.hits {
            hit.seen = seen.get(&hit.candidate.citation).cloned();
        }
        // A pool is widened for what selection left unused, not for glimpses that found too
        // few further files to spend their share.
        let unused = budget.get().saturating_sub(spent);
        // What the output adds around its evidence is held to its share: hits past it give
        // their budget to glimpses and depth, which the share also bounds.
        let (freed, around) = fit.hold_around(&mut pack);
        let left = add_glimpses(&mut pack, glimpses, unused + freed, fit, around);
        let withheld = budget.get().checked_div(withhold).unwrap_or(0);
        let widen_above = budget.get() / UNUSED_SHARE_TO_WIDEN;
        let widened = if ran_dry || unused <= widen_above + withheld {
            None
        } else {
            top_k.widened(budget, pool)
        };
        if let Some(larger) = widened {
            pool = larger;
            continue;
        }
        deepen(&mut pack, uncut, left, fit);
        leave_out_weak(&mut pack, weak, offered);
        // Counted once the hits are final: deepening shows cut hits whole again.
        pack.set_redactions(redactions);
        return Ok(Selected { pack, artifact_of });
    }
}

/// Shows cut hits whole again, best-ranked first, while what selection and the glimpses left
/// of the budget (`left`, as `fit` counts it) pays for the rest of each chunk: a pack whose
/// candidates ran out before its budget gives its strong chunks depth instead of leaving the
/// budget unspent. `uncut` holds, by rank, each cut candidate's citation and the candidate as
/// it was; a glimpse, cited by another line, is never widened.
fn deepen(
    pack: &mut Pack,
    mut uncut: Vec<Option<(Citation, Candidate)>>,
    mut left: u64,
    fit: &Fit,
) {
    let meter = pack.meter;
    let mut order: Vec<usize> = (0..pack.hits.len()).collect();
    order.sort_by_key(|&i| pack.hits[i].rank);
    for i in order {
        let hit = &mut pack.hits[i];
        let Some(slot) = uncut.get_mut(hit.rank.wrapping_sub(1)) else {
            continue;
        };
        let Some((cut, whole)) = slot.as_ref() else {
            continue;
        };
        if *cut != hit.candidate.citation {
            continue;
        }
        let extra = fit
            .cost(whole, meter)
            .saturating_sub(fit.cost(&hit.candidate, meter));
        if extra > left {
            continue;
        }
        let Some((_, whole)) = slot.take() else {
            continue;
        };
        left -= extra;
        pack.used = pack.used - hit.candidate.cost + whole.cost;
        hit.candidate = whole;
    }
}

/// A retrieved candidate made ready for selection.
struct Shaped {
    /// Masked with today's rules and, when the goal's terms are given, cut around them.
    candidate: Candidate,
    /// The secrets masked in it, when indexed and now.
    redactions: RedactionSummary,
    /// The artifact it belongs to, if it is one.
    artifact: Option<String>,
    /// Its line for a further file.
    glimpse: Option<Candidate>,
    /// When it was cut: its citation now, and the candidate as it was.
    uncut: Option<(Citation, Candidate)>,
}

/// Fewer candidates than this are shaped on the calling thread: a thread costs more.
const SHAPED_PER_THREAD: usize = 64;

/// Shapes `retrieved` ([`Shaped`]), in order, on every core: masking and cutting are most of a
/// large pack's own work, and each candidate's is independent of the others'. With `terms`
/// (a focused pack) each candidate is glimpsed and cut to `lines` around them.
fn shape_all(
    retrieved: Vec<Retrieved>,
    terms: Option<&GoalTerms>,
    lines: usize,
    meter: Meter,
    sha: &str,
) -> Vec<Shaped> {
    let shape = |r: Retrieved| {
        let mut redactions = RedactionSummary::default();
        for (kind, n) in &r.redactions {
            redactions.add(kind, *n);
        }
        let mut candidate = r.candidate;
        // Stored text was masked by the rules of its day: mask with today's, unless those were
        // today's (an eighth of a large pack's time went to masking text again for nothing).
        if r.masked_by_current_rules {
            mask::title(&mut candidate, &mut redactions);
        } else {
            mask::candidate(&mut candidate, meter, &mut redactions);
        }
        let (glimpse, uncut) = match terms {
            Some(terms) => {
                let glimpse = glimpse(&candidate, meter, sha);
                let counts = r.o200k_lines.as_ref();
                let uncut = cut_to_matches(&mut candidate, lines, terms, meter, sha, counts)
                    .map(|whole| (candidate.citation.clone(), whole));
                (glimpse, uncut)
            }
            None => (None, None),
        };
        Shaped {
            candidate,
            redactions,
            artifact: r.artifact,
            glimpse,
            uncut,
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let per_thread = retrieved.len().div_ceil(threads).max(SHAPED_PER_THREAD);
    if retrieved.len() <= per_thread {
        return retrieved.into_iter().map(shape).collect();
    }
    let mut parts: Vec<Vec<Retrieved>> = Vec::new();
    let mut rest = retrieved.into_iter();
    loop {
        let part: Vec<Retrieved> = rest.by_ref().take(per_thread).collect();
        if part.is_empty() {
            break;
        }
        parts.push(part);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || part.into_iter().map(shape).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// A candidate scoring under this fraction (1 / n) of the best, with no evidence from the
/// repository's history or imports, is weak: far weaker evidence than the pack holds. On the
/// nine measured repositories a fifth of the files a pool reaches score under a fifth of the
/// best, and 2 of the 461 files their tasks changed (docs/quality.md).
const WEAK_SHARE: f32 = 5.0;

/// Takes the weak candidates out of `retrieved` (best first), keeping the order of both: those
/// scoring under [`WEAK_SHARE`] of the first with no past commit message, co-change or import
/// behind their file. Nothing is weak when the best score is not a positive number.
fn split_weak(retrieved: &mut Vec<Retrieved>) -> Vec<Retrieved> {
    let Some(best) = retrieved.first().map(|r| r.score) else {
        return Vec::new();
    };
    if !(best.is_finite() && best > 0.0) {
        return Vec::new();
    }
    let floor = best / WEAK_SHARE;
    let weak = |r: &Retrieved| {
        let b = &r.breakdown;
        r.score < floor && b.history <= 0.0 && b.cochange <= 0.0 && b.imported <= 0.0
    };
    let (out, kept): (Vec<Retrieved>, Vec<Retrieved>) =
        std::mem::take(retrieved).into_iter().partition(weak);
    *retrieved = kept;
    out
}

/// Records each weak candidate as a candidate offered and dropped as
/// [weak](DropReason::Weak), ranked after the `offered` ones, so a pack accounts for every
/// candidate retrieved.
fn leave_out_weak(pack: &mut Pack, weak: Vec<Retrieved>, offered: usize) {
    let n = weak.len();
    pack.dropped
        .extend(weak.into_iter().enumerate().map(|(i, r)| Dropped {
            rank: Some(offered + i + 1),
            citation: r.candidate.citation,
            family: r.candidate.family,
            cost: r.candidate.cost,
            reason: DropReason::Weak,
            remaining: None,
        }));
    pack.counters.candidate_hits += n;
    pack.counters.unique_citations += n;
    pack.counters.budget_rejected_hits += n;
}

/// The share of a pack's budget (1 / n) that the first selection leaves for glimpses of
/// further files: a line each says where else to look for a fraction of a chunk's cost.
const GLIMPSE_SHARE: u64 = 10;

/// A line of a file's candidate that says where else to look: the signature of the definition
/// its chunk is named after ([`glimpse_line`]), cited by that line alone.
fn glimpse(candidate: &Candidate, meter: Meter, sha: &str) -> Option<Candidate> {
    let source = Source::of(candidate, sha)?;
    let location = candidate.location.as_ref()?;
    if location.end_line <= location.start_line {
        return None;
    }
    let (n, text) = glimpse_line(&candidate.text, location.symbol.as_deref())?;
    let line = location.start_line + n as u32;
    Some(Candidate {
        citation: source.cite(&location.path, line, line),
        family: candidate.family.clone(),
        text: text.to_owned(),
        cost: meter.count(text),
        tier: candidate.tier,
        score: candidate.score,
        location: Some(Location {
            start_line: line,
            end_line: line,
            ..location.clone()
        }),
        title: candidate.title.clone(),
    })
}

/// How far into a chunk its definition's signature is looked for: past attributes, decorators
/// and a doc comment.
const SIGNATURE_LOOKAHEAD: usize = 20;

/// The line (0-based, and its text) a glimpse of a chunk shows: among its first
/// [`SIGNATURE_LOOKAHEAD`] lines, the first that names `symbol` (its last part, as a whole
/// word) and is not a comment — the definition's signature or heading, not `#[test]` or a doc
/// comment; else the first line that is not blank.
fn glimpse_line<'t>(text: &'t str, symbol: Option<&str>) -> Option<(usize, &'t str)> {
    let name = symbol
        .and_then(|s| s.rsplit(['.', ':']).next())
        .filter(|n| !n.is_empty());
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let names = |line: &str, name: &str| {
        let trimmed = line.trim_start();
        !["//", "/*", "*", "--"]
            .iter()
            .any(|c| trimmed.starts_with(c))
            && line.match_indices(name).any(|(at, _)| {
                !line[..at].chars().next_back().is_some_and(word)
                    && !line[at + name.len()..].chars().next().is_some_and(word)
            })
    };
    let mut lines = text.split_inclusive('\n').enumerate();
    name.and_then(|name| {
        lines
            .clone()
            .take(SIGNATURE_LOOKAHEAD)
            .find(|(_, line)| names(line, name))
    })
    .or_else(|| lines.find(|(_, line)| !line.trim().is_empty()))
}

/// Adds a glimpse ([`glimpse`]) of each file the pack does not show yet, best-ranked first,
/// while one fits `left` (as `fit` counts it) and, when the output's share around its evidence
/// is held, what its markup adds fits `around` ([`Fit::hold_around`]), after the selected hits
/// (whose order is the selector's). Each is a hit like any other, counted as a candidate
/// offered and selected; the candidate it was taken from stays among the dropped. Returns
/// what is left of `left`.
fn add_glimpses(
    pack: &mut Pack,
    glimpses: Vec<(usize, Candidate)>,
    left: u64,
    fit: &Fit,
    mut around: Option<u64>,
) -> u64 {
    let mut shown: HashSet<Family> = pack
        .hits
        .iter()
        .map(|h| h.candidate.family.clone())
        .collect();
    let cited: HashSet<Citation> = pack
        .hits
        .iter()
        .map(|h| h.candidate.citation.clone())
        .collect();
    let mut left = left;
    let mut added = 0;
    for (rank, candidate) in glimpses {
        if shown.contains(&candidate.family) || cited.contains(&candidate.citation) {
            continue;
        }
        let cost = fit.cost(&candidate, pack.meter);
        let framing = fit.framing(&candidate, pack.meter);
        if cost > left || around.is_some_and(|a| framing > a) {
            continue;
        }
        left -= cost;
        around = around.map(|a| a - framing);
        added += 1;
        shown.insert(candidate.family.clone());
        pack.used += candidate.cost;
        pack.hits.push(Hit {
            rank,
            candidate,
            seen: None,
        });
    }
    pack.counters.candidate_hits += added;
    pack.counters.unique_citations += added;
    pack.counters.selected_sources += added;
    left
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
                "{:>3}. {}  score {:.4} (chunk {:.4} = text {:.4} + path {:.4} + symbol {:.4}; file {:.4}; history {:.4}; co-change {:.4}; imported {:.4}; prior {:.2})  ({} {}){symbol}",
                h.rank,
                h.citation,
                h.score,
                b.chunk,
                b.text,
                b.path,
                b.symbol,
                b.file,
                b.history,
                b.cochange,
                b.imported,
                b.prior,
                h.tokens,
                self.meter
            )?;
        }
        Ok(())
    }
}

/// A file of a snapshot as ctxpack indexed it: its chunks' text (masked, as packs show it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedFile {
    /// The commit.
    pub sha: String,
    /// The path.
    pub path: String,
    /// Why it was not chunked (too large, binary, …), if it was not.
    pub skipped: Option<String>,
    /// Its lines, from line 1, as the chunks cover them; lines no chunk covers are absent
    /// (`None`).
    pub lines: Vec<Option<String>>,
}

impl Workspace {
    /// The file `path` of the indexed snapshot `at` as ctxpack indexed it: what a citation
    /// into it points at. Reads only the store (never the checkout), so what it shows is
    /// masked exactly as packs are.
    pub fn indexed_file(&self, at: &str, path: &str) -> Result<IndexedFile> {
        let repo = self.repo()?;
        let sha = repo.resolve(at)?;
        let store = self.exact_snapshot(&repo, &sha)?;
        let id = store
            .manifest_entry(&sha, path)?
            .ok_or_else(|| Error::not_found(format!("snapshot {sha} has no file {path}")))?;
        let file = store.export_file(id)?;
        let mut lines: Vec<Option<String>> = Vec::new();
        for chunk in &file.chunks {
            let start = chunk.start_line.max(1) as usize;
            for (offset, line) in chunk.text.lines().enumerate() {
                let number = start + offset;
                if lines.len() < number {
                    lines.resize(number, None);
                }
                let slot = &mut lines[number - 1];
                if slot.is_none() {
                    *slot = Some(line.to_owned());
                }
            }
        }
        Ok(IndexedFile {
            sha,
            path: path.to_owned(),
            skipped: file.skip_reason,
            lines,
        })
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Twelve lines; line `rare` (1-based) mentions a term no other candidate holds.
    fn chunk(rare: usize) -> String {
        (1..=12)
            .map(|n| {
                if n == rare {
                    format!("let v{n} = ledger.overflow(); // {n}\n")
                } else {
                    format!("let v{n} = ledger.step(); // {n}\n")
                }
            })
            .collect()
    }

    #[test]
    fn a_glimpse_shows_the_signature_not_an_attribute_or_a_doc_comment() {
        let rust = "\n#[test]\n/// Checks `budgets_are_enforced`.\nfn budgets_are_enforced() {\n    run();\n}\n";
        assert_eq!(
            glimpse_line(rust, Some("tests::budgets_are_enforced")),
            Some((3, "fn budgets_are_enforced() {\n"))
        );
        let python = "@property\ndef max_content_length(self):\n    return 1\n";
        assert_eq!(
            glimpse_line(python, Some("Request.max_content_length")),
            Some((1, "def max_content_length(self):\n"))
        );
        assert_eq!(
            glimpse_line("# Budgets\n\ntext\n", Some("Budgets")),
            Some((0, "# Budgets\n"))
        );
        // A name that only appears inside another word, or no name: the first line that is
        // not blank.
        assert_eq!(
            glimpse_line("\n#[test]\nfn budgets_x() {}\n", Some("budgets")),
            Some((1, "#[test]\n"))
        );
        assert_eq!(
            glimpse_line("\n\nlet a = 1;\n", None),
            Some((2, "let a = 1;\n"))
        );
    }

    #[test]
    fn a_cut_keeps_the_run_of_lines_around_the_rarest_match() {
        let other = "the ledger, again and again\n";
        let text = chunk(9);
        let terms = GoalTerms::new("ledger overflow", &[&text, other, other]);
        // "overflow" is in one text of three, "ledger" in all: the rarer term weighs more,
        // and every term weighs something.
        let weight = |term: &str| terms.weights[terms.index[term]];
        assert!(weight("overflow") > weight("ledger"));
        assert!(weight("ledger") > 0.0);
        // Four lines: every run of four that holds line 9 (lines 6–9 to 9–12) weighs the
        // same; the middle one of them is kept (lines 7 to 10, 0-based start 6).
        assert_eq!(matching_run(&text, 4, &terms), (6, 4));
        // A run from the chunk's start that holds as much keeps the signature in view.
        assert_eq!(matching_run(&chunk(2), 4, &terms), (0, 4));
        // No line matches: the first lines; a chunk no longer than the cut: whole.
        let none = GoalTerms::new("unrelated words", &[&text]);
        assert_eq!(matching_run(&text, 4, &none), (0, 4));
        assert_eq!(matching_run(&text, 12, &terms), (0, 12));
    }
}
