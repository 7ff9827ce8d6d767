//! The crate's error type.

/// What can go wrong serving or reading metrics. Messages name the address or the line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The endpoint's address could not be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The endpoint's thread could not be started.
    #[error("metrics endpoint thread: {0}")]
    Thread(#[source] std::io::Error),
    /// A line of an exposition is neither a sample nor a comment.
    #[error("line {line}: `{text}`")]
    Line {
        /// 1-based line number.
        line: usize,
        /// The line, trimmed.
        text: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
