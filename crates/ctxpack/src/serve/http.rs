//! The HTTP side of `ctxpack serve`: routes, the token check, the rate limit and the JSON API.
//!
//! Every answer is what the command line prints for the same request (`format` is `json`
//! unless `text` is asked for, where the command has both), so `ctxpack … --server` prints
//! the server's answer as it is.
//!
//! | route | scope | answers |
//! | --- | --- | --- |
//! | `POST /v1/repos/{repo}/pack?format=&view=&pretty=` | read | what `ctxpack pack` prints for the JSON request body |
//! | `POST /v1/repos/{repo}/index` | write | what `ctxpack index --format json` prints (`?format=text`: its text) |
//! | `POST /v1/repos/{repo}/query?format=` | read | what `ctxpack query` prints for the JSON request body |
//! | `GET /v1/repos/{repo}/snapshots?format=` | read | what `ctxpack status` prints |
//! | `GET /v1/repos/{repo}/ledger?limit=&format=` | read | what `ctxpack log` prints |
//! | `GET /v1/repos/{repo}/ledger/{id}?format=&view=&pretty=&dropped=` | read | what `ctxpack show` prints |
//! | `POST /v1/repos/{repo}/tools/{tool}` | the tool's | an MCP tool's canonical JSON (or text) for the JSON arguments: documents (`context_pack`, `vsearch`, `docs_insert`, `docs_import`, `vsync`), artifacts and the rest of the catalogue |
//! | `/mcp` | the token's | MCP over streamable HTTP, the tools its scope lists |
//! | `GET /healthz`, `/readyz`, `/metrics` | none | liveness, readiness, Prometheus metrics |
//!
//! A failure is the command line's failure envelope with a status: 400 invalid input, 404 not
//! found or not indexed, 409 conflict, 503 busy (with `Retry-After`), 500 otherwise; 401 for a
//! missing or refused token, 403 for a token of another repository or a lower scope — the
//! same body whatever the reason, so a refusal reveals nothing — 413 for a body over the
//! limit and 429 with `Retry-After` over the token's rate.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ctxpack_api::server::{Grant, Scope, now};
use ctxpack_api::{
    Error, ErrorKind, Format, Hint, IndexRequest, PackOptions, QueryRequest, Recorded,
    RenderOptions, SnapshotPackRequest, View, render,
};
use serde::Deserialize;
use serde_json::json;

use crate::exit::{CliFailure, envelope};
use crate::serve::App;

/// The router: the JSON API and `/mcp` behind the token check, the probes and metrics open.
pub(crate) fn router(app: Arc<App>, mcp: crate::serve::mcp::Service, web: Router) -> Router {
    let api = Router::new()
        .route("/v1/repos/{repo}/pack", post(pack))
        .route("/v1/repos/{repo}/index", post(index))
        .route("/v1/repos/{repo}/query", post(query))
        .route("/v1/repos/{repo}/snapshots", get(snapshots))
        .route("/v1/repos/{repo}/ledger", get(log))
        .route("/v1/repos/{repo}/ledger/{id}", get(show))
        .route("/v1/repos/{repo}/tools/{tool}", post(tool))
        .nest_service(
            "/mcp",
            tower_layer::Layer::layer(&middleware::from_fn(crate::serve::mcp::session), mcp),
        )
        .layer(middleware::from_fn_with_state(app.clone(), authenticate));
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .merge(api)
        .with_state(app.clone())
        .merge(web)
        .layer(DefaultBodyLimit::max(app.max_body_bytes))
        // The body deadline wraps every route (the JSON API, `/mcp` and the web view's
        // forms), inside `observe`, which counts and logs its 408s.
        .layer(middleware::from_fn_with_state(
            app.body_pace,
            crate::serve::listen::body_deadline,
        ))
        .layer(middleware::from_fn_with_state(app, observe))
}

/// Counts every response by route and status, and logs it.
async fn observe(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = route_name(request.uri().path());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    app.metrics.count(route, status);
    tracing::info!(
        %method,
        route,
        status,
        ms = started.elapsed().as_micros() as f64 / 1000.0,
        "request"
    );
    response
}

