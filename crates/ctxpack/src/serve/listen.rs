//! Accepting and serving the connections of `ctxpack serve`, with the limits that keep a slow
//! or greedy client from holding the server.
//!
//! Every connection holds a file descriptor until it closes, so a client that opens
//! connections and never finishes a request could exhaust them and leave the probes and every
//! other client unanswered. Four limits bound what one client can hold:
//!
//! - a connection must deliver a request's headers within the header timeout (hyper's
//!   `header_read_timeout`, which also runs while a kept-alive connection waits for its next
//!   request, and here bounds a TLS handshake before the first request);
//! - a request's body must arrive within the body timeout, extended by a second for every
//!   so many bytes received (a minimum rate, [`body_deadline`]), or the request is answered
//!   408 and its connection closed;
//! - one client address holds at most so many connections: more are closed as they are
//!   accepted ([`Addresses`]);
//! - the server holds at most so many connections in all: at the limit it stops accepting until
//!   one closes, and new connections wait in the listening socket's backlog.
//!
//! `axum::serve` sets no timer on hyper, so none of this can be configured through it: the
//! accept loop here serves the router over hyper's HTTP/1 connections itself, plain or over TLS,
//! with a graceful shutdown whose deadline drops what is still in flight.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ctxpack_api::ErrorKind;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::exit::envelope;

/// The connection limits of a server, from its flags.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// How long a connection may take to deliver a request's headers, or to start its next
    /// request once kept alive (and, over TLS, to finish its handshake).
    pub(crate) header_timeout: Duration,
    /// The most connections held at once.
    pub(crate) max_connections: usize,
    /// The most connections one client address holds at once.
    pub(crate) max_connections_per_ip: usize,
    /// How long in-flight connections may finish after the stop signal.
    pub(crate) shutdown_timeout: Duration,
}

/// How often a repeated event of the accept loop (a refused address, a full server, a failed
/// accept) is logged at most: a client hammering the limits must not flood the log.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// How long the accept loop pauses after a failed accept (out of file descriptors and the like)
/// instead of spinning on it.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` (over TLS with `tls`) within `limits` until `stop` resolves,
/// then stops accepting and gives the connections in flight `limits.shutdown_timeout` to
/// finish; whatever is left is dropped with the runtime, and the deadline is logged.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: Limits,
    stop: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let addresses = Arc::new(Addresses::new(limits.max_connections_per_ip));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut full = Throttle::default();
    let mut refused = Throttle::default();
    let mut failed = Throttle::default();
    let mut stop = std::pin::pin!(stop);
    loop {
        // A slot first, then the connection: at the limit, new connections wait in the
        // backlog rather than take a descriptor each.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if let Some(times) = full.tick() {
                    tracing::warn!(
                        max_connections = limits.max_connections,
                        times,
                        "connection limit reached: new connections wait until one closes"
                    );
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        // The semaphore is never closed; if it were, nothing could be served.
                        Err(_) => break,
                    },
                    () = &mut stop => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    if let Some(times) = failed.tick() {
                        tracing::warn!(error = %e, times, "accept failed");
                    }
                    drop(slot);
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Some(held) = addresses.admit(peer.ip()) else {
            drop(stream);
            if let Some(times) = refused.tick() {
                tracing::warn!(
                    address = %peer.ip(),
                    max_connections_per_ip = limits.max_connections_per_ip,
                    times,
                    "connections from one address over its limit: closed at accept"
                );
            }
            continue;
        };
        // Small answers go out at once rather than wait for more to send.
        let _ = stream.set_nodelay(true);
        let service = PeerService {
            router: TowerToHyperService::new(router.clone()),
            peer,
        };
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            // Both are released when the connection ends, however it ends.
            let _slot = slot;
            let _held = held;
            match tls {
                None => connection(&builder, stream, service, watcher).await,
                Some(acceptor) => {
                    let handshake =
                        crate::tls::handshake(&acceptor, stream, peer, limits.header_timeout);
                    if let Some(stream) = handshake.await {
                        connection(&builder, stream, service, watcher).await;
                    }
                }
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            seconds = limits.shutdown_timeout.as_secs(),
            "shutdown deadline passed: dropping the requests still in flight"
        );
    }
}

