//! The one error type of the crate: every variant names the file, line or key at fault.

use std::path::PathBuf;

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
    /// The cluster file is malformed or fails validation.
    #[error("{path}:{line}:{column}: `{key}`: {message}")]
    File {
        /// The cluster file.
        path: PathBuf,
        /// 1-based line of the offending value.
        line: usize,
        /// 1-based column of the offending value.
        column: usize,
        /// The key at fault, dotted (`nodes.producers`, `region[1].latency_ms.us-east-1`).
        key: String,
        /// What is wrong.
        message: String,
    },
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
    /// A plot or report could not be built.
    #[error(transparent)]
    Report(#[from] dyno_report::ReportError),
}
