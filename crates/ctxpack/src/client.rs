//! The command line as a client of `ctxpack serve`: `--server URL --repo NAME` on the read
//! commands and `index` sends the request the local command would build and prints what the
//! server answers, which is what the local command prints. The token comes from `CTXPACK_TOKEN`
//! (never a flag: flags are visible to every user of the machine); an `https://` server is
//! checked against the system's roots and `CTXPACK_SERVER_CA`. A failure the server
//! reports is the same failure locally: its envelope becomes the error, so the message,
//! hint and exit code match.

use std::time::Duration;

use axum::body::Bytes;
use clap::Args;
use ctxpack_api::{Error, ErrorKind, Hint, visible};
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// `--server` and `--repo`: ask a ctxpack server instead of the local store.
#[derive(Clone, Debug, Default, Args)]
pub struct ServerArgs {
    /// Ask this ctxpack server (`http://HOST:PORT` or `https://…`) instead of the local store, with the token
    /// in CTXPACK_TOKEN.
    #[arg(long, value_name = "URL", requires = "repo")]
    pub server: Option<String>,
    /// The repository's name on the server.
    #[arg(long, value_name = "NAME", requires = "server")]
    pub repo: Option<String>,
}

/// The largest answer read from a server.
const MAX_RESPONSE_BYTES: usize = 256 << 20;
/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a whole request may take (a write token's pack may index first).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// A server and repository to send requests to.
#[derive(Debug)]
pub struct Remote {
    tls: bool,
    authority: String,
    prefix: String,
    repo: String,
    token: String,
}

impl Remote {
    /// The server the flags name, if any; fails on a malformed URL or a missing token.
    pub fn from_args(args: &ServerArgs) -> Result<Option<Remote>, Error> {
        let (Some(server), Some(repo)) = (&args.server, &args.repo) else {
            return Ok(None);
        };
        let (tls, authority, prefix) = address(server)?;
        let token = std::env::var("CTXPACK_TOKEN").map_err(|_| {
            Error::invalid_field(
                "server",
                "no token: set CTXPACK_TOKEN to a token from `ctxpack serve token create`",
            )
        })?;
        Ok(Some(Remote {
            tls,
            authority,
            prefix,
            repo: repo.clone(),
            token: token.trim().to_owned(),
        }))
    }

    /// `GET /v1/repos/REPO/{path}?{query}`: the answer's text.
    pub fn get(&self, path: &str, query: &[(&str, String)]) -> Result<String, Error> {
        self.send(hyper::Method::GET, path, query, Vec::new())
    }

    /// `POST /v1/repos/REPO/{path}?{query}` with a JSON body: the answer's text.
    pub fn post(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: &impl serde::Serialize,
    ) -> Result<String, Error> {
        let body = serde_json::to_vec(body).expect("a request serializes");
        self.send(hyper::Method::POST, path, query, body)
    }

    fn send(
        &self,
        method: hyper::Method,
        path: &str,
        query: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<String, Error> {
        let repo: String = url_segment(&self.repo);
        let mut target = format!("{}/v1/repos/{repo}/{path}", self.prefix);
        if !query.is_empty() {
            target.push('?');
            target.push_str(&serde_urlencoded::to_string(query).expect("query pairs encode"));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::internal(format!("cannot start the async runtime: {e}")))?;
        let unreachable = |e: &dyn std::fmt::Display| {
            Error::new(
                ErrorKind::Io,
                format!("cannot reach the server at {}: {e}", self.authority),
            )
            .with_field("server")
        };
        let answer = runtime.block_on(async {
            tokio::time::timeout(REQUEST_TIMEOUT, async {
                let stream = tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    tokio::net::TcpStream::connect(&self.authority),
                )
                .await
                .map_err(|e| unreachable(&e))?
                .map_err(|e| unreachable(&e))?;
                let request = hyper::Request::builder()
                    .method(method)
                    .uri(&target)
                    .header(HOST, &self.authority)
                    .header(AUTHORIZATION, format!("Bearer {}", self.token))
                    .header(CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .map_err(|e| Error::invalid_field("server", e.to_string()))?;
                if !self.tls {
                    return exchange(stream, request).await.map_err(|e| unreachable(&e));
                }
                let host = self
                    .authority
                    .rsplit_once(':')
                    .map_or(self.authority.as_str(), |(host, _)| host)
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned();
                let name = rustls::pki_types::ServerName::try_from(host)
                    .map_err(|e| Error::invalid_field("server", e.to_string()))?;
                let connector = tokio_rustls::TlsConnector::from(crate::tls::client_config()?);
                let stream = connector
                    .connect(name, stream)
                    .await
                    .map_err(|e| unreachable(&e))?;
                exchange(stream, request).await.map_err(|e| unreachable(&e))
            })
            .await
            .map_err(|e| unreachable(&e))?
        });
        runtime.shutdown_background();
        let (status, bytes) = answer?;
        // What a server sends reaches a terminal: its controls are shown, not obeyed, as on
        // every other surface.
        let text = String::from_utf8_lossy(&bytes);
        if status.is_success() {
            return Ok(visible(&text).into_owned());
        }
        Err(self.addressed(reported(status.as_u16(), &text)))
    }

    /// The server's advice with this server's address where it says `--server URL`: the
    /// server answers every client alike and does not know how this one reached it.
    fn addressed(&self, error: Error) -> Error {
        let Some(Hint::Advice(advice)) = error.hint() else {
            return error;
        };
        if !advice.contains("--server URL ") {
            return error;
        }
        let scheme = if self.tls { "https" } else { "http" };
        let url = format!("{scheme}://{}{}", self.authority, self.prefix);
        let advice = advice.replace("--server URL ", &format!("--server {url} "));
        error.with_hint(Hint::Advice(advice))
    }
}

/// The scheme (whether TLS), `host:port` (without a port, the scheme's) and path prefix of a
/// server URL.
fn address(server: &str) -> Result<(bool, String, String), Error> {
    let (tls, rest) = match (
        server.strip_prefix("http://"),
        server.strip_prefix("https://"),
    ) {
        (Some(rest), _) => (false, rest),
        (_, Some(rest)) => (true, rest),
        _ => {
            return Err(Error::invalid_field(
                "server",
                format!("`{server}` is not an http:// or https:// URL"),
            ));
        }
    };
    let (authority, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    if authority.is_empty()
        || authority.contains('@')
        || !authority
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
    {
        return Err(Error::invalid_field(
            "server",
            format!("`{server}` does not name a host and port"),
        ));
    }
    // Without a port, the scheme's.
    let authority = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'))
    {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    Ok((tls, authority, prefix.to_owned()))
}

/// Sends `request` over `stream` and reads the whole answer, at most
/// [`MAX_RESPONSE_BYTES`].
async fn exchange<S>(
    stream: S,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(hyper::StatusCode, Bytes), Box<dyn std::error::Error + Send + Sync>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    let status = response.status();
    let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await?
        .to_bytes();
    Ok((status, bytes))
}

/// A repository name as one path segment: names are `A-Z a-z 0-9 . _ -`, and anything else
/// is escaped so it cannot change the path.
pub fn url_segment(name: &str) -> String {
    /// Every byte but `A-Z a-z 0-9 . _ -`.
    const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'.')
        .remove(b'_')
        .remove(b'-');
    percent_encoding::utf8_percent_encode(name, ESCAPED).to_string()
}

/// The error a server's failure envelope describes.
pub(crate) fn reported(status: u16, text: &str) -> Error {
    let envelope: Option<Value> = serde_json::from_str(text).ok();
    let fields = envelope.as_ref().and_then(|v| v.get("error"));
    let Some(message) = fields
        .and_then(|f| f.get("message"))
        .and_then(Value::as_str)
    else {
        let excerpt: String = text.chars().take(200).collect();
        return Error::internal(format!(
            "the server answered {status}: {}",
            visible(&excerpt)
        ));
    };
    // The kind as named; a server that does not name it is read by its exit code.
    let named = fields
        .and_then(|f| f.get("kind"))
        .and_then(Value::as_str)
        .and_then(ErrorKind::from_name);
    let kind = named.unwrap_or_else(|| {
        match fields
            .and_then(|f| f.get("exitCode"))
            .and_then(Value::as_u64)
        {
            Some(2) => ErrorKind::InvalidInput,
            Some(3) => ErrorKind::NotFound,
            Some(4) => ErrorKind::Damaged,
            Some(5) => ErrorKind::Conflict,
            _ => ErrorKind::Internal,
        }
    });
    // The field as the API names it (a name, nothing else), and the message as the API
    // phrased it: the command line names the field again when it reports the error.
    let field = fields
        .and_then(|f| f.get("field"))
        .and_then(Value::as_str)
        .filter(|f| {
            !f.is_empty()
                && f.len() <= 64
                && f.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        });
    let error = match field {
        Some(field) => {
            Error::new(kind, visible(crate::exit::unflagged(field, message))).with_field(field)
        }
        None => Error::new(kind, visible(message)),
    };
    match fields.and_then(|f| f.get("hint")).and_then(Value::as_str) {
        Some(hint) => error.with_hint(Hint::Advice(visible(hint).into_owned())),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_comes_back_as_the_api_named_it_with_the_api_message() {
        let error = Error::invalid_field("top_k", "must be at least 1");
        let sent = crate::exit::CliFailure::new(&error, None);
        let back = reported(400, &sent.envelope().to_string());
        assert_eq!(back.field(), Some("top_k"));
        assert_eq!(back.message(), "must be at least 1");
        // Reported again by the command line, it reads as the local error does.
        assert_eq!(
            crate::exit::CliFailure::new(&back, None).message,
            sent.message
        );
        // A field that is not a name is not taken; the message stays as it came.
        let hostile = r#"{"error":{"kind":"invalid_input","exitCode":2,"message":"--x: bad","field":"x\u001b[2J"}}"#;
        let back = reported(400, hostile);
        assert_eq!(back.field(), None);
        assert_eq!(back.message(), "--x: bad");
    }

    #[test]
    fn envelopes_become_the_same_errors() {
        let error = reported(
            404,
            r#"{"error":{"code":"not_found","exitCode":3,"message":"snapshot x is not indexed","hint":"run it"}}"#,
        );
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert_eq!(error.message(), "snapshot x is not indexed");
        assert_eq!(error.hint(), Some(&Hint::Advice("run it".into())));
        // Every kind comes back as the kind it was, with its message and hint.
        for kind in ErrorKind::ALL {
            let sent = crate::exit::CliFailure {
                kind,
                message: format!("a {} failure", kind.name()),
                hint: Some("do this".into()),
                field: None,
                next: None,
            };
            let status = crate::exit::http_status(kind).as_u16();
            let error = reported(status, &sent.envelope().to_string());
            assert_eq!(error.kind(), kind);
            assert_eq!(error.message(), sent.message);
            assert_eq!(error.hint(), Some(&Hint::Advice("do this".into())));
        }
        let error = reported(502, "<html>bad gateway</html>");
        assert_eq!(error.kind(), ErrorKind::Internal);
        assert!(error.message().contains("502"));
    }

    /// A server's control characters are shown, never sent to the terminal: in the message,
    /// the hint, and a body that is no envelope.
    #[test]
    fn a_servers_controls_are_shown_not_obeyed() {
        let error = reported(
            400,
            r#"{"error":{"code":"invalid_input","exitCode":2,"message":"bad \u001b[2J\u0007","hint":"\u001b]0;owned\u0007"}}"#,
        );
        assert_eq!(error.message(), "bad ␛[2J␇");
        assert_eq!(error.hint(), Some(&Hint::Advice("␛]0;owned␇".into())));
        let error = reported(502, "\u{1b}[31mred");
        assert!(!error.message().contains('\u{1b}'), "{}", error.message());
    }

    #[test]
    fn a_url_without_a_port_takes_its_schemes() {
        let at = |server: &str| address(server).ok();
        let expect = |tls, authority: &str, prefix: &str| {
            Some((tls, authority.to_owned(), prefix.to_owned()))
        };
        assert_eq!(
            at("https://ctx.example.com/"),
            expect(true, "ctx.example.com:443", "")
        );
        assert_eq!(
            at("http://ctx.example.com"),
            expect(false, "ctx.example.com:80", "")
        );
        assert_eq!(
            at("https://ctx.example.com:8443/team"),
            expect(true, "ctx.example.com:8443", "/team")
        );
        assert_eq!(at("https://[::1]/x"), expect(true, "[::1]:443", "/x"));
    }

    #[test]
    fn urls_and_names() {
        let args = |server: &str| ServerArgs {
            server: Some(server.into()),
            repo: Some("app".into()),
        };
        for bad in [
            "https://x:1",
            "ftp://x",
            "http://",
            "http://user@x:1",
            "http://x y:1",
        ] {
            assert!(Remote::from_args(&args(bad)).is_err(), "{bad}");
        }
        assert_eq!(url_segment("a/../b"), "a%2F..%2Fb");
    }
}
