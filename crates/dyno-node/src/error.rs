//! Errors of the node crate: each names the file, line and key, the address, or the peer.

use std::path::PathBuf;

use thiserror::Error;

/// What went wrong.
#[derive(Debug, Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A config or genesis file is not valid: names the file, line and key.
    #[error("{path}:{line}: `{key}`: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line (0 when the file as a whole is wrong).
        line: usize,
        /// The key (dotted path) at fault.
        key: String,
        /// Why.
        reason: String,
    },
    /// The network could not start (a peer list dyno-net refused, a thread).
    #[error("network: {0}")]
    Net(String),
    /// An address could not be bound.
    #[error("cannot bind {what} address {addr}: {reason}")]
    Bind {
        /// Which listener (`peer`, `ingress`, `metrics`).
        what: &'static str,
        /// The address.
        addr: String,
        /// Why.
        reason: String,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The 1-based line of the first line of `text` that assigns `key` (`key =` at the start
/// of the line, after indentation) and, when `value` is given, contains it; 0 if none.
/// Serde reports the line of syntax errors itself; checks made after parsing (an unknown
/// peer id, a duplicate validator) use this to point at the offending line.
pub fn line_of(text: &str, key: &str, value: Option<&str>) -> usize {
    text.lines()
        .position(|l| {
            let t = l.trim_start();
            t.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
                && value.is_none_or(|v| l.contains(v))
        })
        .map_or(0, |i| i + 1)
}

/// Turns a TOML parse error into [`Error::Invalid`] with its line and the key it names.
pub(crate) fn from_toml(path: &std::path::Path, text: &str, e: &toml::de::Error) -> Error {
    let line = e.span().map_or(0, |s| {
        1 + text[..s.start.min(text.len())].matches('\n').count()
    });
    let msg = e.message().to_string();
    let key = msg
        .split('`')
        .nth(1)
        .filter(|_| msg.contains('`'))
        .unwrap_or("(syntax)")
        .to_string();
    Error::Invalid {
        path: path.to_path_buf(),
        line,
        key,
        reason: msg,
    }
}