/// A route's name without its parameters, so metrics have few labels.
fn route_name(path: &str) -> &'static str {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["healthz"] => "healthz",
        ["readyz"] => "readyz",
        ["metrics"] => "metrics",
        ["mcp", ..] => "mcp",
        ["v1", "repos", _, "pack"] => "pack",
        ["v1", "repos", _, "index"] => "index",
        ["v1", "repos", _, "query"] => "query",
        ["v1", "repos", _, "snapshots"] => "snapshots",
        ["v1", "repos", _, "ledger"] => "ledger",
        ["v1", "repos", _, "ledger", _] => "ledger_entry",
        ["v1", "repos", _, "tools", _] => "tools",
        ["ui", ..] => "ui",
        _ => "other",
    }
}

/// Checks the bearer token and the rate, and hands the grant to the route.
async fn authenticate(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(token) = token.map(str::to_owned) else {
        return unauthorized();
    };
    // The registry may be a database: the check runs where blocking is allowed.
    let checker = app.clone();
    let checked =
        tokio::task::spawn_blocking(move || checker.access.registry.authenticate(&token, now()))
            .await;
    let Ok(Ok(grant)) = checked else {
        return unauthorized();
    };
    if let Err(wait) = app.access.limiter.take(&grant.token) {
        let mut response = *refusal(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests for this token",
            &format!("wait {wait} s and try again"),
        )
        .0;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        return response;
    }
    request.extensions_mut().insert(grant);
    next.run(request).await
}

fn refusal(status: StatusCode, message: &str, hint: &str) -> Refusal {
    let body = envelope(ErrorKind::InvalidInput, message, Some(hint));
    Refusal(Box::new((status, axum::Json(body)).into_response()))
}

/// A response that ends a request early: a refusal or a failure.
pub(crate) struct Refusal(Box<Response>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}

fn unauthorized() -> Response {
    let mut response = *refusal(
        StatusCode::UNAUTHORIZED,
        "a valid bearer token is required",
        "send `Authorization: Bearer TOKEN` with a token from `ctxpack serve token create`",
    )
    .0;
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

fn forbidden() -> Refusal {
    refusal(
        StatusCode::FORBIDDEN,
        "this token does not allow that",
        "use a token for this repository with the scope the request needs",
    )
}

/// The grant, when it allows `scope` on `repo`; otherwise a 403 that says nothing about
/// whether the repository exists.
fn authorize(request_grant: Option<&Grant>, repo: &str, scope: Scope) -> Result<Grant, Refusal> {
    match request_grant {
        Some(grant) if grant.allows(repo, scope) => Ok(grant.clone()),
        _ => Err(forbidden()),
    }
}

/// A "not indexed" failure phrased for a client of this server: the commit is indexed on the
/// server, with a write token, not with a local `ctxpack index`.
fn indexed_on_the_server(error: Error, repo: &str) -> Error {
    let Some(Hint::IndexCommit { sha, nearest }) = error.hint() else {
        return error;
    };
    let nearest = nearest
        .as_ref()
        .map(|a| {
            format!(
                "; or pack its nearest indexed ancestor, {} commit{} back: --at {}",
                a.distance,
                if a.distance == 1 { "" } else { "s" },
                a.sha
            )
        })
        .unwrap_or_default();
    let advice = format!(
        "index it on the server with a write token: `CTXPACK_TOKEN=<write token> ctxpack index --server URL --repo {repo} --at {sha}` (POST /v1/repos/{repo}/index){nearest}"
    );
    error.with_hint(Hint::Advice(advice))
}

/// An API error as a response: the failure envelope with the status its kind maps to.
fn failure(error: &Error) -> Refusal {
    let status = crate::exit::http_status(error.kind());
    let mut response =
        (status, axum::Json(CliFailure::new(error, None).envelope())).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    Refusal(Box::new(response))
}

/// Runs blocking API work off the async threads; a panic is an internal error. A failure
/// names the server's files as a client knows them (`ServerRegistry::public_error`).
async fn blocking<T: Send + 'static>(
    app: Arc<App>,
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Refusal> {
    let work =
        move || work().map_err(|error| app.access.registry.public_error(&app.access.roots, error));
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(failure(&error)),
        Err(panic) => Err(failure(&Error::internal(format!(
            "the request panicked: {panic}; this is a bug in ctxpack"
        )))),
    }
}

