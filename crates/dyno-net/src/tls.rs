//! TLS for the QUIC ingress: a self-signed certificate made at start, and a client that
//! does not verify it.
//!
//! The ingress is a loopback benchmark endpoint, not a public service: there is no CA to
//! anchor a certificate in, and what keeps foreign clients out is the ALPN and the hello
//! carrying the genesis hash. So the client checks the server's handshake signatures
//! (the TLS 1.3 transcript stays authentic to the key the server presented) but not who
//! owns that key. Anything exposed beyond a test network needs a real certificate.

use std::sync::Arc;

use quinn::rustls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::error::NetError;

/// ALPN of the ingress protocol; a client offering another is refused in the handshake.
pub const ALPN: &[u8] = b"dyno-ingress/1";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server TLS configuration with a fresh self-signed certificate for "localhost".
pub fn server_config() -> Result<quinn::crypto::rustls::QuicServerConfig, NetError> {
    let setup = |e: &dyn std::fmt::Display| NetError::QuicSetup(e.to_string());
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).map_err(|e| setup(&e))?;
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| setup(&e))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| setup(&e))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(|e| setup(&e))
}

/// A client TLS configuration offering `alpn` and accepting any server certificate.
pub fn client_config(alpn: &[u8]) -> Result<quinn::crypto::rustls::QuicClientConfig, NetError> {
    let setup = |e: &dyn std::fmt::Display| NetError::QuicSetup(e.to_string());
    let provider = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| setup(&e))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerKey(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| setup(&e))
}

/// Accepts any certificate but still checks the handshake signatures made with its key.
#[derive(Debug)]
struct AnyServerKey(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServerKey {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
