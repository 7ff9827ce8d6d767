//! Who may read the pages: the `Host` a request names, and in public mode its access key.
//!
//! A loopback server answers only to `127.0.0.1:PORT`, `localhost:PORT` and `[::1]:PORT`,
//! so a web page elsewhere that rebinds its own host name to 127.0.0.1 cannot read the
//! store through the visitor's browser (DNS rebinding). A public server answers to IP
//! addresses (a rebinding attack needs a name), `localhost`, this machine's host name and
//! the names it was given ([`Config::server_names`](crate::Config::server_names)), and
//! only to requests that carry its access key: an `Authorization: Bearer KEY` header
//! (scripts, `curl`), or the cookie the key form sets (browsers: every page answers 401
//! with a form asking for the key, which posts to `/login`).
//!
//! The key is read from a file and kept only as its SHA-256 digest; the cookie holds a
//! second digest derived from it, so neither a cookie nor a page nor a log line ever
//! holds the key itself.

use crate::error::WebError;
use crate::markup::{esc, plain_page};
use axum::extract::{Form, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// Shortest key accepted: 16 characters (a key is typed or pasted once per browser).
pub(crate) const MIN_KEY_LEN: usize = 16;
/// The cookie that carries a browser's proof of the key.
const COOKIE: &str = "dyno_key";
/// How long a browser keeps it: 30 days.
const COOKIE_MAX_AGE_S: u64 = 30 * 86_400;

/// An access key, kept as its digest.
#[derive(Clone)]
pub(crate) struct AccessKey {
    digest: [u8; 32],
}

impl std::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessKey(..)")
    }
}

