//! # dyno-obs: one observability layer for every dyno process
//!
//! Every process dyno runs (a tile workspace, the reference node, the pipeline bench)
//! exposes its figures the same way, and every reader (`dyno compare` scraping a node,
//! `dyno serve`'s live view) reads them the same way:
//! - [`write`](mod@write): the Prometheus text exposition (format 0.0.4) built from metric
//!   descriptors ([`Desc`]: name, help, type, label names), with label values and help
//!   text escaped;
//! - [`read`](mod@read): the reader of that format (and of OpenMetrics sample lines);
//! - `endpoint` (feature `http`): the one HTTP listener that answers `/metrics`,
//!   `/ready` and whatever else its route says, on a thread of its own, or (feature
//!   `tokio`) as a task on the caller's runtime.
//!
//! ```
//! use dyno_obs::{read, Desc, TextWriter};
//! const FRAGS: Desc = Desc::counter("dyno_link_frags_total", "Frags published.").labels(&["link"]);
//! let mut w = TextWriter::new();
//! w.family(&FRAGS).sample(&["a->b"], 3u64);
//! let text = w.finish();
//! assert!(text.ends_with("dyno_link_frags_total{link=\"a->b\"} 3\n"));
//! let s = read::parse_exposition(&text).unwrap();
//! assert_eq!((s[0].label("link"), s[0].value), (Some("a->b"), 3.0));
//! ```
//!
//! This crate imports no workspace crate, so dyno-tango, dyno-node, the pipeline,
//! dyno-compare and dyno-web can all use it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod build_info;
#[cfg(feature = "http")]
pub mod endpoint;
pub mod error;
pub mod read;
pub mod write;

pub use build_info::build_info_text;
pub use error::{Error, Result};
pub use write::{Desc, MetricKind, TextWriter, Value};
