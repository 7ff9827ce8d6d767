//! `dyno serve`: a local, read-only web app over a dyno results store.
//!
//! Everything dyno measures is in its store (a SQLite file, or the PostgreSQL fleet
//! store); this crate shows it in a browser:
//!
//! - **Runs** (`/`): every stored run, newest first, filtered by command, host and subject;
//!   each run (`/runs/{id}`) with its host, settings and per-metric medians, intervals and
//!   box plots, a link to each metric's history, and the command's own full report
//!   (`/runs/{id}/report`: machine requirements, compare verdicts...) when the caller
//!   plugged one in (see [`FullReport`]).
//! - **History** (`/history`): each metric's value run after run, per command, host and
//!   subject, as an SVG plot with one point per run (its median and 95% interval) and a
//!   table linking every point to its run.
//! - **Comparisons** (`/compare`): every `dyno compare` comparison with its runs, linking
//!   to its verdicts.
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
//! ([`Config::allow_remote`]).
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

mod error;
mod history;
mod live;
mod markup;
mod pages;
mod router;
mod state;

pub use error::WebError;

use dyno_store::{Store, StoredRun};
use state::AppState;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// A command's own report of a stored run (the HTML document its `report` subcommand
/// writes), served at `/runs/{id}/report`. The binary implements it with the command
/// crates (machine requirements, compare verdicts), which this crate does not import.
pub trait FullReport: Send + Sync {
    /// The full HTML document for `run`, `Ok(None)` when this command has no report
    /// beyond the run page, or [`WebError::Report`] saying why it cannot be made.
    fn report(&self, store: &Store, run: &StoredRun) -> Result<Option<String>, WebError>;
}

/// Where the log lines of the server go (one line per call, no newline).
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// What to serve, and where.
#[derive(Clone)]
pub struct Config {
    /// The results store: a SQLite file or a PostgreSQL URL without its password.
    pub store: PathBuf,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Allow an address other than loopback (anyone who reaches it reads the store).
    pub allow_remote: bool,
    /// Prometheus endpoints (`http://HOST:PORT/metrics`) to show live at `/live`.
    pub watch: Vec<String>,
    /// The commands' full reports; `None` serves the run pages only.
    pub reports: Option<Arc<dyn FullReport>>,
    /// The log sink; by default lines are dropped.
    pub log: LogSink,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("store", &self.store)
            .field("addr", &self.addr)
            .field("allow_remote", &self.allow_remote)
            .field("watch", &self.watch)
            .field("reports", &self.reports.is_some())
            .finish()
    }
}

impl Config {
    /// Serves `store` on `addr`, loopback only, without live views or full reports.
    pub fn new(store: PathBuf, addr: SocketAddr) -> Config {
        Config {
            store,
            addr,
            allow_remote: false,
            watch: Vec::new(),
            reports: None,
            log: Arc::new(|_| {}),
        }
    }

    /// Sets the log sink.
    pub fn log(mut self, sink: LogSink) -> Config {
        self.log = sink;
        self
    }

    /// Plugs in the commands' full reports.
    pub fn reports(mut self, reports: Arc<dyn FullReport>) -> Config {
        self.reports = Some(reports);
        self
    }

    /// Adds Prometheus endpoints to watch live.
    pub fn watch(mut self, urls: Vec<String>) -> Config {
        self.watch = urls;
        self
    }
}

/// A bound web server, not yet serving.
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    addr: SocketAddr,
    state: Arc<AppState>,
}

impl Server {
    /// Checks the configuration and binds the socket (so a taken port fails here, before
    /// anything is announced). The store is opened on the first page that needs it.
    pub fn bind(config: Config) -> Result<Server, WebError> {
        if !config.allow_remote && !config.addr.ip().is_loopback() {
            return Err(WebError::NotLoopback(config.addr));
        }
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
        let state = Arc::new(AppState::new(config, targets, addr));
        Ok(Server {
            runtime,
            listener,
            addr,
            state,
        })
    }

    /// The bound address (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the front page.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Serves until the process ends (dyno serve has nothing to clean up: it only reads).
    pub fn run(self) -> Result<(), WebError> {
        let Server {
            runtime,
            listener,
            state,
            ..
        } = self;
        runtime.block_on(async move {
            live::start(&state);
            let listener = tokio::net::TcpListener::from_std(listener)?;
            axum::serve(listener, router::router(state)).await
        })?;
        Ok(())
    }
}
