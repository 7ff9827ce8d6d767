//! HTTPS for a public server: a certificate chain and its private key from PEM files,
//! checked to belong together before anything is served, and the same router behind
//! rustls (TLS 1.3, ring, as the node's QUIC uses it).

use crate::error::WebError;
use axum::Router;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Loads `cert` (PEM, the server's certificate first, then its chain) and `key` (PEM, a
/// PKCS#8, PKCS#1 or SEC1 private key) and checks the key is the certificate's.
pub(crate) fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, WebError> {
    let bad = |path: &Path, why: String| WebError::Tls {
        path: path.to_path_buf(),
        why,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(cert, pem_error(e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(cert, pem_error(e)))?;
    if certs.is_empty() {
        return Err(bad(cert, "holds no PEM certificate".into()));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, pem_error(e)))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| bad(cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .map_err(|e| {
            bad(
                key,
                format!(
                    "is not the private key of the certificate in {} ({e})",
                    cert.display()
                ),
            )
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn pem_error(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => {
            "holds no PEM item of the kind expected".into()
        }
        other => format!("not PEM as expected: {other:?}"),
    }
}

/// Serves `router` over TLS on `listener` until the process ends: each connection's
/// handshake and requests run in a task of their own, so a slow client holds up nobody.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
) -> std::io::Result<()> {
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await else {
                return;
            };
            let io = hyper_util::rt::TokioIo::new(tls);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}
