//! QUIC transaction ingress: the node's server and the client `dyno load` uses.
//!
//! ```text
//! connection  := TLS 1.3 with ALPN "dyno-ingress/1" (any other ALPN fails the handshake)
//! first bidi stream, client -> server:
//!     hello   := "DYNOTXIN" version:u16be genesis[32]        (42 bytes)
//!     frame*  := len:u32be tx[len]                             (stream mode)
//!     end     := 0xFFFFFFFF sent:u64be                         (at close, both modes)
//! datagrams, client -> server: one transaction each             (datagram mode)
//! same stream, server -> client:
//!     status:u8 (0 = accepted; otherwise the server closes)    after the hello
//!     progress := accepted:u64be refused:u64be                 every 250 ms when it
//!                                                              changed, and once more
//!                                                              after `end`, then the
//!                                                              stream finishes
//! ```
//! `accepted` counts this connection's transactions the node took so far and `refused`
//! those it could not take (its queue was full); their sum after `end` is what the
//! server handed to the node (`taken`), so a client knows what was lost on the way:
//! nothing in stream mode, datagrams QUIC dropped in datagram mode. The progress four
//! times a second lets a load generator report accepted and refused per second while it
//! sends (once a second, read by a client that also counts once a second, showed a rate
//! of 0 one second and twice the rate the next).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

mod client;
mod server;
pub mod wire;

use wire::hello;

pub use client::{IngressClient, IngressReport};
pub use server::{Ingress, Room};

/// First bytes of a client's hello.
pub const HELLO_MAGIC: [u8; 8] = *b"DYNOTXIN";
/// Version of the ingress protocol.
pub const HELLO_VERSION: u16 = 2;
/// Bytes of a hello.
pub const HELLO_LEN: usize = 8 + 2 + 32;
/// Length value that marks the end of a client's stream, followed by its sent count.
pub const END_MARK: u32 = u32::MAX;
/// How often the server tells a client what the node accepted and refused so far (when
/// it changed).
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// Bytes of a progress message.
const PROGRESS_LEN: usize = 16;
/// Most client connections served at once: each holds a task and flow-control windows, so
/// a flood of connections must not grow the node without bound. One more is refused at
/// once (`connections_refused`).
pub const MAX_CONNECTIONS: usize = 1024;
/// How long a new connection may take to present its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// QUIC close codes the server uses.
const CLOSE_UNKNOWN_CLIENT: u32 = 1;
const CLOSE_OVERSIZED: u32 = 2;

/// How transactions travel from client to server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IngressMode {
    /// Length-prefixed frames on one stream: reliable and ordered. The default: see
    /// docs/network.md for the measurement that chose it.
    #[default]
    Stream,
    /// One QUIC datagram per transaction: unreliable (QUIC may drop datagrams under load;
    /// the loss shows as `sent - taken` in the client's [`IngressReport`]).
    Datagram,
}

/// The ingress server's settings.
#[derive(Clone, Debug)]
pub struct IngressConfig {
    /// UDP address to serve on (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Clients must present this genesis hash in their hello.
    pub genesis_hash: [u8; 32],
    /// Largest transaction accepted; a longer one is counted `oversized`.
    pub max_frame: usize,
    /// Most transactions a second one connection may hand the node (None: no limit), so
    /// that one client cannot take a node's whole capacity from the others. A stream
    /// above it is read no faster (QUIC's flow control then holds its client back:
    /// `throttled`); a datagram above it is refused without being offered to the node
    /// (`over_rate`, and the client sees it refused). A connection may send a tenth of
    /// a second's worth at once (at least one). Its stream's flow-control window is then
    /// one second's worth of `max_frame` frames, not 8 MiB, so a throttled client gets
    /// little ahead of the node (see `stream_window`).
    pub max_tps_per_connection: Option<u32>,
}

