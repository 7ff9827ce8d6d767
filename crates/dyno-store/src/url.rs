//! Where a store lives: a SQLite file path or a `postgres://` URL, and keeping passwords
//! out of everything dyno prints or stores.
//!
//! A PostgreSQL store is named by a URL as libpq users know it:
//! `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE?sslmode=MODE`. A host starting with
//! `/` (percent-encoded as `%2F`, or given as `?host=/dir`) is a Unix socket directory. When
//! the URL has no password, `PGPASSWORD` is used, as libpq does.

use crate::error::StoreError;
use std::path::Path;

/// The URL schemes of a PostgreSQL store.
const SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// True when `location` names a PostgreSQL store rather than a SQLite file.
pub fn is_postgres_url(location: &str) -> bool {
    let lower = location.to_ascii_lowercase();
    SCHEMES.iter().any(|s| lower.starts_with(s))
}

/// True when `path` (as given to [`Store::open`](crate::Store::open)) is a PostgreSQL URL.
pub(crate) fn path_is_postgres(path: &Path) -> bool {
    path.to_str().is_some_and(is_postgres_url)
}

/// `location` with any password replaced by `***`: the user-info password of a URL and a
/// `password=` query parameter. Text that is not a PostgreSQL URL is returned unchanged.
pub fn redact(location: &str) -> String {
    if !is_postgres_url(location) {
        return location.to_string();
    }
    let (without_query, query) = match location.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (location, None),
    };
    let scheme_end = location.find("://").map_or(0, |i| i + 3);
    let rest = &without_query[scheme_end..];
    // The user info ends at the last '@' before the first '/' (a password may hold '@'
    // only percent-encoded, but be generous).
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let mut out = String::from(&without_query[..scheme_end]);
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:***")),
                None => out.push_str(userinfo),
            }
            out.push_str(&rest[at..]);
        }
        None => out.push_str(rest),
    }
    if let Some(q) = query {
        out.push('?');
        let params: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => p.to_string(),
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    out
}

