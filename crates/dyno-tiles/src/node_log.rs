//! The single-process node's log (`dyno node --workload`, `dyno pipeline bench
//! --node-log`): JSON lines, one per second (TPS, latency centiles) and one per block
//! (stage timings), that `dyno compare` reads as observations. The networked node writes
//! the same two kinds of line next to its events (dyno-node's event log).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::progress::Progress;

/// The node log: JSON lines, one per second and one per block, flushed as written so
/// that a reader sees every line of a node that was killed.
pub struct NodeLog {
    path: PathBuf,
    file: std::fs::File,
    error: Option<String>,
}

impl NodeLog {
    /// Opens `path` for appending (created if missing).
    pub fn open(path: &Path) -> Result<NodeLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(NodeLog {
            path: path.to_path_buf(),
            file,
            error: None,
        })
    }

    /// Writes the line of `p`; false when `p` has none (progress other than a second or
    /// a block: the caller shows it).
    pub fn write(&mut self, p: &Progress) -> bool {
        let Some(line) = node_log_line(p) else {
            return false;
        };
        // One write per line, so a reader never sees half a line from a live node.
        if let Err(e) = self.file.write_all(format!("{line}\n").as_bytes()) {
            self.error
                .get_or_insert_with(|| format!("node log {}: {e}", self.path.display()));
        }
        true
    }

    /// The first write error since the last call (the run reports it as a warning).
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }
}

/// A per-second line of the node log (fields in this order).
#[derive(serde::Serialize)]
struct SecondLine {
    t: f64,
    kind: &'static str,
    tps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p50_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p90_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p99_s: Option<f64>,
}

/// A per-block line of the node log: the stages in the order a block goes through them.
#[derive(serde::Serialize)]
struct BlockLine {
    t: f64,
    kind: &'static str,
    slot: u64,
    txs: u64,
    microblocks: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stage_leader_check_s: Option<f64>,
    stage_ticking_s: f64,
    stage_snapshot_s: f64,
    stage_forged_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stage_adopted_s: Option<f64>,
}

/// The JSON line of a second or a block (times in seconds; absent values left out).
pub fn node_log_line(p: &Progress) -> Option<String> {
    let s = |ns: u64| ns as f64 / 1e9;
    let line = match p {
        Progress::Second { t, tps, latency } => {
            let c = |ns: u64| (latency.count > 0).then(|| s(ns));
            serde_json::to_string(&SecondLine {
                t: *t,
                kind: "second",
                tps: *tps,
                latency_p50_s: c(latency.p50),
                latency_p90_s: c(latency.p90),
                latency_p99_s: c(latency.p99),
            })
        }
        Progress::Block { t, block: b } => serde_json::to_string(&BlockLine {
            t: *t,
            kind: "block",
            slot: b.slot,
            txs: b.txs,
            microblocks: b.microblocks,
            stage_leader_check_s: b.leader_check_ns.map(s),
            stage_ticking_s: s(b.ticking_ns),
            stage_snapshot_s: s(b.snapshot_ns),
            stage_forged_s: s(b.forged_ns),
            stage_adopted_s: b.adopted_ns.map(s),
        }),
        _ => return None,
    };
    line.ok()
}
