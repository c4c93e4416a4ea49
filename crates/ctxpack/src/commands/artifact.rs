//! `ctxpack artifact`: evidence that belongs to the store rather than to a snapshot.

use std::fmt::Write;

use clap::{Args, Subcommand};
use ctxpack_api::{ArtifactAddRequest, ArtifactScope, Error};

use crate::args::{Location, parse};
use crate::output::read_input;

/// `ctxpack artifact …`.
#[derive(Debug, Subcommand)]
pub enum ArtifactCommand {
    /// Store a text file (or stdin) as an artifact of a scope.
    Add(AddArgs),
    /// List artifacts.
    List(ListArgs),
    /// Print an artifact's (masked) text.
    Show(IdArgs),
    /// Remove an artifact; packs no longer see it.
    Rm(IdArgs),
}

/// Options of `artifact add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The file to store, or `-` for stdin.
    pub file: String,
    /// `session`, `harness` or `evidence`.
    #[arg(long, value_parser = parse::<ArtifactScope>)]
    pub scope: ArtifactScope,
    /// Its id (default: a hash of its content).
    #[arg(long)]
    pub id: Option<String>,
    /// Where it came from (names its source family when no --id is given).
    #[arg(long)]
    pub source_id: Option<String>,
    /// A human title.
    #[arg(long)]
    pub title: Option<String>,
    /// Refuse artifacts larger than this many bytes.
    #[arg(long, default_value_t = ArtifactAddRequest::DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Options of `artifact list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this scope.
    #[arg(long, value_parser = parse::<ArtifactScope>)]
    pub scope: Option<ArtifactScope>,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// An artifact id.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The artifact id.
    pub id: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

impl ArtifactCommand {
    /// Whether failures should be JSON envelopes.
    pub fn wants_json(&self) -> bool {
        matches!(self, ArtifactCommand::List(args) if args.format == "json")
    }

    /// Runs the command.
    pub fn run(&self) -> Result<String, Error> {
        match self {
            ArtifactCommand::Add(args) => {
                let bytes = read_input(&args.file, args.max_bytes, Some("max_bytes"))?;
                let request = ArtifactAddRequest {
                    id: args.id.clone(),
                    source_id: args.source_id.clone(),
                    title: args.title.clone(),
                    name: (args.file != "-").then(|| args.file.clone()),
                    max_bytes: args.max_bytes,
                    wait: args.wait,
                    ..ArtifactAddRequest::new(args.scope)
                };
                let id = args.location.workspace()?.add_artifact(&request, &bytes)?;
                Ok(format!("{id}\n"))
            }
            ArtifactCommand::List(args) => {
                let artifacts = args.location.workspace()?.artifacts(args.scope)?;
                if args.format == "json" {
                    let json = serde_json::to_string(&artifacts).expect("artifacts serialize");
                    return Ok(format!("{json}\n"));
                }
                let mut out = String::new();
                for a in &artifacts {
                    let title = a
                        .title
                        .as_deref()
                        .map(|t| format!("  {t}"))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "{}  {:<8}  {:>8} bytes  {}{title}",
                        a.id, a.scope, a.bytes, a.family
                    );
                }
                Ok(out)
            }
            ArtifactCommand::Show(args) => Ok(args.location.workspace()?.artifact(&args.id)?.1),
            ArtifactCommand::Rm(args) => {
                args.location.workspace()?.remove_artifact(&args.id)?;
                Ok(format!("removed {}\n", args.id))
            }
        }
    }
}
