//! `ctxpack mcp config --client …`: a client configuration that works as pasted.
//!
//! Nothing in it belongs to the machine that printed it: the command is `ctxpack`, found on
//! the `PATH` the client starts servers with, and the repository is never an absolute path.
//! Where the client has a variable for the open project (Cursor's and VS Code's
//! `${workspaceFolder}`), it is passed as `--cwd`; Claude Code has none, but starts servers in
//! the project directory and answers `roots/list` with it, which a server without `--cwd`
//! follows (see `roots`). So one configuration serves every project.

use clap::{Args, ValueEnum};
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
}

/// Options of `ctxpack mcp config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The client to configure: claude-code, cursor or vscode.
    #[arg(long, value_enum)]
    pub client: Client,
    /// The scope the configured server runs at: read (never writes) or write.
    #[arg(long, default_value = "read", value_parser = ["read", "write"])]
    pub scope: String,
}

/// The configuration, and a note on where it goes.
pub fn render(args: &ConfigArgs) -> (Value, String) {
    let mut arguments = vec!["mcp", "--scope", args.scope.as_str()];
    let config = match args.client {
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
    };
    let note = format!(
        "{note}\n`ctxpack` must be on the PATH the client starts servers with; a snapshot must be indexed (`ctxpack index`) before it can be packed{}.\n",
        if args.scope == "read" {
            ", or use `--scope write` to let the agent index"
        } else {
            ""
        }
    );
    (config, note)
}
