//! The web view's pages: the ledger's list, a pack and the same pack built again, two packs
//! compared, the form that builds one, a file's lines, and the quality report.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use ctxpack_api::{
    Budget, BudgetCovers, Error, Format, LogEntry, LogFilter, PackOptions, Recorded, RenderOptions,
    Selector, SnapshotPackRequest, View, Workspace, render,
};
use serde::Deserialize;
use serde_json::Value;
use subtle::ConstantTimeEq as _;

use super::pages::{ListQuery, PAGE_SIZE, PackView, TryForm};
use super::session::{Viewer, signed_in};
use super::{Site, Web, blocking, failure, html, pages, redirect, too_many};

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

pub(super) async fn home(
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
            // Compared in time that depends on the lengths only.
            let matches = secret
                .as_deref()
                .is_some_and(|s| s.as_bytes().ct_eq(given.as_bytes()).into());
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

pub(super) async fn quality(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
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

pub(super) async fn list(
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

pub(super) async fn show(
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

pub(super) async fn again(
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

pub(super) async fn compare(
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

pub(super) async fn try_form(
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

pub(super) async fn try_build(
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

pub(super) async fn file(
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
