//! `dyno compare bisect`: from "bad is slower than good" to the commit(s) that did it,
//! under noise, with stated error rates on every step.
//!
//! - [`search`]: the search itself, pure over a "measure this revision" oracle: which
//!   revision to test next, skipping those that do not build, searching both halves of
//!   a revision that measures halfway, confirming each culprit against its parent.
//!
//! Each step's decision is the three-decision SPRT of dyno-stats
//! ([`dyno_stats::sprt_three_way`]) on the per-round log ratios of the tested revision
//! against good.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod search;

pub use search::{Answer, Finding, Query, Search, SearchSettings};
