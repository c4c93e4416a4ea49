//! `ctxpack pack` (also `ctxpack context pack`) and `ctxpack query`: packs and raw hits from
//! the exact committed snapshot.

use std::fmt::Write;

use clap::Args;
use ctxpack_core::{
    Budget, Candidate, Meter, Pack, PackRequest, RedactionSummary, Selector, SnapshotInfo, Warning,
    render,
};
use ctxpack_index::git::Repo;
use ctxpack_index::indexer::IndexOptions;
use ctxpack_index::retrieve::{Retrieved, retrieve};
use ctxpack_store::{RecordContext, Store, StoreError};
use serde_json::{Value, json};

use crate::cli::{OutputArgs, parse_budget, parse_meter, parse_selector};
use crate::commands::index::index_into;
use crate::commands::ledger;
use crate::commands::repo::Location;
use crate::failure::{Failure, FailureKind};

/// The default budget of `pack`, in words (seed 000).
pub const DEFAULT_BUDGET: u64 = 1200;

/// How far back to look for an indexed ancestor to name as guidance.
const ANCESTOR_SEARCH: usize = 1000;

/// Options of `ctxpack pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The goal that drives selection.
    pub goal: Option<String>,
    /// A JSON payload `{"goal", "budget"?, "at"?}` from a file or `-` (stdin).
    #[arg(long)]
    pub input: Option<String>,
    /// The budget, a positive integer in units of --meter (default 1200).
    #[arg(long, value_parser = parse_budget, allow_negative_numbers = true)]
    pub budget: Option<Budget>,
    /// durable (the snapshot alone); session, harness, evidence or all also merge the
    /// artifacts of that scope.
    #[arg(long, default_value = "durable")]
    pub scope: String,
    /// HEAD, a full commit SHA or a unique hex prefix (default HEAD).
    #[arg(long)]
    pub at: Option<String>,
    /// Budget unit: words (default), o200k, cl100k, chars or approx.
    #[arg(long, default_value = "words", value_parser = parse_meter)]
    pub meter: Meter,
    /// Selection policy: coverage (default), diverse (seed 000's citation-diverse-v2), prefix
    /// or skip.
    #[arg(long, default_value = "coverage", value_parser = parse_selector)]
    pub selector: Selector,
    /// How many retrieval candidates are offered to selection.
    #[arg(long, default_value_t = 30)]
    pub top_k: usize,
    /// Index HEAD first when it is not indexed yet.
    #[arg(long)]
    pub index: bool,
    /// Do not record this pack in the ledger.
    #[arg(long)]
    pub no_ledger: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Format, view and pretty-printing.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Options of `ctxpack query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The goal to retrieve for.
    pub goal: String,
    /// HEAD, a full commit SHA or a unique hex prefix.
    #[arg(long, default_value = "HEAD")]
    pub at: String,
    /// How many hits to show.
    #[arg(long, default_value_t = 10)]
    pub top_k: usize,
    /// The meter costs are shown in.
    #[arg(long, default_value = "words", value_parser = parse_meter)]
    pub meter: Meter,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// What to pack, after `--input` and the flags were reconciled.
struct Request {
    goal: String,
    budget: Budget,
    at: String,
}

fn reconcile(
    args: &PackArgs,
    read_input: &dyn Fn(&str) -> Result<Vec<u8>, Failure>,
) -> Result<Request, Failure> {
    let (goal, budget, at) = if let Some(input) = &args.input {
        if args.goal.is_some() || args.budget.is_some() || args.at.is_some() {
            return Err(Failure::invalid(
                "--input cannot be combined with a positional goal, --budget or --at",
            )
            .with_hint("put goal, budget and at in the JSON payload"));
        }
        let bytes = read_input(input)?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Failure::invalid(format!("--input is not valid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Failure::invalid(
                "--input must be a JSON object {\"goal\", \"budget\"?, \"at\"?}",
            ));
        };
        if let Some(key) = obj
            .keys()
            .find(|k| !["goal", "budget", "at"].contains(&k.as_str()))
        {
            return Err(Failure::invalid(format!(
                "--input has unknown key `{key}`; known keys: goal, budget, at"
            )));
        }
        let goal = match obj.get("goal") {
            Some(Value::String(g)) => g.clone(),
            None => String::new(),
            Some(_) => return Err(Failure::invalid("--input `goal` must be a string")),
        };
        let budget = match obj.get("budget") {
            None | Some(Value::Null) => None,
            Some(v) => Some(Budget::from_json(v).map_err(|e| Failure::invalid(e.to_string()))?),
        };
        let at = match obj.get("at") {
            None | Some(Value::Null) => None,
            Some(Value::String(a)) => Some(a.clone()),
            Some(_) => return Err(Failure::invalid("--input `at` must be a string")),
        };
        (goal, budget, at)
    } else {
        (
            args.goal.clone().unwrap_or_default(),
            args.budget,
            args.at.clone(),
        )
    };
    if goal.trim().is_empty() {
        return Err(Failure::invalid("the goal is empty")
            .with_hint("pass a goal: ctxpack pack \"how are budgets enforced\""));
    }
    Ok(Request {
        goal,
        budget: budget.unwrap_or(Budget::new(DEFAULT_BUDGET).expect("the default budget is valid")),
        at: at.unwrap_or_else(|| "HEAD".to_owned()),
    })
}

/// The artifact scopes a `--scope` merges: none for `durable`.
fn overlay_scopes(scope: &str) -> Result<&'static [&'static str], Failure> {
    match scope {
        "durable" => Ok(&[]),
        "session" => Ok(&["session"]),
        "harness" => Ok(&["harness"]),
        "evidence" => Ok(&["evidence"]),
        "all" => Ok(&ctxpack_store::artifacts::SCOPES),
        other => Err(Failure::invalid(format!(
            "unknown scope `{other}`: expected durable, session, harness, evidence or all"
        ))),
    }
}

/// Opens the store and checks the exact snapshot is indexed; names the nearest indexed
/// ancestor as guidance when it is not (never packs it).
fn exact_snapshot(repo: &Repo, location: &Location, sha: &str) -> Result<Store, Failure> {
    let dir = location.store_dir(repo);
    // Advice names the store the caller chose, so following it indexes the right one.
    let store_arg = location
        .store
        .as_ref()
        .map(|d| format!(" --store {}", d.display()))
        .unwrap_or_default();
    let store = match Store::open(&dir) {
        Ok(store) => store,
        Err(StoreError::NotFound { dir }) => {
            return Err(Failure::new(
                FailureKind::NotFound,
                format!(
                    "snapshot {sha} is not indexed: no store at {}",
                    dir.display()
                ),
            )
            .with_hint(format!(
                "run `ctxpack index{store_arg}`, or `ctxpack pack --index GOAL{store_arg}` to index HEAD and pack"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    if store.snapshot(sha)?.is_some() {
        return Ok(store);
    }
    let indexed: std::collections::HashSet<String> =
        store.snapshots()?.into_iter().map(|s| s.sha).collect();
    let nearest = repo
        .ancestors(sha, ANCESTOR_SEARCH)
        .into_iter()
        .enumerate()
        .find(|(_, a)| indexed.contains(a));
    let hint = match nearest {
        Some((n, a)) => format!(
            "nearest indexed ancestor: {a} ({} commit{} back); it is not packed automatically: run `ctxpack index{store_arg}` to index {sha}, or pass --at {a}",
            n + 1,
            if n == 0 { "" } else { "s" }
        ),
        None => format!("no indexed ancestor; run `ctxpack index --at {sha}{store_arg}`"),
    };
    Err(Failure::new(
        FailureKind::NotFound,
        format!("snapshot {sha} is not indexed"),
    )
    .with_hint(hint))
}

/// A snapshot pack as every surface asks for it (the CLI after reconciling `--input`, the MCP
/// server from tool arguments).
#[derive(Clone, Debug)]
pub struct SnapshotPackRequest {
    /// The goal.
    pub goal: String,
    /// The hard budget.
    pub budget: Budget,
    /// `HEAD`, a full SHA or a unique hex prefix, as the caller gave it.
    pub at: String,
    /// `durable`, or an artifact scope.
    pub scope: String,
    /// Budget unit.
    pub meter: Meter,
    /// Selection policy.
    pub selector: Selector,
    /// Retrieval candidates offered to selection.
    pub top_k: usize,
}

/// Builds a pack from the exact snapshot `request.at` resolves to.
pub fn snapshot_pack(location: &Location, request: &SnapshotPackRequest) -> Result<Pack, Failure> {
    if request.goal.trim().is_empty() {
        return Err(Failure::invalid("the goal is empty"));
    }
    let scopes = overlay_scopes(&request.scope)?;
    if request.top_k == 0 {
        return Err(Failure::invalid("top-k must be at least 1"));
    }
    let repo = location.repo()?;
    let sha = repo.resolve(&request.at)?;
    let head = repo.head()?;
    // Overlays are merged only once the exact snapshot is known to be indexed.
    let store = exact_snapshot(&repo, location, &sha)?;
    let retrieved = retrieve(
        &store,
        &sha,
        scopes,
        &request.goal,
        request.top_k,
        request.meter,
    )?;
    let mut redactions = RedactionSummary::default();
    let mut artifact_of = std::collections::HashMap::new();
    let candidates: Vec<Candidate> = retrieved
        .into_iter()
        .map(|r: Retrieved| {
            for (kind, n) in &r.redactions {
                redactions.add(kind, *n);
            }
            if let Some(id) = r.artifact {
                artifact_of.insert(r.candidate.citation.clone(), id);
            }
            r.candidate
        })
        .collect();
    let mut pack = Pack::build(
        PackRequest {
            goal: request.goal.clone(),
            budget: request.budget,
            meter: request.meter,
            selector: request.selector,
        },
        candidates,
    );
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
    Ok(pack)
}

/// Runs `ctxpack pack`.
pub fn run(
    args: &PackArgs,
    read_input: &dyn Fn(&str) -> Result<Vec<u8>, Failure>,
) -> Result<String, Failure> {
    let request = reconcile(args, read_input)?;
    let request = SnapshotPackRequest {
        goal: request.goal,
        budget: request.budget,
        at: request.at,
        scope: args.scope.clone(),
        meter: args.meter,
        selector: args.selector,
        top_k: args.top_k,
    };
    overlay_scopes(&request.scope)?;
    if args.index {
        index_head_if_missing(&args.location, &request.at)?;
    }
    let pack = snapshot_pack(&args.location, &request)?;
    let options = args.output.render_options();
    if !args.no_ledger {
        let store_dir = args.location.resolve_store_dir()?;
        let context = RecordContext {
            surface: "pack".into(),
            rendered: ledger::rendered(&options),
            pretty: options.pretty,
            ..RecordContext::default()
        };
        ledger::record(&store_dir, &pack, &context);
    }
    Ok(render(&pack, &options))
}

/// `pack --index`: indexes HEAD first when `at` is HEAD's commit and it is not indexed.
fn index_head_if_missing(location: &Location, at: &str) -> Result<(), Failure> {
    let repo = location.repo()?;
    let sha = repo.resolve(at)?;
    if !store_lacks(&repo, location, &sha)? {
        return Ok(());
    }
    if repo.head()?.sha.as_deref() != Some(sha.as_str()) {
        return Err(Failure::invalid(
            "--index indexes HEAD only; run `ctxpack index --at REV` first",
        ));
    }
    let dir = location.store_dir(&repo);
    let report = index_into(&repo, &dir, &sha, false, &IndexOptions::default())?;
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        crate::commands::index::summary(&report)
    );
    Ok(())
}

fn store_lacks(repo: &Repo, location: &Location, sha: &str) -> Result<bool, Failure> {
    match Store::open(&location.store_dir(repo)) {
        Ok(store) => Ok(store.snapshot(sha)?.is_none()),
        Err(StoreError::NotFound { .. }) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Runs `ctxpack query`: raw hits with their score breakdown.
pub fn query(args: &QueryArgs) -> Result<String, Failure> {
    let (sha, hits) = query_hits(&args.location, &args.goal, &args.at, args.top_k, args.meter)?;
    if args.format == "json" {
        return Ok(format!(
            "{}\n",
            query_json(&args.goal, &sha, args.meter, &hits)
        ));
    }
    let mut out = String::new();
    let _ = writeln!(out, "goal: {}", args.goal.replace('\n', " "));
    let _ = writeln!(out, "snapshot: {sha}");
    for (i, h) in hits.iter().enumerate() {
        let symbol = h
            .candidate
            .location
            .as_ref()
            .and_then(|l| l.symbol.as_deref())
            .map(|s| format!("  [{s}]"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:>3}. {}  score {:.4} (chunk {:.4} = text {:.4} + path {:.4} + symbol {:.4}; file {:.4}; prior {:.2})  ({} {}){symbol}",
            i + 1,
            h.candidate.citation,
            h.score,
            h.breakdown.chunk,
            h.breakdown.bm25.text,
            h.breakdown.bm25.path,
            h.breakdown.bm25.symbol,
            h.breakdown.file,
            h.breakdown.prior,
            h.candidate.cost,
            args.meter
        );
    }
    Ok(out)
}

/// Raw retrieval hits of the exact snapshot `at` resolves to, with the resolved SHA.
pub fn query_hits(
    location: &Location,
    goal: &str,
    at: &str,
    top_k: usize,
    meter: Meter,
) -> Result<(String, Vec<Retrieved>), Failure> {
    if goal.trim().is_empty() {
        return Err(Failure::invalid("the goal is empty"));
    }
    let repo = location.repo()?;
    let sha = repo.resolve(at)?;
    let store = exact_snapshot(&repo, location, &sha)?;
    let hits = retrieve(&store, &sha, &[], goal, top_k, meter)?;
    Ok((sha, hits))
}

/// Raw hits as JSON, with each score's breakdown.
pub fn query_json(goal: &str, sha: &str, meter: Meter, hits: &[Retrieved]) -> Value {
    json!({
        "goal": goal,
        "snapshotSha": sha,
        "meter": meter.name(),
        "hits": hits.iter().enumerate().map(|(i, h)| json!({
                "rank": i + 1,
                "citation": h.candidate.citation,
                "path": h.candidate.location.as_ref().map(|l| l.path.clone()),
                "symbol": h.candidate.location.as_ref().and_then(|l| l.symbol.clone()),
                "tokens": h.candidate.cost,
                "score": round4(h.score),
                "scoreBreakdown": {
                    "text": round4(h.breakdown.bm25.text),
                    "path": round4(h.breakdown.bm25.path),
                    "symbol": round4(h.breakdown.bm25.symbol),
                    "chunk": round4(h.breakdown.chunk),
                    "file": round4(h.breakdown.file),
                    "prior": round4(h.breakdown.prior),
                },
        })).collect::<Vec<_>>(),
    })
}

fn round4(x: f32) -> f64 {
    (f64::from(x) * 10_000.0).round() / 10_000.0
}
