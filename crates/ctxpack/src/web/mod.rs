//! The web view: what every agent was shown, page by page — the ledger, each pack (its hits
//! by file, where the budget went, what was dropped and why), a pack built again at HEAD
//! beside the recorded one, a form that builds a pack, and the charts of an evaluation
//! report. `ctxpack serve` hosts it under `/ui`; `ctxpack ui` serves the same pages over the
//! local store.
//!
//! Pages are rendered on the server from the API's data ([`pages`]); the only script is
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
pub mod ui;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ctxpack_api::server::{Grant, Scope, now, random_secret};
use ctxpack_api::{
    Budget, BudgetCovers, Error, Format, LogEntry, LogFilter, PackOptions, Recorded, RenderOptions,
    Selector, SnapshotPackRequest, View, Workspace, render,
};
use serde::Deserialize;
use serde_json::Value;

use crate::host::{Access, Limiter};
use pages::{ListQuery, PAGE_SIZE, PackView, Report, TryForm};

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

struct Session {
    /// The token it was made from (a server's); `None` locally.
    token: Option<String>,
    created: Instant,
}

/// Who is asking: a grant on a server, anyone holding the local session.
#[derive(Clone)]
enum Viewer {
    Server(Grant),
    Local,
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

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a session and returns its id.
    fn open_session(&self, token: Option<String>) -> Result<String, Error> {
        let id = random_secret()?;
        let mut sessions = self.sessions();
        sessions.retain(|_, s| s.created.elapsed() < SESSION_TTL);
        // One token holds at most a few sessions, so no token can push out the others'.
        let mine: Vec<(String, Instant)> = sessions
            .iter()
            .filter(|(_, s)| s.token.is_some() && s.token == token)
            .map(|(k, s)| (k.clone(), s.created))
            .collect();
        if mine.len() >= SESSIONS_PER_TOKEN
            && let Some((oldest, _)) = mine.iter().min_by_key(|(_, created)| *created)
        {
            sessions.remove(oldest);
        }
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            id.clone(),
            Session {
                token,
                created: Instant::now(),
            },
        );
        Ok(id)
    }

    fn cookie(&self, id: &str) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            SESSION_TTL.as_secs()
        ))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The viewer of a request's session, checking a server's token again and taking one
    /// request from the token's rate; `Err` with the seconds to wait when over it.
    async fn viewer(self: &Arc<Self>, headers: &HeaderMap) -> Result<Option<Viewer>, u64> {
        let Some(id) = session_id(headers) else {
            return Ok(None);
        };
        let token = {
            let sessions = self.sessions();
            match sessions.get(&id) {
                Some(session) if session.created.elapsed() < SESSION_TTL => session.token.clone(),
                _ => return Ok(None),
            }
        };
        match (&self.site, token) {
            (Site::Local(_), None) => Ok(Some(Viewer::Local)),
            (Site::Server(app), Some(token)) => {
                let checker = app.clone();
                let grant = tokio::task::spawn_blocking(move || {
                    checker.registry.authenticate(&token, now())
                })
                .await;
                match grant {
                    Ok(Ok(grant)) => {
                        app.limiter.take(&grant.token)?;
                        Ok(Some(Viewer::Server(grant)))
                    }
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
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

fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
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

/// The session id in a request's cookies.
fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// An API error as a page, with the status its kind maps to.
fn failure(error: &Error, repo: Option<&str>) -> Response {
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

/// The viewer, or the page that asks them to sign in.
async fn signed_in(web: &Arc<Web>, headers: &HeaderMap) -> Result<Viewer, Response> {
    match web.viewer(headers).await {
        Ok(Some(viewer)) => Ok(viewer),
        Ok(None) => Err(match &web.site {
            Site::Server(_) => redirect("/ui/"),
            Site::Local(_) => html(
                StatusCode::UNAUTHORIZED,
                pages::error(
                    "Not signed in",
                    "open the address `ctxpack ui` printed: it carries this run's secret",
                    None,
                    None,
                ),
            ),
        }),
        Err(wait) => Err(too_many(wait)),
    }
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

/// The viewer and the parsed query string of a page, or the page to answer instead.
async fn page_context<Q: serde::de::DeserializeOwned + Default>(
    web: &Arc<Web>,
    headers: &HeaderMap,
    raw: Option<&str>,
    repo: &str,
) -> Result<(Viewer, Q), Box<Response>> {
    let viewer = signed_in(web, headers).await.map_err(Box::new)?;
    let query = query(raw).map_err(|e| Box::new(failure(&e, Some(repo))))?;
    Ok((viewer, query))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HomeQuery {
    secret: Option<String>,
}

async fn home(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let query: HomeQuery =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).unwrap_or_default();
    if let (Site::Local(local), Some(given)) = (&web.site, &query.secret) {
        let taken = {
            let mut secret = local
                .secret
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let matches = secret
                .as_deref()
                .is_some_and(|s| constant_time_eq(s.as_bytes(), given.as_bytes()));
            if matches {
                *secret = None;
            }
            matches
        };
        if taken {
            return match web.open_session(None) {
                Ok(id) => {
                    let mut response =
                        redirect(&format!("/ui/repos/{}/packs", html::url(&local.repo)));
                    response
                        .headers_mut()
                        .insert(header::SET_COOKIE, web.cookie(&id));
                    response
                }
                Err(e) => failure(&e, None),
            };
        }
        return html(
            StatusCode::UNAUTHORIZED,
            pages::error(
                "Not signed in",
                "this address's secret is not this run's, or was used already",
                Some("start `ctxpack ui` again for a new address"),
                None,
            ),
        );
    }
    match web.viewer(&headers).await {
        Ok(Some(viewer)) => match web.repos(&viewer).first() {
            Some(repo) => redirect(&format!("/ui/repos/{}/packs", html::url(repo))),
            None => html(StatusCode::OK, pages::login(None)),
        },
        Ok(None) => match &web.site {
            Site::Server(_) => html(StatusCode::OK, pages::login(None)),
            Site::Local(_) => signed_in(&web, &headers)
                .await
                .err()
                .unwrap_or_else(|| redirect("/ui/")),
        },
        Err(wait) => too_many(wait),
    }
}

/// Whether `a == b`, in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoginForm {
    token: String,
}

/// A server's per-token rate limiter.
fn app_limiter(web: &Web) -> Option<&Limiter> {
    match &web.site {
        Site::Server(app) => Some(&app.limiter),
        Site::Local(_) => None,
    }
}

async fn login(State(web): State<Arc<Web>>, headers: HeaderMap, body: Bytes) -> Response {
    let Site::Server(app) = &web.site else {
        return plain(StatusCode::NOT_FOUND, "no sign-in here");
    };
    let form: LoginForm = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let token = form.token.trim().to_owned();
    let app = app.clone();
    let checked = {
        let token = token.clone();
        tokio::task::spawn_blocking(move || app.registry.authenticate(&token, now())).await
    };
    let Ok(Ok(grant)) = checked else {
        return html(
            StatusCode::UNAUTHORIZED,
            pages::login(Some("That token was refused.")),
        );
    };
    if let Err(wait) = app_limiter(&web).map_or(Ok(()), |l| l.take(&grant.token)) {
        return too_many(wait);
    }
    if let Some(old) = session_id(&headers) {
        web.sessions().remove(&old);
    }
    match web.open_session(Some(token)) {
        Ok(id) => {
            let mut response = redirect(&format!("/ui/repos/{}/packs", html::url(&grant.repo)));
            response
                .headers_mut()
                .insert(header::SET_COOKIE, web.cookie(&id));
            response
        }
        Err(e) => failure(&e, None),
    }
}

async fn logout(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    if let Some(id) = session_id(&headers) {
        web.sessions().remove(&id);
    }
    let mut response = redirect("/ui/");
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("ctxpack_ui=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
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

async fn quality(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    let viewer = match signed_in(&web, &headers).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let repos = web.repos(&viewer);
    html(
        StatusCode::OK,
        pages::quality(repos.first().map(String::as_str), web.report.as_ref()),
    )
}

/// Parses a query string.
fn query<T: serde::de::DeserializeOwned + Default>(raw: Option<&str>) -> Result<T, Error> {
    match raw {
        None => Ok(T::default()),
        Some(raw) => serde_urlencoded::from_str(raw).map_err(|e| {
            Error::invalid(format!(
                "the address's query `{raw}` is not valid here: {e}"
            ))
        }),
    }
}

/// A `YYYY-MM-DD` date as the Unix second it starts (UTC).
fn day_start(field: &str, date: &str) -> Result<Option<u64>, Error> {
    if date.is_empty() {
        return Ok(None);
    }
    let parsed: jiff::civil::Date = date
        .parse()
        .map_err(|e| Error::invalid_field(field, format!("`{date}` is not a date: {e}")))?;
    let seconds = parsed
        .to_zoned(jiff::tz::TimeZone::UTC)
        .map_err(|e| Error::invalid_field(field, e.to_string()))?
        .timestamp()
        .as_second();
    Ok(Some(u64::try_from(seconds).unwrap_or(0)))
}

async fn list(
    State(web): State<Arc<Web>>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let (viewer, query): (Viewer, ListQuery) =
        match page_context(&web, &headers, raw.as_deref(), &repo).await {
            Ok(context) => context,
            Err(page) => return *page,
        };
    let repos = web.repos(&viewer);
    let (web2, repo2, q) = (web.clone(), repo.clone(), query.clone());
    let listed = blocking(web.clone(), move || {
        let workspace = web2.workspace(&viewer, &repo2)?;
        let until = day_start("until", &q.until)?.map(|s| s + 86_400);
        workspace.log_page(&LogFilter {
            goal: Some(q.goal.trim().to_owned()).filter(|g| !g.is_empty()),
            from: day_start("from", &q.from)?,
            until,
            offset: q.first(),
            limit: PAGE_SIZE,
        })
    })
    .await;
    match listed {
        Ok(listed) => html(StatusCode::OK, pages::packs(&repo, &repos, &query, &listed)),
        Err(e) => failure(&e, Some(&repo)),
    }
}

/// A recorded pack: its log entry, canonical JSON and Markdown.
fn recorded(workspace: &Workspace, id: &str) -> Result<(LogEntry, Value, String), Error> {
    let shown = workspace.show(id)?;
    // Every field, whatever view the pack was shown in.
    let json = render(
        &shown.pack,
        &RenderOptions {
            format: Format::Json,
            view: View::Full,
            pretty: false,
        },
    );
    let markdown = render(
        &shown.pack,
        &RenderOptions {
            format: Format::Markdown,
            view: View::Default,
            pretty: false,
        },
    );
    let value: Value = serde_json::from_str(&json)
        .map_err(|e| Error::internal(format!("a pack's JSON did not parse: {e}")))?;
    Ok((LogEntry::from(&shown.record), value, markdown))
}

async fn show(
    State(web): State<Arc<Web>>,
    Path((repo, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let viewer = match signed_in(&web, &headers).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (web2, repo2, id2) = (web.clone(), repo.clone(), id.clone());
    match blocking(web.clone(), move || {
        recorded(&web2.workspace(&viewer, &repo2)?, &id2)
    })
    .await
    {
        Ok((entry, pack, markdown)) => html(
            StatusCode::OK,
            pages::pack(&PackView {
                repo: &repo,
                id: &entry.id,
                entry: &entry,
                pack: &pack,
                markdown: &markdown,
            }),
        ),
        Err(e) => failure(&e, Some(&repo)),
    }
}

/// Builds and records a pack, fitted to and recorded with `rendering`; returns its ledger id.
fn build(
    workspace: &Workspace,
    request: &SnapshotPackRequest,
    rendering: RenderOptions,
) -> Result<String, Error> {
    let built = workspace.snapshot_pack(
        request,
        &PackOptions {
            record: Some(&rendering),
            index_if_missing: false,
            rendering: Some(&rendering),
        },
    )?;
    match built.recorded {
        Recorded::Stored(id) => Ok(id),
        Recorded::Failed(e) => Err(e),
        _ => Err(Error::internal("the pack was not recorded")),
    }
}

async fn again(
    State(web): State<Arc<Web>>,
    Path((repo, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let viewer = match signed_in(&web, &headers).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (web2, repo2) = (web.clone(), repo.clone());
    let built = blocking(web.clone(), move || {
        let workspace = web2.workspace(&viewer, &repo2)?;
        let shown = workspace.show(&id)?;
        let record = &shown.record;
        let request = SnapshotPackRequest {
            goal: record.goal.clone(),
            budget: shown.pack.budget,
            meter: shown.pack.meter,
            selector: shown.pack.selector,
            // A pack fitted to its output had a budget that covered it; otherwise the budget
            // covered the hits' text alone.
            budget_covers: if shown.pack.presentation.fitted.is_some() {
                BudgetCovers::Output
            } else {
                BudgetCovers::Content
            },
            at: "HEAD".into(),
            index: Web::may_index(&viewer),
            ..SnapshotPackRequest::default()
        };
        Ok((
            record.id.clone(),
            build(&workspace, &request, shown.rendering)?,
        ))
    })
    .await;
    match built {
        Ok((old, new)) => redirect(&format!(
            "/ui/repos/{}/compare?a={}&b={}",
            html::url(&repo),
            html::url(&old),
            html::url(&new)
        )),
        Err(e) => failure(&e, Some(&repo)),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct CompareQuery {
    a: String,
    b: String,
}

async fn compare(
    State(web): State<Arc<Web>>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let (viewer, ids): (Viewer, CompareQuery) =
        match page_context(&web, &headers, raw.as_deref(), &repo).await {
            Ok(context) => context,
            Err(page) => return *page,
        };
    let (web2, repo2) = (web.clone(), repo.clone());
    let packs = blocking(web.clone(), move || {
        let workspace = web2.workspace(&viewer, &repo2)?;
        let (a, va, _) = recorded(&workspace, &ids.a)?;
        let (b, vb, _) = recorded(&workspace, &ids.b)?;
        Ok((a.id, va, b.id, vb))
    })
    .await;
    match packs {
        Ok((a, va, b, vb)) => html(StatusCode::OK, pages::compare(&repo, (&a, &b), &va, &vb)),
        Err(e) => failure(&e, Some(&repo)),
    }
}

async fn try_form(
    State(web): State<Arc<Web>>,
    Path(repo): Path<String>,
    headers: HeaderMap,
) -> Response {
    match signed_in(&web, &headers).await {
        Ok(viewer) if web.repos(&viewer).contains(&repo) => {}
        Ok(_) => {
            return failure(
                &Error::not_found(format!("no repository `{repo}` here")),
                None,
            );
        }
        Err(page) => return page,
    }
    let defaults = SnapshotPackRequest::default();
    html(
        StatusCode::OK,
        pages::try_goal(
            &repo,
            &TryForm {
                goal: "",
                budget: defaults.budget.get(),
                at: &defaults.at,
                selector: defaults.selector.name(),
                problem: None,
            },
        ),
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TryFields {
    goal: String,
    budget: String,
    at: String,
    selector: String,
}

async fn try_build(
    State(web): State<Arc<Web>>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let viewer = match signed_in(&web, &headers).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let fields: TryFields = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let request = (|| -> Result<SnapshotPackRequest, Error> {
        let budget = fields
            .budget
            .trim()
            .parse::<u64>()
            .ok()
            .and_then(|b| Budget::new(b).ok())
            .ok_or_else(|| {
                Error::invalid_field("budget", "give a whole number of tokens, at least 1")
            })?;
        let selector = Selector::ALL
            .into_iter()
            .find(|s| s.name() == fields.selector)
            .ok_or_else(|| Error::invalid_field("selector", "not a selector"))?;
        Ok(SnapshotPackRequest {
            goal: fields.goal.trim().to_owned(),
            budget,
            at: if fields.at.trim().is_empty() {
                "HEAD".into()
            } else {
                fields.at.trim().to_owned()
            },
            selector,
            index: Web::may_index(&viewer),
            ..SnapshotPackRequest::default()
        })
    })();
    let built = match request {
        Ok(request) => {
            let (web2, repo2) = (web.clone(), repo.clone());
            blocking(web.clone(), move || {
                build(
                    &web2.workspace(&viewer, &repo2)?,
                    &request,
                    RenderOptions::default(),
                )
            })
            .await
        }
        Err(e) => Err(e),
    };
    match built {
        Ok(id) => redirect(&format!(
            "/ui/repos/{}/packs/{}",
            html::url(&repo),
            html::url(&id)
        )),
        Err(e) => {
            let hint = e.hint().and_then(|h| crate::exit::hint(h, e.field(), None));
            html(
                crate::exit::http_status(e.kind()),
                pages::try_goal(
                    &repo,
                    &TryForm {
                        goal: &fields.goal,
                        budget: fields.budget.trim().parse().unwrap_or(0),
                        at: &fields.at,
                        selector: &fields.selector,
                        problem: Some((e.message(), hint.as_deref())),
                    },
                ),
            )
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileQuery {
    at: String,
    path: String,
    start: Option<u64>,
    end: Option<u64>,
}

async fn file(
    State(web): State<Arc<Web>>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let (viewer, q): (Viewer, FileQuery) =
        match page_context(&web, &headers, raw.as_deref(), &repo).await {
            Ok(context) => context,
            Err(page) => return *page,
        };
    let (web2, repo2, at, path) = (web.clone(), repo.clone(), q.at.clone(), q.path.clone());
    match blocking(web.clone(), move || {
        web2.workspace(&viewer, &repo2)?.indexed_file(&at, &path)
    })
    .await
    {
        Ok(indexed) => html(StatusCode::OK, pages::file(&repo, &indexed, q.start, q.end)),
        Err(e) => failure(&e, Some(&repo)),
    }
}
