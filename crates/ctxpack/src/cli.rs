//! The command line: argument parsing, dispatch, output and exit codes.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use ctxpack_core::{Budget, Format, Meter, RenderOptions, Selector, View};

use crate::commands::index::{self, IndexArgs};
use crate::commands::pack::{self, PackArgs, QueryArgs};
use crate::commands::select::{self, SelectOptions};
use crate::commands::status::{self, StatusArgs};
use crate::failure::{Failure, FailureKind};

/// ctxpack: the best evidence for a task, inside a hard token budget, every piece cited.
#[derive(Debug, Parser)]
#[command(name = "ctxpack", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Pack candidates given as JSON (no index needed).
    ///
    /// Reads a JSON array of {"id" or "citation", "text", "family"?, "score"?, "pinned"?}
    /// objects in rank order and prints the pack.
    Select(SelectArgs),
    /// Index a commit (HEAD by default) into the store.
    Index(IndexArgs),
    /// Show the store's snapshots and whether HEAD is indexed.
    Status(StatusArgs),
    /// Show raw retrieval hits with their score breakdown.
    Query(QueryArgs),
    /// Pack context for a goal from the exact committed snapshot.
    Pack(PackArgs),
    /// Context commands (`ctxpack context pack` is `ctxpack pack`).
    #[command(subcommand)]
    Context(ContextCommand),
    /// JSON document collections: insert, import, find, vector search and context packs.
    #[command(subcommand)]
    Docs(crate::commands::docs::DocsCommand),
    /// Artifacts: session notes, harness output and evidence that packs can merge by scope.
    #[command(subcommand)]
    Artifact(crate::commands::artifact::ArtifactCommand),
    /// Measure pack quality on the repository's history, beside reference rankers.
    #[command(subcommand)]
    Eval(crate::commands::eval::EvalCommand),
    /// Context plans: run a `.ctx` file's ctx blocks (purpose, budget, pins, `+=` versions).
    #[command(subcommand)]
    Plan(crate::commands::plan::PlanCommand),
    /// List the packs recorded in the ledger, newest first.
    Log(crate::commands::ledger::LogArgs),
    /// Show a recorded pack as the model saw it (or with --dropped, what was left out).
    Show(crate::commands::ledger::ShowArgs),
    /// Serve packs to coding agents over the Model Context Protocol (stdio).
    Mcp(crate::mcp::McpArgs),
}

#[derive(Debug, Subcommand)]
enum ContextCommand {
    /// Pack context for a goal from the exact committed snapshot.
    Pack(PackArgs),
}

/// Options shared by every command that prints a pack.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format: text, json, both, markdown or xml.
    #[arg(long, default_value = "text", value_parser = parse_format)]
    pub format: Format,
    /// How much of each hit to show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = parse_view)]
    pub view: View,
    /// Pretty-print JSON over several lines (default: one canonical line).
    #[arg(long)]
    pub pretty: bool,
}

impl OutputArgs {
    /// The render options these flags select.
    pub fn render_options(&self) -> RenderOptions {
        RenderOptions {
            format: self.format,
            view: self.view,
            pretty: self.pretty,
        }
    }
}

#[derive(Debug, Args)]
struct SelectArgs {
    /// Candidates file, or `-` for standard input.
    #[arg(long, short = 'i', default_value = "-")]
    input: String,
    /// A label for the pack (its goal).
    #[arg(long, default_value = "")]
    goal: String,
    /// The hard budget, a positive integer in units of --meter.
    #[arg(long, default_value = "1200", value_parser = parse_budget, allow_negative_numbers = true)]
    budget: Budget,
    /// Budget unit: o200k, cl100k, words, chars or approx.
    #[arg(long, default_value = "o200k", value_parser = parse_meter)]
    meter: Meter,
    /// Selection policy: coverage (default), diverse, prefix or skip.
    #[arg(long, default_value = "coverage", value_parser = parse_selector)]
    selector: Selector,
    /// Record the pack in the ledger of this store directory (by default `select` records
    /// nothing: it has no repository).
    #[arg(long)]
    store: Option<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
}

pub(crate) fn parse_budget(s: &str) -> Result<Budget, String> {
    s.parse()
        .map_err(|e: ctxpack_core::BudgetError| e.to_string())
}

pub(crate) fn parse_meter(s: &str) -> Result<Meter, String> {
    s.parse()
        .map_err(|e: ctxpack_meter::UnknownMeter| e.to_string())
}

pub(crate) fn parse_selector(s: &str) -> Result<Selector, String> {
    s.parse()
        .map_err(|e: ctxpack_core::UnknownSelector| e.to_string())
}

