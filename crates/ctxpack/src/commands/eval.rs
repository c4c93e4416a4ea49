//! `ctxpack eval`: pack quality on a repository's own history, beside reference rankers.

use std::fmt::Write;
use std::time::Instant;

use clap::{Args, Subcommand};
use ctxpack_core::{Budget, Meter, Pack, PackRequest, Selector};
use ctxpack_index::eval::{self, PackedPaths, Score, Task};
use ctxpack_index::indexer::IndexOptions;
use ctxpack_index::retrieve::{RetrieveOptions, retrieve_with};
use ctxpack_store::Store;
use serde_json::json;

use crate::cli::{parse_meter, parse_selector};
use crate::commands::index::index_into;
use crate::commands::repo::Location;
use crate::failure::{Failure, FailureKind};

/// `ctxpack eval …`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Mine tasks from the repository's history (commit message → files it changed).
    History(HistoryArgs),
    /// Evaluate given tasks: JSON Lines of {"goal", "at", "gold": [paths]}.
    Cases(CasesArgs),
}

/// Options shared by both kinds of evaluation.
#[derive(Debug, Args)]
pub struct EvalOptions {
    /// Budgets to pack at, comma-separated.
    #[arg(long, default_value = "2000,8000,32000", value_delimiter = ',')]
    pub budgets: Vec<u64>,
    /// ctxpack's selector.
    #[arg(long, default_value = "coverage", value_parser = parse_selector)]
    pub selector: Selector,
    /// ctxpack's meter (the references use `approx`, as they are defined).
    #[arg(long, default_value = "o200k", value_parser = parse_meter)]
    pub meter: Meter,
    /// Reference rankers to run beside ctxpack: `bm25`, `dump`, or `none`.
    #[arg(long = "baseline", default_value = "bm25,dump", value_delimiter = ',')]
    pub baselines: Vec<String>,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Candidates offered to selection (default: scaled to the budget, at least 30).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Switch parts of ctxpack's ranking off to measure them: `file-evidence`, `test-prior`.
    #[arg(long, value_delimiter = ',')]
    pub ablate: Vec<String>,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

impl EvalOptions {
    fn retrieve_options(&self) -> Result<RetrieveOptions, Failure> {
        let mut options = RetrieveOptions::default();
        for part in &self.ablate {
            match part.as_str() {
                "file-evidence" => options.file_weight = 0.0,
                "test-prior" => options.test_prior = 1.0,
                other => {
                    return Err(Failure::invalid(format!(
                        "unknown ablation `{other}`: expected file-evidence or test-prior"
                    )));
                }
            }
        }
        Ok(options)
    }
}

/// Options of `eval history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// How many tasks to mine.
    #[arg(long, default_value_t = 40)]
    pub commits: usize,
    /// How many commits to scan at most.
    #[arg(long, default_value_t = 3000)]
    pub scan: usize,
    /// Write the mined tasks as JSON Lines to this file (usable with `eval cases`).
    #[arg(long)]
    pub write_tasks: Option<std::path::PathBuf>,
    /// Budgets, rankers, format and location.
    #[command(flatten)]
    pub options: EvalOptions,
}

/// Options of `eval cases`.
#[derive(Debug, Args)]
pub struct CasesArgs {
    /// The tasks, one JSON object per line.
    pub file: std::path::PathBuf,
    /// Budgets, rankers, format and location.
    #[command(flatten)]
    pub options: EvalOptions,
}

impl EvalCommand {
    /// Whether failures should be JSON envelopes.
    pub fn wants_json(&self) -> bool {
        match self {
            EvalCommand::History(a) => a.options.format == "json",
            EvalCommand::Cases(a) => a.options.format == "json",
        }
    }

