//! `dyno compare bisect`: from "bad is slower than good" to the commit(s) that did it,
//! under noise, with stated error rates on every step.
//!
//! - [`spec`]: the bisection checked before anything is built ([`BisectSpec`]): the
//!   comparison file's git subject, good and bad as commits, the commits between.
//! - [`search`]: the search itself, pure over a "measure this revision" oracle: which
//!   revision to test next, skipping those that do not build, searching both halves of
//!   a revision that measures halfway, confirming each culprit against its parent.
//! - [`step`]: one step measured: two revisions built (dyno-build) and compared through
//!   dyno-compare's session, the rounds ended by the sequential test.
//! - [`evidence`]: what the judge says of a step's executions: the confirmation's
//!   change, a step's per-round log ratios.
//! - [`driver`]: the whole bisection, continued from the store when it was interrupted.
//! - [`record`]: the steps in the results store; [`report`]: what was found, as text
//!   and JSON.
//!
//! Each step's decision is the three-decision SPRT of dyno-stats
//! ([`dyno_stats::sprt_three_way`]) on the per-round log ratios of the tested revision
//! against good: like good, like bad, or between.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod driver;
mod error;
pub mod evidence;
pub mod record;
pub mod report;
pub mod search;
pub mod spec;
pub mod step;

pub use driver::bisect;
pub use error::BisectError;
pub use report::BisectReport;
pub use search::{Answer, Finding, Query, Search, SearchSettings};
pub use spec::{BisectOptions, BisectSpec};
pub use step::{Bench, BisectEvent};
