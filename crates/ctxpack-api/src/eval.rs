//! Pack quality on a repository's own history, beside reference rankers.

use std::collections::HashMap;
use std::time::Instant;

use ctxpack_core::{Budget, Meter, PackRequest, Selector};
use ctxpack_index::eval::{self, PackedHit, PackedPaths, Score, Task};
use ctxpack_index::git::Repo;
use ctxpack_index::history::History;
use ctxpack_index::retrieve::{RetrieveOptions, Scope};
use ctxpack_store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::{Control, Progress};
use crate::error::{Error, Result};
use crate::index::IndexRequest;
use crate::schema;
use crate::snapshot::{Selected, TopK, past, retrieve_and_select};
use crate::workspace::Workspace;

pub use crate::snapshot::candidates_for;
pub use ctxpack_index::eval::{Gold, Task as EvalTask};

/// Evaluate ctxpack (and reference rankers) on tasks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EvalRequest {
    /// Budgets to pack at.
    pub budgets: Vec<u64>,
    /// ctxpack's selector.
    #[schemars(with = "schema::Selector")]
    pub selector: Selector,
    /// ctxpack's meter (the references use `approx`, as they are defined).
    #[schemars(with = "schema::Meter")]
    pub meter: Meter,
    /// Reference rankers to run beside ctxpack: `bm25`, `bm25-path` and `dump`.
    pub baselines: Vec<String>,
    /// Candidates offered to selection: sized to the budget (the default, as `pack` sizes
    /// them: [`candidates_for`], widened while the pool runs out before the budget does) or
    /// a fixed number.
    pub top_k: TopK,
    /// Parts of ctxpack's ranking to switch off: `file-evidence`, `test-prior`.
    pub ablate: Vec<String>,
}

impl Default for EvalRequest {
    fn default() -> Self {
        EvalRequest {
            budgets: vec![2000, 8000, 32000],
            selector: Selector::Coverage,
            meter: Meter::O200k,
            baselines: vec!["bm25".into(), "dump".into()],
            top_k: TopK::SizedToBudget,
            ablate: Vec::new(),
        }
    }
}

/// One ranker at one budget, averaged over the tasks.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRow {
    /// `ctxpack`, `bm25`, `bm25-path` or `dump`.
    pub ranker: String,
    /// The budget.
    pub budget: u64,
    /// Mean share of gold files cited.
    pub file_recall: f64,
    /// Mean share of gold files whose text the pack shows: at least ten of their lines, or
    /// all of a shorter file.
    pub body_recall: f64,
    /// Share of tasks with at least one gold file cited.
    pub hit_rate: f64,
    /// Mean reciprocal rank of the first gold file.
    pub mrr: f64,
    /// Mean share of the pack's hit tokens that come from gold files.
    pub gold_share: f64,
    /// Mean share of the task commits' hunks in gold files that a cited line range touches
    /// (an insertion, by the line it follows or the next), over the tasks whose commit is
    /// known; `None` when no task's is.
    pub edit_recall: Option<f64>,
    /// Share of those tasks where a cited line range touches at least one hunk.
    pub edit_hit: Option<f64>,
    /// Median milliseconds per pack.
    pub ms_per_pack: f64,
}

/// Index timings of an evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexSeconds {
    /// The first (cold) index.
    pub first: f64,
    /// The median of the later (incremental) ones.
    pub median_after: f64,
}

/// An evaluation's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalReport {
    /// How many tasks.
    pub tasks: usize,
    /// ctxpack's selector.
    #[serde(serialize_with = "selector_name")]
    pub selector: Selector,
    /// ctxpack's meter.
    #[serde(serialize_with = "meter_name")]
    pub meter: Meter,
    /// What was switched off.
    pub ablate: Vec<String>,
    /// Index timings.
    #[serde(rename = "indexSeconds")]
    pub index_seconds: IndexSeconds,
    /// One row per budget and ranker, budgets outermost.
    pub results: Vec<EvalRow>,
}

fn selector_name<S: serde::Serializer>(v: &Selector, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(v.name())
}

fn meter_name<S: serde::Serializer>(v: &Meter, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(v.name())
}

/// Parses tasks given as JSON Lines of `{"goal", "at", "gold": [paths]}`; `name` names the
/// input in errors.
pub fn parse_tasks(text: &str, name: &str) -> Result<Vec<Task>> {
    let mut tasks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let task: Task = serde_json::from_str(line).map_err(|e| {
            Error::invalid(format!(
                "{name}:{}: not a task {{\"goal\", \"at\", \"gold\"}}: {e}",
                i + 1
            ))
        })?;
        if task.goal.trim().is_empty() || task.gold.is_empty() {
            return Err(Error::invalid(format!(
                "{name}:{}: a task needs a goal and at least one gold path",
                i + 1
            )));
        }
        tasks.push(task);
    }
    Ok(tasks)
}

