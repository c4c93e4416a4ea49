//! `ctxpack eval`: pack quality on a repository's own history, beside reference rankers.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use ctxpack_api::{Budget, Error, EvalRequest, Gold, Meter, Selector, parse_tasks};

use crate::args::{Location, named, parse, parse_budget};
use crate::output::progress;

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
    /// Budgets to pack at, comma-separated; each a positive integer or with a k or m suffix
    /// (2k, 1.5k, 1m).
    #[arg(long, value_delimiter = ',', value_parser = parse_budget, allow_negative_numbers = true,
          default_values_t = default_budgets())]
    pub budgets: Vec<Budget>,
    /// ctxpack's selector.
    #[arg(long, default_value_t = EvalRequest::default().selector, value_parser = named::<Selector>())]
    pub selector: Selector,
    /// ctxpack's meter (the references use `approx`, as they are defined).
    #[arg(long, default_value_t = EvalRequest::default().meter, value_parser = named::<Meter>())]
    pub meter: Meter,
    /// Reference rankers to run beside ctxpack: `bm25`, `bm25-path` (BM25 with a boost for
    /// goal terms in the path, one window per file first), `dump`, or `none`.
    #[arg(long = "baseline", value_delimiter = ',', default_values_t = EvalRequest::default().baselines)]
    pub baselines: Vec<String>,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Offer exactly N candidates to selection (default: sized to the budget, at least 30,
    /// widened while the pool runs out before the budget does, as `pack` does).
    #[arg(long, value_name = "N")]
    pub top_k: Option<usize>,
    /// Switch parts of ctxpack's ranking off to measure them: `file-evidence`, `test-prior`,
    /// `history` (past commit messages), `cochange` (files that changed with the best ones),
    /// `imports` (files the best ones import).
    #[arg(long, value_delimiter = ',')]
    pub ablate: Vec<String>,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Options of `eval history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// How many tasks to mine.
    #[arg(long, default_value_t = ctxpack_api::DEFAULT_MINED_TASKS)]
    pub commits: usize,
    /// How many commits to scan at most.
    #[arg(long, default_value_t = ctxpack_api::DEFAULT_MINING_SCAN)]
    pub scan: usize,
    /// What the tasks are about: `code` (commits that modify one to three non-test source
    /// files), `prose` (commits that modify one to three documents, such as Markdown, and no
    /// source file, test or change log) or `changelog` (commits that modify change logs or
    /// release notes and no source file, test or other document).
    #[arg(long, default_value_t = Gold::Code, value_parser = parse::<Gold>)]
    pub gold: Gold,
    /// Write the mined tasks as JSON Lines to this file (usable with `eval cases`).
    #[arg(long)]
    pub write_tasks: Option<PathBuf>,
    /// Budgets, rankers, format and location.
    #[command(flatten)]
    pub options: EvalOptions,
}

/// Options of `eval cases`.
#[derive(Debug, Args)]
pub struct CasesArgs {
    /// The tasks, one JSON object per line.
    pub file: PathBuf,
    /// Budgets, rankers, format and location.
    #[command(flatten)]
    pub options: EvalOptions,
}

/// The request's default budgets, as the command line shows them.
fn default_budgets() -> Vec<Budget> {
    EvalRequest::default()
        .budgets
        .into_iter()
        .filter_map(|b| Budget::new(b).ok())
        .collect()
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
    pub fn run(&self) -> Result<String, Error> {
        let (options, tasks) = match self {
            EvalCommand::History(args) => {
                let workspace = args.options.location.workspace()?;
                let tasks = workspace.mine_tasks(args.commits, args.scan, args.gold)?;
                if let Some(path) = &args.write_tasks {
                    let lines: String = tasks
                        .iter()
                        .map(|t| {
                            format!("{}\n", serde_json::to_string(t).expect("tasks serialize"))
                        })
                        .collect();
                    std::fs::write(path, lines).map_err(|e| Error::io(path, &e))?;
                }
                (&args.options, tasks)
            }
            EvalCommand::Cases(args) => {
                let text = std::fs::read_to_string(&args.file).map_err(|e| {
                    Error::not_found(format!("cannot read {}: {e}", args.file.display()))
                })?;
                (
                    &args.options,
                    parse_tasks(&text, &args.file.display().to_string())?,
                )
            }
        };
        let request = EvalRequest {
            budgets: options.budgets.iter().map(|b| b.get()).collect(),
            selector: options.selector,
            meter: options.meter,
            baselines: options.baselines.clone(),
            top_k: options
                .top_k
                .map_or(EvalRequest::default().top_k, Into::into),
            ablate: options.ablate.clone(),
        };
        let (control, bar) = progress("tasks");
        let report = options
            .location
            .workspace()?
            .eval(&tasks, &request, &control)?;
        drop(bar);
        if options.format == "json" {
            let json = serde_json::to_string(&report).expect("a report serializes");
            return Ok(format!("{json}\n"));
        }
        Ok(report.to_string())
    }
}
