//! A public server over TLS: a certificate and key that do not belong together are
//! refused naming the key file; a matching pair serves HTTPS, where every page needs the
//! access key (401 and the key form without it, the page with it), and a wrong `Host`
//! is still refused.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "test-key-0123456789abcdef";

struct Pair {
    cert_pem: String,
    cert_der: Vec<u8>,
    key_pem: String,
}

/// DER as a PEM block (rcgen's own PEM output is a feature the workspace leaves off).
fn pem(label: &str, der: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for chunk in der.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let lines: Vec<&str> = (0..b64.len())
        .step_by(64)
        .map(|i| &b64[i..(i + 64).min(b64.len())])
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

fn pair() -> Pair {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    Pair {
        cert_pem: pem("CERTIFICATE", c.cert.der()),
        cert_der: c.cert.der().to_vec(),
        key_pem: pem("PRIVATE KEY", &c.key_pair.serialize_der()),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

fn config(dir: &Path, cert: PathBuf, key: PathBuf) -> dyno_web::Config {
    dyno_web::Config::new(dir.join("none.db"), "127.0.0.1:0".parse().unwrap())
        .public(write(dir, "key", &format!("{KEY}\n")))
        .tls(dyno_web::TlsPair { cert, key })
}

#[test]
fn a_certificate_and_a_key_that_do_not_match_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (pair(), pair());
    let cert = write(dir.path(), "a.crt", &a.cert_pem);
    let other = write(dir.path(), "b.key", &b.key_pem);
    let e = dyno_web::Server::bind(config(dir.path(), cert.clone(), other.clone()))
        .err()
        .expect("refused");
    let text = e.to_string();
    assert!(matches!(e, dyno_web::WebError::Tls { .. }), "{text}");
    assert!(
        text.contains(&other.display().to_string()) && text.contains("not the private key"),
        "{text}"
    );
    // A file that is not PEM is named too.
    let garbage = write(dir.path(), "garbage.crt", "not a certificate\n");
    let key = write(dir.path(), "a.key", &a.key_pem);
    let text = dyno_web::Server::bind(config(dir.path(), garbage.clone(), key))
        .err()
        .expect("refused")
        .to_string();
    assert!(text.contains(&garbage.display().to_string()), "{text}");
    // And a public server without a key is refused.
    let no_key = dyno_web::Config {
        allow_remote: true,
        ..dyno_web::Config::new(dir.path().join("none.db"), "127.0.0.1:0".parse().unwrap())
    };
    assert!(matches!(
        dyno_web::Server::bind(no_key),
        Err(dyno_web::WebError::PublicWithoutKey)
    ));
}

/// One HTTPS request: the status code, the headers and the body.
async fn https_get(
    connector: &tokio_rustls::TlsConnector,
    addr: std::net::SocketAddr,
    host: &str,
    path: &str,
    auth: Option<&str>,
) -> (u16, String, String) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let auth = auth.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    // A peer that closes without close_notify is fine here: the response is complete.
    let _ = tls.read_to_end(&mut raw).await;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (code, head.to_string(), body.to_string())
}

#[test]
fn https_pages_need_the_key_and_a_known_host() {
    let dir = tempfile::tempdir().unwrap();
    let p = pair();
    let cert = write(dir.path(), "s.crt", &p.cert_pem);
    let key = write(dir.path(), "s.key", &p.key_pem);
    let server = dyno_web::Server::bind(config(dir.path(), cert, key)).unwrap();
    let addr = server.local_addr();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    std::thread::spawn(move || server.run());

    let mut roots = rustls::RootCertStore::empty();
    roots.add(p.cert_der.clone().into()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let host = addr.to_string();
        let (code, head, body) = https_get(&connector, addr, &host, "/live", None).await;
        assert_eq!(code, 401, "{head}");
        assert!(head
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"));
        assert!(body.contains("action=\"/login\"") && !body.contains(KEY));
        let (code, _, body) = https_get(&connector, addr, &host, "/live", Some(KEY)).await;
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("Nothing is watched"));
        let (code, _, _) = https_get(
            &connector,
            addr,
            &host,
            "/live",
            Some("wrong-key-0123456789"),
        )
        .await;
        assert_eq!(code, 401);
        // A name the server was not given is refused even with the key.
        let (code, _, body) =
            https_get(&connector, addr, "attacker.example", "/live", Some(KEY)).await;
        assert_eq!(code, 421, "{body}");
    });
}
