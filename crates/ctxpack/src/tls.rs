//! TLS for `ctxpack serve --tls-cert FILE --tls-key FILE` (rustls on ring), and the client
//! side for `--server https://…` (the system's roots, plus `CTXPACK_SERVER_CA` for a private
//! authority).
//!
//! Handshakes run concurrently, each on its connection's task with the header timeout as its
//! deadline, so a client that connects and never speaks cannot hold up the others; the
//! connection limits of the accept loop (`serve::listen`) bound how many are in flight.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ctxpack_api::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

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

/// Shakes hands with the client on `stream`: the TLS stream, or `None` (logged) when the
/// handshake fails or takes longer than `timeout`, so a client that connects and never speaks
/// holds its connection no longer than one that never finishes its headers. Each connection
/// shakes hands on its own task, so a slow one holds up no other.
pub(crate) async fn handshake(
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    timeout: Duration,
) -> Option<TlsStream<TcpStream>> {
    match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            tracing::info!(%peer, error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::info!(%peer, "TLS handshake timed out");
            None
        }
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
