//! `dyno serve`: a local, read-only web app over a dyno results store.
//!
//! Everything dyno measures is in its store (a SQLite file, or the PostgreSQL fleet
//! store); this crate shows it in a browser:
//!
//! - **Runs** (`/`): every stored run, newest first, filtered by command, host and subject;
//!   each run (`/runs/{id}`) with its host, settings and per-metric medians, intervals and
//!   box plots, a link to each metric's history, and the command's own full report
//!   (`/runs/{id}/report`: a comparison's, judged here by dyno-judge; machine
//!   requirements, cluster reports... when the caller plugged them in, see
//!   [`FullReport`]).
//! - **History** (`/history`): each metric's value run after run, per command, host and
//!   subject, as an SVG plot with one point per run (its median and 95% interval) and a
//!   table linking every point to its run.
//! - **Comparisons** (`/compare`): every `dyno compare` comparison with its outcome,
//!   and each comparison's verdicts, judged from its stored runs by dyno-judge (the
//!   judge `dyno compare report` uses) without any measuring code.
//! - **Fleet** (`/fleet`): where each machine stands on a metric (the newest complete run
//!   of every machine, grouped by CPU model).
//! - **Live** (`/live`): while a pipeline or nodes run, their Prometheus endpoints
//!   (`--watch URL`) scraped every second and streamed to the page over server-sent
//!   events: per-tile busy and backpressure, TPS, blocks adopted per node.
//!
//! The store is opened read only and nothing is ever written to it. Pages are plain HTML
//! with inline SVG and one embedded stylesheet: no CDN, no fonts, nothing fetched from
//! elsewhere, and every page but the live one reads the same without JavaScript (the
//! live page reloads itself every few seconds when scripts are off). All text that comes
//! from the store is HTML-escaped. The server binds to loopback unless told otherwise
//! ([`Config::allow_remote`]); a public server needs an access key
//! ([`Config::key_file`]: a bearer token, or a cookie set by a key form) and can serve
//! HTTPS ([`Config::tls`]).
//!
//! The crate never prints: log lines (a page that failed, a store that could not be
//! read) go to the [`Config::log`] sink, which the binary writes to stderr.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! let config = dyno_web::Config::new("results.db".into(), "127.0.0.1:0".parse().unwrap())
//!     .log(Arc::new(|line: &str| eprintln!("{line}")));
//! let server = dyno_web::Server::bind(config).unwrap();
//! println!("{}", server.url());
//! server.run().unwrap();
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod access;
mod config;
mod error;
mod history;
mod live;
mod markup;
mod pages;
mod router;
mod state;
mod tls;

pub use config::{Config, FullReport, LogSink, TlsPair};
pub use error::WebError;
pub use pages::bisect::{BisectView, CommitView, ConfirmedView, CulpritView, StepView};

use state::AppState;
use std::net::SocketAddr;
use std::sync::Arc;

/// A bound web server, not yet serving.
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    addr: SocketAddr,
    state: Arc<AppState>,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Server {
    /// Checks the configuration (the access key file, the TLS pair, the watch URLs) and
    /// binds the socket, so bad input or a taken port fails here, before anything is
    /// announced. The store is opened on the first page that needs it.
    pub fn bind(config: Config) -> Result<Server, WebError> {
        if !config.allow_remote && !config.addr.ip().is_loopback() {
            return Err(WebError::NotLoopback(config.addr));
        }
        if config.allow_remote && config.key_file.is_none() {
            return Err(WebError::PublicWithoutKey);
        }
        let key = config
            .key_file
            .as_deref()
            .map(access::AccessKey::from_file)
            .transpose()?;
        let tls = config
            .tls
            .as_ref()
            .map(|t| tls::acceptor(&t.cert, &t.key))
            .transpose()?;
        let targets = config
            .watch
            .iter()
            .map(|u| live::Target::parse(u))
            .collect::<Result<Vec<_>, _>>()?;
        let listener =
            std::net::TcpListener::bind(config.addr).map_err(|source| WebError::Bind {
                addr: config.addr,
                source,
            })?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("dyno-web")
            .enable_all()
            .build()?;
        let gate = access::Gate {
            hosts: access::Hosts::new(addr, config.allow_remote, &config.server_names),
            key,
            tls: tls.is_some(),
        };
        let state = Arc::new(AppState::new(config, targets, gate));
        Ok(Server {
            runtime,
            listener,
            addr,
            state,
            tls,
        })
    }

    /// The bound address (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the front page (`https://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/", self.addr)
    }

    /// Serves until the process ends (dyno serve has nothing to clean up: it only reads).
    pub fn run(self) -> Result<(), WebError> {
        let Server {
            runtime,
            listener,
            state,
            tls,
            ..
        } = self;
        runtime.block_on(async move {
            live::start(&state.live);
            let listener = tokio::net::TcpListener::from_std(listener)?;
            match tls {
                Some(acceptor) => tls::serve(listener, acceptor, router::router(state)).await,
                None => axum::serve(listener, router::router(state)).await,
            }
        })?;
        Ok(())
    }
}
