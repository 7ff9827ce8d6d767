//! A minimal HTTP/1.0 client for loopback endpoints: metrics scrapes and readiness
//! probes of the nodes under test.
//!
//! A plain GET over a std `TcpStream` with short timeouts: the endpoints are on loopback,
//! and a dependency-free client keeps the cost of scraping visible and small. TLS is not
//! supported.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Largest answer read (a metrics page of a big node is a few MB): a longer one is an
/// error, not a page silently cut.
pub const MAX_ANSWER_BYTES: u64 = crate::lines::MAX_BODY_BYTES;

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
    /// The whole exchange takes at most `timeout` (a server that drips its answer a
    /// byte at a time is cut off too).
    pub fn get(&self, timeout: Duration) -> Result<Answer, HttpError> {
        let deadline = Instant::now() + timeout;
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
        let buf = read_whole(&mut s, deadline).map_err(failed)?;
        if buf.len() as u64 > MAX_ANSWER_BYTES {
            return Err(malformed(format!(
                "the answer is over {}: not read",
                crate::lines::bytes(MAX_ANSWER_BYTES)
            )));
        }
        parse_answer(&buf)
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

/// Reads until end of file, [`MAX_ANSWER_BYTES`] and one more byte (to tell an answer
/// over the cap) or `deadline`, whichever comes first; the deadline is an error.
fn read_whole(s: &mut TcpStream, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while buf.len() as u64 <= MAX_ANSWER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the answer did not end in time",
            ));
        }
        s.set_read_timeout(Some(left))?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(buf)
}

/// An HTTP/1.x answer as read whole: status line, headers, body. `Err` when there is no
/// end of the head or no status code in its first line.
pub fn parse_answer(bytes: &[u8]) -> Result<Answer, HttpError> {
    let malformed = |what: String| HttpError::Exchange(what);
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| malformed("malformed HTTP answer".into()))?;
    let status_line = head.lines().next().unwrap_or_default();
    let status_line: String = status_line.chars().take(200).collect();
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
    fn an_answer_over_the_cap_is_an_error_not_a_cut_page() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let Ok((mut c, _)) = listener.accept() else {
                return;
            };
            // The request read first: a socket closed with unread bytes is reset.
            let mut req = [0u8; 512];
            let _ = c.read(&mut req);
            let _ = c.write_all(b"HTTP/1.0 200 OK\r\n\r\n");
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..=(MAX_ANSWER_BYTES >> 20) {
                if c.write_all(&chunk).is_err() {
                    return;
                }
            }
        });
        let e = Endpoint::parse(&format!("http://{addr}/metrics")).unwrap();
        assert_eq!(
            e.scrape(Duration::from_secs(60)).unwrap_err().to_string(),
            "the answer is over 67.1 MB: not read"
        );
    }

    #[test]
    fn answers_are_parsed_or_named_malformed() {
        let a = parse_answer(b"HTTP/1.1 204 No Content\r\nX: y\r\n\r\nbody").unwrap();
        assert_eq!((a.status, a.body.as_str()), (204, "body"));
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\n").is_err());
        let long = format!("HTTP/1.1 {}\r\n\r\n", "z".repeat(10_000));
        let e = parse_answer(long.as_bytes()).unwrap_err().to_string();
        assert!(e.len() < 300, "{e}");
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
