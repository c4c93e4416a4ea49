//! What the HTTP front ends run on: the async runtime, a listener, and who may ask a server
//! for what, how often. `serve` (the JSON API and MCP) and `web` (the pages) both build on it,
//! and neither imports the other's internals: the server mounts the web view's router and
//! hands it the [`Access`] it checks requests against.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use ctxpack_api::Error;
use ctxpack_api::server::ServerRegistry;

/// Who may ask a server for what, and how often: the registry of repositories and tokens, the
/// roots its repositories must lie under, and each token's rate.
pub(crate) struct Access {
    pub(crate) registry: ServerRegistry,
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) limiter: Limiter,
}

/// A per-token token bucket: `rate` requests a second, in bursts of up to `rate`.
pub(crate) struct Limiter {
    rate: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl Limiter {
    pub(crate) fn new(rate: u32) -> Limiter {
        Limiter {
            rate: f64::from(rate),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request for `token`, or says how many whole seconds to wait.
    pub(crate) fn take(&self, token: &str) -> Result<(), u64> {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let (level, last) = buckets.entry(token.to_owned()).or_insert((self.rate, now));
        *level = (*level + now.duration_since(*last).as_secs_f64() * self.rate).min(self.rate);
        *last = now;
        if *level >= 1.0 {
            *level -= 1.0;
            return Ok(());
        }
        Err(((1.0 - *level) / self.rate).ceil().max(1.0) as u64)
    }
}

/// The async runtime a server runs on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the async runtime: {e}")))
}

/// Listens on `address` (port 0 picks a free one); returns the listener and where it is.
pub(crate) async fn bind(
    address: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), Error> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| Error::invalid_field("listen", format!("cannot listen on {address}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::internal(format!("no local address: {e}")))?;
    Ok((listener, local))
}
