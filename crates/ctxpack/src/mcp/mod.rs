//! `ctxpack mcp`: the Model Context Protocol server over stdio.
//!
//! The server is built on the official Rust SDK (`rmcp`): the SDK owns the JSON-RPC framing,
//! the `initialize` handshake and protocol-version negotiation; [`Server`] implements
//! [`ServerHandler`] by hand because the tool set depends on the scope. Every tool builds a
//! request of [`ctxpack_api`] from its arguments (its input schema is generated from that
//! request type) and returns the canonical JSON the CLI prints with `--format json`.
//!
//! - **Scopes.** `--scope read` (the default) lists and runs only the tools that read, over a
//!   read-only workspace: nothing is created, locked or recorded. `--scope write` adds the
//!   tools that write. A tool that is not listed is refused with a JSON-RPC "invalid params"
//!   error, as the protocol asks for unknown tools.
//! - **Errors.** Every failure of a listed tool is a tool error (`isError: true`) whose content
//!   is the failure envelope `{"error": {"code", "exitCode", "message", "hint"}}`, its hint
//!   phrased in tools rather than flags. Each call runs on a blocking thread inside
//!   [`std::panic::catch_unwind`], so a panic becomes an `internal` tool error.
//! - **Progress and cancellation.** A call with a progress token gets progress notifications;
//!   `notifications/cancelled` stops the work at its next check, not only the reply.
//! - **Confinement.** Paths given to tools must stay inside the repository root and the store
//!   directory the server was started for.

pub mod framing;
mod schema;
mod stdio;
mod tools;

use std::panic::{AssertUnwindSafe, catch_unwind};

use clap::Args;
use ctxpack_api::{Access, Control, Error, ErrorKind, Hint, Workspace, WorkspaceOptions};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::args::Location;

/// Options of `ctxpack mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// `read` (packs, queries, status; never writes) or `write` (also indexing and imports).
    #[arg(long, default_value = "read", value_parser = ["read", "write"])]
    pub scope: String,
    /// Which repository and store the server serves.
    #[command(flatten)]
    pub location: Location,
}

/// What a server may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Read the repository and stores; never write.
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
const INSTRUCTIONS: &str = "ctxpack gives the best evidence for a task inside a hard budget, every piece cited, nothing dropped silently.\n\
- Code of this repository: call `repo_context_pack` with your goal; it packs the exact committed snapshot (HEAD by default). Call `status` when unsure the commit is indexed; `query` shows raw ranking with score breakdowns.\n\
- JSON document collections in a ctxpack store: `context_pack` for a budgeted, cited pack; `vsearch` for whole documents.\n\
- Cite what you use by each chunk's citation or id.\n\
- A failure is a tool error whose JSON envelope has `code`, `exitCode` (2 invalid input, 3 not found, 4 corrupt store, 5 conflict, 1 internal), `message` and `hint`: follow the hint rather than retrying unchanged.\n\
- Paths must stay inside the repository the server was started for.";

/// The MCP server for one repository and store at one scope.
#[derive(Clone, Debug)]
pub struct Server {
    scope: Scope,
    workspace: Workspace,
}

impl Server {
    /// A server for the repository containing `location.cwd` and its store; creates nothing.
    pub fn new(scope: Scope, location: &Location) -> Result<Server, Error> {
        let workspace = Workspace::open(WorkspaceOptions {
            cwd: location.cwd.clone(),
            store: location.store.clone(),
            access: match scope {
                Scope::Read => Access::ReadOnly,
                Scope::Write => Access::ReadWrite,
            },
            caller: Some("mcp".into()),
        })?;
        Ok(Server { scope, workspace })
    }

    /// The workspace it serves.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The tools listed at its scope.
    pub fn tools(&self) -> Vec<Tool> {
        tools::list(self.scope)
    }

