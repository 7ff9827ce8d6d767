//! The load generator (`dyno load`): valid transfers for a genesis, sent over QUIC to
//! one node or spread over many, paced at a fixed rate or flat out.
//!
//! Transactions are signed before the clock starts, on every core (so signing never
//! throttles the rate), and are unique across runs: each carries a per-run nonce in its
//! recent hash. Each target gets `connections` QUIC connections, each with a sender
//! thread of its own (one connection's driver and one sending thread cap a load at what
//! one core encrypts). The load keeps one schedule: its g-th transaction is due g / rate
//! seconds after the start and goes out through sender g mod k of k, so the senders take
//! turns and the whole load leaves evenly spaced however many targets share it (each
//! sender holds a contiguous share of the pool as long as its turns). Pacing: a sender
//! sleeps until its next transaction is due (looking at the stop flag at least every
//! 50 ms) and sends, in one batch, every transaction whose scheduled time has passed;
//! the pacing error is each batch's first transaction's lateness against its schedule.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dyno_net::{IngressClient, IngressMode, NetError};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::genesis::Genesis;

/// Most transactions sent in one batch.
const MAX_BATCH: usize = 1024;

/// Longest a waiting sender sleeps before it looks at the stop flag and the clock again.
/// A sender of a cluster's load waits seconds between its turns: sleeping a millisecond
/// at a time, 416 of them took 0.4 of a core (35 s of CPU in 84 s) of the machine the
/// cluster ran on.
const STOP_POLL: Duration = Duration::from_millis(50);

/// What to send.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Node ingress addresses: the load's transactions take turns over the connections,
    /// `connections` of them per target (see the module docs).
    pub targets: Vec<SocketAddr>,
    /// Transactions per second; 0 = flat out.
    pub rate: u64,
    /// How long.
    pub duration: Duration,
    /// Transactions to sign at most (flat out stops early when they run out).
    pub pool: usize,
    /// Datagrams instead of one stream per connection.
    pub datagrams: bool,
    /// QUIC connections (each with its own sender thread) per target; at least 1.
    pub connections: usize,
    /// Nonce that makes this run's transactions unique.
    pub nonce: u64,
}

/// One second of sending.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadSecond {
    /// Seconds since the start.
    pub t: f64,
    /// Transactions sent (offered) in that second.
    pub sent: u64,
    /// Send errors in that second.
    pub errors: u64,
    /// Transactions the nodes accepted in that second, as their ingress servers last
    /// said (they say it every 250 ms, so this lags the sending by up to a quarter second).
    pub accepted: u64,
    /// Transactions the nodes refused (queue full) in that second, as `accepted`.
    pub refused: u64,
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
    /// Of `taken`, those the node refused because its queue was full.
    pub refused: Option<u64>,
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
    /// QUIC connections (and sender threads) used, over all targets.
    pub connections: usize,
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
    let per_target = plan.connections.max(1);
    plan.targets
        .iter()
        .flat_map(|a| std::iter::repeat_n(*a, per_target))
        .map(|a| IngressClient::connect_with(a, g.hash.0, mode))
        .collect()
}

/// Counts the sender threads share with the thread that reports seconds.
#[derive(Default)]
struct Shared {
    sent: AtomicU64,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
    finished: AtomicUsize,
}

/// What one sender thread did.
struct SenderResult {
    sent: u64,
    lateness: Vec<u64>,
    ran_out: bool,
}

/// One sender's turns in the load's schedule (see the module docs): of `senders`
/// senders taking turns at `rate` transactions a second in all, this one sends the
/// load's transactions `turn`, `turn + senders`, `turn + 2 x senders`...
#[derive(Debug, Clone, Copy)]
struct Turns {
    rate: f64,
    senders: usize,
    turn: usize,
}

impl Turns {
    /// Seconds from the start until this sender's `n`-th transaction (from 0) is due.
    fn due_at(&self, n: usize) -> f64 {
        (n * self.senders + self.turn) as f64 / self.rate
    }

    /// Whether a share of `len` transactions runs out before `duration` ends: its next
    /// turn would have come before the end.
    fn runs_out(&self, len: usize, duration: Duration) -> bool {
        self.due_at(len) < duration.as_secs_f64()
    }

    /// How many of this sender's transactions are due `t` seconds after the start.
    fn due_by(&self, t: f64) -> usize {
        let load = t * self.rate - self.turn as f64;
        if load < 0.0 {
            0
        } else {
            (load / self.senders as f64) as usize + 1
        }
    }
}