    /// Runs the evaluation.
    pub fn run(&self) -> Result<String, Failure> {
        match self {
            EvalCommand::History(args) => {
                let repo = args.options.location.repo()?;
                let head = repo.resolve("HEAD")?;
                if args.commits == 0 || args.scan == 0 {
                    return Err(Failure::invalid("--commits and --scan must be at least 1"));
                }
                let tasks = eval::mine_tasks(&repo, &head, args.commits, args.scan)?;
                if tasks.is_empty() {
                    return Err(Failure::new(
                        FailureKind::NotFound,
                        format!(
                            "no task found in the last {} commits: none is a non-merge commit with a descriptive message that modifies one to three existing non-test source files",
                            args.scan
                        ),
                    )
                    .with_hint("scan further back with --scan, or give tasks with `ctxpack eval cases FILE.jsonl`"));
                }
                if let Some(path) = &args.write_tasks {
                    let lines: String = tasks
                        .iter()
                        .map(|t| {
                            format!("{}\n", serde_json::to_string(t).expect("tasks serialize"))
                        })
                        .collect();
                    std::fs::write(path, lines).map_err(|e| {
                        Failure::new(
                            FailureKind::Internal,
                            format!("cannot write {}: {e}", path.display()),
                        )
                    })?;
                }
                evaluate(&tasks, &args.options)
            }
            EvalCommand::Cases(args) => {
                let text = std::fs::read_to_string(&args.file).map_err(|e| {
                    Failure::new(
                        FailureKind::NotFound,
                        format!("cannot read {}: {e}", args.file.display()),
                    )
                })?;
                let mut tasks = Vec::new();
                for (i, line) in text.lines().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    let task: Task = serde_json::from_str(line).map_err(|e| {
                        Failure::invalid(format!(
                            "{}:{}: not a task {{\"goal\", \"at\", \"gold\"}}: {e}",
                            args.file.display(),
                            i + 1
                        ))
                    })?;
                    if task.goal.trim().is_empty() || task.gold.is_empty() {
                        return Err(Failure::invalid(format!(
                            "{}:{}: a task needs a goal and at least one gold path",
                            args.file.display(),
                            i + 1
                        )));
                    }
                    tasks.push(task);
                }
                evaluate(&tasks, &args.options)
            }
        }
    }
}

/// Totals of one ranker at one budget.
#[derive(Default)]
struct Tally {
    scores: Vec<Score>,
    millis: Vec<f64>,
}

fn evaluate(tasks: &[Task], options: &EvalOptions) -> Result<String, Failure> {
    for b in &options.budgets {
        Budget::new(*b).map_err(|e| Failure::invalid(format!("--budgets: {e}")))?;
    }
    for b in &options.baselines {
        if !matches!(b.as_str(), "bm25" | "dump" | "none") {
            return Err(Failure::invalid(format!(
                "unknown baseline `{b}`: expected bm25, dump or none"
            )));
        }
    }
    let retrieve_options = options.retrieve_options()?;
    let repo = options.location.repo()?;
    let dir = options.location.store_dir(&repo);
    let mut rankers = vec!["ctxpack".to_owned()];
    rankers.extend(options.baselines.iter().filter(|b| *b != "none").cloned());
    let mut tallies: Vec<Vec<Tally>> = rankers
        .iter()
        .map(|_| options.budgets.iter().map(|_| Tally::default()).collect())
        .collect();
    let mut index_seconds = Vec::new();
    for task in tasks {
        let sha = repo.resolve(&task.at)?;
        let started = Instant::now();
        index_into(&repo, &dir, &sha, true, &IndexOptions::default())?;
        index_seconds.push(started.elapsed().as_secs_f64());
        let store = Store::open(&dir)?;
        let files = if rankers.len() > 1 {
            eval::snapshot_files(&repo, &sha, 1024 * 1024)?
        } else {
            Vec::new()
        };
        for (bi, &budget) in options.budgets.iter().enumerate() {
            for (ri, ranker) in rankers.iter().enumerate() {
                let started = Instant::now();
                let packed = match ranker.as_str() {
                    "ctxpack" => {
                        ctxpack_pack(&store, &sha, &task.goal, budget, options, &retrieve_options)?
                    }
                    "bm25" => eval::bm25(&files, &task.goal, budget, Meter::Approx),
                    _ => eval::dump(&files, budget, Meter::Approx),
                };
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                let t = &mut tallies[ri][bi];
                t.scores.push(eval::score(&packed, &task.gold));
                t.millis.push(ms);
            }
        }
    }
    Ok(report(tasks, options, &rankers, &tallies, &index_seconds))
}

