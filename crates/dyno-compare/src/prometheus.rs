//! Scraping a node's own metrics from a Prometheus text endpoint.
//!
//! A plain HTTP/1.0 GET over a std `TcpStream` with short timeouts: endpoints of nodes under
//! test are on loopback, and a dependency-free client keeps the sampler's cost visible.
//! Counters become per-second rates over the measured window; gauges keep their values.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A parsed `http://host:port/path` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`.
    pub authority: String,
    /// Path with query, starting with `/`.
    pub path: String,
}

impl Endpoint {
    /// Parses an `http://` URL (TLS is not supported: scrape loopback).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("`{url}`: only http:// endpoints can be scraped"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        let Some((host, port)) = authority.rsplit_once(':') else {
            return Err(format!("`{url}`: give host:port"));
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(format!("`{url}`: bad host or port"));
        }
        Ok(Endpoint {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }

    /// GETs the endpoint and returns the body of a 200 answer.
    pub fn scrape(&self, timeout: Duration) -> Result<String, String> {
        let addr = self
            .authority
            .to_socket_addrs()
            .map_err(|e| e.to_string())?
            .next()
            .ok_or("no address")?;
        let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        // One write: a server that answers after the first read must see the whole request.
        let request = format!(
            "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\n\r\n",
            self.path, self.authority
        );
        s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        s.take(16 << 20)
            .read_to_end(&mut buf)
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text.split_once("\r\n\r\n").ok_or("malformed HTTP answer")?;
        let status = head.lines().next().unwrap_or_default();
        if status.split_whitespace().nth(1) != Some("200") {
            return Err(format!("answered `{status}`"));
        }
        Ok(body.to_string())
    }
}

/// Kind of a metric family, from its `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyKind {
    /// Monotonic: reported as a rate per second.
    Counter,
    /// Anything else: reported as is.
    Gauge,
}

/// One sample line of a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    /// Family name (the metric name without labels).
    pub family: String,
    /// Name with labels as written, e.g. `dyno_link_frags_total{link="a"}`.
    pub series: String,
    /// Kind of the family (gauge when undeclared).
    pub kind: FamilyKind,
    /// The value.
    pub value: f64,
}

/// Parses the Prometheus text format, keeping families in `keep` (all when empty).
/// Histogram and summary series are kept as gauges of their components.
pub fn parse_text(text: &str, keep: &[String]) -> Vec<PromSample> {
    let mut counters = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            if let (Some(name), Some("counter")) = (it.next(), it.next()) {
                counters.insert(name.to_string());
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = match line.rfind('}') {
            Some(close) => (&line[..=close], line[close + 1..].split_whitespace().next()),
            None => {
                let mut it = line.split_whitespace();
                (it.next().unwrap_or_default(), it.next())
            }
        };
        let Some(value) = value.and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        let family = series.split('{').next().unwrap_or_default().to_string();
        if !keep.is_empty() && !keep.contains(&family) {
            continue;
        }
        let kind = if counters.contains(&family) {
            FamilyKind::Counter
        } else {
            FamilyKind::Gauge
        };
        out.push(PromSample {
            family,
            series: series.to_string(),
            kind,
            value,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP dyno_link_frags_total Frags published on the link.\n# TYPE dyno_link_frags_total counter\ndyno_link_frags_total{link=\"source->sink\"} 123456\n# TYPE dyno_link_depth gauge\ndyno_link_depth{link=\"source->sink\"} 4096\nplain_metric 2.5 1700000000\n";

    #[test]
    fn parses_families_kinds_and_labels() {
        let s = parse_text(TEXT, &[]);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].series, "dyno_link_frags_total{link=\"source->sink\"}");
        assert_eq!((s[0].kind, s[0].value), (FamilyKind::Counter, 123456.0));
        assert_eq!(
            (s[1].kind, s[1].family.as_str()),
            (FamilyKind::Gauge, "dyno_link_depth")
        );
        assert_eq!((s[2].series.as_str(), s[2].value), ("plain_metric", 2.5));
        let kept = parse_text(TEXT, &["dyno_link_depth".to_string()]);
        assert_eq!(kept.len(), 1);
    }

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:7999/metrics").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.path.as_str()),
            ("127.0.0.1:7999", "/metrics")
        );
        assert_eq!(
            Endpoint::parse("http://localhost:80").unwrap().path,
            "/metrics"
        );
        assert!(Endpoint::parse("https://x:1/").is_err());
        assert!(Endpoint::parse("http://x/metrics").is_err());
    }

    #[test]
    fn scrapes_a_local_server_and_reports_an_unreachable_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 512];
            while !req.ends_with(b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let body = "# TYPE x counter\nx 5\n";
            write!(
                c,
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        });
        let e = Endpoint::parse(&format!("http://{addr}/metrics")).unwrap();
        let body = e.scrape(Duration::from_secs(2)).unwrap();
        server.join().unwrap();
        assert_eq!(parse_text(&body, &[])[0].value, 5.0);
        // Nothing listens on the port just freed.
        drop(e);
        let dead = Endpoint::parse(&format!("http://{addr}/metrics")).unwrap();
        assert!(dead.scrape(Duration::from_millis(300)).is_err());
    }
}