/// The pool cut into `senders` contiguous shares, each as long as that sender's turns
/// in a load of `txs.len()` transactions (the first `txs.len() mod senders` one longer).
fn shares(txs: &[Vec<u8>], senders: usize) -> Vec<&[Vec<u8>]> {
    let mut rest = txs;
    (0..senders)
        .map(|j| {
            let (share, after) = rest.split_at((txs.len() + senders - 1 - j) / senders);
            rest = after;
            share
        })
        .collect()
}

/// Sends `share` through `client` on its `turns` of the load's schedule (none: flat
/// out), until `duration` from `t0` ends, the share runs out or `stop` is raised.
fn send_share(
    client: &IngressClient,
    share: &[Vec<u8>],
    turns: Option<Turns>,
    t0: Instant,
    duration: Duration,
    stop: &AtomicBool,
    shared: &Shared,
) -> SenderResult {
    let (mut next, mut sent, mut lateness) = (0usize, 0u64, Vec::new());
    while t0.elapsed() < duration && !stop.load(Ordering::Relaxed) && next < share.len() {
        let elapsed = t0.elapsed();
        let due = turns.map_or(share.len(), |p| {
            p.due_by(elapsed.as_secs_f64()).min(share.len())
        });
        if let Some(p) = turns {
            let scheduled = Duration::from_secs_f64(p.due_at(next));
            if due <= next {
                std::thread::sleep(
                    scheduled
                        .min(duration)
                        .saturating_sub(t0.elapsed())
                        .min(STOP_POLL),
                );
                continue;
            }
            lateness.push(elapsed.saturating_sub(scheduled).as_nanos() as u64);
        }
        let end = due.min(next + MAX_BATCH);
        let n = (end - next) as u64;
        match client.send_batch(&share[next..end]) {
            Ok(()) => {
                sent += n;
                shared.sent.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                shared.errors.fetch_add(n, Ordering::Relaxed);
                let mut first = shared.first_error.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert_with(|| e.to_string());
            }
        }
        next = end;
    }
    shared.finished.fetch_add(1, Ordering::Relaxed);
    SenderResult {
        sent,
        lateness,
        // Paced, a sender ends early by its schedule (its last turn came before the
        // end): it ran out only if its next turn would have come before the end too.
        ran_out: next >= share.len()
            && turns.map_or(t0.elapsed() < duration, |p| {
                p.runs_out(share.len(), duration)
            }),
    }
}

/// Until every sender finished, calls `second` once a second with what was sent,
/// failed, accepted and refused in it.
fn report_seconds(
    clients: &[IngressClient],
    shared: &Shared,
    t0: Instant,
    second: &mut dyn FnMut(LoadSecond),
) {
    let (mut next_report, mut last) = (1u64, [0u64; 4]);
    while shared.finished.load(Ordering::Relaxed) < clients.len() {
        std::thread::sleep(Duration::from_millis(5));
        if t0.elapsed() < Duration::from_secs(next_report) {
            continue;
        }
        let (accepted, refused) = clients
            .iter()
            .map(IngressClient::progress)
            .fold((0, 0), |(a, r), (ca, cr)| (a + ca, r + cr));
        let now = [
            shared.sent.load(Ordering::Relaxed),
            shared.errors.load(Ordering::Relaxed),
            accepted,
            refused,
        ];
        let d = |i: usize| now[i].saturating_sub(last[i]);
        second(LoadSecond {
            t: next_report as f64,
            sent: d(0),
            errors: d(1),
            accepted: d(2),
            refused: d(3),
        });
        last = now;
        next_report += 1;
    }
}