    /// Name, version, capabilities and instructions, as sent in the `initialize` result.
    pub fn info(&self) -> ServerConfig {
        let instructions = format!(
            "{INSTRUCTIONS}\n- This server runs at scope `{}`{}.",
            self.scope.name(),
            match self.scope {
                Scope::Read =>
                    ": it never writes; indexing and document writes need `ctxpack mcp --scope write`",
                Scope::Write =>
                    ": `index`, `artifact_add`, `docs_insert`, `docs_import` and `vsync` write to the store",
            }
        );
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("ctxpack", env!("CARGO_PKG_VERSION")).with_title("ctxpack"),
            )
            .with_instructions(instructions)
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
        let spec = tools::lookup(name).ok_or_else(|| {
            ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({"tool": name})),
            )
        })?;
        if spec.scope() > self.scope {
            return Err(ErrorData::invalid_params(
                format!(
                    "tool `{name}` writes and is not available: this server runs at scope read"
                ),
                Some(json!({
                    "tool": name,
                    "scope": self.scope.name(),
                    "hint": "start the server with `ctxpack mcp --scope write`",
                })),
            ));
        }
        let arguments = arguments.unwrap_or_default();
        Ok(guarded(name, || spec.run(self, &arguments, control)))
    }

    /// The workspace of a document store at `path` (confined to the repository and store).
    fn documents(&self, path: &str) -> Result<Workspace, Error> {
        let dir = self.workspace.confine("path", path)?;
        Ok(Workspace::for_store(&dir, self.workspace.access())?.with_caller("mcp"))
    }
}

/// Runs a handler, turning its failure into a tool error and a panic into an `internal` one.
pub fn guarded(tool: &str, handler: impl FnOnce() -> Result<String, Error>) -> CallToolResult {
    match catch_unwind(AssertUnwindSafe(handler)) {
        Ok(Ok(text)) => {
            let structured = serde_json::from_str::<Value>(&text)
                .ok()
                .filter(Value::is_object);
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = structured;
            result
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
/// named as the tool's argument and the hint phrased in tools.
pub fn tool_error(tool: &str, error: &Error) -> CallToolResult {
    let message = match error.field() {
        Some(field) => format!("`{tool}` argument `{field}`: {}", error.message()),
        None => error.message().to_owned(),
    };
    let hint = error.hint().and_then(hint);
    CallToolResult::structured_error(crate::exit::envelope(
        error.kind(),
        &message,
        hint.as_deref(),
    ))
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

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        self.info()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let name = request.name.into_owned();
        let arguments = request.arguments;
        // Progress goes out as notifications when the client asked for them.
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let control = match context.meta.get_progress_token() {
            Some(token) => Control::new().with_progress(move |p: &ctxpack_api::Progress| {
                let mut param = ProgressNotificationParam::new(token.clone(), p.done as f64);
                param.total = p.total.map(|t| t as f64);
                param.message = Some(p.phase.to_owned());
                let _ = sender.send(param);
            }),
            None => {
                // No token: the channel closes at once and nothing is sent.
                drop(sender);
                Control::new()
            }
        };
        let peer = context.peer.clone();
        let forward = tokio::spawn(async move {
            while let Some(param) = receiver.recv().await {
                let _ = peer.notify_progress(param).await;
            }
        });
        // `notifications/cancelled` stops the work, not only the reply.
        let canceller = control.canceller();
        let ct = context.ct.clone();
        let watch = tokio::spawn(async move {
            ct.cancelled().await;
            canceller.cancel();
        });
        // Handlers do blocking IO (SQLite, tantivy, git); keep them off the runtime's thread.
        let task_name = name.clone();
        let joined =
            tokio::task::spawn_blocking(move || server.call(&task_name, arguments, &control)).await;
        watch.abort();
        let _ = forward.await;
        match joined {
            Ok(result) => result.map(CallToolResponse::Complete),
            Err(e) => Ok(CallToolResponse::Complete(tool_error(
                &name,
                &panicked(&name, &e.to_string()),
            ))),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }
}

/// Runs the server until the client closes stdin.
pub fn run(args: &McpArgs) -> Result<String, Error> {
    let scope = if args.scope == "write" {
        Scope::Write
    } else {
        Scope::Read
    };
    let server = Server::new(scope, &args.location)?;
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
