//! What a run of the tiles reports while it runs, one event at a time: the pipeline
//! bench's progress, which the node log ([`crate::node_log`]) and the node's metrics
//! ([`crate::node_metrics`]) are fed from.

use serde::Serialize;

use crate::hist::Histogram;
use crate::telemetry::BlockRecord;

/// Latency centiles in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th centile.
    pub p90: u64,
    /// 99th centile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Latency {
    /// The centiles of `h` (zeros when it is empty).
    pub fn of(h: &Histogram) -> Latency {
        let q = |p| h.quantile(p).unwrap_or(0);
        Latency {
            count: h.count(),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            max: q(1.0),
        }
    }
}

/// Progress reported while running (the caller decides what to show).
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Signing the pool before the window.
    Presigning {
        /// Transactions being signed.
        count: usize,
    },
    /// Something the user should know before the window starts (the pre-signed pool
    /// will not last it, say); also kept in the report's warnings.
    Warning(String),
    /// The tiles are running.
    Started {
        /// Tile names in affinity order.
        tiles: Vec<String>,
        /// Workspace name (for `dyno pipeline monitor --name`).
        workspace: String,
    },
    /// One second of the window.
    Second {
        /// Seconds since the start.
        t: f64,
        /// Transactions landed (executed or failed) per second over the last second.
        tps: f64,
        /// Generation-to-PoH latency of the transactions recorded in that second.
        latency: Latency,
    },
    /// A block (slot) was produced and written; its stage timings.
    Block {
        /// Seconds from the start of the window to the block's end (negative for blocks
        /// made before the window).
        t: f64,
        /// The block.
        block: BlockRecord,
    },
    /// Benchg stopped; waiting for the pipeline to drain.
    Draining,
}