/// Sends `txs` per `plan` through `clients` (one sender thread each, see the module docs)
/// until the duration ends, the pool runs out or `stop` is raised; calls `second` once a
/// second; closes the clients.
pub fn run_load(
    plan: &LoadPlan,
    clients: Vec<IngressClient>,
    txs: &[Vec<u8>],
    stop: &AtomicBool,
    second: &mut dyn FnMut(LoadSecond),
) -> LoadReport {
    let t0 = Instant::now();
    let shared = Shared::default();
    let shares = shares(txs, clients.len());
    let results: Vec<SenderResult> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .zip(shares)
            .enumerate()
            .map(|(turn, (c, share))| {
                let turns = (plan.rate > 0).then_some(Turns {
                    rate: plan.rate as f64,
                    senders: clients.len(),
                    turn,
                });
                let shared = &shared;
                s.spawn(move || send_share(c, share, turns, t0, plan.duration, stop, shared))
            })
            .collect();
        report_seconds(&clients, &shared, t0, second);
        handles
            .into_iter()
            .map(|h| h.join().expect("a sender thread panicked"))
            .collect()
    });
    let elapsed_s = t0.elapsed().as_secs_f64();
    let mut lateness: Vec<u64> = results
        .iter()
        .flat_map(|r| r.lateness.iter().copied())
        .collect();
    lateness.sort_unstable();
    let per_target = plan.connections.max(1);
    let mut targets: Vec<TargetReport> = plan
        .targets
        .iter()
        .map(|a| TargetReport {
            target: a.to_string(),
            sent: 0,
            taken: Some(0),
            refused: Some(0),
            close_error: None,
        })
        .collect();
    // Every connection closes at once: each waits for its server's final count, and a
    // load spread over hundreds of cluster nodes closed one by one outlasted the grace a
    // cluster run gives it.
    let closed: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .map(|c| s.spawn(move || c.close()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a closing thread panicked"))
            .collect()
    });
    for (j, (closed, r)) in closed.into_iter().zip(&results).enumerate() {
        let t = &mut targets[j / per_target];
        t.sent += r.sent;
        match closed {
            Ok(report) => {
                t.taken = t.taken.map(|n| n + report.taken);
                t.refused = t.refused.map(|n| n + report.refused);
            }
            Err(e) => {
                t.taken = None;
                t.refused = None;
                t.close_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let sent = shared.sent.load(Ordering::Relaxed);
    LoadReport {
        signed: txs.len(),
        sent,
        errors: shared.errors.load(Ordering::Relaxed),
        first_error: shared
            .first_error
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
        elapsed_s,
        achieved_tps: sent as f64 / elapsed_s.max(1e-9),
        rate: plan.rate,
        pacing_p50_s: centile(&lateness, 0.5),
        pacing_p99_s: centile(&lateness, 0.99),
        pacing_max_s: lateness.last().map_or(0.0, |&v| v as f64 / 1e9),
        pool_exhausted: results.iter().any(|r| r.ran_out),
        connections: results.len(),
        targets,
    }
}

impl LoadPlan {
    /// A plan of `rate` transactions per second (0: flat out) for `duration_s` to
    /// `targets`, its pool and connections sized as `dyno load` sizes them when not given:
    /// rate x duration (+1) transactions (flat out: 200000), and a quarter of the cores
    /// shared over the targets, at least one connection each. A pool outside
    /// 1..=50000000 is refused.
    pub fn sized(
        targets: Vec<SocketAddr>,
        rate: u64,
        duration_s: f64,
        pool: Option<usize>,
        datagrams: bool,
        connections: Option<usize>,
        nonce: u64,
    ) -> crate::Result<LoadPlan> {
        const MOST: usize = 50_000_000;
        let pool = match (pool, rate) {
            (Some(p), _) if p == 0 || p > MOST => return Err(crate::Error::Pool(p)),
            (Some(p), _) => p,
            (None, 0) => 200_000,
            (None, r) => {
                // Saturates: a float past usize's range casts to usize::MAX.
                let pool = ((r as f64 * duration_s).ceil() as usize).saturating_add(1);
                if pool > MOST {
                    return Err(crate::Error::PoolOfRate {
                        rate,
                        duration_s,
                        pool,
                    });
                }
                pool
            }
        };
        // A cluster's load targets every node: a quarter of the cores per target would
        // be thousands of threads there, so the default is shared over the targets.
        let connections = connections.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / 4 / targets.len().max(1)).max(1)
        });
        Ok(LoadPlan {
            targets,
            rate,
            duration: Duration::from_secs_f64(duration_s),
            pool,
            datagrams,
            connections,
            nonce,
        })
    }
}

