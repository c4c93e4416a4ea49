//! `ctxpack mcp`: the Model Context Protocol server over stdio.
//!
//! The server is built on the official Rust SDK (`rmcp`): the SDK owns the JSON-RPC framing,
//! the `initialize` handshake and protocol-version negotiation; [`Server`] implements
//! [`ServerHandler`] by hand because the tool set depends on the scope.
//!
//! - **Scopes.** `--scope read` (the default) lists and runs only the tools that read:
//!   `repo_context_pack`, `query`, `status`, `context_pack` and `vsearch`. Stores are opened
//!   read-only and nothing is created, not even the `.ctxpack` directory. `--scope write` adds
//!   `index`, `docs_insert`, `docs_import` and `vsync`. A tool that is not listed is refused
//!   with a JSON-RPC "invalid params" error, as the protocol asks for unknown tools.
//! - **Errors.** Every failure of a listed tool is a tool error (`isError: true`) whose content
//!   is the CLI's failure envelope `{"error": {"code", "exitCode", "message", "hint"}}`. Each
//!   call runs on a blocking thread inside [`std::panic::catch_unwind`], so a panic becomes an
//!   `internal` tool error and the server keeps serving.
//! - **Confinement.** Paths given to tools must stay inside the repository root and the store
//!   directory the server was started for ([`Roots`]).
//! - **Stdout** carries nothing but the protocol: library code never prints, and progress bars
//!   only draw on a terminal stderr.
//!
//! ```no_run
//! use ctxpack::commands::repo::Location;
//! use ctxpack::mcp::{Scope, Server};
//!
//! let location = Location { cwd: ".".into(), store: None };
//! let server = Server::new(Scope::Read, &location).expect("a repository");
//! let args = serde_json::json!({"goal": "how are budgets enforced"});
//! let result = server
//!     .call("repo_context_pack", args.as_object().cloned())
//!     .expect("a listed tool");
//! assert!(!result.content.is_empty());
//! ```

mod args;
mod confine;
mod tools;

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;
use std::sync::Arc;

use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

pub use confine::{Roots, resolve};

use crate::commands::repo::Location;
use crate::failure::{Failure, FailureKind};

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
    /// Also index commits and write documents and embeddings.
    Write,
}

impl Scope {
    /// Whether a server at this scope may run a tool that needs `needed`.
    pub fn allows(self, needed: Scope) -> bool {
        needed <= self
    }

    /// `read` or `write`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scope {
    type Err = Failure;

    fn from_str(s: &str) -> Result<Scope, Failure> {
        match s {
            "read" => Ok(Scope::Read),
            "write" => Ok(Scope::Write),
            other => Err(Failure::invalid(format!(
                "unknown MCP scope `{other}`: expected read or write"
            ))),
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
    roots: Arc<Roots>,
}

impl Server {
    /// A server for the repository containing `location.cwd` and its store; creates nothing.
    pub fn new(scope: Scope, location: &Location) -> Result<Server, Failure> {
        Ok(Server {
            scope,
            roots: Arc::new(Roots::new(location)?),
        })
    }

    /// Its scope.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The repository root and store directory it is confined to.
    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// The tools listed at its scope.
    pub fn tools(&self) -> Vec<Tool> {
        tools::list(self.scope)
    }

    /// Name, version, capabilities and instructions, as sent in the `initialize` result.
    pub fn info(&self) -> ServerConfig {
        let instructions = format!(
            "{INSTRUCTIONS}\n- This server runs at scope `{}`{}.",
            self.scope,
            match self.scope {
                Scope::Read =>
                    ": it never writes; indexing and document writes need `ctxpack mcp --scope write`",
                Scope::Write =>
                    ": `index`, `docs_insert`, `docs_import` and `vsync` write to the store",
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
    ) -> Result<CallToolResult, ErrorData> {
        match tools::lookup(self.scope, name) {
            tools::Lookup::Unknown => Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({"tool": name})),
            )),
            tools::Lookup::NeedsWrite => Err(ErrorData::invalid_params(
                format!(
                    "tool `{name}` writes and is not available: this server runs at scope read"
                ),
                Some(json!({
                    "tool": name,
                    "scope": self.scope.name(),
                    "hint": "start the server with `ctxpack mcp --scope write`",
                })),
            )),
            tools::Lookup::Available => {
                let arguments = arguments.unwrap_or_default();
                Ok(guarded(name, || {
                    tools::run(&self.roots, self.scope, name, &arguments)
                }))
            }
        }
    }
}

/// Runs a handler, turning its failure into a tool error and a panic into an `internal` one.
pub fn guarded(tool: &str, handler: impl FnOnce() -> Result<String, Failure>) -> CallToolResult {
    match catch_unwind(AssertUnwindSafe(handler)) {
        Ok(Ok(text)) => success(text),
        Ok(Err(failure)) => tool_error(&failure),
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            tool_error(&panicked(tool, &detail))
        }
    }
}

fn panicked(tool: &str, detail: &str) -> Failure {
    Failure::new(
        FailureKind::Internal,
        format!("the `{tool}` tool panicked: {detail}"),
    )
    .with_hint("this is a bug in ctxpack; the server keeps serving other calls")
}

/// A successful result: the canonical JSON as text, and as structured content.
fn success(text: String) -> CallToolResult {
    let structured = serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object);
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = structured;
    result
}

/// A tool error carrying the CLI's failure envelope, as text and as structured content.
pub fn tool_error(failure: &Failure) -> CallToolResult {
    CallToolResult::structured_error(failure.envelope())
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let name = request.name.into_owned();
        let arguments = request.arguments;
        // Handlers do blocking IO (SQLite, tantivy, git); keep them off the runtime's thread.
        let task_name = name.clone();
        let joined = tokio::task::spawn_blocking(move || server.call(&task_name, arguments)).await;
        match joined {
            Ok(result) => result.map(CallToolResponse::Complete),
            Err(e) => Ok(CallToolResponse::Complete(tool_error(&panicked(
                &name,
                &e.to_string(),
            )))),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }
}

/// Runs the server until the client closes stdin.
pub fn run(args: &McpArgs) -> Result<String, Failure> {
    let scope: Scope = args.scope.parse()?;
    let server = Server::new(scope, &args.location)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Failure::new(
                FailureKind::Internal,
                format!("cannot start the async runtime: {e}"),
            )
        })?;
    let served = runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP session did not start: {e}"))?;
        service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP session ended abnormally: {e}"))
    });
    // A read of stdin that never returns must not keep the process alive after the session.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served.map_err(|message| Failure::new(FailureKind::Internal, message))?;
    Ok(String::new())
}