fn retrieve_options(ablate: &[String]) -> Result<RetrieveOptions> {
    let mut options = RetrieveOptions::default();
    for part in ablate {
        match part.as_str() {
            "file-evidence" => options.file_weight = 0.0,
            "test-prior" => options.test_prior = 1.0,
            "history" => options.history_weight = 0.0,
            "cochange" => options.cochange_weight = 0.0,
            "imports" => options.import_weight = 0.0,
            other => {
                return Err(Error::invalid_field(
                    "ablate",
                    format!(
                        "unknown ablation `{other}`: expected file-evidence, test-prior, history, cochange or imports"
                    ),
                ));
            }
        }
    }
    Ok(options)
}

/// Totals of one ranker at one budget.
#[derive(Default)]
struct Tally {
    scores: Vec<Score>,
    millis: Vec<f64>,
}

/// How many tasks [`Workspace::mine_tasks`] mines when the caller does not say.
pub const DEFAULT_MINED_TASKS: usize = 40;

/// How many commits back [`Workspace::mine_tasks`] looks when the caller does not say.
pub const DEFAULT_MINING_SCAN: usize = 3000;

impl Workspace {
    /// Mines tasks from the history of HEAD: non-merge commits with a descriptive message that
    /// modify one to three existing files of the `gold` kind, as [`Gold`] defines each.
    pub fn mine_tasks(&self, commits: usize, scan: usize, gold: Gold) -> Result<Vec<Task>> {
        if commits == 0 || scan == 0 {
            return Err(Error::invalid(
                "the number of tasks and of commits to scan must be at least 1",
            ));
        }
        let repo = self.repo()?;
        let head = repo.resolve("HEAD")?;
        let tasks = eval::mine_tasks(&repo, &head, commits, scan, gold)?;
        if tasks.is_empty() {
            return Err(Error::not_found(format!(
                "no task found in the last {scan} commits: none is a non-merge commit with a descriptive message that modifies one to three existing {}",
                gold.files()
            ))
            .with_hint(crate::error::Hint::Advice(
                "scan further back, or give tasks as JSON Lines".into(),
            )));
        }
        Ok(tasks)
    }

