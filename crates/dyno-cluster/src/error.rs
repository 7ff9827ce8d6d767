//! The one error type of the crate: every variant names the file, line or key at fault.

use std::path::PathBuf;

impl ClusterError {
    /// The located diagnostic of a cluster-file error, if this is one.
    pub fn diagnostic(&self) -> Option<&dyno_model::ConfigDiagnostic> {
        match self {
            ClusterError::File(d) => Some(d),
            _ => None,
        }
    }
}

/// What can go wrong reading a cluster file, a node log, or rendering a report.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The cluster file is malformed or fails validation: file:line:column, the key and
    /// toml's snippet, as every dyno config file says it.
    #[error("{0}")]
    File(Box<dyno_model::ConfigDiagnostic>),
    /// A node log line is not a valid event.
    #[error("{path}:{line}: {message}")]
    Log {
        /// The node log.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A port the cluster needs is taken.
    #[error("port {port} on 127.0.0.1 (node {node} {role}) is not free: {source}; change `cluster.base_port`")]
    PortTaken {
        /// The port.
        port: u16,
        /// The node id that would use it.
        node: usize,
        /// Which of the node's endpoints.
        role: &'static str,
        /// The bind error.
        source: std::io::Error,
    },
    /// Logs hold nothing to analyse.
    #[error("{what}")]
    NoData {
        /// What is missing, naming the files looked at.
        what: String,
    },
    /// The local launcher could not start or run the cluster.
    #[error("cluster run: {what}")]
    Launch {
        /// What failed, with the node and its last output where there is one.
        what: String,
    },
    /// The cluster does not fit this machine's limits ([`crate::capacity`]): the
    /// arithmetic of every limit it exceeds.
    #[error("{0}")]
    DoesNotFit(String),
    /// A plot or report could not be built.
    #[error(transparent)]
    Report(#[from] dyno_report::ReportError),
}