/// Parses a JSON body into a request type, naming the field at fault.
fn body<T: serde::de::DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, Refusal> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let error = Error::invalid(format!(
            "the request body is not a valid request: {}",
            e.inner()
        ));
        failure(&if path == "." {
            error
        } else {
            error.with_field(path)
        })
    })
}

/// How a pack is rendered: `?format=&view=&pretty=`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rendering {
    format: Option<String>,
    view: Option<String>,
    #[serde(default)]
    pretty: bool,
}

/// How a recorded pack is shown: its rendering, or `?dropped=true` for what was left out.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShowQuery {
    format: Option<String>,
    view: Option<String>,
    #[serde(default)]
    pretty: bool,
    #[serde(default)]
    dropped: bool,
}

/// The query string as `T`: every field optional, unknown ones refused, and a malformed one
/// invalid input in the failure envelope like any other bad request.
fn query_string<T: serde::de::DeserializeOwned + Default>(
    raw: Option<String>,
) -> Result<T, Refusal> {
    match raw {
        None => Ok(T::default()),
        Some(raw) => serde_urlencoded::from_str(&raw).map_err(|e| {
            failure(&Error::invalid(format!(
                "the query string `{raw}` is not valid here: {e}"
            )))
        }),
    }
}

impl Rendering {
    fn parse(&self) -> Result<(Option<Format>, Option<View>), Refusal> {
        let format = match &self.format {
            Some(f) => Some(
                f.parse::<Format>()
                    .map_err(|e| failure(&Error::invalid_field("format", e.to_string())))?,
            ),
            None => None,
        };
        let view = match &self.view {
            Some(v) => Some(
                v.parse::<View>()
                    .map_err(|e| failure(&Error::invalid_field("view", e.to_string())))?,
            ),
            None => None,
        };
        Ok((format, view))
    }
}

fn content_type(format: Format) -> HeaderValue {
    HeaderValue::from_static(match format {
        Format::Json => "application/json",
        Format::Markdown => "text/markdown; charset=utf-8",
        Format::Xml => "application/xml; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    })
}

fn text(format: Format, body: String) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type(format));
    response
}

fn json_text(body: String) -> Response {
    text(Format::Json, body)
}

/// The answer of a command that prints text or JSON.
fn listed(json: bool, output: String) -> Response {
    text(if json { Format::Json } else { Format::Text }, output)
}

fn grant_of(headers: &axum::http::Extensions) -> Option<&Grant> {
    headers.get::<Grant>()
}

async fn pack(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    RawQuery(raw): RawQuery,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Read)?;
        let rendering: Rendering = query_string(raw)?;
        let bytes = read_body(request, app.max_body_bytes).await?;
        let mut pack_request: SnapshotPackRequest = body(&bytes)?;
        if pack_request.worktree {
            return Err(failure(&Error::invalid_field(
                "worktree",
                "a server packs committed snapshots only; pack the working tree locally",
            )));
        }
        // A read token never indexes: an unindexed commit is reported with its nearest
        // indexed ancestor instead.
        if grant.scope < Scope::Write {
            pack_request.index = false;
        }
        let (format, view) = rendering.parse()?;
        let defaults = RenderOptions::default();
        let options = RenderOptions {
            format: format.unwrap_or(defaults.format),
            view: view.unwrap_or(defaults.view),
            pretty: rendering.pretty || defaults.pretty,
        };
        let started = Instant::now();
        let app2 = app.clone();
        let (output, recorded) = blocking(app.clone(), move || {
            let workspace = app2.access.registry.workspace(&grant, &app2.access.roots)?;
            let built = workspace
                .snapshot_pack(
                    &pack_request,
                    &PackOptions {
                        record: Some(&options),
                        index_if_missing: false,
                        rendering: Some(&options),
                    },
                )
                .map_err(|e| indexed_on_the_server(e, &repo))?;
            Ok((render(&built.pack, &options), built.recorded))
        })
        .await?;
        app.metrics.pack_seconds(started.elapsed().as_secs_f64());
        let mut response = text(options.format, output);
        match recorded {
            Recorded::Stored(id) => {
                if let Ok(value) = HeaderValue::from_str(&id) {
                    response.headers_mut().insert("x-ctxpack-pack-id", value);
                }
            }
            Recorded::Failed(error) => {
                tracing::warn!(%error, "the pack was built but not recorded in the ledger");
            }
            _ => {}
        }
        Ok(response)
    })
    .await
}

