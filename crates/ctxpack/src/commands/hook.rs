//! `ctxpack hook install|uninstall`: git hooks that index new commits in the background.

use clap::{Args, Subcommand};
use ctxpack_api::Error;
use ctxpack_api::hooks::{HookInstallRequest, HookReport, HookUninstallRequest};

use crate::args::Location;

/// Subcommands of `ctxpack hook`.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Add git post-commit, post-checkout and post-merge hooks that run `ctxpack index` in
    /// the background.
    ///
    /// The hooks never block or fail git: the index runs detached with its output in
    /// `hook.log` in the store, and the hook exits 0 even when this ctxpack is gone. An
    /// existing shell hook keeps its lines and exit status (a delimited block goes after its
    /// first line); a hook in another language is refused with advice. The hooks go where git
    /// runs them from (`core.hooksPath` when set), never outside the repository. Running it
    /// again changes nothing.
    Install(HookArgs),
    /// Remove exactly what `hook install` added: a hook that existed before is restored byte
    /// for byte, and one ctxpack created is deleted.
    Uninstall(HookArgs),
}

/// Options of `ctxpack hook install|uninstall`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// Which repository, and the store the hooks index into (recorded in the hooks when
    /// given).
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

impl HookCommand {
    /// The repository and store options.
    pub fn location(&self) -> &Location {
        match self {
            HookCommand::Install(args) | HookCommand::Uninstall(args) => &args.location,
        }
    }

    /// Whether the output is JSON.
    pub fn wants_json(&self) -> bool {
        match self {
            HookCommand::Install(args) | HookCommand::Uninstall(args) => args.format == "json",
        }
    }

    /// Runs the subcommand. The hooks run this very executable.
    pub fn run(&self) -> Result<String, Error> {
        let workspace = self.location().workspace()?;
        let report = match self {
            HookCommand::Install(_) => {
                let program = std::env::current_exe().map_err(|e| {
                    Error::internal(format!("cannot tell where this ctxpack is: {e}"))
                })?;
                workspace.install_hooks(&HookInstallRequest {
                    program,
                    ..HookInstallRequest::default()
                })?
            }
            HookCommand::Uninstall(_) => {
                workspace.uninstall_hooks(&HookUninstallRequest::default())?
            }
        };
        Ok(render(&report, self.wants_json()))
    }
}

fn render(report: &HookReport, json: bool) -> String {
    if json {
        format!("{}\n", report.to_json())
    } else {
        report.to_string()
    }
}
