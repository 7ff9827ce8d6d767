//! The crate's error type: every variant names the address, peer or limit at fault.

use std::net::SocketAddr;

/// Errors of the peer network and the QUIC ingress.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A listener could not be bound (address in use, not local, no permission).
    #[error("cannot bind {what} listener on {addr}: {source}")]
    Bind {
        /// Which listener: "peer" or "QUIC ingress".
        what: &'static str,
        /// The address that was asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The peer list is not usable as given.
    #[error("peer list: {0}")]
    PeerList(String),
    /// A thread could not be started.
    #[error("cannot start thread {name}: {source}")]
    Thread {
        /// The thread's name.
        name: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// TLS or QUIC setup failed (certificate generation, configuration).
    #[error("QUIC setup: {0}")]
    QuicSetup(String),
    /// The QUIC client could not connect or complete its hello with `addr`.
    #[error("QUIC connection to {addr}: {reason}")]
    QuicConnect {
        /// The server address.
        addr: SocketAddr,
        /// What failed.
        reason: String,
    },
    /// A transaction could not be sent on an established QUIC connection.
    #[error("QUIC send to {addr}: {reason}")]
    QuicSend {
        /// The server address.
        addr: SocketAddr,
        /// What failed.
        reason: String,
    },
    /// A transaction is larger than the frame limit or a QUIC datagram can carry.
    #[error("transaction of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The transaction's size.
        len: usize,
        /// The limit that applies.
        limit: usize,
    },
}
