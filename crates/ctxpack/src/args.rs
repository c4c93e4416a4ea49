//! Arguments that several commands share, and the value parsers of the API's types.

use std::path::PathBuf;

use clap::Args;
use ctxpack_api::{Access, Error, Format, RenderOptions, View, Workspace, WorkspaceOptions};

/// `--cwd` and `--store`: which repository and store a command works on.
#[derive(Clone, Debug, Args)]
pub struct Location {
    /// Run against the repository containing this path.
    #[arg(long, default_value = ".")]
    pub cwd: PathBuf,
    /// The store directory (default: `.ctxpack` at the repository root).
    #[arg(long)]
    pub store: Option<PathBuf>,
}

impl Location {
    /// Opens the workspace, read-write (the command line may write).
    pub fn workspace(&self) -> Result<Workspace, Error> {
        Workspace::open(WorkspaceOptions {
            cwd: self.cwd.clone(),
            store: self.store.clone(),
            access: Access::ReadWrite,
            caller: None,
        })
    }
}

/// Options shared by every command that prints a pack.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format: text, json, both, markdown or xml.
    #[arg(long, default_value = "text", value_parser = parse::<Format>)]
    pub format: Format,
    /// How much of each hit to show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = parse::<View>)]
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

/// A value parser for any type whose `FromStr` error explains itself (meters, selectors,
/// formats, views, budgets, scopes).
pub fn parse<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e: T::Err| e.to_string())
}

/// A format flag that takes only some formats.
pub fn parse_format_among(s: &str, allowed: &[Format]) -> Result<Format, String> {
    match parse::<Format>(s) {
        Ok(format) if allowed.contains(&format) => Ok(format),
        _ => {
            let names: Vec<&str> = allowed.iter().map(|f| f.name()).collect();
            Err(format!(
                "unknown format `{s}`: expected one of {}",
                names.join(", ")
            ))
        }
    }
}
