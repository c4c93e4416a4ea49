//! The command line: argument parsing, dispatch, output and exit codes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use ctxpack_api::{Error, Format, Hint};

use crate::commands::{
    artifact, completions, config, docs, eval, gc, hook, index, ledger, pack, plan, select, status,
    verify,
};
use crate::exit::{CliFailure, exit_code};
use crate::output::{emit, emit_stdout};

/// Examples of `ctxpack pack`, shown by its --help and its man page.
pub const PACK_EXAMPLES: &str = "Examples:
  ctxpack pack \"add retry to the HTTP client\"                       8,000 o200k tokens, the defaults
  ctxpack pack \"why does login fail\" --budget 2k --format markdown   2,000 tokens to paste into a chat
  ctxpack pack \"budget enforcement\" --include 'src/**' --worktree    src/ only, uncommitted changes too
  ctxpack pack \"the parser\" --at 3fa9c1e --format json               a commit by SHA, as canonical JSON";

/// ctxpack: the best evidence for a task, inside a hard token budget, every piece cited.
#[derive(Debug, Parser)]
#[command(
    name = "ctxpack",
    version,
    about,
    long_about = None,
    after_help = "Start here: ctxpack pack \"what you are about to do\" (indexes the commit first; `ctxpack pack --help` for more)."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Write the output to FILE instead of standard output.
    ///
    /// FILE is replaced whole, and only when the command succeeds; it is never inside the
    /// store and never written through a symbolic link.
    #[arg(short = 'o', long = "output", value_name = "FILE", global = true)]
    output_file: Option<PathBuf>,
    /// Print no progress and no notes on standard error (errors are still printed).
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Pack context for a goal from the exact committed snapshot, with ctxpack's
    /// measured-best defaults.
    ///
    /// The defaults (shown with each option) are the pipeline that measured best: exact o200k
    /// token counts, a budget that covers the whole printed pack, the coverage selector and a
    /// candidate pool sized to the budget, widened when it runs out before the budget does.
    /// A commit that is not indexed yet is indexed first (--no-index refuses instead, exit 3).
    /// Uncommitted changes are not read: the pack warns how many files are modified and
    /// untracked.
    #[command(after_help = PACK_EXAMPLES)]
    Pack(pack::PackArgs<pack::Measured>),
    /// Pack candidates given as JSON (no index needed).
    ///
    /// Reads a JSON array of {"id" or "citation", "text", "family"?, "score"?, "pinned"?}
    /// objects in rank order and prints the pack.
    Select(select::SelectArgs),
    /// Index a commit (HEAD by default) into the store.
    Index(index::IndexArgs),
    /// Show the store's snapshots and whether HEAD is indexed.
    Status(status::StatusArgs),
    /// Check the store in full (and with --repair, restore it from the git objects).
    Verify(verify::VerifyArgs),
    /// Remove snapshots by rule and reclaim what only they used.
    ///
    /// A snapshot is kept when any rule keeps it: one of the --keep-last most recently
    /// indexed, younger than --keep-younger-than, pinned (`ctxpack pin`), or HEAD's. The
    /// ledger keeps the texts of every recorded pack unless --ledger-texts asks.
    Gc(gc::GcArgs),
    /// Pin a snapshot so `gc` never removes it (--remove unpins it).
    Pin(gc::PinArgs),
    /// Show raw retrieval hits with their score breakdown.
    Query(pack::QueryArgs),
    /// Context commands: `ctxpack context pack` is the compatibility preset of `pack`.
    #[command(subcommand)]
    Context(ContextCommand),
    /// JSON document collections: insert, import, find, vector search and context packs.
    #[command(subcommand)]
    Docs(docs::DocsCommand),
    /// Artifacts: session notes, harness output and evidence that packs can merge by scope.
    #[command(subcommand)]
    Artifact(artifact::ArtifactCommand),
    /// Measure pack quality on the repository's history, beside reference rankers.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Context plans: run a `.ctx` file's ctx blocks (purpose, budget, pins, `+=` versions).
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// List the packs recorded in the ledger, newest first.
    Log(ledger::LogArgs),
    /// Show a recorded pack as the model saw it (or with --dropped, what was left out).
    Show(ledger::ShowArgs),
    /// Serve packs to coding agents over the Model Context Protocol (stdio).
    Mcp(crate::mcp::McpArgs),
    /// Serve packs, indexing and the ledger to a team over HTTP and MCP (streamable HTTP),
    /// with per-repository access tokens; `serve repo` and `serve token` manage them.
    Serve(crate::serve::ServeArgs),
    /// Look at the ledger in a browser: every pack, where its budget went, what was dropped,
    /// and packs built from a form — served on a loopback address with a per-run secret.
    Ui(crate::web::ui::UiArgs),
    /// Show the effective configuration and where each value came from.
    ///
    /// A value comes from a flag, a `CTXPACK_*` variable, the repository's ctxpack.toml, the
    /// user's config.toml or the built-in default, in that order of precedence.
    Config(config::ConfigArgs),
    /// Git hooks that index new commits in the background: install or uninstall.
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page of ctxpack or of one command (roff): `ctxpack man pack`.
    Man(completions::ManArgs),
}