    /// Packs every task's goal at its commit (indexing it first) with ctxpack and the
    /// reference rankers at every budget, and scores the cited paths against the gold files.
    /// Reports `tasks` progress and stops between tasks once cancelled.
    pub fn eval(
        &self,
        tasks: &[Task],
        request: &EvalRequest,
        control: &Control,
    ) -> Result<EvalReport> {
        crate::limits::check_meter(request.meter)?;
        for b in &request.budgets {
            Budget::new(*b).map_err(|e| Error::invalid_field("budgets", e.to_string()))?;
        }
        if request.top_k == TopK::Fixed(0) {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        for b in &request.baselines {
            if !matches!(b.as_str(), "bm25" | "bm25-path" | "dump" | "none") {
                return Err(Error::invalid_field(
                    "baselines",
                    format!("unknown baseline `{b}`: expected bm25, bm25-path, dump or none"),
                ));
            }
        }
        let options = retrieve_options(&request.ablate)?;
        let repo = self.repo()?;
        let mut rankers = vec!["ctxpack".to_owned()];
        rankers.extend(request.baselines.iter().filter(|b| *b != "none").cloned());
        let mut tallies: Vec<Vec<Tally>> = rankers
            .iter()
            .map(|_| request.budgets.iter().map(|_| Tally::default()).collect())
            .collect();
        let mut index_seconds = Vec::new();
        for (n, task) in tasks.iter().enumerate() {
            control.report(Progress {
                phase: "tasks",
                done: n as u64,
                total: Some(tasks.len() as u64),
            });
            control.check()?;
            let sha = repo.resolve(&task.at)?;
            let started = Instant::now();
            let index = IndexRequest {
                at: sha.clone(),
                wait: true,
                ..IndexRequest::default()
            };
            self.index(&index, control)?;
            index_seconds.push(started.elapsed().as_secs_f64());
            let store = self.open_store()?;
            let files = if rankers.len() > 1 {
                eval::snapshot_files(&repo, &sha, index.max_file_bytes)?
            } else {
                Vec::new()
            };
            let gold_lines = gold_lines(&repo, &store, &sha, &task.gold)?;
            let hunks = eval::task_hunks(&repo, &sha, task)?;
            // The snapshot's past is read once per task; every ctxpack pack is timed as if it
            // had read it, as `pack` does.
            let started = Instant::now();
            let history = past(&repo, &sha, &options);
            let history_millis = started.elapsed().as_secs_f64() * 1000.0;
            for (bi, &budget) in request.budgets.iter().enumerate() {
                for (ri, ranker) in rankers.iter().enumerate() {
                    let started = Instant::now();
                    let packed = match ranker.as_str() {
                        "ctxpack" => ctxpack_pack(
                            &store,
                            &sha,
                            history.as_ref(),
                            &task.goal,
                            budget,
                            request,
                            &options,
                        )?,
                        "bm25" => eval::bm25(&files, &task.goal, budget, Meter::Approx),
                        "bm25-path" => eval::bm25_path(&files, &task.goal, budget, Meter::Approx),
                        _ => eval::dump(&files, budget, Meter::Approx),
                    };
                    let t = &mut tallies[ri][bi];
                    t.scores
                        .push(eval::score(&packed, &task.gold, &hunks, |path| {
                            gold_lines.get(path).copied().unwrap_or(0)
                        }));
                    let read_past = if ranker == "ctxpack" {
                        history_millis
                    } else {
                        0.0
                    };
                    t.millis
                        .push(started.elapsed().as_secs_f64() * 1000.0 + read_past);
                }
            }
        }
        control.report(Progress {
            phase: "tasks",
            done: tasks.len() as u64,
            total: Some(tasks.len() as u64),
        });
        let mut results = Vec::new();
        for (bi, budget) in request.budgets.iter().enumerate() {
            for (ri, ranker) in rankers.iter().enumerate() {
                let t = &tallies[ri][bi];
                results.push(EvalRow {
                    ranker: ranker.clone(),
                    budget: *budget,
                    file_recall: round(mean(t.scores.iter().map(|s| s.recall)), 4),
                    body_recall: round(mean(t.scores.iter().map(|s| s.body_recall)), 4),
                    hit_rate: round(mean(t.scores.iter().map(|s| s.hit)), 4),
                    mrr: round(mean(t.scores.iter().map(|s| s.reciprocal_rank)), 4),
                    gold_share: round(mean(t.scores.iter().map(|s| s.gold_share)), 4),
                    edit_recall: mean_known(t.scores.iter().map(|s| s.edit_recall)),
                    edit_hit: mean_known(t.scores.iter().map(|s| s.edit_hit)),
                    ms_per_pack: round(median(&t.millis), 2),
                });
            }
        }
        Ok(EvalReport {
            tasks: tasks.len(),
            selector: request.selector,
            meter: request.meter,
            ablate: request.ablate.clone(),
            index_seconds: IndexSeconds {
                first: round(index_seconds.first().copied().unwrap_or(0.0), 3),
                median_after: round(median(index_seconds.get(1..).unwrap_or(&[])), 3),
            },
            results,
        })
    }
}

/// ctxpack's pipeline, as `pack` runs it: retrieval sized to the budget (or the fixed pool
/// asked for), then the chosen selector.
fn ctxpack_pack(
    store: &Store,
    sha: &str,
    history: Option<&History>,
    goal: &str,
    budget: u64,
    request: &EvalRequest,
    options: &RetrieveOptions,
) -> Result<PackedPaths> {
    let Selected { pack, .. } = retrieve_and_select(
        store,
        &Scope {
            sha,
            artifacts: &[],
            paths: None,
            overlay: None,
            history,
        },
        &PackRequest {
            goal: goal.to_owned(),
            budget: Budget::new(budget)?,
            meter: request.meter,
            selector: request.selector,
        },
        request.top_k,
        crate::snapshot::Shaping::Focused,
        options,
        &crate::fit::Fit::Content,
        None,
    )?;
    Ok(PackedPaths {
        hits: pack
            .hits
            .iter()
            .filter_map(|h| {
                let c = &h.candidate;
                c.location
                    .as_ref()
                    .map(|l| PackedHit::new(&l.path, c.cost, (l.start_line, l.end_line)))
            })
            .collect(),
    })
}

/// The number of lines of each gold file in snapshot `sha` (a file the snapshot lacks, or
/// that is not text, has none).
fn gold_lines(
    repo: &Repo,
    store: &Store,
    sha: &str,
    gold: &[String],
) -> Result<HashMap<String, u32>> {
    let mut out = HashMap::new();
    for path in gold {
        let lines = match store.blob_at(sha, path)? {
            Some(blob) => {
                let bytes = repo.read_blob(&blob)?;
                String::from_utf8_lossy(&bytes).lines().count() as u32
            }
            None => 0,
        };
        out.insert(path.clone(), lines);
    }
    Ok(out)
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The mean of the known values, rounded as the report's figures are; `None` when none is.
fn mean_known(xs: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let known: Vec<f64> = xs.flatten().collect();
    (!known.is_empty()).then(|| round(mean(known.into_iter()), 4))
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

/// The results as a table, one row per ranker and budget.
impl std::fmt::Display for EvalReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "tasks: {}  selector: {}  meter: {} (references: approx)  index: first {:.2} s, then median {:.2} s",
            self.tasks,
            self.selector.name(),
            self.meter,
            self.index_seconds.first,
            self.index_seconds.median_after
        )?;
        writeln!(
            f,
            "{:<9} {:>7} {:>7} {:>7} {:>8} {:>6} {:>7} {:>8} {:>10} {:>9}",
            "ranker",
            "budget",
            "recall",
            "bodies",
            "hit-rate",
            "mrr",
            "edits",
            "edit-hit",
            "gold-share",
            "ms/pack"
        )?;
        let known = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        for r in &self.results {
            writeln!(
                f,
                "{:<9} {:>7} {:>7.3} {:>7.3} {:>8.3} {:>6.3} {:>7} {:>8} {:>10.3} {:>9.1}",
                r.ranker,
                r.budget,
                r.file_recall,
                r.body_recall,
                r.hit_rate,
                r.mrr,
                known(r.edit_recall),
                known(r.edit_hit),
                r.gold_share,
                r.ms_per_pack
            )?;
        }
        Ok(())
    }
}
