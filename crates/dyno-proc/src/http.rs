//! A minimal HTTP/1.0 client for loopback endpoints: metrics scrapes and readiness
//! probes of the nodes under test.
//!
//! A plain GET over a std `TcpStream` with short timeouts: the endpoints are on loopback,
//! and a dependency-free client keeps the cost of scraping visible and small. TLS is not
//! supported.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Largest answer read (a metrics page of a big node is a few MB).
pub const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// What can go wrong with an HTTP endpoint: its URL, the exchange, or the answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The URL is not `http://host:port[/path]`.
    #[error("`{url}`: {why}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Connecting, sending or reading failed, or the answer is not HTTP.
    #[error("{0}")]
    Exchange(String),
    /// The endpoint answered with a status other than the one wanted.
    #[error("answered `{0}`")]
    Status(String),
}

/// A parsed `http://host:port/path` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`.
    pub authority: String,
    /// Path with query, starting with `/`.
    pub path: String,
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The status line as sent.
    pub status_line: String,
    /// The body (lossily decoded as UTF-8).
    pub body: String,
}

impl Endpoint {
    /// Parses an `http://host:port[/path]` URL; the path defaults to `/metrics`.
    pub fn parse(url: &str) -> Result<Endpoint, HttpError> {
        Self::parse_with_default(url, "/metrics")
    }

    /// Parses an `http://host:port[/path]` URL whose path defaults to `default_path`.
    pub fn parse_with_default(url: &str, default_path: &str) -> Result<Endpoint, HttpError> {
        let bad = |why| HttpError::BadUrl {
            url: url.to_string(),
            why,
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, default_path),
        };
        let Some((host, port)) = authority.rsplit_once(':') else {
            return Err(bad("give host:port"));
        };
        if host.is_empty() || port.parse::<u16>().is_err() || path.contains(char::is_whitespace) {
            return Err(bad("bad host, port or path"));
        }
        Ok(Endpoint {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }

    /// The URL again.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }

    /// GETs the endpoint; every status is an answer, only a failed exchange an error.
    pub fn get(&self, timeout: Duration) -> Result<Answer, HttpError> {
        let failed = |e: std::io::Error| HttpError::Exchange(e.to_string());
        let malformed = |what: String| HttpError::Exchange(what);
        let addr = self
            .authority
            .to_socket_addrs()
            .map_err(failed)?
            .next()
            .ok_or_else(|| malformed("no address".into()))?;
        let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(failed)?;
        s.set_read_timeout(Some(timeout)).map_err(failed)?;
        s.set_write_timeout(Some(timeout)).map_err(failed)?;
        // One write: a server that answers after the first read must see the whole request.
        let request = format!(
            "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\n\r\n",
            self.path, self.authority
        );
        s.write_all(request.as_bytes()).map_err(failed)?;
        let mut buf = Vec::new();
        s.take(MAX_ANSWER_BYTES)
            .read_to_end(&mut buf)
            .map_err(failed)?;
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| malformed("malformed HTTP answer".into()))?;
        let status_line = head.lines().next().unwrap_or_default().to_string();
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u16>().ok())
            .ok_or_else(|| malformed(format!("malformed status line `{status_line}`")))?;
        Ok(Answer {
            status,
            status_line,
            body: body.to_string(),
        })
    }

    /// GETs the endpoint and returns the body of a 200 answer.
    pub fn scrape(&self, timeout: Duration) -> Result<String, HttpError> {
        let a = self.get(timeout)?;
        if a.status != 200 {
            return Err(HttpError::Status(a.status_line));
        }
        Ok(a.body)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Serves one connection with `status` and `body` on a loopback port; returns the
    /// address.
    pub(crate) fn serve_once(status: &'static str, body: &'static str) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let Ok((mut c, _)) = listener.accept() else {
                return;
            };
            let mut req = Vec::new();
            let mut buf = [0u8; 512];
            while !req.ends_with(b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                c,
                "HTTP/1.0 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        });
        addr
    }

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:7999/metrics").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.path.as_str()),
            ("127.0.0.1:7999", "/metrics")
        );
        assert_eq!(e.url(), "http://127.0.0.1:7999/metrics");
        assert_eq!(
            Endpoint::parse("http://localhost:80").unwrap().path,
            "/metrics"
        );
        assert_eq!(
            Endpoint::parse_with_default("http://localhost:80", "/")
                .unwrap()
                .path,
            "/"
        );
        assert!(Endpoint::parse("https://x:1/").is_err());
        assert!(Endpoint::parse("http://x/metrics").is_err());
        assert!(Endpoint::parse("http://x:99999/").is_err());
        assert!(Endpoint::parse("http://x:1/a b").is_err());
    }

    #[test]
    fn gets_a_local_server_and_reports_an_unreachable_one() {
        let addr = serve_once("200 OK", "x 5\n");
        let e = Endpoint::parse(&format!("http://{addr}/metrics")).unwrap();
        assert_eq!(e.scrape(Duration::from_secs(30)).unwrap(), "x 5\n");
        let addr = serve_once("503 Service Unavailable", "");
        let e = Endpoint::parse(&format!("http://{addr}/")).unwrap();
        let a = e.get(Duration::from_secs(30)).unwrap();
        assert_eq!(a.status, 503);
        let addr = serve_once("503 Service Unavailable", "");
        let e = Endpoint::parse(&format!("http://{addr}/")).unwrap();
        assert_eq!(
            e.scrape(Duration::from_secs(30)).unwrap_err().to_string(),
            "answered `HTTP/1.0 503 Service Unavailable`"
        );
        // Nothing listens on a port just freed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dead = Endpoint::parse(&format!("http://127.0.0.1:{port}/metrics")).unwrap();
        assert!(dead.get(Duration::from_millis(300)).is_err());
    }
}