/// Splits the password out of a PostgreSQL URL's user info: the URL without it, and the
/// password (percent-decoded). Other locations come back unchanged with `None`.
///
/// The binary uses this to hand the password to the store (and to the dyno processes it
/// starts) through `PGPASSWORD`, so the URL it prints, stores or passes on has none.
pub fn split_password(location: &str) -> (String, Option<String>) {
    if !is_postgres_url(location) {
        return (location.to_string(), None);
    }
    let scheme_end = location.find("://").map_or(0, |i| i + 3);
    let rest = &location[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return (location.to_string(), None);
    };
    let Some((user, password)) = rest[..at].split_once(':') else {
        return (location.to_string(), None);
    };
    let without = format!("{}{user}{}", &location[..scheme_end], &rest[at..]);
    (without, Some(percent_decode(password)))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Redacts every argument of a command line that holds a PostgreSQL URL (`URL`, or
/// `--flag=URL`), so a stored command line never keeps a password.
pub(crate) fn redact_command_line(args: &[String]) -> Vec<String> {
    args.iter()
        .map(|a| {
            let lower = a.to_ascii_lowercase();
            match SCHEMES.iter().filter_map(|s| lower.find(s)).min() {
                Some(i) => format!("{}{}", &a[..i], redact(&a[i..])),
                None => a.clone(),
            }
        })
        .collect()
}

/// How the connection is secured, after libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Plain connection only.
    Disable,
    /// TLS when the server offers it (libpq's default; `allow` is treated the same),
    /// without checking the certificate.
    Prefer,
    /// TLS or fail, without checking the certificate (libpq's `require`).
    Require,
    /// TLS or fail; the certificate must chain to a trusted root, any host name.
    VerifyCa,
    /// TLS or fail; the certificate must chain to a trusted root and name the host.
    VerifyFull,
}

/// A PostgreSQL URL taken apart into what the client crate reads and what dyno handles
/// itself (`sslmode`, which the client only knows in part, and `sslrootcert`).
#[derive(Debug, Clone)]
pub(crate) struct PgUrl {
    /// The URL without `sslmode` and `sslrootcert`, for `postgres::Config`.
    pub client_url: String,
    /// The URL with the password hidden, for messages.
    pub shown: String,
    pub ssl_mode: SslMode,
    /// A PEM file of trusted root certificates.
    pub root_cert: Option<String>,
}

/// The rest of `url` from its first `%` that does not start a `%XX` escape, if any.
fn bad_escape(url: &str) -> Option<&str> {
    let bytes = url.as_bytes();
    bytes.iter().enumerate().find_map(|(i, &b)| {
        let escape = bytes.get(i + 1..i + 3);
        let valid = escape.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        (b == b'%' && !valid).then(|| &url[i..])
    })
}

impl PgUrl {
    /// Splits `url`; an unknown `sslmode` is [`StoreError::BadUrl`].
    pub fn parse(url: &str) -> Result<PgUrl, StoreError> {
        let shown = redact(url);
        let bad = |detail: String| StoreError::BadUrl {
            url: shown.clone(),
            detail,
        };
        let (base, query) = match url.split_once('?') {
            Some((a, q)) => (a, q),
            None => (url, ""),
        };
        if bad_escape(url).is_some() {
            // The client crate takes such a host literally and reports a failed
            // connection, which blames the network for a typo. Where: as shown, so a
            // password is never echoed.
            let at = bad_escape(&shown).map_or("in the password".into(), |r| format!("at `{r}`"));
            return Err(bad(format!(
                "invalid URL: a `%` must start a %XX escape (two hex digits), {at}"
            )));
        }
        let mut ssl_mode = SslMode::Prefer;
        let mut root_cert = None;
        let mut kept = Vec::new();
        for param in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = param.split_once('=').unwrap_or((param, ""));
            match k {
                "sslmode" => {
                    ssl_mode = match v {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        other => {
                            return Err(bad(format!(
                                "sslmode={other} is not one of disable, allow, prefer, \
                                 require, verify-ca, verify-full"
                            )))
                        }
                    }
                }
                "sslrootcert" => root_cert = Some(v.to_string()),
                _ => kept.push(param),
            }
        }
        let client_url = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        Ok(PgUrl {
            client_url,
            shown,
            ssl_mode,
            root_cert,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stray_percent_is_an_invalid_url_never_echoing_the_password() {
        let e = PgUrl::parse("postgres://%%%").unwrap_err();
        assert!(matches!(e, StoreError::BadUrl { .. }), "{e:?}");
        assert!(e.to_string().contains("invalid URL"), "{e}");
        assert!(e.to_string().contains("at `%%%`"), "{e}");
        let e = PgUrl::parse("postgres://u:se%zzcret@h/x").unwrap_err();
        assert!(e.to_string().contains("in the password"), "{e}");
        assert!(!e.to_string().contains("cret"), "{e}");
        assert!(PgUrl::parse("postgres://u@%2Ftmp%2fsock/x").is_ok());
    }

    #[test]
    fn passwords_are_redacted_wherever_they_are() {
        assert_eq!(
            redact("postgres://dyno:s3cret@db.example:5432/fleet?sslmode=require"),
            "postgres://dyno:***@db.example:5432/fleet?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://dyno@db/fleet?password=hunter2&sslmode=disable"),
            "postgresql://dyno@db/fleet?password=***&sslmode=disable"
        );
        assert_eq!(redact("postgres://db/fleet"), "postgres://db/fleet");
        assert_eq!(redact("/tmp/results.db"), "/tmp/results.db");
        assert_eq!(
            redact_command_line(&[
                "dyno".into(),
                "--db=postgres://u:pw@h/d".into(),
                "--to".into(),
                "POSTGRES://u:pw@h/d".into(),
            ]),
            [
                "dyno",
                "--db=postgres://u:***@h/d",
                "--to",
                "POSTGRES://u:***@h/d"
            ]
        );
    }

    #[test]
    fn passwords_split_out_of_the_user_info() {
        assert_eq!(
            split_password("postgres://dyno:p%40ss%3Aw@db:5432/fleet?sslmode=require"),
            (
                "postgres://dyno@db:5432/fleet?sslmode=require".to_string(),
                Some("p@ss:w".to_string())
            )
        );
        assert_eq!(
            split_password("postgres://dyno@db/fleet"),
            ("postgres://dyno@db/fleet".to_string(), None)
        );
        assert_eq!(
            split_password("results.db"),
            ("results.db".to_string(), None)
        );
    }

    #[test]
    fn sslmode_is_taken_out_of_the_client_url() {
        let u = PgUrl::parse("postgres://u:pw@h/d?sslmode=verify-full&application_name=x").unwrap();
        assert_eq!(u.ssl_mode, SslMode::VerifyFull);
        assert_eq!(u.client_url, "postgres://u:pw@h/d?application_name=x");
        assert_eq!(
            u.shown,
            "postgres://u:***@h/d?sslmode=verify-full&application_name=x"
        );
        assert_eq!(
            PgUrl::parse("postgres://h/d").unwrap().ssl_mode,
            SslMode::Prefer
        );
        let err = PgUrl::parse("postgres://u:pw@h/d?sslmode=sometimes").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("sslmode=sometimes") && !msg.contains("pw@"),
            "{msg}"
        );
    }
}
