//! `ctxpack mcp`: the Model Context Protocol server over stdio, and `ctxpack mcp config`.
//!
//! The server is built on the official Rust SDK (`rmcp`): the SDK owns the JSON-RPC framing,
//! the `initialize` handshake and protocol-version negotiation; [`Server`] implements
//! `ServerHandler` by hand because the tool set depends on the scope. Every tool builds a
//! request of [`ctxpack_api`] from its arguments (its input schema is generated from that
//! request type) and returns what the CLI prints for the same request.
//!
//! - **Scopes.** `--scope read` (the default) lists and runs only the tools that read, over a
//!   workspace that writes nothing but the index of a commit it packs (a cache derived from the
//!   repository, so a pack of a new commit needs no manual step): no ledger record, artifact,
//!   document or setting. `--scope write` adds the tools that write. A tool that is not listed is refused with a JSON-RPC "invalid params"
//!   error, as the protocol asks for unknown tools.
//! - **Results.** A tool's result is one text block, what the CLI prints (`repo_context_pack`
//!   renders the pack in the `format` asked for: Markdown by default, text or XML), and nothing
//!   beside it: no `structuredContent`, which a client may forward to the model as well, so a
//!   pack never costs more than its budget. (The team server's HTTP tool route answers with the
//!   canonical JSON, [`Reply::canonical`].)
//! - **Errors.** Every failure of a listed tool is a tool error (`isError: true`) whose content
//!   is the failure envelope `{"error": {"code", "kind", "exitCode", "message", "hint"?}}`, its hint
//!   phrased in tools rather than flags and absent when there is none. Each call runs on a
//!   blocking thread inside [`std::panic::catch_unwind`], so a panic becomes an `internal`
//!   tool error.
//! - **Progress and cancellation.** A call with a progress token gets progress notifications;
//!   `notifications/cancelled` stops the work at its next check, not only the reply.
//! - **Which repository.** `--cwd` names it; without `--cwd` the server serves the client's
//!   first `file://` root when the client offers roots, and otherwise the directory it was
//!   started in (see `roots`).
//! - **Confinement.** Paths given to tools must stay inside the repository root and the store
//!   directory the server serves.

mod catalogue;
mod config;
pub mod framing;
pub(crate) mod handler;
mod roots;
mod schema;
mod stdio;
mod tools;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use ctxpack_api::{
    Access, Control, Error, ErrorKind, Hint, Pack, Sessions, View, Workspace, pack_json,
};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig,
    Tool,
};
use serde_json::{Value, json};

use crate::args::Location;

pub use config::{Client, ConfigArgs};
pub use roots::{ROOTS_WAIT, file_uri_path};

/// Options of `ctxpack mcp`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    /// Print a client configuration instead of serving.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// `read` (packs, queries, status; writes nothing but the index of a commit it packs) or
    /// `write` (also indexing on request, artifacts, documents, and a ledger record of each pack).
    #[arg(long, default_value = "read", value_parser = ["read", "write"])]
    pub scope: String,
    /// Serve the repository containing this path (default: the client's first root when the
    /// client offers roots, otherwise the directory the server was started in).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// The store directory (default: `.ctxpack` at the repository root).
    #[arg(long)]
    pub store: Option<PathBuf>,
}

/// Subcommands of `ctxpack mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Print an MCP client's configuration that works as pasted.
    ///
    /// The command is `ctxpack` from the PATH, and the repository is the client's open
    /// project: its `${workspaceFolder}` where it has one, otherwise the project the client
    /// starts the server in and names as its root.
    Config(ConfigArgs),
}

/// What a server may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Read the repository and stores; write nothing but the index of a commit it packs.
    Read,
    /// Also index commits and write documents, artifacts and embeddings.
    Write,
}

impl Scope {
    /// `read` or `write`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
        }
    }
}

