//! `ctxpack plan run` and `ctxpack plan check`: context plans over a repository.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use ctxpack_api::config::Flags;
use ctxpack_api::plan::{PlanRunRequest, PlanSource, StepKind, check_plan};
use ctxpack_api::{Error, ErrorKind, Format, RenderOptions, SnapshotPackRequest, View};

use crate::args::{Location, named, parse_format_among};
use crate::commands::config;
use crate::output::note;

/// The `ctxpack plan` subcommands.
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Evaluate a plan and print the packs it emits.
    Run(RunArgs),
    /// Parse a plan and resolve its names without running anything.
    Check(CheckArgs),
}

/// Options of `plan run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (`.ctx`).
    pub file: PathBuf,
    /// Let `run(…)` start commands (never through a shell) [default: no, or the configured
    /// `allow_run`].
    #[arg(long)]
    pub allow_run: bool,
    #[arg(long, help = format!(
        "Seconds a `run` command may take before it is killed, at most a day [default: {}]",
        PlanRunRequest::default().run_timeout_secs
    ))]
    pub run_timeout: Option<u64>,
    #[arg(long, help = format!(
        "Bytes of output a `run` command may produce; the rest is cut, with a note [default: {}]",
        PlanRunRequest::default().run_max_output
    ))]
    pub run_max_output: Option<usize>,
    /// Output format: text, json or markdown.
    #[arg(long, default_value = "text", value_parser = parse_plan_format)]
    pub format: Format,
    /// How much of each hit to show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = named::<View>())]
    pub view: View,
    /// Pretty-print JSON over several lines.
    #[arg(long)]
    pub pretty: bool,
    /// Also print the events of the run, in order (after the packs; in JSON under "trace").
    #[arg(long)]
    pub trace: bool,
    /// Do not record the versions in the ledger.
    #[arg(long)]
    pub no_ledger: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Options of `plan check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plan file (`.ctx`).
    pub file: PathBuf,
}

fn parse_plan_format(s: &str) -> Result<Format, String> {
    parse_format_among(s, &[Format::Text, Format::Json, Format::Markdown])
}

impl PlanCommand {
    /// Whether a failure should also print the JSON envelope on stdout.
    pub fn wants_json(&self) -> bool {
        matches!(self, PlanCommand::Run(args) if args.format == Format::Json)
    }

    /// Runs the subcommand and returns what goes to stdout.
    pub fn run(self) -> Result<String, Error> {
        match self {
            PlanCommand::Run(args) => run(&args),
            PlanCommand::Check(args) => check(&args),
        }
    }
}

/// The plan's text and the name its diagnostics show.
fn read_plan(file: &Path) -> Result<(String, String), Error> {
    let bytes = std::fs::read(file).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::InvalidInput
        };
        Error::new(kind, format!("cannot read plan {}: {e}", file.display()))
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::invalid(format!("plan {} is not UTF-8", file.display())))?;
    Ok((text, file.display().to_string()))
}

fn check(args: &CheckArgs) -> Result<String, Error> {
    let (text, name) = read_plan(&args.file)?;
    let checked = check_plan(&PlanSource {
        text: &text,
        name: &name,
    })?;
    note(&checked.warnings);
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let flow = checked
        .checked
        .program
        .flow
        .as_deref()
        .map(|f| format!("flow {f}: "))
        .unwrap_or_default();
    Ok(format!(
        "{name}: ok ({flow}{}, {}, {}, {}, {})\n",
        plural(
            checked.count(|k| matches!(k, StepKind::Bind { .. })),
            "binding"
        ),
        plural(checked.count(|k| matches!(k, StepKind::Ctx(_))), "ctx"),
        plural(
            checked.count(|k| matches!(k, StepKind::Append { .. })),
            "append"
        ),
        plural(
            checked.count(|k| matches!(k, StepKind::Emit { .. })),
            "emit"
        ),
        plural(checked.checked.warnings.len(), "warning"),
    ))
}

fn run(args: &RunArgs) -> Result<String, Error> {
    let (text, name) = read_plan(&args.file)?;
    // Flags beat the environment and the user file; a repository file may not set these.
    let config = config::load(
        &args.location,
        Flags {
            allow_run: args.allow_run.then_some(true),
            run_timeout_secs: args.run_timeout,
            run_max_output: args.run_max_output,
            ..Flags::default()
        },
    )?;
    let request = config.apply_plan(PlanRunRequest::default());
    let rendering = RenderOptions {
        format: args.format,
        view: args.view,
        pretty: args.pretty,
    };
    let source = PlanSource {
        text: &text,
        name: &name,
    };
    let record = (!args.no_ledger).then_some(&rendering);
    let effective = config
        .effective(&SnapshotPackRequest::default(), &rendering, &request)
        .for_plans();
    let ran = config::workspace(&args.location, &config, effective)?
        .run_plan(&source, &request, record)?;
    note(&ran.warnings);
    for e in &ran.ledger_errors {
        note(&format!("warning: the pack was not recorded: {e}\n"));
    }
    Ok(ran.render(&rendering, args.trace))
}