/// Serves one connection until it closes, or until a graceful shutdown lets it finish its
/// request in flight.
async fn connection<I>(builder: &http1::Builder, io: I, service: PeerService, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let peer = service.peer;
    if let Err(e) = watcher
        .watch(builder.serve_connection(TokioIo::new(io), service))
        .await
    {
        // A header timeout is also how an idle kept-alive connection ends: not worth a line
        // at the default level.
        if e.is_timeout() {
            tracing::debug!(%peer, "no request headers within the header timeout: closed");
        } else {
            tracing::debug!(%peer, error = %e, "connection ended with an error");
        }
    }
}

/// The router as one connection's hyper service: each request carries the client's address
/// (`ConnectInfo<SocketAddr>`), for the logs.
#[derive(Clone)]
struct PeerService {
    router: TowerToHyperService<Router>,
    peer: SocketAddr,
}

impl hyper::service::Service<hyper::Request<Incoming>> for PeerService {
    type Response = <TowerToHyperService<Router> as hyper::service::Service<
        hyper::Request<Incoming>,
    >>::Response;
    type Error =
        <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<Incoming>>>::Error;
    type Future =
        <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<Incoming>>>::Future;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        hyper::service::Service::call(&self.router, request)
    }
}

/// How many connections each client address holds, so one address cannot hold them all.
/// An address is forgotten when its last connection closes, so this holds at most as many
/// entries as there are connections.
struct Addresses {
    limit: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

impl Addresses {
    fn new(limit: usize) -> Addresses {
        Addresses {
            limit,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// A place for one more connection from `ip`, or `None` when it holds its limit.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Held> {
        // A client reaching a dual-stack socket over IPv4 is the same client as over IPv4.
        let ip = ip.to_canonical();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(ip).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(Held {
            addresses: self.clone(),
            ip,
        })
    }
}

/// One connection's place in [`Addresses`], given back when dropped.
struct Held {
    addresses: Arc<Addresses>,
    ip: IpAddr,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self
            .addresses
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Entry::Occupied(mut entry) = held.entry(self.ip) {
            *entry.get_mut() = entry.get().saturating_sub(1);
            if *entry.get() == 0 {
                entry.remove();
            }
        }
    }
}

/// Lets an event be logged at most once per [`LOG_INTERVAL`], counting the times in between.
#[derive(Default)]
struct Throttle {
    last: Option<std::time::Instant>,
    times: u64,
}

impl Throttle {
    /// Counts one more time; when a line is due, how many times it stands for.
    fn tick(&mut self) -> Option<u64> {
        self.times += 1;
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < LOG_INTERVAL)
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.times))
    }
}

/// How fast a request's body must come: within `timeout` of its headers, plus a second for
/// every `min_rate` bytes received (none when it is 0), as a slow link's long body may take
/// longer than a short one while a trickle cannot hold a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyPace {
    pub(crate) timeout: Duration,
    pub(crate) min_rate: u64,
}

impl BodyPace {
    /// When a body that started at `start` and has brought `received` bytes must have ended.
    fn deadline(self, start: Instant, received: u64) -> Option<Instant> {
        let earned = match self.min_rate {
            0 => Duration::ZERO,
            rate => Duration::from_millis(received.saturating_mul(1000) / rate),
        };
        start.checked_add(self.timeout.saturating_add(earned))
    }
}

