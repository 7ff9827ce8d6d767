//! # dyno-tango: tiles and links
//!
//! The runtime behind `dyno pipeline`: shared-memory frag rings ("links") with overrun
//! and backpressure accounting, a workspace that holds them so a monitor process can
//! watch, a pinned per-tile run loop with exclusive time accounting, layout configuration
//! and a Prometheus readout. This is the only crate of dyno that contains `unsafe`; it
//! is confined to [`region`] (viewing shared memory as atomics) and `sys` (OS calls).
//!
//! ```
//! use dyno_tango::link::{HeapLink, Poll};
//! let link = HeapLink::new(64, 128, 0, 1).unwrap();
//! let mut tx = link.producer();
//! let mut rx = link.reliable_consumer(0).unwrap();
//! tx.try_publish(42, b"hello", 0, 0, 0).unwrap();
//! let mut buf = [0u8; 128];
//! match rx.poll() {
//!     Poll::Ready(meta) => {
//!         let n = rx.read(&meta, &mut buf).unwrap();
//!         assert_eq!((meta.sig, &buf[..n]), (42, &b"hello"[..]));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

pub mod affinity;
pub mod clock;
pub mod config;
pub mod dcache;
pub mod error;
pub mod fseq;
pub mod link;
pub mod mcache;
pub mod metrics;
pub mod prometheus;
pub mod region;
pub mod seq;
pub mod snapshot;
pub mod synthetic;
pub mod sys;
pub mod tile;
pub mod wiring;
pub mod workspace;

pub use config::LayoutConfig;
pub use error::{Error, Result};
pub use prometheus::prometheus_text;
pub use snapshot::Snapshot;
pub use synthetic::{run_synthetic, RunSummary};
pub use workspace::Workspace;
