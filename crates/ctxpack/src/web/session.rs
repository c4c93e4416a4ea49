//! Signing in to the web view: a token (or the local run's secret) exchanged for a session
//! cookie, checked again on every request, and the viewer it makes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use ctxpack_api::Error;
use ctxpack_api::server::{Grant, now, random_secret};
use serde::Deserialize;

use super::{
    COOKIE, MAX_SESSIONS, SESSION_TTL, SESSIONS_PER_TOKEN, Site, Web, failure, html, pages, plain,
    redirect, too_many,
};
use crate::host::Limiter;

/// A browser signed in: what it signed in with, and since when.
pub(super) struct Session {
    /// The token it was made from (a server's); `None` locally.
    token: Option<String>,
    created: Instant,
}

/// Who is asking: a grant on a server, anyone holding the local session.
#[derive(Clone)]
pub(super) enum Viewer {
    Server(Grant),
    Local,
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

/// The viewer, or the page that asks them to sign in.
pub(super) async fn signed_in(web: &Arc<Web>, headers: &HeaderMap) -> Result<Viewer, Response> {
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

pub(super) async fn login(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
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

pub(super) async fn logout(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
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

impl Web {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a session and returns its id.
    pub(super) fn open_session(&self, token: Option<String>) -> Result<String, Error> {
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

    pub(super) fn cookie(&self, id: &str) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            SESSION_TTL.as_secs()
        ))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The viewer of a request's session, checking a server's token again and taking one
    /// request from the token's rate; `Err` with the seconds to wait when over it.
    pub(super) async fn viewer(
        self: &Arc<Self>,
        headers: &HeaderMap,
    ) -> Result<Option<Viewer>, u64> {
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
}
