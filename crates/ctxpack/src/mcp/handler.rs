//! The protocol side of [`Server`]: the handshake, roots, tool listing and tool calls on the
//! async runtime (each call's work on a blocking thread, with progress and cancellation).

use ctxpack_api::Control;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::mcp::{Server, panicked, tool_error};

/// Whether the client declared the `roots` capability in its `initialize`.
fn offers_roots(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some())
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        self.info()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // From here until the roots are read, tool calls wait for them.
        if request.capabilities.roots.is_some() {
            self.root.expect_roots();
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // The protocol lets a server send requests only once the client is initialized.
        if self.root.follows_roots() && offers_roots(&context.peer) {
            self.root.refresh(context.peer).await;
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if self.root.follows_roots() && offers_roots(&context.peer) {
            self.root.refresh(context.peer).await;
        }
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
        // A call right after the handshake runs against the client's root, not the start
        // directory.
        self.root.settled().await;
        let server = self.clone();
        let name = request.name.into_owned();
        let arguments = request.arguments;
        let task_name = name.clone();
        call_blocking(&context, name, move |control| {
            server.call(&task_name, arguments, control)
        })
        .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }
}

/// Runs a tool call's `job` on a blocking thread (handlers do blocking IO: SQLite, tantivy,
/// git), with progress sent as notifications when the call carries a progress token, and
/// `notifications/cancelled` (or a closed connection) cancelling its [`Control`]. A job that
/// panics past its own guard becomes an `internal` tool error.
pub(crate) async fn call_blocking(
    context: &RequestContext<RoleServer>,
    name: String,
    job: impl FnOnce(&Control) -> Result<CallToolResult, ErrorData> + Send + 'static,
) -> Result<CallToolResponse, ErrorData> {
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
    let joined = tokio::task::spawn_blocking(move || job(&control)).await;
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
