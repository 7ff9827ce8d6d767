//! The load generator (`dyno load`): valid transfers for a genesis, sent over QUIC to
//! one node or spread over many, paced at a fixed rate or flat out.
//!
//! Transactions are signed before the clock starts (so signing never throttles the
//! rate) and are unique across runs: each carries a per-run nonce in its recent hash.
//! Pacing: the sender wakes at most every millisecond and sends, in one batch, every
//! transaction whose scheduled time (i / rate) has passed; the pacing error is each
//! batch's first transaction's lateness against its schedule.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dyno_net::{IngressClient, IngressMode, NetError};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::genesis::Genesis;

/// Most transactions sent in one batch.
const MAX_BATCH: usize = 1024;

/// What to send.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Node ingress addresses (transactions go round robin, batch by batch).
    pub targets: Vec<SocketAddr>,
    /// Transactions per second; 0 = flat out.
    pub rate: u64,
    /// How long.
    pub duration: Duration,
    /// Transactions to sign at most (flat out stops early when they run out).
    pub pool: usize,
    /// Datagrams instead of one stream per connection.
    pub datagrams: bool,
    /// Nonce that makes this run's transactions unique.
    pub nonce: u64,
}

/// One second of sending.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadSecond {
    /// Seconds since the start.
    pub t: f64,
    /// Transactions sent in that second.
    pub sent: u64,
    /// Send errors in that second.
    pub errors: u64,
}

/// What one target took, from its close handshake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetReport {
    /// Address.
    pub target: String,
    /// Transactions sent to it.
    pub sent: u64,
    /// Transactions its ingress says it handed to the node (none if the close failed).
    pub taken: Option<u64>,
    /// The close error, if any.
    pub close_error: Option<String>,
}

/// The run's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadReport {
    /// Transactions signed.
    pub signed: usize,
    /// Transactions sent.
    pub sent: u64,
    /// Sends that failed (their transactions are not counted as sent).
    pub errors: u64,
    /// First error message.
    pub first_error: Option<String>,
    /// Seconds of sending.
    pub elapsed_s: f64,
    /// Achieved rate.
    pub achieved_tps: f64,
    /// Asked rate (0 = flat out).
    pub rate: u64,
    /// Pacing error (batch lateness), p50 / p99 / max, seconds (zero when flat out).
    pub pacing_p50_s: f64,
    /// p99.
    pub pacing_p99_s: f64,
    /// max.
    pub pacing_max_s: f64,
    /// The pool ran out before the duration.
    pub pool_exhausted: bool,
    /// Per target.
    pub targets: Vec<TargetReport>,
}

/// Signs `count` distinct transfers for genesis `g` (unique to `nonce`).
pub fn sign_transfers(g: &Genesis, count: usize, nonce: u64) -> Vec<Vec<u8>> {
    dyno_txn::bank::sign_transfers_with(&g.accounts, count, nonce, |i| {
        let mut h = Sha256::new();
        h.update(b"dyno-load");
        h.update(nonce.to_le_bytes());
        h.update(i.to_le_bytes());
        h.finalize().into()
    })
}

fn centile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i] as f64 / 1e9
}

/// Connects to every target (an error names the one that failed).
pub fn connect(g: &Genesis, plan: &LoadPlan) -> Result<Vec<IngressClient>, NetError> {
    let mode = if plan.datagrams {
        IngressMode::Datagram
    } else {
        IngressMode::Stream
    };
    plan.targets
        .iter()
        .map(|a| IngressClient::connect_with(*a, g.hash, mode))
        .collect()
}

/// Sends `txs` per `plan` through `clients` until the duration ends, the pool runs out
/// or `stop` is raised; calls `second` once a second; closes the clients.
pub fn run_load(
    plan: &LoadPlan,
    clients: Vec<IngressClient>,
    txs: &[Vec<u8>],
    stop: &AtomicBool,
    second: &mut dyn FnMut(LoadSecond),
) -> LoadReport {
    let t0 = Instant::now();
    let (mut sent, mut errors, mut first_error) = (0u64, 0u64, None);
    let mut per_target = vec![0u64; clients.len()];
    let mut lateness = Vec::new();
    let (mut next_report, mut sec_sent, mut sec_err) = (1u64, 0u64, 0u64);
    let mut next = 0usize;
    let mut turn = 0usize;
    while t0.elapsed() < plan.duration && !stop.load(Ordering::Relaxed) && next < txs.len() {
        let elapsed = t0.elapsed();
        let due = if plan.rate == 0 {
            txs.len()
        } else {
            ((elapsed.as_secs_f64() * plan.rate as f64) as usize + 1).min(txs.len())
        };
        if due > next {
            let end = due.min(next + MAX_BATCH);
            if plan.rate > 0 {
                let scheduled = Duration::from_secs_f64(next as f64 / plan.rate as f64);
                lateness.push(elapsed.saturating_sub(scheduled).as_nanos() as u64);
            }
            let c = turn % clients.len();
            turn += 1;
            match clients[c].send_batch(&txs[next..end]) {
                Ok(()) => {
                    let n = (end - next) as u64;
                    sent += n;
                    sec_sent += n;
                    per_target[c] += n;
                }
                Err(e) => {
                    errors += (end - next) as u64;
                    sec_err += (end - next) as u64;
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
            next = end;
        } else {
            let wake = Duration::from_secs_f64(next as f64 / plan.rate as f64);
            std::thread::sleep(
                wake.saturating_sub(t0.elapsed())
                    .min(Duration::from_millis(1)),
            );
        }
        if t0.elapsed() >= Duration::from_secs(next_report) {
            second(LoadSecond {
                t: next_report as f64,
                sent: sec_sent,
                errors: sec_err,
            });
            (sec_sent, sec_err) = (0, 0);
            next_report += 1;
        }
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    let pool_exhausted = next >= txs.len() && t0.elapsed() < plan.duration;
    lateness.sort_unstable();
    let targets = clients
        .into_iter()
        .zip(&plan.targets)
        .zip(per_target)
        .map(|((c, a), n)| {
            let (taken, close_error) = match c.close() {
                Ok(r) => (Some(r.taken), None),
                Err(e) => (None, Some(e.to_string())),
            };
            TargetReport {
                target: a.to_string(),
                sent: n,
                taken,
                close_error,
            }
        })
        .collect();
    LoadReport {
        signed: txs.len(),
        sent,
        errors,
        first_error,
        elapsed_s,
        achieved_tps: sent as f64 / elapsed_s.max(1e-9),
        rate: plan.rate,
        pacing_p50_s: centile(&lateness, 0.5),
        pacing_p99_s: centile(&lateness, 0.99),
        pacing_max_s: lateness.last().map_or(0.0, |&v| v as f64 / 1e9),
        pool_exhausted,
        targets,
    }
}