/// A layer's function that holds every request's body to `pace`, counted from when its
/// headers were read: a slower body fails its reader, and the request is answered 408 with the
/// connection closed, whatever the route made of the failure; the server logs it. Requests
/// whose handlers never read the body are not affected (hyper closes their connection rather
/// than wait for the rest of it).
pub(crate) async fn body_deadline(
    State(pace): State<BodyPace>,
    request: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let Some(at) = pace.deadline(start, 0) else {
        return next.run(request).await;
    };
    let expired = Arc::new(AtomicBool::new(false));
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let request = request.map(|body| {
        Body::new(Deadline {
            body,
            pace,
            start,
            received: 0,
            at,
            sleep: None,
            expired: expired.clone(),
        })
    });
    let response = next.run(request).await;
    if !expired.load(Ordering::Acquire) {
        return response;
    }
    tracing::warn!(
        peer = peer.map(|p| p.to_string()),
        %method,
        path,
        seconds = pace.timeout.as_secs(),
        min_rate = pace.min_rate,
        "request body too slow: answered 408 and closed the connection"
    );
    too_slow(pace)
}

/// The 408 of a body slower than `pace`, closing the connection (the rest of the body may
/// still be on its way).
fn too_slow(pace: BodyPace) -> Response {
    let message = match pace.min_rate {
        0 => format!(
            "the request body did not arrive within {} s",
            pace.timeout.as_secs()
        ),
        rate => format!(
            "the request body came slower than {rate} bytes a second after its first {} s",
            pace.timeout.as_secs()
        ),
    };
    let body = envelope(
        ErrorKind::InvalidInput,
        &message,
        Some(
            "send the body at once, or ask the operator for a longer --body-timeout or a lower --body-min-rate",
        ),
    );
    let mut response = (StatusCode::REQUEST_TIMEOUT, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The error a body reader gets once the body's deadline has passed.
#[derive(Debug)]
struct BodyTooSlow;

impl std::fmt::Display for BodyTooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTooSlow {}

/// A request body that fails once its deadline passes before it has ended, the deadline
/// moving later as bytes arrive; `expired` tells the layer it did.
struct Deadline {
    body: Body,
    pace: BodyPace,
    start: Instant,
    received: u64,
    at: Instant,
    /// Made on the first read that has to wait, so a body read at once costs no timer.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    expired: Arc<AtomicBool>,
}

impl Deadline {
    /// Moves the deadline for `bytes` more received.
    fn earn(&mut self, bytes: usize) {
        if self.pace.min_rate == 0 {
            return;
        }
        self.received = self.received.saturating_add(bytes as u64);
        if let Some(at) = self.pace.deadline(self.start, self.received) {
            self.at = at;
            if let Some(sleep) = self.sleep.as_mut() {
                sleep.as_mut().reset(at);
            }
        }
    }
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            if let Some(Ok(frame)) = &frame
                && let Some(data) = frame.data_ref()
            {
                this.earn(data.len());
            }
            return Poll::Ready(frame);
        }
        let at = this.at;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.expired.store(true, Ordering::Release);
        Poll::Ready(Some(Err(axum::Error::new(BodyTooSlow))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    use super::{Addresses, LOG_INTERVAL, Throttle};

    #[test]
    fn an_address_holds_its_limit_and_gets_places_back() {
        let addresses = Arc::new(Addresses::new(2));
        let one = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let other = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        let first = addresses.admit(one).expect("a place");
        let second = addresses.admit(one).expect("a place");
        assert!(addresses.admit(one).is_none());
        // The same address reaching a dual-stack socket is the same client.
        let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped());
        assert!(addresses.admit(mapped).is_none());
        let elsewhere = addresses
            .admit(other)
            .expect("another address has its own places");
        drop(first);
        let third = addresses.admit(one).expect("a place given back");
        drop((second, third, elsewhere));
        // Forgotten once nothing is held.
        assert!(addresses.held.lock().expect("not poisoned").is_empty());
    }

    #[test]
    fn a_throttled_event_is_logged_once_per_interval_with_its_count() {
        let mut throttle = Throttle::default();
        assert_eq!(throttle.tick(), Some(1));
        assert_eq!(throttle.tick(), None);
        assert_eq!(throttle.tick(), None);
        throttle.last = throttle
            .last
            .and_then(|last| last.checked_sub(LOG_INTERVAL));
        assert_eq!(throttle.tick(), Some(3));
    }
}
