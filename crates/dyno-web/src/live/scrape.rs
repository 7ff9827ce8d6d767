//! Fetching one Prometheus endpoint: dyno-proc's HTTP/1.0 GET (the one `dyno compare`
//! scrapes nodes with), on a blocking thread so the live page's targets are read at once.

use crate::error::WebError;
use dyno_proc::http::Endpoint;
use std::time::Duration;

/// One watched endpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    /// What the live page calls it: the name given (`node-0=http://...`), else the URL.
    pub name: String,
    /// The URL.
    pub url: String,
    /// Where to GET it.
    pub endpoint: Endpoint,
}

impl Target {
    /// Parses `[NAME=]http://HOST:PORT[/PATH]` (the path defaults to `/metrics`).
    pub(crate) fn parse(given: &str) -> Result<Target, WebError> {
        let (name, url) = match given.split_once("=http://") {
            Some((name, _)) if !name.is_empty() => (Some(name), &given[name.len() + 1..]),
            _ => (None, given),
        };
        let endpoint = Endpoint::parse(url).map_err(|why| WebError::WatchUrl {
            url: given.to_string(),
            why: why.to_string(),
        })?;
        Ok(Target {
            name: name.unwrap_or(url).to_string(),
            url: url.to_string(),
            endpoint,
        })
    }

    /// Fetches the exposition text; `deadline` bounds the connect and each read.
    pub(crate) async fn fetch(&self, deadline: Duration) -> Result<String, WebError> {
        let endpoint = self.endpoint.clone();
        tokio::task::spawn_blocking(move || endpoint.scrape(deadline).map_err(|e| e.to_string()))
            .await
            .map_err(WebError::ScrapeStopped)?
            .map_err(WebError::Scrape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_need_http_host_and_port() {
        let t = Target::parse("http://127.0.0.1:7999").unwrap();
        assert_eq!(
            (t.endpoint.authority.as_str(), t.endpoint.path.as_str()),
            ("127.0.0.1:7999", "/metrics")
        );
        let t = Target::parse("http://node-a:7301/metrics").unwrap();
        assert_eq!(
            (t.name.as_str(), t.endpoint.path.as_str()),
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
}
