//! What the binary hands the server: the store, the address, who may read, what to
//! watch, the commands' reports and where log lines go.

use crate::error::WebError;
use crate::BisectView;
use dyno_report::Section;
use dyno_store::{Store, StoredRun};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// A command's own report of a stored run (the HTML document its `report` subcommand
/// writes), served at `/runs/{id}/report`. The binary implements it with the command
/// crates (machine requirements, cluster reports), which this crate does not import; a
/// comparison's report is the judge's (dyno-judge) and needs no plug.
pub trait FullReport: Send + Sync {
    /// The full HTML document for `run`, `Ok(None)` when this command has no report
    /// beyond the run page, or [`WebError::Report`] saying why it cannot be made.
    fn report(&self, store: &Store, run: &StoredRun) -> Result<Option<String>, WebError>;

    /// What the command answers about `run` beyond what the store shows (a machine run's
    /// requirements, judged again by dyno-hw), as the section its report shows: the run's
    /// page starts with it. `Ok(None)` when the command has no such answer.
    fn answer(&self, store: &Store, run: &StoredRun) -> Result<Option<Section>, WebError> {
        let _ = (store, run);
        Ok(None)
    }

    /// The report of bisection `id` (`dyno compare bisect`'s), for its page
    /// (`/bisect/{id}`); `Ok(None)` when there is none or the caller cannot make it.
    fn bisect(&self, store: &Store, id: &str) -> Result<Option<BisectView>, WebError> {
        let _ = (store, id);
        Ok(None)
    }
}

/// Where the log lines of the server go (one line per call, no newline).
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A certificate chain and its private key, PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPair {
    /// The server's certificate, then its chain.
    pub cert: PathBuf,
    /// The certificate's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// What to serve, and where.
#[derive(Clone)]
pub struct Config {
    /// The results store: a SQLite file or a PostgreSQL URL without its password.
    pub store: PathBuf,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Public mode: listen on any address, answer to any IP address and the
    /// [`server_names`](Config::server_names), and only to requests with the access key
    /// (so [`key_file`](Config::key_file) is required).
    pub allow_remote: bool,
    /// The file holding the access key (one line, at least 16 characters, not readable by
    /// other users). Required in public mode; on loopback it guards the pages too.
    pub key_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain and private key (PEM files).
    pub tls: Option<TlsPair>,
    /// The host names a public server answers to besides IP addresses, `localhost` and
    /// this machine's host name (a DNS name, a reverse proxy's name).
    pub server_names: Vec<String>,
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
            .field("key_file", &self.key_file)
            .field("tls", &self.tls)
            .field("server_names", &self.server_names)
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
            key_file: None,
            tls: None,
            server_names: Vec::new(),
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

    /// Public mode with the access key in `key_file` (see [`Config::allow_remote`]).
    pub fn public(mut self, key_file: PathBuf) -> Config {
        self.allow_remote = true;
        self.key_file = Some(key_file);
        self
    }

    /// Serves HTTPS with `tls`.
    pub fn tls(mut self, tls: TlsPair) -> Config {
        self.tls = Some(tls);
        self
    }
}