/// The default pipeline: retrieval sized to the budget, then the chosen selector.
fn ctxpack_pack(
    store: &Store,
    sha: &str,
    goal: &str,
    budget: u64,
    options: &EvalOptions,
    retrieve_options: &RetrieveOptions,
) -> Result<PackedPaths, Failure> {
    let top_k = options.top_k.unwrap_or_else(|| candidates_for(budget));
    let retrieved = retrieve_with(
        store,
        sha,
        &[],
        goal,
        top_k,
        options.meter,
        retrieve_options,
    )?;
    let pack = Pack::build(
        PackRequest {
            goal: goal.to_owned(),
            budget: Budget::new(budget).map_err(|e| Failure::invalid(e.to_string()))?,
            meter: options.meter,
            selector: options.selector,
        },
        retrieved.into_iter().map(|r| r.candidate).collect(),
    );
    Ok(PackedPaths {
        hits: pack
            .hits
            .iter()
            .filter_map(|h| {
                let c = &h.candidate;
                c.location.as_ref().map(|l| (l.path.clone(), c.cost))
            })
            .collect(),
    })
}

/// How many candidates retrieval offers for a budget: one per 20 budget units (a pool several
/// times what fits, so the selector can trade relevance against cost and repeated files), and
/// never fewer than the pack default of 30.
pub fn candidates_for(budget: u64) -> usize {
    usize::try_from(budget / 20).unwrap_or(usize::MAX).max(30)
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn round(x: f64, places: i32) -> f64 {
    let p = 10f64.powi(places);
    (x * p).round() / p
}

fn report(
    tasks: &[Task],
    options: &EvalOptions,
    rankers: &[String],
    tallies: &[Vec<Tally>],
    index_seconds: &[f64],
) -> String {
    let mut rows = Vec::new();
    for (bi, budget) in options.budgets.iter().enumerate() {
        for (ri, ranker) in rankers.iter().enumerate() {
            let t = &tallies[ri][bi];
            rows.push((
                ranker.as_str(),
                *budget,
                mean(t.scores.iter().map(|s| s.recall)),
                mean(t.scores.iter().map(|s| s.hit)),
                mean(t.scores.iter().map(|s| s.reciprocal_rank)),
                mean(t.scores.iter().map(|s| s.token_precision)),
                median(&t.millis),
            ));
        }
    }
    let cold = index_seconds.first().copied().unwrap_or(0.0);
    let incremental = median(index_seconds.get(1..).unwrap_or(&[]));
    if options.format == "json" {
        let v = json!({
            "tasks": tasks.len(),
            "selector": options.selector.name(),
            "meter": options.meter.name(),
            "ablate": options.ablate,
            "indexSeconds": { "first": round(cold, 3), "medianAfter": round(incremental, 3) },
            "results": rows.iter().map(|r| json!({
                "ranker": r.0,
                "budget": r.1,
                "fileRecall": round(r.2, 4),
                "hitRate": round(r.3, 4),
                "mrr": round(r.4, 4),
                "tokenPrecision": round(r.5, 4),
                "msPerPack": round(r.6, 2),
            })).collect::<Vec<_>>(),
        });
        return format!("{v}\n");
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tasks: {}  selector: {}  meter: {} (references: approx)  index: first {:.2} s, then median {:.2} s",
        tasks.len(),
        options.selector.name(),
        options.meter,
        cold,
        incremental
    );
    let _ = writeln!(
        out,
        "{:<8} {:>7} {:>7} {:>8} {:>6} {:>9} {:>9}",
        "ranker", "budget", "recall", "hit-rate", "mrr", "tok-prec", "ms/pack"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<8} {:>7} {:>7.3} {:>8.3} {:>6.3} {:>9.3} {:>9.1}",
            r.0, r.1, r.2, r.3, r.4, r.5, r.6
        );
    }
    out
}