/// What the server tells the model when it connects.
pub(crate) const INSTRUCTIONS: &str = "ctxpack gives the best evidence for a task inside a hard budget, every piece cited, nothing dropped silently.\n\
- Code of this repository: call `repo_context_pack` with your goal before reading files one by one; it packs the exact committed snapshot (HEAD by default) as Markdown (`format`: text or xml on request). Call `status` when unsure the commit is indexed; `query` shows raw ranking with score breakdowns.\n\
- JSON document collections in a ctxpack store: `context_pack` for a budgeted, cited pack; `vsearch` for whole documents.\n\
- Cite what you use by each chunk's citation or id.\n\
- Packs are in this MCP session: what it was shown before comes back as `shown before` references, not the text again. If you no longer hold that text, call again with `recall` (the pack id or citation) or `fresh: true`.\n\
- A failure is a tool error whose JSON envelope has `code`, `exitCode` (2 invalid input, 3 not found, 4 corrupt store, 5 conflict, 1 internal), `message` and, when there is advice, `hint`: follow the hint rather than retrying unchanged.\n\
- Paths must stay inside the repository the server serves.";

/// The MCP server for one repository and store at one scope.
#[derive(Clone, Debug)]
pub struct Server {
    scope: Scope,
    root: roots::Binding,
    /// What this server's sessions were shown, in its memory (it may record nothing).
    sessions: Sessions,
    /// The MCP session over stdio: the process's, for as long as the client keeps it.
    session: String,
}

/// What a successful tool call returns: its text content (what the CLI prints), from which
/// [`Reply::canonical`] gives the same answer as canonical JSON for the HTTP tool route. An MCP
/// result carries the text alone, so nothing else is built for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The text content.
    pub text: String,
    /// The pack the text renders, and the view its JSON takes, when the text is not the
    /// canonical JSON itself.
    pack: Option<(Box<Pack>, View)>,
}

impl Reply {
    /// A reply whose text is the JSON itself, on one line.
    pub fn json(value: Value) -> Reply {
        Reply::canonical_text(value.to_string())
    }

    /// A reply whose text is already the canonical JSON.
    pub(crate) fn canonical_text(text: String) -> Reply {
        Reply { text, pack: None }
    }

    /// A reply whose text renders `pack`; its canonical JSON is the pack's in `view`.
    pub(crate) fn pack(text: String, pack: Pack, view: View) -> Reply {
        Reply {
            text,
            pack: Some((Box::new(pack), view)),
        }
    }

    /// The answer as canonical JSON, when it is a JSON object.
    pub fn canonical(&self) -> Option<Value> {
        match &self.pack {
            Some((pack, view)) => Some(pack_json(pack, *view)),
            None => serde_json::from_str::<Value>(&self.text)
                .ok()
                .filter(Value::is_object),
        }
    }
}

impl Server {
    /// A server for the repository containing `location.cwd` and its store, for good: it never
    /// asks the client for roots. Creates nothing.
    pub fn new(scope: Scope, location: &Location) -> Result<Server, Error> {
        let options = options(scope, location.store.clone());
        Ok(Server {
            scope,
            root: roots::Binding::fixed(options, &location.cwd)?,
            sessions: Sessions::in_memory(),
            session: Sessions::new_id(),
        })
    }

    /// A server for the repository containing `start` until the client names its first
    /// `file://` root (when it offers roots), then for that root's. Creates nothing.
    pub fn following_roots(
        scope: Scope,
        start: &Path,
        store: Option<PathBuf>,
    ) -> Result<Server, Error> {
        Ok(Server {
            scope,
            root: roots::Binding::following(options(scope, store), start.to_owned())?,
            sessions: Sessions::in_memory(),
            session: Sessions::new_id(),
        })
    }

    /// The workspace it serves now; an error when the client's root could not be opened.
    pub fn workspace(&self) -> Result<Workspace, Error> {
        Ok(self.root.current()?.with_sessions(self.sessions.clone()))
    }

    /// The tools listed at its scope.
    pub fn tools(&self) -> Vec<Tool> {
        tools_at(self.scope, Host::Local)
    }

    /// Name, version, capabilities and instructions, as sent in the `initialize` result.
    pub fn info(&self) -> ServerConfig {
        let instructions = format!(
            "{INSTRUCTIONS}\n- This server runs at scope `{}`{}.",
            self.scope.name(),
            match self.scope {
                Scope::Read =>
                    ": it writes nothing but the index of a commit it packs; document and artifact writes need `ctxpack mcp --scope write`",
                Scope::Write =>
                    ": `index`, `artifact_add`, `docs_insert`, `docs_import` and `vsync` write to the store",
            }
        );
        server_config(instructions)
    }

