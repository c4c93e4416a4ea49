//! `ctxpack mcp config --client …`: a client configuration that works as pasted.
//!
//! For the clients with projects, nothing in it belongs to the machine that printed it: the
//! command is `ctxpack`, found on the `PATH` the client starts servers with, and the repository
//! is never an absolute path. Where the client has a variable for the open project (Cursor's
//! and VS Code's `${workspaceFolder}`), it is passed as `--cwd`; Claude Code has none, but
//! starts servers in the project directory and answers `roots/list` with it, which a server
//! without `--cwd` follows (see `roots`). So one configuration serves every project.
//!
//! Claude Desktop has no project and does not search the shell's `PATH`: its configuration
//! names the repository the command runs in and the running `ctxpack` by absolute path.

use std::path::Path;

use clap::{Args, ValueEnum};
use ctxpack_api::{Access, Error, Workspace, WorkspaceOptions};
use serde_json::{Value, json};

/// An MCP client `ctxpack mcp config` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` at the repository root.
    ClaudeCode,
    /// Cursor: `.cursor/mcp.json` in the repository, or `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code: `.vscode/mcp.json` in the repository.
    Vscode,
    /// Claude Desktop: `claude_desktop_config.json`, for the repository the command runs in.
    ClaudeDesktop,
}

/// Options of `ctxpack mcp config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The client to configure: claude-code, cursor, vscode or claude-desktop.
    #[arg(long, value_enum)]
    pub client: Client,
    /// The scope the configured server runs at: read (never writes) or write.
    #[arg(long, default_value = "read", value_parser = ["read", "write"])]
    pub scope: String,
}

/// The configuration, and a note on where it goes. Only Claude Desktop's reads anything: the
/// repository containing `cwd`, and where the running binary is.
pub fn render(args: &ConfigArgs, cwd: &Path) -> Result<(Value, String), Error> {
    let mut arguments = vec!["mcp", "--scope", args.scope.as_str()];
    let config = match args.client {
        Client::ClaudeDesktop => {
            let workspace = Workspace::open(WorkspaceOptions {
                cwd: cwd.to_owned(),
                access: Access::ReadOnly,
                ..WorkspaceOptions::default()
            })?;
            let Some(root) = workspace.repo_root() else {
                return Err(Error::invalid(format!(
                    "{} is not inside a git repository, and Claude Desktop's configuration names the repository it serves",
                    cwd.display()
                ))
                .with_hint(ctxpack_api::Hint::Advice(
                    "run `ctxpack mcp config --client claude-desktop` inside that repository".into(),
                )));
            };
            let binary = std::env::current_exe()
                .and_then(|p| p.canonicalize())
                .map_err(|e| Error::internal(format!("cannot find the running ctxpack: {e}")))?;
            let root = root.display().to_string();
            arguments.extend(["--cwd", root.as_str()]);
            json!({"mcpServers": {"ctxpack": {"command": binary.display().to_string(), "args": arguments}}})
        }
        Client::ClaudeCode => json!({
            "mcpServers": {"ctxpack": {"type": "stdio", "command": "ctxpack", "args": arguments}}
        }),
        Client::Cursor => {
            arguments.extend(["--cwd", "${workspaceFolder}"]);
            json!({"mcpServers": {"ctxpack": {"command": "ctxpack", "args": arguments}}})
        }
        Client::Vscode => {
            arguments.extend(["--cwd", "${workspaceFolder}"]);
            json!({"servers": {"ctxpack": {"type": "stdio", "command": "ctxpack", "args": arguments}}})
        }
    };
    let note = match args.client {
        Client::ClaudeCode => format!(
            "Save this as .mcp.json at the repository root (Claude Code asks once before it starts a project's servers), \
             or add it for every project with `claude mcp add --scope user ctxpack -- ctxpack mcp --scope {}`: \
             the server serves the project Claude Code runs in.",
            args.scope
        ),
        Client::Cursor => "Save this as .cursor/mcp.json in the repository, or as ~/.cursor/mcp.json for every project: \
             Cursor puts the open project in ${workspaceFolder}."
            .to_owned(),
        Client::Vscode => "Save this as .vscode/mcp.json in the repository: VS Code puts the open folder in ${workspaceFolder}. \
             In the user profile's mcp.json, leave out \"--cwd\" and its value: the server then serves the folder VS Code offers as its root."
            .to_owned(),
        Client::ClaudeDesktop => "Add this to claude_desktop_config.json (Settings > Developer > Edit Config; on macOS \
             ~/Library/Application Support/Claude/claude_desktop_config.json, on Windows %APPDATA%\\Claude\\claude_desktop_config.json), \
             then restart the app. Claude Desktop has no project of its own: this serves this repository with this ctxpack, \
             both by absolute path; print it again inside another repository for that one."
            .to_owned(),
    };
    let path = if args.client == Client::ClaudeDesktop {
        ""
    } else {
        "`ctxpack` must be on the PATH the client starts servers with. "
    };
    let note = format!(
        "{note}\n{path}{}\n",
        if args.scope == "read" {
            "At read scope the server writes nothing but the index of a commit it packs (into .ctxpack, a cache); \
             `--scope write` also lets the agent store artifacts and documents, and records each pack in the ledger."
        } else {
            "At write scope the agent may also store artifacts and documents, and each pack is recorded in the ledger."
        }
    );
    Ok((config, note))
}
