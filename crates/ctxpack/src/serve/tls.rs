//! TLS for `ctxpack serve --tls-cert FILE --tls-key FILE` (rustls on ring), and the client
//! side for `--server https://…` (the system's roots, plus `CTXPACK_SERVER_CA` for a private
//! authority).
//!
//! Handshakes run concurrently, each on its own task with a deadline, so a client that
//! connects and never speaks cannot hold up the others; at most [`MAX_HANDSHAKES`] are in
//! flight.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ctxpack_api::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most handshakes in flight at once.
const MAX_HANDSHAKES: usize = 256;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server configuration for a PEM certificate chain and private key.
pub(crate) fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, Error> {
    let bad = |field: &str, path: &Path, e: &dyn std::fmt::Display| {
        Error::invalid_field(field, format!("{}: {e}", path.display()))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect())
        .map_err(|e| bad("tls_cert", cert, &e))?;
    if certs.is_empty() {
        return Err(bad("tls_cert", cert, &"no certificate in the file"));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("tls_key", key, &e))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::internal(format!("TLS setup: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            Error::invalid_field(
                "tls_key",
                format!("the key does not fit the certificate: {e}"),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A listener that hands out connections whose TLS handshake has finished.
pub(crate) struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` and shakes hands with `config` in the background.
    pub(crate) fn new(
        tcp: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let (sender, ready) = tokio::sync::mpsc::channel(64);
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let handed = sender.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            drop(permit);
                            let _ = handed.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::info!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::info!(%peer, "TLS handshake timed out"),
                    }
                });
                if sender.is_closed() {
                    return;
                }
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task only ends with the listener: wait for shutdown.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The client configuration: the system's roots, plus the PEM certificates in the file
/// `CTXPACK_SERVER_CA` names, when it is set.
pub(crate) fn client_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(ca) = std::env::var_os("CTXPACK_SERVER_CA") {
        let path = Path::new(&ca);
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect())
            .map_err(|e| {
                Error::invalid_field(
                    "server",
                    format!("CTXPACK_SERVER_CA {}: {e}", path.display()),
                )
            })?;
        for cert in certs {
            roots.add(cert).map_err(|e| {
                Error::invalid_field(
                    "server",
                    format!("CTXPACK_SERVER_CA {}: {e}", path.display()),
                )
            })?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::internal(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