/// What the ingress server has seen since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngressCounters {
    /// Connections that completed their hello.
    pub connections: u64,
    /// Connections refused because [`MAX_CONNECTIONS`] were being served.
    pub connections_refused: u64,
    /// Connections refused: wrong ALPN or TLS failure, no hello in time, or a hello with
    /// the wrong magic, version or genesis hash.
    pub unknown_clients: u64,
    /// Transactions the node took (the sink returned true).
    pub accepted: u64,
    /// Transactions the node could not take (the sink returned false).
    pub dropped_full: u64,
    /// Empty transactions, and stream frames cut short by the end of their stream.
    pub malformed: u64,
    /// Transactions longer than `max_frame` (a stream carrying one is closed, since
    /// nothing after an untrusted length can be framed).
    pub oversized: u64,
    /// Bytes of the transactions handed to the node.
    pub bytes: u64,
    /// Times a stream was paused because the node had no room (a server started with a
    /// room check: [`Ingress::start_on_paused`]).
    pub paused: u64,
    /// Times a stream waited because its connection was above
    /// [`IngressConfig::max_tps_per_connection`].
    pub throttled: u64,
    /// Datagrams refused because their connection was above
    /// [`IngressConfig::max_tps_per_connection`] (never offered to the node).
    pub over_rate: u64,
}

#[derive(Default)]
struct Tally {
    connections: AtomicU64,
    connections_refused: AtomicU64,
    unknown_clients: AtomicU64,
    accepted: AtomicU64,
    dropped_full: AtomicU64,
    malformed: AtomicU64,
    oversized: AtomicU64,
    bytes: AtomicU64,
    paused: AtomicU64,
    throttled: AtomicU64,
    over_rate: AtomicU64,
}

impl Tally {
    fn snapshot(&self) -> IngressCounters {
        IngressCounters {
            connections: self.connections.load(Relaxed),
            connections_refused: self.connections_refused.load(Relaxed),
            unknown_clients: self.unknown_clients.load(Relaxed),
            accepted: self.accepted.load(Relaxed),
            dropped_full: self.dropped_full.load(Relaxed),
            malformed: self.malformed.load(Relaxed),
            oversized: self.oversized.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            paused: self.paused.load(Relaxed),
            throttled: self.throttled.load(Relaxed),
            over_rate: self.over_rate.load(Relaxed),
        }
    }
}

/// The widest window a stream and a connection advertise, so that a flat-out client is
/// limited by the node, not by flow control.
const WIDE_STREAM_WINDOW: u32 = 8 << 20;

/// The stream window a server advertises: [`WIDE_STREAM_WINDOW`], or, where each
/// connection may hand the node at most `max_tps` transactions a second, one second of
/// that rate in frames of `max_frame` bytes (at least 16 frames). A throttled client
/// then gets no more than that ahead of what the node took: the server holds at most
/// that much of its unread data, not 8 MiB a connection, and the client's writes wait.
pub(crate) fn stream_window(max_tps: Option<u32>, max_frame: usize) -> u32 {
    let frame = (max_frame as u64).saturating_add(4);
    max_tps.map_or(WIDE_STREAM_WINDOW, |tps| {
        (u64::from(tps).max(16).saturating_mul(frame)).min(u64::from(WIDE_STREAM_WINDOW)) as u32
    })
}

/// The transport both ends use, with a stream window of `stream_window` bytes (the
/// connection's is twice that: the hello and the stream's frames share it).
fn transport(stream_window: u32) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(quinn::VarInt::from_u32(stream_window))
        .receive_window(quinn::VarInt::from_u32(stream_window.saturating_mul(2)))
        .send_window(16 << 20)
        .datagram_receive_buffer_size(Some(16 << 20))
        .datagram_send_buffer_size(4 << 20)
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(0))
        .max_concurrent_bidi_streams(quinn::VarInt::from_u32(1));
    Arc::new(t)
}

#[cfg(test)]
mod tests;