async fn index(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    RawQuery(raw): RawQuery,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Write)?;
        let shown: FormatQuery = query_string(raw)?;
        let bytes = read_body(request, app.max_body_bytes).await?;
        let index_request: IndexRequest = body(&bytes)?;
        let started = Instant::now();
        let app2 = app.clone();
        let summary = blocking(app.clone(), move || {
            let workspace = app2.access.registry.workspace(&grant, &app2.access.roots)?;
            workspace.index(&index_request, &ctxpack_api::Control::new())
        })
        .await?;
        app.metrics
            .indexed(started.elapsed().as_secs_f64(), summary.processed);
        Ok(match shown.format.as_deref() {
            None | Some("json") => json_text(format!("{}\n", summary.to_json())),
            Some("text") => text(Format::Text, format!("{summary}\n")),
            Some(other) => {
                return Err(failure(&Error::invalid_field(
                    "format",
                    format!("unknown format `{other}`: expected text or json"),
                )));
            }
        })
    })
    .await
}

/// `?format=text|json` of the commands that print either.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FormatQuery {
    format: Option<String>,
}

/// `?format=text|json&limit=N` of the ledger's list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogQuery {
    format: Option<String>,
    limit: Option<usize>,
}

/// Whether `format` asks for JSON (the default) rather than text.
fn wants_json(format: Option<&str>) -> Result<bool, Refusal> {
    match format {
        None | Some("json") => Ok(true),
        Some("text") => Ok(false),
        Some(other) => Err(failure(&Error::invalid_field(
            "format",
            format!("unknown format `{other}`: expected text or json"),
        ))),
    }
}

async fn snapshots(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    RawQuery(raw): RawQuery,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Read)?;
        let json = wants_json(query_string::<FormatQuery>(raw)?.format.as_deref())?;
        let output = blocking(app.clone(), move || {
            crate::present::status(
                &app.access.registry.workspace(&grant, &app.access.roots)?,
                json,
            )
        })
        .await?;
        Ok(listed(json, output))
    })
    .await
}

async fn query(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    RawQuery(raw): RawQuery,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Read)?;
        let json = wants_json(query_string::<FormatQuery>(raw)?.format.as_deref())?;
        let bytes = read_body(request, app.max_body_bytes).await?;
        let query_request: QueryRequest = body(&bytes)?;
        let output = blocking(app.clone(), move || {
            let workspace = app.access.registry.workspace(&grant, &app.access.roots)?;
            crate::present::query(&workspace, &query_request, json)
                .map_err(|e| indexed_on_the_server(e, &repo))
        })
        .await?;
        Ok(listed(json, output))
    })
    .await
}

async fn log(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    RawQuery(raw): RawQuery,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Read)?;
        let listing: LogQuery = query_string(raw)?;
        let json = wants_json(listing.format.as_deref())?;
        let limit = listing.limit.unwrap_or(ctxpack_api::DEFAULT_LOG_LIMIT);
        let output = blocking(app.clone(), move || {
            let log = app
                .access
                .registry
                .workspace(&grant, &app.access.roots)?
                .log(limit)?;
            Ok(crate::present::log(&log, json))
        })
        .await?;
        Ok(listed(json, output))
    })
    .await
}

async fn show(
    State(app): State<Arc<App>>,
    Path((repo, id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Read)?;
        let shown: ShowQuery = query_string(raw)?;
        let (pretty, dropped) = (shown.pretty, shown.dropped);
        let (format, view) = Rendering {
            format: shown.format,
            view: shown.view,
            pretty,
        }
        .parse()?;
        let (shown_format, output) = blocking(app.clone(), move || {
            let shown = app
                .access
                .registry
                .workspace(&grant, &app.access.roots)?
                .show(&id)?;
            let shown_format = if shown.exact_output.is_some() && format.is_none() {
                Format::Json
            } else {
                format.unwrap_or(shown.rendering.format)
            };
            Ok((
                shown_format,
                crate::present::shown(shown, dropped, format, view, pretty),
            ))
        })
        .await?;
        Ok(text(
            if dropped { Format::Text } else { shown_format },
            output,
        ))
    })
    .await
}