    /// Runs one tool call on the current thread: a listed tool always gives a result (a tool
    /// error on failure or panic); an unknown tool, or a write tool at read scope, is a
    /// protocol error (invalid params).
    pub fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        control: &Control,
    ) -> Result<CallToolResult, ErrorData> {
        dispatch(
            self.scope,
            Host::Local,
            name,
            arguments,
            Some(&self.session),
            control,
            || self.workspace(),
            |error| error,
        )
    }
}

/// Runs one tool call at `scope` on `host` on the current thread against the workspace
/// `workspace` opens: a listed tool always gives a result (a tool error on failure or panic);
/// an unknown tool, or a tool above `scope`, is a protocol error (invalid params). `publish`
/// turns a failure into what the caller may see (a server hides its own paths). A tool that
/// takes a `session` packs in `session` (the MCP session's) unless the call names another.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dispatch(
    scope: Scope,
    host: Host,
    name: &str,
    arguments: Option<JsonObject>,
    session: Option<&str>,
    control: &Control,
    workspace: impl FnOnce() -> Result<Workspace, Error>,
    publish: impl FnOnce(Error) -> Error,
) -> Result<CallToolResult, ErrorData> {
    let spec = catalogue::lookup(name).ok_or_else(|| {
        ErrorData::invalid_params(
            format!("unknown tool `{name}`"),
            Some(json!({"tool": name})),
        )
    })?;
    if spec.scope() > scope {
        return Err(ErrorData::invalid_params(
            format!("tool `{name}` writes and is not available: this server runs at scope read"),
            Some(json!({
                "tool": name,
                "scope": scope.name(),
                "hint": match scope {
                    Scope::Read => "start the server with `ctxpack mcp --scope write`, or use a token with scope write",
                    Scope::Write => "",
                },
            })),
        ));
    }
    let mut arguments = arguments.unwrap_or_default();
    if let Some(id) = session
        && spec.arguments.iter().any(|(name, _)| *name == "session")
        && arguments.get("session").is_none_or(Value::is_null)
    {
        arguments.insert("session".into(), Value::String(id.to_owned()));
    }
    Ok(guarded(name, || {
        workspace()
            .and_then(|workspace| spec.run(host, &workspace, &arguments, control))
            .map_err(publish)
    }))
}

/// Name, version, capabilities and `instructions`, as sent in the `initialize` result.
pub(crate) fn server_config(instructions: String) -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(
            Implementation::new("ctxpack", env!("CARGO_PKG_VERSION")).with_title("ctxpack"),
        )
        .with_instructions(instructions)
}

/// The tool called `name`, whatever its scope.
pub(crate) use catalogue::lookup;
pub(crate) use tools::Host;

/// The tools listed at `scope` on `host`.
pub(crate) fn tools_at(scope: Scope, host: Host) -> Vec<Tool> {
    catalogue::list(scope, host)
}

/// How a server at `scope` opens its workspaces.
fn options(scope: Scope, store: Option<PathBuf>) -> roots::Options {
    roots::Options {
        store,
        access: match scope {
            Scope::Read => Access::ReadAndIndex,
            Scope::Write => Access::ReadWrite,
        },
    }
}

/// Runs a handler, turning its failure into a tool error and a panic into an `internal` one.
pub fn guarded(tool: &str, handler: impl FnOnce() -> Result<Reply, Error>) -> CallToolResult {
    match catch_unwind(AssertUnwindSafe(handler)) {
        Ok(Ok(reply)) => {
            // The text alone: a client may forward both the text and `structuredContent` to
            // the model, and the same JSON twice would cost it twice.
            CallToolResult::success(vec![ContentBlock::text(reply.text)])
        }
        Ok(Err(error)) => tool_error(tool, &error),
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            tool_error(tool, &panicked(tool, &detail))
        }
    }
}

