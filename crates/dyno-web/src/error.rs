//! What can go wrong while starting or running the web app.

use std::net::SocketAddr;

/// Errors of [`Server`](crate::Server). Errors of single pages are not here: a page that
/// fails is answered with an error page (404 or 500) and reported to the log sink, and the
/// server goes on.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The address is not loopback and the caller did not allow that.
    #[error(
        "{0} is reachable from other machines; pass the flag that allows it (the results \
         store would be readable by anyone who can reach this port)"
    )]
    NotLoopback(SocketAddr),
    /// Public mode without an access key.
    #[error(
        "a public server needs an access key: pass the file that holds it (anyone who \
         reaches the port could read the results store otherwise)"
    )]
    PublicWithoutKey,
    /// The access key file cannot be used; `why` says what is wrong with it.
    #[error("access key file {}: {why}", path.display())]
    KeyFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A TLS certificate or key file cannot be used, or the two do not belong together.
    #[error("TLS file {}: {why}", path.display())]
    Tls {
        /// The file at fault.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Binding the listening socket failed (port taken, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A `--watch` endpoint is not an `http://HOST:PORT[/PATH]` URL.
    #[error("watch URL `{url}`: {why}")]
    WatchUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A command's full report of a run cannot be made (what it needs beyond the store,
    /// such as a cluster run's node logs, may be gone); the message says why.
    #[error("{0}")]
    Report(String),
    /// A watched endpoint did not answer with its metrics (dyno-proc's message).
    #[error("{0}")]
    Scrape(String),
    /// The thread scraping a watched endpoint ended before it answered.
    #[error("the scrape stopped: {0}")]
    ScrapeStopped(tokio::task::JoinError),
    /// The async runtime could not start, or serving failed.
    #[error("web server: {0}")]
    Io(#[from] std::io::Error),
}

impl WebError {
    /// A report that cannot be made, as its page says it: the error with its causes.
    pub fn report(e: &dyn std::error::Error) -> WebError {
        let mut text = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        WebError::Report(text)
    }
}