#[derive(Debug, Subcommand)]
enum ContextCommand {
    /// Pack context for a goal with the compatibility preset's fixed defaults.
    ///
    /// Whitespace-delimited words, a budget of 1,200 counted over the hits' content alone,
    /// the diverse selector (citation-diverse-v2) over 30 retrieval candidates, and no
    /// indexing: a commit that is not indexed exits 3 and names the nearest indexed ancestor.
    /// Every option of `ctxpack pack` is accepted; `ctxpack pack` has ctxpack's own defaults.
    Pack(pack::PackArgs<pack::SeedContract>),
}

/// Parses the process arguments, runs the command and returns the exit code.
pub fn main() -> ExitCode {
    ExitCode::from(run(std::env::args_os().collect()))
}

/// What a command run in process printed, and its exit code.
#[derive(Debug)]
pub struct InProcess {
    /// The exit code the binary would have exited with.
    pub code: u8,
    /// What it wrote to standard output.
    pub stdout: Vec<u8>,
    /// What it wrote to standard error.
    pub stderr: Vec<u8>,
}

/// Runs the command line on this thread, as the binary runs it in a process of its own:
/// `args` are the arguments after the program's name, `stdin` its standard input. Standard
/// output and error are collected, never a terminal; `--output` and relative paths work as
/// in a process started in this process's working directory. The commands that serve on the
/// process's streams or run this program again (`mcp`, `serve`, `ui`, `hook`) need a
/// process of their own: they exit 2 here, as a usage error.
pub fn run_in_process(args: &[&str], stdin: &[u8]) -> InProcess {
    let args = std::iter::once("ctxpack")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let (code, stdout, stderr) = crate::output::with_streams(stdin.to_vec(), || run(args));
    InProcess {
        code,
        stdout,
        stderr,
    }
}

/// Parses `args` (the program's name first), runs the command and returns the exit code.
fn run(args: Vec<OsString>) -> u8 {
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors exit 2 (help and version exit 0); a caller that asked for JSON gets
            // the failure envelope on stdout as well.
            if e.use_stderr() && asked_for_json(&args) {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                let failure = CliFailure {
                    kind: ctxpack_api::ErrorKind::InvalidInput,
                    message: first.trim_start_matches("error: ").to_owned(),
                    hint: Some("see `--help` for the command's options".into()),
                    field: None,
                    next: None,
                };
                let _ = emit(&format!("{}\n", failure.envelope()));
            }
            crate::output::parser_message(&e);
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    let json_errors = cli.wants_json();
    let store = cli.store().map(Path::to_owned);
    crate::output::set_quiet(cli.quiet);
    let ran = cli
        .in_this_process()
        .and_then(|()| cli.set_output())
        .and_then(|()| cli.run());
    match ran {
        Ok(output) => emit(&output),
        Err(error) => {
            let failure = CliFailure::new(&error, store.as_deref());
            if json_errors {
                // The envelope goes to stdout, even with --output: the file is left as it was.
                let _ = emit_stdout(&format!("{}\n", failure.envelope()));
            }
            crate::output::error_note(&failure.lines());
            exit_code(failure.kind)
        }
    }
}

/// Whether the raw arguments ask for `--format json`.
fn asked_for_json(args: &[OsString]) -> bool {
    args.windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json")
}

