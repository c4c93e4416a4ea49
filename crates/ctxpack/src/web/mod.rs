//! The web view: what every agent was shown, page by page — the ledger, each pack (its hits
//! by file, where the budget went, what was dropped and why), a pack built again at HEAD
//! beside the recorded one, a form that builds a pack, and the charts of an evaluation
//! report. `ctxpack serve` hosts it under `/ui`; `ctxpack ui` serves the same pages over the
//! local store.
//!
//! Pages are rendered on the server from the API's data (`pages`); the only script is
//! `app.js` (a copy button), served from the binary like the style sheet. Every response
//! carries a Content-Security-Policy that allows only those two files, so nothing a
//! repository, a goal or a pack contains can run, even if escaping ever missed it.
//!
//! Signing in: on a server, a token (read scope is enough: viewing and building packs is
//! what it allows) is exchanged for a session cookie (`HttpOnly`, `SameSite=Strict`, `Secure`
//! over TLS); each request checks the token again, so revoking it ends the session. Locally,
//! `ctxpack ui` prints an address with a per-run secret, exchanged the same way on first
//! visit, and refuses any `Host` but its own loopback address (no DNS rebinding). Every
//! `POST` must come from the page's own origin.

mod html;
pub(crate) mod pages;
mod routes;
mod session;
pub mod ui;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ctxpack_api::server::Scope;
use ctxpack_api::{Error, Workspace};

use crate::host::Access;
use pages::Report;
use routes::{again, compare, file, home, list, quality, show, try_build, try_form};
use session::{Session, Viewer, login, logout};

/// The cookie that carries a session id.
const COOKIE: &str = "ctxpack_ui";

/// How long a session lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// The most sessions kept at once; the oldest go first.
const MAX_SESSIONS: usize = 10_000;

/// The most sessions one token holds; its oldest goes first.
const SESSIONS_PER_TOKEN: usize = 16;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Whose pages these are.
pub(crate) enum Site {
    /// A team server: sessions come from tokens.
    Server(Arc<Access>),
    /// `ctxpack ui`: one local repository; a session comes from the per-run secret.
    Local(Box<Local>),
}

/// The site of `ctxpack ui`.
pub(crate) struct Local {
    pub(crate) workspace: Workspace,
    pub(crate) repo: String,
    /// The per-run secret, usable once: taken by the first visit.
    pub(crate) secret: Mutex<Option<String>>,
    /// The origins the page is served at (`http://127.0.0.1:PORT`, `http://localhost:PORT`).
    pub(crate) origins: Vec<String>,
}

/// The web view's state.
pub(crate) struct Web {
    site: Site,
    /// Origins a form may also come from (a server's `--allow-origin`, e.g. behind a proxy
    /// that terminates TLS).
    origins: Vec<String>,
    sessions: Mutex<HashMap<String, Session>>,
    report: Option<Report>,
    /// Cookies are `Secure` (the server speaks TLS).
    secure: bool,
}

impl Web {
    pub(crate) fn new(
        site: Site,
        origins: Vec<String>,
        report: Option<Report>,
        secure: bool,
    ) -> Web {
        Web {
            site,
            origins,
            sessions: Mutex::new(HashMap::new()),
            report,
            secure,
        }
    }

    /// The repositories a viewer may see.
    fn repos(&self, viewer: &Viewer) -> Vec<String> {
        match (&self.site, viewer) {
            (Site::Local(local), _) => vec![local.repo.clone()],
            (Site::Server(_), Viewer::Server(grant)) => vec![grant.repo.clone()],
            _ => Vec::new(),
        }
    }

    /// The workspace of `repo` for a viewer, if it may read it.
    fn workspace(&self, viewer: &Viewer, repo: &str) -> Result<Workspace, Error> {
        match (&self.site, viewer) {
            (Site::Local(local), _) if local.repo == repo => Ok(local.workspace.clone()),
            (Site::Server(app), Viewer::Server(grant)) if grant.allows(repo, Scope::Read) => {
                app.registry.workspace(grant, &app.roots)
            }
            _ => Err(Error::not_found(format!("no repository `{repo}` here"))),
        }
    }

    /// Whether a pack built for a viewer may index a commit first.
    fn may_index(viewer: &Viewer) -> bool {
        match viewer {
            Viewer::Local => true,
            Viewer::Server(grant) => grant.scope >= Scope::Write,
        }
    }
}

/// The `/ui` routes.
pub(crate) fn router(web: Arc<Web>) -> Router {
    Router::new()
        .route("/ui", get(home))
        .route("/ui/", get(home))
        .route("/ui/login", post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/static/app.css", get(style))
        .route("/ui/static/app.js", get(script))
        .route("/ui/quality", get(quality))
        .route("/ui/repos/{repo}/packs", get(list))
        .route("/ui/repos/{repo}/packs/{id}", get(show))
        .route("/ui/repos/{repo}/packs/{id}/again", post(again))
        .route("/ui/repos/{repo}/compare", get(compare))
        .route("/ui/repos/{repo}/try", get(try_form).post(try_build))
        .route("/ui/repos/{repo}/file", get(file))
        .layer(middleware::from_fn_with_state(web.clone(), guard))
        .with_state(web)
}

/// Refuses a foreign `Host` locally and a cross-origin `POST` anywhere, and sets the security
/// headers of every page.
async fn guard(State(web): State<Arc<Web>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if let Site::Local(local) = &web.site
        && !local
            .origins
            .iter()
            .any(|o| o.strip_prefix("http://") == Some(host.as_str()))
    {
        return plain(
            StatusCode::MISDIRECTED_REQUEST,
            "this address is not served here",
        );
    }
    if request.method() == axum::http::Method::POST {
        let origin = request
            .headers()
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok())
            .unwrap_or("");
        let allowed = match &web.site {
            Site::Local(local) => local.origins.iter().any(|o| o == origin),
            Site::Server(_) => {
                let scheme = if web.secure { "https" } else { "http" };
                origin == format!("{scheme}://{host}") || web.origins.iter().any(|o| o == origin)
            }
        };
        if !allowed {
            return plain(
                StatusCode::FORBIDDEN,
                "a form may only be sent from this site's own pages",
            );
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

fn plain(status: StatusCode, message: &'static str) -> Response {
    (status, message).into_response()
}

fn html(status: StatusCode, page: maud::Markup) -> Response {
    let mut response = (status, page.into_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// An API error as a page, with the status its kind maps to.
pub(crate) fn failure(error: &Error, repo: Option<&str>) -> Response {
    let status = crate::exit::http_status(error.kind());
    let hint = error
        .hint()
        .and_then(|h| crate::exit::hint(h, error.field(), None));
    html(
        status,
        pages::error("Cannot show this", error.message(), hint.as_deref(), repo),
    )
}

/// Runs blocking API work off the async threads. A server's failure names its files as a
/// client knows them (`ServerRegistry::public_error`).
async fn blocking<T: Send + 'static>(
    web: Arc<Web>,
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let work = move || {
        work().map_err(|error| match &web.site {
            Site::Server(app) => app.registry.public_error(&app.roots, error),
            Site::Local(_) => error,
        })
    };
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|panic| {
            Err(Error::internal(format!(
                "the request panicked: {panic}; this is a bug in ctxpack"
            )))
        })
}

/// The page for a token over its rate.
fn too_many(wait: u64) -> Response {
    let mut response = html(
        StatusCode::TOO_MANY_REQUESTS,
        pages::error(
            "Too many requests",
            "this token made more requests than the server allows per second",
            Some(&format!("wait {wait} s and try again")),
            None,
        ),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(wait));
    response
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("app.css"))
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("app.js"))
}
