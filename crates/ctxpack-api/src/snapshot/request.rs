//! What a snapshot pack or query is asked with, and what it answers: the request types, their
//! defaults and checks, the pool sized to a budget.

use super::*;

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
pub(super) const UNITS_PER_CANDIDATE: u64 = 20;

/// The smallest pool sized to a budget: seed 000's 30 candidates.
pub(super) const MIN_CANDIDATES: usize = 30;

/// How far a pool sized to the budget may grow: to this many times its first size, doubling
/// each time (so at most three more retrievals).
pub const MAX_POOL_GROWTH: usize = 8;

/// How many candidates retrieval offers for a budget: one per 20 budget units (a pool several
/// times what fits, so the selector can trade relevance against cost and repeated files), and
/// never fewer than 30. Measured best in `ctxpack eval` (docs/quality.md); every surface that
/// sizes a pool to the budget (`TopK::SizedToBudget`) starts from it.
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
    pub(super) fn widened(self, budget: Budget, pool: usize) -> Option<usize> {
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
pub(super) struct RawPayload {
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

pub(super) fn meter_name<S: serde::Serializer>(
    meter: &Meter,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(meter.name())
}

impl QueryHits {
    /// The canonical JSON of `query --format json` and the MCP `query` tool.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("query hits serialize")
    }
}

pub(super) fn round4(x: f32) -> f64 {
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
