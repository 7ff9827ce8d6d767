//! # dyno-net: the reference node's network
//!
//! Three parts, each usable alone:
//! - [`peer`]: the peer protocol. One framed TCP link per pair of nodes, opened with a
//!   handshake that carries a magic, a version, the genesis hash and the node id; a node
//!   of another network, an unknown id, garbage or an oversized frame is refused, counted
//!   by reason and reported as an event, and the node keeps running. Payloads are opaque.
//! - [`shape`]: one-way latency and bandwidth per link direction, carried out in user
//!   space by one timer per network (this machine's kernel has no `netem`).
//! - [`ingress`]: transactions into a node over QUIC (`quinn`), and the client that
//!   `dyno load` uses.
//!
//! - [`io`]: the one I/O thread (a tokio current-thread runtime) that all of a node's
//!   sockets run on, so its thread count grows neither with its peers nor with the
//!   machine's cores.
//!
//! The API is synchronous: tokio runs inside, on the I/O thread.
//!
//! ```
//! use dyno_net::{LinkShape, PeerConfig, PeerEvent, PeerNet, PeerSpec};
//! use std::time::Duration;
//!
//! let cfg = |id: &str| PeerConfig {
//!     node_id: id.into(),
//!     genesis_hash: [1; 32],
//!     listen: "127.0.0.1:0".parse().unwrap(),
//!     max_frame: 1 << 20,
//! };
//! let shape = LinkShape { latency: Duration::from_millis(5), bandwidth_bps: None };
//! // b accepts; a (the smaller id) dials b.
//! let (b, b_events) = PeerNet::start(cfg("b"), vec![PeerSpec {
//!     id: "a".into(), addr: "127.0.0.1:9".into(), shape,
//! }]).unwrap();
//! let (a, a_events) = PeerNet::start(cfg("a"), vec![PeerSpec {
//!     id: "b".into(), addr: b.local_addr().to_string(), shape,
//! }]).unwrap();
//! assert_eq!(a_events.recv().unwrap(), PeerEvent::Connected { peer: "b".into() });
//! assert!(a.send("b", b"block header".to_vec()));
//! let got = loop {
//!     if let PeerEvent::Message { payload, .. } = b_events.recv().unwrap() { break payload; }
//! };
//! assert_eq!(got, b"block header");
//! a.shutdown();
//! b.shutdown();
//! ```
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

pub mod error;
pub mod fault;
pub mod frame;
pub mod ingress;
pub mod io;
pub mod peer;
pub mod shape;
mod sys;
mod tls;

pub use error::NetError;
pub use fault::LinkFault;
pub use frame::RefuseReason;
pub use ingress::{
    Ingress, IngressClient, IngressConfig, IngressCounters, IngressMode, IngressReport, Room,
};
pub use io::IoThread;
pub use peer::{
    DialWait, PeerConfig, PeerCounters, PeerEvent, PeerEvents, PeerNet, PeerOptions, PeerSpec,
};
pub use shape::{unix_ns, LinkShape};