pub(crate) fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
        .map_err(|e: ctxpack_core::UnknownFormat| e.to_string())
}

pub(crate) fn parse_view(s: &str) -> Result<View, String> {
    s.parse()
        .map_err(|e: ctxpack_core::UnknownView| e.to_string())
}

/// Reads a file, or standard input for `-`.
fn read_input(input: &str) -> Result<Vec<u8>, Failure> {
    if input == "-" {
        let mut buf = Vec::new();
        io::stdin().read_to_end(&mut buf).map_err(|e| {
            Failure::new(
                FailureKind::Internal,
                format!("reading standard input: {e}"),
            )
        })?;
        Ok(buf)
    } else {
        let path = PathBuf::from(input);
        std::fs::read(&path).map_err(|e| {
            let kind = if e.kind() == io::ErrorKind::NotFound {
                FailureKind::NotFound
            } else {
                FailureKind::InvalidInput
            };
            Failure::new(kind, format!("cannot read {}: {e}", path.display()))
        })
    }
}

/// Parses the process arguments, runs the command and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors exit 2 (help and version exit 0); a caller that asked for JSON gets
            // the failure envelope on stdout as well.
            if e.use_stderr() && asked_for_json(std::env::args()) {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                let failure = Failure::invalid(first.trim_start_matches("error: "))
                    .with_hint("see `--help` for the command's options");
                let _ = emit(&format!("{}\n", failure.envelope()));
            }
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let json_errors = cli.wants_json();
    match cli.run() {
        Ok(output) => emit(&output),
        Err(failure) => {
            if json_errors {
                let line = format!("{}\n", failure.envelope());
                // The envelope goes where the data would have gone.
                let _ = emit(&line);
            }
            let mut stderr = io::stderr().lock();
            let _ = writeln!(stderr, "{failure}");
            ExitCode::from(failure.kind.exit_code())
        }
    }
}

/// Whether the raw arguments ask for `--format json`.
fn asked_for_json(args: impl Iterator<Item = String>) -> bool {
    let args: Vec<String> = args.collect();
    args.windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json")
}

/// Writes to stdout; a closed pipe (`ctxpack … | head`) is a normal end, not an error.
fn emit(output: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(output.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: writing output: {e}");
            ExitCode::from(FailureKind::Internal.exit_code())
        }
    }
}

impl Cli {
    fn wants_json(&self) -> bool {
        match &self.command {
            Command::Select(args) => args.output.format == Format::Json,
            Command::Pack(args) | Command::Context(ContextCommand::Pack(args)) => {
                args.output.format == Format::Json
            }
            Command::Index(args) => args.format == "json",
            Command::Status(args) => args.format == "json",
            Command::Query(args) => args.format == "json",
            Command::Docs(command) => command.wants_json(),
            Command::Mcp(_) => false,
            Command::Log(args) => args.format == "json",
            Command::Plan(command) => command.wants_json(),
            Command::Eval(command) => command.wants_json(),
            Command::Artifact(command) => command.wants_json(),
            Command::Show(args) => args.format == Some(Format::Json),
        }
    }

    fn run(self) -> Result<String, Failure> {
        match self.command {
            Command::Select(args) => {
                let input = read_input(&args.input)?;
                let options = SelectOptions {
                    goal: args.goal,
                    budget: args.budget,
                    meter: args.meter,
                    selector: args.selector,
                    render: args.output.render_options(),
                    ledger: args.store,
                };
                if let Some(dir) = &options.ledger
                    && !dir.is_dir()
                {
                    return Err(Failure::new(
                        FailureKind::NotFound,
                        format!("no store at {}", dir.display()),
                    )
                    .with_hint("create it with `ctxpack index` or `ctxpack docs create DIR`, or leave out --store"));
                }
                select::run(&input, &options)
            }
            Command::Index(args) => index::run(&args),
            Command::Status(args) => status::run(&args),
            Command::Query(args) => pack::query(&args),
            Command::Pack(args) | Command::Context(ContextCommand::Pack(args)) => {
                pack::run(&args, &read_input)
            }
            Command::Docs(command) => command.run(),
            Command::Mcp(args) => crate::mcp::run(&args),
            Command::Log(args) => crate::commands::ledger::log(&args),
            Command::Plan(command) => command.run(),
            Command::Eval(command) => command.run(),
            Command::Artifact(command) => command.run(&read_input),
            Command::Show(args) => crate::commands::ledger::show(&args),
        }
    }
}
