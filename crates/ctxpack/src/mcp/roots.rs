//! Which repository the server serves: the one `--cwd` named, or — when it was started
//! without `--cwd` — the client's first `file://` root (MCP `roots/list`), so that one global
//! client configuration serves every project.
//!
//! A server without `--cwd` first serves the directory it was started in. When the client
//! declares the `roots` capability in `initialize`, tool calls wait (at most [`ROOTS_WAIT`])
//! until the server has asked `roots/list` and opened the first `file://` root; the same
//! happens again on `notifications/roots/list_changed`. A client that does not answer, answers
//! with an error or offers no `file://` root leaves the server on its start directory.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ctxpack_api::{Access, Error, Workspace, WorkspaceOptions};
use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio::sync::watch;

/// How long the server waits for the client's `roots/list` answer before it serves its start
/// directory, and how long a tool call waits for that answer.
pub const ROOTS_WAIT: Duration = Duration::from_secs(10);

/// What opening a workspace needs besides its directory: the server's store and access.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) store: Option<PathBuf>,
    pub(crate) access: Access,
}

impl Options {
    /// The workspace of the repository containing `cwd` (or of `cwd` itself when it is in
    /// no repository).
    pub(crate) fn open(&self, cwd: &Path) -> Result<Workspace, Error> {
        Workspace::open(WorkspaceOptions {
            cwd: cwd.to_owned(),
            store: self.store.clone(),
            access: self.access,
            caller: Some("mcp".into()),
        })
    }
}

/// The repository a server serves, shared by every clone of the server.
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    options: Options,
    /// `None` when `--cwd` fixed the repository; otherwise the directory to fall back to.
    start: Option<PathBuf>,
    state: watch::Sender<State>,
    /// The latest `roots/list` asked: an older answer never replaces a newer one.
    generation: AtomicU64,
}

#[derive(Clone, Debug)]
struct State {
    workspace: Result<Workspace, Error>,
    /// A `roots/list` answer is awaited.
    pending: bool,
}

impl Binding {
    /// The repository containing `cwd`, for good: roots are never asked.
    pub(crate) fn fixed(options: Options, cwd: &Path) -> Result<Binding, Error> {
        let workspace = options.open(cwd)?;
        Ok(Binding::with(options, None, workspace))
    }

    /// The repository containing `start` until the client names a root.
    pub(crate) fn following(options: Options, start: PathBuf) -> Result<Binding, Error> {
        let workspace = options.open(&start)?;
        Ok(Binding::with(options, Some(start), workspace))
    }

    fn with(options: Options, start: Option<PathBuf>, workspace: Workspace) -> Binding {
        let (state, _) = watch::channel(State {
            workspace: Ok(workspace),
            pending: false,
        });
        Binding {
            shared: Arc::new(Shared {
                options,
                start,
                state,
                generation: AtomicU64::new(0),
            }),
        }
    }

    /// Whether the repository follows the client's roots (no `--cwd`).
    pub(crate) fn follows_roots(&self) -> bool {
        self.shared.start.is_some()
    }

    /// The workspace served now (an error when the client's root could not be opened).
    pub(crate) fn current(&self) -> Result<Workspace, Error> {
        self.shared.state.borrow().workspace.clone()
    }

    /// Tool calls wait from now until [`Binding::refresh`] has an answer.
    pub(crate) fn expect_roots(&self) {
        if self.follows_roots() {
            self.shared.state.send_modify(|s| s.pending = true);
        }
    }

    /// Waits until no `roots/list` answer is awaited (or [`ROOTS_WAIT`] has passed).
    pub(crate) async fn settled(&self) {
        let mut state = self.shared.state.subscribe();
        let _ = tokio::time::timeout(ROOTS_WAIT, state.wait_for(|s| !s.pending)).await;
    }

    /// Asks the client for its roots and serves the first `file://` one, or the start
    /// directory when there is none.
    #[allow(
        deprecated,
        reason = "roots are what clients of the revisions ctxpack serves offer"
    )]
    pub(crate) async fn refresh(&self, peer: Peer<RoleServer>) {
        let Some(start) = self.shared.start.clone() else {
            return;
        };
        self.shared.state.send_modify(|s| s.pending = true);
        let generation = self.shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let root = match tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await {
            Ok(Ok(listed)) => listed.roots.iter().find_map(|r| file_uri_path(&r.uri)),
            Ok(Err(e)) => {
                crate::output::note(&format!(
                    "ctxpack mcp: the client's roots/list failed ({e}); serving {}\n",
                    start.display()
                ));
                None
            }
            Err(_) => {
                crate::output::note(&format!(
                    "ctxpack mcp: no answer to roots/list in {} s; serving {}\n",
                    ROOTS_WAIT.as_secs(),
                    start.display()
                ));
                None
            }
        };
        let shared = Arc::clone(&self.shared);
        let opened =
            tokio::task::spawn_blocking(move || shared.options.open(&root.unwrap_or(start)))
                .await
                .unwrap_or_else(|e| {
                    Err(Error::internal(format!("opening the client's root: {e}")))
                });
        if self.shared.generation.load(Ordering::SeqCst) == generation {
            self.shared.state.send_modify(|s| {
                s.workspace = opened;
                s.pending = false;
            });
        }
    }
}

/// The local path of a `file://` URI (`file:///p` or `file://localhost/p`, percent-decoded);
/// `None` for another scheme, a remote host, a relative path or a NUL byte.
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let scheme = uri.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = &uri[7..];
    let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let slash = rest.find('/')?;
    let host = &rest[..slash];
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return None;
    }
    let bytes = percent_decode(&rest[slash..])?;
    if bytes.contains(&0) {
        return None;
    }
    let path = PathBuf::from(OsString::from_vec(bytes));
    path.is_absolute().then_some(path)
}

/// `%XX` escapes decoded; `None` for a malformed escape (which the decoder would keep as it is).
fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let well_formed = text.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    well_formed.then(|| percent_encoding::percent_decode_str(text).collect())
}
