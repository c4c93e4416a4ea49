//! `/mcp`: the Model Context Protocol over streamable HTTP (rmcp's transport), stateless, so
//! any server process answers any request. The token checked in front of it decides the
//! repository and the tools: a read token lists and runs the read tools, a write or admin
//! token the write tools too. `Host` and `Origin` are validated as the protocol asks.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use ctxpack_api::server::{Grant, Scope as TokenScope};
use ctxpack_api::{MAX_SESSION_ID_CHARS, Sessions};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::mcp::handler::call_blocking;
use crate::mcp::{Host, INSTRUCTIONS, Scope, dispatch, server_config, tools_at};
use crate::serve::App;

/// The tower service mounted at `/mcp`.
pub(crate) type Service = StreamableHttpService<Remote, NeverSessionManager>;

/// The MCP handler of one request: the token's grant comes with the request.
#[derive(Clone)]
pub(crate) struct Remote {
    app: Arc<App>,
}

/// The service for `app`, accepting the `hosts` and browser `origins` given.
pub(crate) fn service(
    app: Arc<App>,
    hosts: &[String],
    origins: &[String],
    max_body_bytes: usize,
) -> Service {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(hosts.iter().cloned())
        .with_allowed_origins(origins.iter().cloned())
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_body_bytes);
    StreamableHttpService::new(
        move || Ok(Remote { app: app.clone() }),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// The MCP session of a request: the `Mcp-Session-Id` the client sent, which this server
/// gives in its answer to a request without one (the `initialize` that opens a session).
/// Nothing is kept per session in the process: what a session was shown is the token's, in
/// the server's session store, so any process answers it.
#[derive(Clone, Debug)]
pub(crate) struct McpSession(String);

/// The header the protocol names a session by.
const SESSION_HEADER: &str = "mcp-session-id";

/// Gives a request without a session a new one (in its answer's header), and notes the
/// session of a request with one; an id the protocol does not allow (visible ASCII, at most
/// [`MAX_SESSION_ID_CHARS`]) names no session.
pub(crate) async fn session(mut request: Request, next: Next) -> Response {
    let given = request.headers().get(SESSION_HEADER).map(|v| {
        v.to_str()
            .ok()
            .filter(|id| {
                !id.is_empty()
                    && id.len() <= MAX_SESSION_ID_CHARS
                    && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
            })
            .map(str::to_owned)
    });
    let issued = given.is_none().then(Sessions::new_id);
    if let Some(id) = given.flatten().or_else(|| issued.clone()) {
        request.extensions_mut().insert(McpSession(id));
    }
    let mut response = next.run(request).await;
    if let Some(id) = issued
        && response.status().is_success()
        && let Ok(value) = HeaderValue::from_str(&id)
    {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// The MCP session the request belongs to, if any.
fn mcp_session(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<McpSession>())
        .map(|s| s.0.clone())
}

/// The tool scope a token's scope lists.
fn scope(grant: &Grant) -> Scope {
    if grant.scope >= TokenScope::Write {
        Scope::Write
    } else {
        Scope::Read
    }
}

/// The grant the token check attached to the HTTP request.
fn grant(context: &RequestContext<RoleServer>) -> Result<Grant, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<Grant>())
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("no access token was checked", None))
}

impl ServerHandler for Remote {
    fn get_info(&self) -> ServerConfig {
        server_config(format!(
            "{INSTRUCTIONS}\n- This server serves one repository per access token; the tools listed are those the token's scope allows (read: packs, queries, status; write: also indexing and document writes). Every pack is recorded in the server's ledger under the token's name."
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools_at(
            scope(&grant(&context)?),
            Host::Team,
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let grant = grant(&context)?;
        let session = mcp_session(&context);
        let app = self.app.clone();
        let name = request.name.into_owned();
        let arguments = request.arguments;
        let task_name = name.clone();
        call_blocking(&context, name, move |control| {
            dispatch(
                scope(&grant),
                Host::Team,
                &task_name,
                arguments,
                session.as_deref(),
                control,
                || app.access.registry.workspace(&grant, &app.access.roots),
                |error| app.access.registry.public_error(&app.access.roots, error),
            )
        })
        .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // The transport checks parameter headers against a tool's schema before any token is
        // seen: every tool's schema is public; whether the caller may run it is checked then.
        tools_at(Scope::Write, Host::Team)
            .into_iter()
            .find(|tool| tool.name == name)
    }
}