impl AccessKey {
    /// Reads the key from `path`: one line of at least [`MIN_KEY_LEN`] printable ASCII
    /// characters without spaces (surrounding whitespace and the final newline are
    /// ignored), in a file that other users can neither read nor write.
    pub(crate) fn from_file(path: &Path) -> Result<AccessKey, WebError> {
        let bad = |why: String| WebError::KeyFile {
            path: path.to_path_buf(),
            why,
        };
        let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
        if !meta.is_file() {
            return Err(bad("not a file".into()));
        }
        check_mode(&meta).map_err(bad)?;
        let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| bad("not text (one line of printable ASCII expected)".into()))?;
        let key = text.trim();
        if key.is_empty() {
            return Err(bad(
                "empty (write a key of at least 16 characters into it)".into()
            ));
        }
        if !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad(
                "holds spaces, line breaks or characters outside printable ASCII \
                 (one line, no spaces, expected)"
                    .into(),
            ));
        }
        if key.len() < MIN_KEY_LEN {
            return Err(bad(format!(
                "the key is {} characters; at least {MIN_KEY_LEN} are needed",
                key.len()
            )));
        }
        Ok(AccessKey::new(key))
    }

    pub(crate) fn new(key: &str) -> AccessKey {
        AccessKey {
            digest: Sha256::digest(key.as_bytes()).into(),
        }
    }

    /// Whether `presented` is the key (compared as digests, in constant time).
    fn matches(&self, presented: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        same(&d, &self.digest)
    }

    /// The cookie value that proves the key: a digest of the key's digest, so the cookie
    /// never holds the key.
    fn cookie_value(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"dyno serve cookie v1\0");
        h.update(self.digest);
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Byte-wise equality whose time does not depend on where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(unix)]
fn check_mode(meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o006 != 0 {
        return Err(format!(
            "other users can {} it (mode {mode:03o}); `chmod 600` it",
            if mode & 0o004 != 0 { "read" } else { "write" }
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_mode(_: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}

/// Which `Host` headers a server answers to.
#[derive(Debug, Clone)]
pub(crate) enum Hosts {
    /// Loopback: exactly these authorities (`127.0.0.1:PORT`, `localhost:PORT`...).
    Loopback(Vec<String>),
    /// Public: any IP address, `localhost`, and these names (lower case), on any port.
    Public(Vec<String>),
}

impl Hosts {
    /// The hosts of a server bound to `bound`; `names` are a public server's own names.
    pub(crate) fn new(bound: SocketAddr, public: bool, names: &[String]) -> Hosts {
        let port = bound.port();
        if public {
            let mut names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
            names.extend(dyno_proc::procfs::hostname().map(|h| h.to_ascii_lowercase()));
            names.push("localhost".into());
            Hosts::Public(names)
        } else {
            Hosts::Loopback(vec![
                bound.to_string(),
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ])
        }
    }

    fn allows(&self, authority: &str) -> bool {
        match self {
            Hosts::Loopback(list) => list.iter().any(|h| h.eq_ignore_ascii_case(authority)),
            Hosts::Public(names) => {
                let host = host_part(authority);
                host.parse::<std::net::IpAddr>().is_ok()
                    || names.iter().any(|n| n.eq_ignore_ascii_case(host))
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Hosts::Loopback(list) => list.join(", "),
            Hosts::Public(names) => format!(
                "IP addresses and {} (add a name with --server-name)",
                names.join(", ")
            ),
        }
    }
}

/// The host of an authority: `example.org:80` -> `example.org`, `[::1]:80` -> `::1`.
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// What the gate checks: the hosts, and in public mode the key.
#[derive(Debug)]
pub(crate) struct Gate {
    pub hosts: Hosts,
    pub key: Option<AccessKey>,
    /// Served over TLS (the cookie is then `Secure`).
    pub tls: bool,
}

/// The middleware in front of every route: a wrong `Host` gets 421, a missing or wrong
/// key 401 with the key form; `POST /login` is the one way in.
pub(crate) async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !gate.hosts.allows(host) {
        let body = format!(
            "<p class=\"error\">This server answers only to {}.</p>\n",
            esc(&gate.hosts.describe())
        );
        return plain_page(StatusCode::MISDIRECTED_REQUEST, "Unknown host", "", &body);
    }
    let Some(key) = &gate.key else {
        return next.run(request).await;
    };
    if request.uri().path() == "/login" && request.method() == axum::http::Method::POST {
        return next.run(request).await;
    }
    if presents_key(request.headers(), key) {
        return next.run(request).await;
    }
    let wanted = request
        .uri()
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    key_form(StatusCode::UNAUTHORIZED, &wanted, false)
}

/// Whether the request carries the key (header) or the cookie that proves it.
fn presents_key(headers: &HeaderMap, key: &AccessKey) -> bool {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(bearer_token)
        .any(|k| key.matches(k));
    let proof = key.cookie_value();
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .any(|v| same(v.as_bytes(), proof.as_bytes()));
    bearer || cookie
}

/// The token of an `Authorization: Bearer TOKEN` value. HTTP auth schemes are
/// case-insensitive (RFC 9110, 11.1): `bearer`, `BEARER` and `Bearer` all name it.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The 401 page: a form asking for the key, posting to `/login` with the page wanted.
fn key_form(code: StatusCode, wanted: &str, wrong: bool) -> Response {
    let note = if wrong {
        "<p class=\"error\">That is not this server's key.</p>\n"
    } else {
        ""
    };
    let body = format!(
        "{note}<p>This dyno server is public: its pages need the access key it was started \
         with (<code>--key-file</code>). Your browser keeps it as a cookie for 30 days.</p>\n\
         <form class=\"filter\" method=\"post\" action=\"/login\">\
         <label>access key<input name=\"key\" type=\"password\" autocomplete=\"current-password\" required></label>\
         <input type=\"hidden\" name=\"next\" value=\"{}\">\
         <button type=\"submit\">Open</button></form>\n\
         <p class=\"hint\">From a script: <code>curl -H 'Authorization: Bearer KEY' URL</code>.</p>\n",
        esc(wanted)
    );
    let mut r = plain_page(code, "Access key needed", "", &body);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"dyno serve\""),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The key form's fields.
#[derive(serde::Deserialize)]
pub(crate) struct Login {
    key: String,
    #[serde(default)]
    next: String,
}

/// `POST /login`: the right key sets the cookie and goes on to the page wanted (on this
/// server only); a wrong one gets the form again.
pub(crate) async fn login(State(gate): State<Arc<Gate>>, Form(form): Form<Login>) -> Response {
    // Only a path on this server: not `//elsewhere`, not a full URL.
    let next = if form.next.starts_with('/') && !form.next.starts_with("//") {
        form.next.as_str()
    } else {
        "/"
    };
    let Some(key) = gate.key.as_ref() else {
        return (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, next.to_string())],
        )
            .into_response();
    };
    if !key.matches(form.key.trim()) {
        return key_form(StatusCode::UNAUTHORIZED, next, true);
    }
    let cookie = format!(
        "{COOKIE}={}; Path=/; Max-Age={COOKIE_MAX_AGE_S}; HttpOnly; SameSite=Strict{}",
        key.cookie_value(),
        if gate.tls { "; Secure" } else { "" }
    );
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, next.to_string()),
            (header::SET_COOKIE, cookie),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_servers_answer_to_addresses_and_their_names_only() {
        let bound: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        let h = Hosts::new(bound, true, &["Dyno.Example.org".into()]);
        for ok in [
            "127.0.0.5:7878",
            "[fe80::1]:7878",
            "dyno.example.org",
            "DYNO.example.org:443",
            "localhost:7878",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for refused in [
            "attacker.example:7878",
            "example.org",
            "",
            "dyno.example.org.evil",
        ] {
            assert!(!h.allows(refused), "{refused}");
        }
        let l = Hosts::new("127.0.0.1:7878".parse().unwrap(), false, &[]);
        assert!(l.allows("localhost:7878") && l.allows("127.0.0.1:7878"));
        assert!(!l.allows("localhost:7879") && !l.allows("127.0.0.5:7878"));
    }

    #[test]
    fn the_key_is_matched_by_digest_and_the_cookie_does_not_hold_it() {
        let key = AccessKey::new("correct-horse-battery-staple");
        assert!(key.matches("correct-horse-battery-staple"));
        assert!(!key.matches("correct-horse-battery-stapl"));
        assert!(!key.cookie_value().contains("correct"));
        assert_eq!(key.cookie_value().len(), 64);
        assert!(!format!("{key:?}").contains("correct"));
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            format!("a=b; {COOKIE}={}", key.cookie_value())
                .parse()
                .unwrap(),
        );
        assert!(presents_key(&h, &key));
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            "Bearer correct-horse-battery-staple".parse().unwrap(),
        );
        assert!(presents_key(&h, &key));
        h.insert(header::AUTHORIZATION, "Bearer wrong".parse().unwrap());
        assert!(!presents_key(&h, &key));
        // The scheme's name is case-insensitive; the token is not.
        for scheme in ["bearer", "BEARER", "bEaReR"] {
            h.insert(
                header::AUTHORIZATION,
                format!("{scheme} correct-horse-battery-staple")
                    .parse()
                    .unwrap(),
            );
            assert!(presents_key(&h, &key), "{scheme}");
        }
        for refused in [
            "Bearer CORRECT-HORSE-BATTERY-STAPLE",
            "Basic correct-horse-battery-staple",
            "Bearercorrect-horse-battery-staple",
            "Bearer ",
        ] {
            h.insert(header::AUTHORIZATION, refused.parse().unwrap());
            assert!(!presents_key(&h, &key), "{refused}");
        }
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, format!("{COOKIE}=00").parse().unwrap());
        assert!(!presents_key(&h, &key));
    }

    #[cfg(unix)]
    #[test]
    fn key_files_that_are_empty_short_or_open_to_others_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str, mode: u32| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p
        };
        let refused = |p: &Path, why: &str| {
            let e = AccessKey::from_file(p).unwrap_err().to_string();
            assert!(
                e.contains(&p.display().to_string()) && e.contains(why),
                "{e}"
            );
        };
        refused(&write("empty", "\n", 0o600), "empty");
        refused(&write("short", "abc123\n", 0o600), "at least 16");
        refused(
            &write("spaces", "a key with spaces in it\n", 0o600),
            "spaces",
        );
        refused(&write("open", "0123456789abcdef0123\n", 0o644), "read it");
        refused(
            &write("writable", "0123456789abcdef0123\n", 0o602),
            "write it",
        );
        refused(&dir.path().join("missing"), "No such file");
        let ok = write("ok", "  0123456789abcdef0123\n", 0o640);
        assert!(AccessKey::from_file(&ok)
            .unwrap()
            .matches("0123456789abcdef0123"));
    }
}
