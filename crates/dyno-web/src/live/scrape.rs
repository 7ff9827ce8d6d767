//! Fetching one Prometheus endpoint: a plain HTTP/1.0 GET over TCP with a deadline.
//!
//! dyno's endpoints (the pipeline's and the node's `/metrics`) are plain HTTP on a local
//! or private address, so a dozen lines do what an HTTP client crate would, without one.

use crate::error::WebError;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most a scrape reads; an exposition of a large pipeline is a few hundred KiB.
const MAX_BODY: u64 = 8 << 20;

/// One watched endpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    /// What the live page calls it: the name given (`node-0=http://...`), else the URL.
    pub name: String,
    /// The URL.
    pub url: String,
    /// `host:port` to connect to.
    pub authority: String,
    /// The request path (`/metrics`).
    pub path: String,
}

impl Target {
    /// Parses `[NAME=]http://HOST:PORT[/PATH]` (the path defaults to `/metrics`).
    pub(crate) fn parse(given: &str) -> Result<Target, WebError> {
        let bad = |why: &str| WebError::WatchUrl {
            url: given.to_string(),
            why: why.to_string(),
        };
        let (name, url) = match given.split_once("=http://") {
            Some((name, _)) if !name.is_empty() => (Some(name), &given[name.len() + 1..]),
            _ => (None, given),
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("only http:// endpoints can be watched"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        let port_ok = authority
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !port_ok {
            return Err(bad(
                "give the host and port, e.g. http://127.0.0.1:7999/metrics",
            ));
        }
        Ok(Target {
            name: name.unwrap_or(url).to_string(),
            url: url.to_string(),
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }

    /// Fetches the exposition text, within `deadline`.
    pub(crate) async fn fetch(&self, deadline: Duration) -> Result<String, String> {
        match tokio::time::timeout(deadline, self.get()).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {} ms", deadline.as_millis())),
        }
    }

    async fn get(&self) -> Result<String, String> {
        let mut stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let request = format!(
            "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
            self.path, self.authority
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("cannot send the request: {e}"))?;
        let mut raw = Vec::new();
        stream
            .take(MAX_BODY)
            .read_to_end(&mut raw)
            .await
            .map_err(|e| format!("reading the answer: {e}"))?;
        body_of(&String::from_utf8_lossy(&raw))
    }
}

/// The body of a raw HTTP/1.x response when its status is 200.
fn body_of(raw: &str) -> Result<String, String> {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| "not an HTTP response".to_string())?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        let first = body.lines().next().unwrap_or_default();
        return Err(format!("{status}: {first}"));
    }
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Ok(if chunked {
        dechunk(body)
    } else {
        body.to_string()
    })
}

/// Joins the chunks of a chunked body (an HTTP/1.0 request should not get one, but a
/// proxy in between may send it anyway).
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_need_http_host_and_port() {
        let t = Target::parse("http://127.0.0.1:7999").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("127.0.0.1:7999", "/metrics")
        );
        let t = Target::parse("http://node-a:7301/metrics").unwrap();
        assert_eq!(
            (t.name.as_str(), t.path.as_str()),
            ("http://node-a:7301/metrics", "/metrics")
        );
        let t = Target::parse("node-0=http://127.0.0.1:31302/metrics").unwrap();
        assert_eq!(
            (t.name.as_str(), t.url.as_str()),
            ("node-0", "http://127.0.0.1:31302/metrics")
        );
        assert!(Target::parse("node-0=https://x:1/").is_err());
        assert!(Target::parse("https://x:1/metrics").is_err());
        assert!(Target::parse("http://localhost/metrics").is_err());
        assert!(Target::parse("http://:80/").is_err());
    }

    #[test]
    fn bodies_of_good_bad_and_chunked_answers() {
        assert_eq!(
            body_of("HTTP/1.0 200 OK\r\nA: b\r\n\r\nx 1\n").unwrap(),
            "x 1\n"
        );
        let err = body_of("HTTP/1.1 503 Service Unavailable\r\n\r\npipeline not running yet\n");
        assert_eq!(
            err.unwrap_err(),
            "HTTP/1.1 503 Service Unavailable: pipeline not running yet"
        );
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nx 1\n\r\n4\r\ny 2\n\r\n0\r\n\r\n";
        assert_eq!(body_of(chunked).unwrap(), "x 1\ny 2\n");
        assert!(body_of("garbage").is_err());
    }
}