impl LoadReport {
    /// The summary people read after a load run: what was sent at what rate, the pacing
    /// error, whether the pool ran out, and what each target took.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "sent {} in {:.2} s = {:.1} tx/s (asked {}), send errors {}{}",
            self.sent,
            self.elapsed_s,
            self.achieved_tps,
            if self.rate == 0 {
                "flat out".into()
            } else {
                self.rate.to_string()
            },
            self.errors,
            self.first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})"))
        );
        if self.rate > 0 {
            let _ = writeln!(
                out,
                "pacing error (batch lateness): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                self.pacing_p50_s * 1e3,
                self.pacing_p99_s * 1e3,
                self.pacing_max_s * 1e3
            );
        }
        if self.pool_exhausted {
            let _ = writeln!(
                out,
                "the pool of {} signed transfers ran out before the duration",
                self.signed
            );
        }
        for t in &self.targets {
            let _ = writeln!(
                out,
                "{}: sent {}, taken by the node {}",
                t.target,
                t.sent,
                match (t.taken, t.refused) {
                    (Some(n), Some(r)) =>
                        format!("{n} ({} accepted, {r} refused: queue full)", n - r),
                    _ => format!("unknown ({})", t.close_error.as_deref().unwrap_or("")),
                }
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sender's due times, merged: the load's transactions in the order they leave.
    fn schedule(total: usize, senders: usize, rate: f64) -> Vec<f64> {
        let txs = vec![Vec::new(); total];
        let mut all = Vec::new();
        for (turn, share) in shares(&txs, senders).into_iter().enumerate() {
            let p = Turns {
                rate,
                senders,
                turn,
            };
            for n in 0..share.len() {
                let at = p.due_at(n);
                assert_eq!(p.due_by(at - 1e-6), n, "sender {turn} early at {n}");
                assert_eq!(p.due_by(at + 1e-6), n + 1, "sender {turn} late at {n}");
                all.push(at);
            }
        }
        all.sort_by(f64::total_cmp);
        all
    }

    #[test]
    fn a_load_over_many_targets_leaves_evenly_spaced_not_in_bursts() {
        // A cluster's 20 TPS over 416 nodes (one connection each): the senders used to
        // each pace a share from the same start, so 376 transactions left at once, then
        // 375 every 18.8 s, and none in between.
        for (total, senders, rate) in [(1501, 416, 20.0), (801, 52, 20.0), (10, 3, 5.0)] {
            let at = schedule(total, senders, rate);
            assert_eq!(at.len(), total);
            for (g, t) in at.iter().enumerate() {
                assert!(
                    (t - g as f64 / rate).abs() < 1e-9,
                    "{senders} senders: transaction {g} due at {t} s, not {} s",
                    g as f64 / rate
                );
            }
        }
    }

    #[test]
    fn a_pool_too_large_blames_the_flag_that_made_it() {
        let at = vec!["127.0.0.1:9".parse().unwrap()];
        let plan = |rate, duration_s, pool| {
            LoadPlan::sized(at.clone(), rate, duration_s, pool, false, Some(1), 0)
        };
        let e = plan(10, 1e12, None).unwrap_err().to_string();
        assert!(
            e.starts_with("--duration 1000000000000 s at --rate 10 tx/s"),
            "{e}"
        );
        assert!(!e.contains("--pool 1"), "{e}");
        let e = plan(10, 1.0, Some(60_000_000)).unwrap_err().to_string();
        assert!(e.starts_with("--pool 60000000:"), "{e}");
        assert_eq!(plan(10, 1.0, None).unwrap().pool, 11);
    }

    #[test]
    fn a_pool_of_rate_x_duration_plus_one_never_runs_out_however_many_senders() {
        // dyno load's default pool for 20 TPS over 10 s.
        let duration = Duration::from_secs(10);
        for senders in [1, 2, 4, 416] {
            let txs = vec![Vec::new(); 201];
            let out: Vec<usize> = shares(&txs, senders)
                .iter()
                .enumerate()
                .filter(|(turn, share)| {
                    let p = Turns {
                        rate: 20.0,
                        senders,
                        turn: *turn,
                    };
                    p.runs_out(share.len(), duration)
                })
                .map(|(turn, _)| turn)
                .collect();
            assert!(out.is_empty(), "{senders} senders: {out:?} ran out");
            // 150 transactions last 7.5 s: the sender whose turn the 151st is runs out.
            let short = shares(&txs[..150], senders);
            let turn = 150 % senders;
            let p = Turns {
                rate: 20.0,
                senders,
                turn,
            };
            assert!(p.runs_out(short[turn].len(), duration), "{senders} senders");
        }
    }

    #[test]
    fn the_shares_cover_the_pool_in_order_each_as_long_as_its_turns() {
        let txs: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i]).collect();
        let cut = shares(&txs, 4);
        assert_eq!(
            cut.iter().map(|s| s.len()).collect::<Vec<_>>(),
            [3, 3, 2, 2]
        );
        assert_eq!(cut.concat(), txs);
        // More senders than transactions: the last ones have none.
        assert_eq!(
            shares(&txs[..2], 3)
                .iter()
                .map(|s| s.len())
                .collect::<Vec<_>>(),
            [1, 1, 0]
        );
    }
}