fn panicked(tool: &str, detail: &str) -> Error {
    Error::internal(format!("the `{tool}` tool panicked: {detail}")).with_hint(Hint::Advice(
        "this is a bug in ctxpack; the server keeps serving other calls".into(),
    ))
}

/// The one place an API error becomes a tool error: the failure envelope, with the field
/// named as the tool's argument, the hint phrased in tools and left out when there is none.
pub fn tool_error(tool: &str, error: &Error) -> CallToolResult {
    let message = match error.field() {
        Some(field) => format!("`{tool}` argument `{field}`: {}", error.message()),
        None => error.message().to_owned(),
    };
    let hint = error.hint().and_then(hint);
    let mut envelope = crate::exit::envelope(error.kind(), &message, hint.as_deref());
    if let Some(Value::Object(fields)) = envelope.get_mut("error") {
        fields.retain(|key, value| key != "hint" || !value.is_null());
    }
    crate::exit::add_data(&mut envelope, error.field(), error.hint());
    CallToolResult::structured_error(envelope)
}

fn hint(hint: &Hint) -> Option<String> {
    Some(match hint {
        Hint::IndexCommit { sha, nearest } => {
            let nearest = nearest
                .as_ref()
                .map(|a| format!("; the nearest indexed ancestor, {} commits back, can be packed with `at`: \"{}\"", a.distance, a.sha))
                .unwrap_or_default();
            format!(
                "call the `index` tool (write scope) with `at`: \"{sha}\", or ask the user to run `ctxpack index --at {sha}`{nearest}"
            )
        }
        Hint::CreateStore { documents: true } => {
            "ask the user to create it with `ctxpack docs create DIR`".into()
        }
        Hint::CreateStore { documents: false } => {
            "call the `index` tool (write scope), or ask the user to run `ctxpack index`".into()
        }
        Hint::WaitForWriter => {
            "another process is writing the store: try again when it is done".into()
        }
        Hint::RebuildStore => "ask the user to run `ctxpack verify --repair`".into(),
        Hint::UpgradeCtxpack => {
            "the store was written by a newer ctxpack: ask the user to upgrade ctxpack".into()
        }
        Hint::RepairRepository => {
            "the repository is missing objects; ask the user to run `git fsck`".into()
        }
        Hint::RemoveArtifact { .. } => "choose another `id`".into(),
        Hint::RaiseLimit => "give less".into(),
        Hint::MoreDigits => "give more digits".into(),
        Hint::Advice(text) => text.clone(),
        _ => return None,
    })
}

/// Runs `ctxpack mcp`: prints a client configuration (`config`), or serves until the client
/// closes stdin.
pub fn run(args: &McpArgs) -> Result<String, Error> {
    if let Some(McpCommand::Config(config)) = &args.command {
        let (value, note) = config::render(config, Path::new("."))?;
        crate::output::note(&note);
        let text = serde_json::to_string_pretty(&value).expect("a JSON value serializes");
        return Ok(format!("{text}\n"));
    }
    let scope = if args.scope == "write" {
        Scope::Write
    } else {
        Scope::Read
    };
    let server = match explicit(args.cwd.as_deref()) {
        Some(cwd) => Server::new(
            scope,
            &Location {
                cwd: cwd.to_owned(),
                store: args.store.clone(),
            },
        )?,
        None => Server::following_roots(scope, Path::new("."), args.store.clone())?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the async runtime: {e}")))?;
    let served = runtime.block_on(stdio::serve(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ));
    // A read of stdin that never returns must not keep the process alive after the session.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served.map_err(|message| Error::new(ErrorKind::Internal, message))?;
    Ok(String::new())
}

/// The `--cwd` given, unless it still holds a client variable the client did not expand
/// (`${workspaceFolder}` in a configuration the client reads without a workspace): then the
/// server follows the client's roots as if no `--cwd` had been given.
fn explicit(cwd: Option<&Path>) -> Option<&Path> {
    let cwd = cwd?;
    if cwd.to_string_lossy().contains("${") {
        crate::output::note(&format!(
            "ctxpack mcp: --cwd {} is an unexpanded client variable; serving the client's root, or the directory the server was started in\n",
            cwd.display()
        ));
        return None;
    }
    Some(cwd)
}