async fn tool(
    State(app): State<Arc<App>>,
    Path((repo, name)): Path<(String, String)>,
    request: axum::http::Request<axum::body::Body>,
) -> Response {
    run(async move {
        let grant = authorize(grant_of(request.extensions()), &repo, Scope::Read)?;
        let spec = crate::mcp::lookup(&name).ok_or_else(|| {
            failure(
                &Error::not_found(format!("no tool named `{name}`")).with_hint(
                    ctxpack_api::Hint::Advice("list the tools over MCP (`tools/list`)".into()),
                ),
            )
        })?;
        let needs = match spec.scope() {
            crate::mcp::Scope::Read => Scope::Read,
            crate::mcp::Scope::Write => Scope::Write,
        };
        let grant = authorize(Some(&grant), &repo, needs)?;
        let bytes = read_body(request, app.max_body_bytes).await?;
        let arguments: serde_json::Map<String, serde_json::Value> = body(&bytes)?;
        let reply = blocking(app.clone(), move || {
            let workspace = app.access.registry.workspace(&grant, &app.access.roots)?;
            spec.run(
                crate::mcp::Host::Team,
                &workspace,
                &arguments,
                &ctxpack_api::Control::new(),
            )
        })
        .await?;
        Ok(match reply.canonical() {
            Some(json) => json_text(format!("{json}\n")),
            None => text(Format::Text, reply.text),
        })
    })
    .await
}

/// The body, read up to `limit` bytes; over it, 413.
async fn read_body(
    request: axum::http::Request<axum::body::Body>,
    limit: usize,
) -> Result<Bytes, Refusal> {
    axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|_| {
            refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the request body is larger than {limit} bytes"),
                "send a smaller request",
            )
        })
}

async fn run(handler: impl Future<Output = Result<Response, Refusal>>) -> Response {
    handler.await.unwrap_or_else(IntoResponse::into_response)
}

async fn ready(State(app): State<Arc<App>>) -> Response {
    match blocking(app.clone(), move || {
        app.access.registry.repos().map(|r| r.len())
    })
    .await
    {
        Ok(repos) => axum::Json(json!({"ready": true, "repos": repos})).into_response(),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"ready": false})),
        )
            .into_response(),
    }
}

async fn metrics(State(app): State<Arc<App>>, _headers: HeaderMap) -> Response {
    let mut response = app.metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response's status and body.
    fn read(response: Response) -> (u16, String) {
        let status = response.status().as_u16();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let bytes = runtime
            .block_on(axum::body::to_bytes(response.into_body(), 1 << 20))
            .expect("a body");
        (status, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
    }

    /// Every surface tells every kind of failure alike: the command line's exit code and
    /// envelope, the server's status and JSON, the web view's page and status, and the
    /// `--server` client, which reads the server's answer back as the error it was and phrases
    /// it as the command line phrases the local one.
    #[test]
    fn every_surface_tells_every_error_kind_alike() {
        for kind in ErrorKind::ALL {
            let message = format!("a {} failure", kind.name());
            let error = Error::new(kind, message.clone())
                .with_hint(Hint::Advice("try <this> & that".into()));
            let cli = CliFailure::new(&error, None);
            let envelope = cli.envelope();
            assert_eq!(envelope["error"]["kind"], kind.name(), "{kind:?}");
            assert_eq!(
                envelope["error"]["exitCode"],
                crate::exit::exit_code(kind),
                "{kind:?}"
            );
            assert_eq!(cli.hint.as_deref(), Some("try <this> & that"), "{kind:?}");

            let (status, json) = read(failure(&error).into_response());
            assert_eq!(status, crate::exit::http_status(kind).as_u16(), "{kind:?}");
            let sent: serde_json::Value = serde_json::from_str(&json).expect("JSON");
            assert_eq!(sent, envelope, "{kind:?}");

            let (page_status, page) = read(crate::web::failure(&error, None));
            assert_eq!(page_status, status, "{kind:?}");
            assert!(page.contains(&message), "{kind:?}: {page}");
            assert!(
                page.contains("try &lt;this&gt; &amp; that"),
                "{kind:?}: {page}"
            );

            let back = crate::client::reported(status, &json);
            assert_eq!(back.kind(), kind);
            assert_eq!(back.message(), error.message(), "{kind:?}");
            assert_eq!(back.hint(), error.hint(), "{kind:?}");
            assert_eq!(
                CliFailure::new(&back, None).envelope(),
                envelope,
                "{kind:?}"
            );
        }
    }
}