impl Cli {
    fn wants_json(&self) -> bool {
        match &self.command {
            Command::Select(args) => args.output.is_json(),
            Command::Pack(args) => args.output.is_json(),
            Command::Context(ContextCommand::Pack(args)) => args.output.is_json(),
            Command::Index(args) => args.format == "json",
            Command::Status(args) => args.format == "json",
            Command::Gc(args) => args.format == "json",
            Command::Pin(_) => false,
            // The report is the output, whether or not problems remain.
            Command::Verify(_) => false,
            Command::Query(args) => args.format == "json",
            Command::Docs(command) => command.wants_json(),
            Command::Mcp(_) | Command::Serve(_) | Command::Ui(_) => false,
            Command::Config(args) => args.format == "json",
            Command::Hook(command) => command.wants_json(),
            Command::Completions(_) | Command::Man(_) => false,
            Command::Log(args) => args.format == "json",
            Command::Plan(command) => command.wants_json(),
            Command::Eval(command) => command.wants_json(),
            Command::Artifact(command) => command.wants_json(),
            Command::Show(args) => args.format == Some(Format::Json),
        }
    }

    /// The `--store` the caller gave to a repository command, which advice repeats.
    fn store(&self) -> Option<&Path> {
        let location = match &self.command {
            Command::Index(args) => &args.location,
            Command::Status(args) => &args.location,
            Command::Gc(args) => &args.location,
            Command::Pin(args) => &args.location,
            Command::Verify(args) => &args.location,
            Command::Query(args) => &args.location,
            Command::Pack(args) => &args.location,
            Command::Context(ContextCommand::Pack(args)) => &args.location,
            Command::Log(args) => &args.location,
            Command::Show(args) => &args.location,
            Command::Ui(args) => &args.location,
            Command::Config(args) => &args.location,
            Command::Hook(command) => command.location(),
            _ => return None,
        };
        location.store.as_deref()
    }

    /// Refuses, in process, the commands that serve on the process's streams from other
    /// threads or run this program again by its path.
    fn in_this_process(&self) -> Result<(), Error> {
        let name = match &self.command {
            Command::Mcp(_) => "mcp",
            Command::Serve(_) => "serve",
            Command::Ui(_) => "ui",
            Command::Hook(_) => "hook",
            _ => return Ok(()),
        };
        if crate::output::runs_in_process() {
            return Err(Error::invalid(format!(
                "`ctxpack {name}` runs in a process of its own, not in process"
            ))
            .with_hint(Hint::Advice(format!("run the `ctxpack {name}` binary"))));
        }
        Ok(())
    }

    /// Checks `--output` and sends the output there; the MCP server's stdout is its protocol.
    fn set_output(&self) -> Result<(), Error> {
        let Some(file) = &self.output_file else {
            return Ok(());
        };
        if let Command::Mcp(args) = &self.command
            && args.command.is_none()
        {
            return Err(Error::invalid_field(
                "output",
                "the MCP server speaks its protocol on standard output",
            ));
        }
        crate::output::set_output(file, self.store())
    }

    fn run(self) -> Result<String, Error> {
        match self.command {
            Command::Select(args) => select::run(&args),
            Command::Index(args) => index::run(&args),
            Command::Status(args) => status::run(&args),
            Command::Gc(args) => gc::run(&args),
            Command::Pin(args) => gc::pin(&args),
            Command::Verify(args) => verify::run(&args),
            Command::Query(args) => pack::query(&args),
            Command::Pack(args) => pack::run(&args),
            Command::Context(ContextCommand::Pack(args)) => pack::run(&args),
            Command::Docs(command) => command.run(),
            Command::Mcp(args) => crate::mcp::run(&args),
            Command::Serve(args) => crate::serve::run(&args),
            Command::Ui(args) => crate::web::ui::run(&args),
            Command::Log(args) => ledger::log(&args),
            Command::Plan(command) => command.run(),
            Command::Eval(command) => command.run(),
            Command::Artifact(command) => command.run(),
            Command::Show(args) => ledger::show(&args),
            Command::Config(args) => config::run(&args),
            Command::Hook(command) => command.run(),
            Command::Completions(args) => completions::completions(&args, Cli::command()),
            Command::Man(args) => completions::man(&args, Cli::command()),
        }
    }
}
