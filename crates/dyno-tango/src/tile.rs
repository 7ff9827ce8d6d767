//! Tiles and the stem: the per-tile run loop.
//!
//! A tile is one job on one thread. Its behaviour is a [`Tile`] (hooks called by the loop);
//! the loop itself ([`Stem::run`]) owns the links, the housekeeping, idling and the time
//! accounting, so every tile is measured the same way.
//!
//! One loop iteration does exactly one of these, and its whole duration (from the end of
//! the previous iteration to the end of this one, one clock read per iteration) is charged
//! to exactly one [`Bucket`], so the shares of loop time are exclusive and sum to 100 %:
//!
//! 1. housekeeping when its randomized deadline passed ([`Bucket::Housekeeping`]);
//! 2. if an output has fewer credits than the tile's burst, refresh them; still short:
//!    backpressured, idle ([`Bucket::Backpressure`]);
//! 3. [`Tile::after_credit`] (sources generate frags here): did work -> [`Bucket::Finish`];
//! 4. poll the next input (round robin): nothing new -> idle ([`Bucket::CaughtUp`]);
//!    overrun -> [`Bucket::OverrunPolling`]; filtered on sig -> [`Bucket::FilteredBeforeRead`];
//!    torn while reading -> [`Bucket::OverrunReading`]; [`Tile::after_frag`] filtered it ->
//!    [`Bucket::FilteredAfterRead`]; else [`Bucket::Finish`].
//!
//! Housekeeping runs at a randomized interval (uniform in [1/2, 3/2] of the lazy period,
//! so tiles do not beat against each other): heartbeat, fseq progress, seq hint, credit
//! refresh, local counters stored into the shared metrics, context switches (at most
//! every 10 ms: reading /proc costs microseconds).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::clock::{ns_per_tick, ticks, ticks_to_ns, wallclock_ns};
use crate::error::Result;
use crate::link::{Backpressure, Consumer, Poll, Producer};
use crate::mcache::FragMeta;
use crate::metrics::{Bucket, ConsumerMetrics, LinkMetrics, TileMetrics, TileState, BUCKETS};
use crate::region::Region;
use crate::sys;

/// What the tile did with a frag it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragOutcome {
    /// Processed.
    Done,
    /// Dropped after reading (counted as filt2).
    Filtered,
}

/// The hooks of one tile. Every hook has a default except `after_frag`.
pub trait Tile: Send {
    /// Frags the tile may publish per hook call on any one output; the loop only calls
    /// hooks when every output has at least this many credits.
    fn burst(&self) -> u64 {
        1
    }

    /// Called when every output has credits and before polling inputs; sources generate
    /// here. Returns true when it did work.
    fn after_credit(&mut self, _out: &mut Outputs) -> bool {
        false
    }

    /// Called with a frag's metadata before its payload is read: false filters it out.
    fn before_frag(&mut self, _input: usize, _meta: &FragMeta) -> bool {
        true
    }

    /// Called with a validated copy of a frag's payload.
    fn after_frag(
        &mut self,
        input: usize,
        meta: &FragMeta,
        payload: &[u8],
        out: &mut Outputs,
    ) -> FragOutcome;

    /// Called at every housekeeping.
    fn housekeeping(&mut self) {}

    /// True when the tile has nothing more to do; the loop then halts.
    fn finished(&self) -> bool {
        false
    }
}

/// What a tile does when it has nothing to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdleStrategy {
    /// Busy-spin (a tile that owns its core).
    Spin,
    /// Spin a little, then yield the CPU each idle iteration (the default): behaves with more tiles
    /// than cores.
    #[default]
    SpinThenYield,
    /// Spin a little, then sleep this many microseconds each idle iteration.
    Park {
        /// Sleep length in microseconds.
        micros: u64,
    },
    /// Spin a little, then sleep `min_micros`, doubling the sleep with each further idle
    /// iteration up to `max_micros`; any work starts over at `min_micros`. A tile that is
    /// idle for long (a node's pipeline between transactions at a low rate) wakes a few
    /// hundred times a second instead of thousands, at the price of up to `max_micros`
    /// before it notices the next frag.
    Backoff {
        /// First sleep, in microseconds.
        min_micros: u64,
        /// Longest sleep, in microseconds.
        max_micros: u64,
    },
}

const IDLE_SPINS: u32 = 64;

struct Idle {
    strategy: IdleStrategy,
    streak: u32,
    /// The next sleep of [`IdleStrategy::Backoff`], in microseconds.
    sleep_micros: u64,
}

impl Idle {
    #[inline]
    fn idle(&mut self) {
        self.streak = self.streak.saturating_add(1);
        if self.streak < IDLE_SPINS || self.strategy == IdleStrategy::Spin {
            std::hint::spin_loop();
            return;
        }
        match self.strategy {
            IdleStrategy::Spin => {}
            IdleStrategy::SpinThenYield => std::thread::yield_now(),
            IdleStrategy::Park { micros } => std::thread::sleep(Duration::from_micros(micros)),
            IdleStrategy::Backoff {
                min_micros,
                max_micros,
            } => std::thread::sleep(Duration::from_micros(self.backoff(min_micros, max_micros))),
        }
    }

    /// This idle iteration's sleep under [`IdleStrategy::Backoff`]; the next one doubles.
    fn backoff(&mut self, min_micros: u64, max_micros: u64) -> u64 {
        let sleep = self
            .sleep_micros
            .clamp(min_micros, max_micros.max(min_micros));
        self.sleep_micros = sleep.saturating_mul(2);
        sleep
    }

    #[inline]
    fn busy(&mut self) {
        self.streak = 0;
        self.sleep_micros = 0;
    }
}

/// An output link of a tile.
#[derive(Debug)]
pub struct OutLink {
    /// The producer end.
    pub producer: Producer,
    /// Shared link metrics (a `LinkMetrics` region), if any.
    pub metrics: Option<Region>,
    /// Shared metrics of the reliable consumers, in the producer's fseq order, to charge
    /// the `slow` counter of the one that limits credits while backpressured.
    pub slow: Vec<Option<Region>>,
}

/// An input link of a tile.
#[derive(Debug)]
pub struct InLink {
    /// The consumer end.
    pub consumer: Consumer,
    /// Shared consumer metrics (a `ConsumerMetrics` region), if any.
    pub metrics: Option<Region>,
}

/// The outputs of a tile, as seen by its hooks.
#[derive(Debug, Default)]
pub struct Outputs {
    links: Vec<OutLink>,
    /// The loop's last clock reading, reused to stamp `tspub` without another read.
    now_ticks: u64,
    ns_per_tick: f64,
}

impl Outputs {
    /// Number of outputs.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// True without outputs.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The producer of output `out` (its sequence number, credits, counters).
    pub fn producer(&self, out: usize) -> &Producer {
        &self.links[out].producer
    }

    /// Largest payload of output `out`.
    pub fn mtu(&self, out: usize) -> usize {
        self.links[out].producer.mtu()
    }

    /// Publishes a frag on output `out`; `tspub` is stamped here from the loop's last
    /// clock reading (exact to one loop iteration with accounting on).
    #[inline]
    pub fn publish(
        &mut self,
        out: usize,
        sig: u64,
        payload: &[u8],
        tsorig: u32,
    ) -> Result<u64, Backpressure> {
        let tspub = (self.now_ticks as f64 * self.ns_per_tick) as u64 as u32;
        self.links[out]
            .producer
            .try_publish(sig, payload, 0, tsorig, tspub)
    }

    fn short_of(&mut self, burst: u64) -> bool {
        self.links.iter().any(|l| l.producer.credits() < burst)
    }
}

/// Run-loop settings of one tile.
#[derive(Debug, Clone, PartialEq)]
pub struct StemOptions {
    /// Idle behaviour.
    pub idle: IdleStrategy,
    /// Mean housekeeping period in ns.
    pub lazy_ns: u64,
    /// Charge every iteration to a bucket (off only to measure the accounting's cost).
    pub accounting: bool,
}

impl Default for StemOptions {
    fn default() -> Self {
        StemOptions {
            idle: IdleStrategy::default(),
            lazy_ns: 100_000,
            accounting: true,
        }
    }
}

impl StemOptions {
    /// The upstream default lazy period for a link of `depth`: 9/4 x depth ns, kept
    /// between 10 us and 10 ms.
    pub fn lazy_for_depth(depth: u64) -> u64 {
        (depth.saturating_mul(9) / 4).clamp(10_000, 10_000_000)
    }
}

/// One tile with its links and metrics, ready to run.
pub struct Stem<T: Tile> {
    tile: T,
    inputs: Vec<InLink>,
    outputs: Outputs,
    metrics: Option<Region>,
    opts: StemOptions,
    /// Ticks charged per bucket (local; stored as ns at housekeeping).
    acc: [u64; BUCKETS],
    /// Reused payload buffer, as large as the largest input mtu.
    buf: Vec<u8>,
    next_input: usize,
    in_backp: bool,
    backp_cnt: u64,
    loops: u64,
    rng: u64,
    last_ctx_read: u64,
}

impl<T: Tile> std::fmt::Debug for Stem<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stem")
            .field("inputs", &self.inputs.len())
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl<T: Tile> Stem<T> {
    /// A stem for `tile`. `metrics` is a `TileMetrics` region, if any.
    pub fn new(
        tile: T,
        inputs: Vec<InLink>,
        outputs: Vec<OutLink>,
        metrics: Option<Region>,
        opts: StemOptions,
    ) -> Stem<T> {
        let mtu = inputs.iter().map(|i| i.consumer.mtu()).max().unwrap_or(0);
        Stem {
            tile,
            inputs,
            outputs: Outputs {
                links: outputs,
                now_ticks: ticks(),
                ns_per_tick: ns_per_tick(),
            },
            metrics,
            opts,
            acc: [0; BUCKETS],
            buf: vec![0; mtu],
            next_input: 0,
            in_backp: false,
            backp_cnt: 0,
            loops: 0,
            rng: wallclock_ns() | 1,
            last_ctx_read: 0,
        }
    }

    /// Ticks charged to each bucket so far.
    pub fn ticks_by_bucket(&self) -> [u64; BUCKETS] {
        self.acc
    }

    /// Times the tile entered backpressure.
    pub fn backpressure_count(&self) -> u64 {
        self.backp_cnt
    }

    /// The input links (for their counters after a run).
    pub fn inputs(&self) -> &[InLink] {
        &self.inputs
    }

    /// The output producers (for their counters after a run).
    pub fn outputs(&self) -> impl Iterator<Item = &Producer> {
        self.outputs.links.iter().map(|l| &l.producer)
    }

    /// The tile.
    pub fn tile(&self) -> &T {
        &self.tile
    }

    fn next_lazy_ticks(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let lazy = self.opts.lazy_ns.max(1);
        let ns = lazy / 2 + self.rng % lazy.max(1);
        ((ns as f64 / ns_per_tick()) as u64).max(1)
    }

    /// Runs until `stop` is set or the tile is finished, then does a final housekeeping
    /// (so the shared metrics hold the final totals) and marks the tile halted.
    pub fn run(&mut self, stop: &AtomicBool) {
        if let Some(m) = self.metric_view() {
            m.pid.store(std::process::id() as u64, Ordering::Relaxed);
            m.tid.store(sys::current_tid(), Ordering::Relaxed);
            m.state.store(TileState::Running as u64, Ordering::Release);
        }
        let mut idle = Idle {
            strategy: self.opts.idle,
            streak: 0,
            sleep_micros: 0,
        };
        let mut prev = ticks();
        let mut next_hk = prev;
        // Without accounting the clock is read only every 64 iterations (to pace
        // housekeeping), which is what the accounting's cost is measured against.
        let mut countdown = 0u32;
        loop {
            let hk_due = if self.opts.accounting {
                self.outputs.now_ticks = prev;
                prev >= next_hk
            } else if countdown == 0 {
                countdown = 64;
                self.outputs.now_ticks = ticks();
                self.outputs.now_ticks >= next_hk
            } else {
                countdown -= 1;
                false
            };
            let bucket = if hk_due {
                self.housekeeping();
                next_hk = ticks().wrapping_add(self.next_lazy_ticks());
                if stop.load(Ordering::Relaxed) || self.tile.finished() {
                    break;
                }
                Bucket::Housekeeping
            } else {
                self.step(&mut idle)
            };
            if self.opts.accounting {
                let now = ticks();
                self.acc[bucket as usize] += now.wrapping_sub(prev);
                prev = now;
            }
        }
        self.housekeeping();
        if let Some(m) = self.metric_view() {
            m.state.store(TileState::Halted as u64, Ordering::Release);
        }
    }

    /// One iteration after the housekeeping check; returns the bucket to charge.
    #[inline]
    fn step(&mut self, idle: &mut Idle) -> Bucket {
        self.loops += 1;
        let burst = self.tile.burst();
        if self.outputs.short_of(burst) {
            for l in &mut self.outputs.links {
                l.producer.refresh_credits();
            }
            if self.outputs.short_of(burst) {
                if !self.in_backp {
                    self.in_backp = true;
                    self.backp_cnt += 1;
                    self.charge_slow();
                }
                idle.idle();
                return Bucket::Backpressure;
            }
        }
        self.in_backp = false;
        if self.tile.after_credit(&mut self.outputs) {
            idle.busy();
            return Bucket::Finish;
        }
        if self.inputs.is_empty() {
            idle.idle();
            return Bucket::CaughtUp;
        }
        let i = self.next_input;
        self.next_input = if i + 1 == self.inputs.len() { 0 } else { i + 1 };
        let input = &mut self.inputs[i];
        let meta = match input.consumer.poll() {
            Poll::CaughtUp => {
                input.consumer.publish_progress();
                idle.idle();
                return Bucket::CaughtUp;
            }
            Poll::Overrun { .. } => return Bucket::OverrunPolling,
            Poll::Ready(meta) => meta,
        };
        idle.busy();
        if !self.tile.before_frag(i, &meta) {
            input.consumer.skip(&meta);
            return Bucket::FilteredBeforeRead;
        }
        let n = match input.consumer.read(&meta, &mut self.buf) {
            Ok(n) => n,
            Err(_) => return Bucket::OverrunReading,
        };
        match self
            .tile
            .after_frag(i, &meta, &self.buf[..n], &mut self.outputs)
        {
            FragOutcome::Done => Bucket::Finish,
            FragOutcome::Filtered => {
                self.inputs[i].consumer.filtered_after_read();
                Bucket::FilteredAfterRead
            }
        }
    }

    fn charge_slow(&self) {
        for l in &self.outputs.links {
            if let Some(Some(r)) = l.producer.slowest().and_then(|i| l.slow.get(i)) {
                if let Ok(m) = ConsumerMetrics::join(r) {
                    m.slow.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn metric_view(&self) -> Option<&TileMetrics> {
        self.metrics
            .as_ref()
            .and_then(|r| TileMetrics::join(r).ok())
    }

    fn housekeeping(&mut self) {
        for input in &mut self.inputs {
            input.consumer.publish_progress();
            if let Some(m) = input
                .metrics
                .as_ref()
                .and_then(|r| ConsumerMetrics::join(r).ok())
            {
                m.reliable
                    .store(input.consumer.is_reliable() as u64, Ordering::Relaxed);
                m.store_counters(&input.consumer.counters);
                m.rx_seq.store(input.consumer.seq(), Ordering::Relaxed);
            }
        }
        for l in &mut self.outputs.links {
            l.producer.publish_seq_hint();
            l.producer.refresh_credits();
            if let Some(m) = l.metrics.as_ref().and_then(|r| LinkMetrics::join(r).ok()) {
                m.store_counters(&l.producer.counters);
                m.tx_seq.store(l.producer.seq(), Ordering::Relaxed);
                m.depth.store(l.producer.depth(), Ordering::Relaxed);
                m.mtu.store(l.producer.mtu() as u64, Ordering::Relaxed);
            }
        }
        self.tile.housekeeping();
        let now_ns = wallclock_ns();
        let read_ctx = now_ns.saturating_sub(self.last_ctx_read) >= 10_000_000;
        if read_ctx {
            self.last_ctx_read = now_ns;
        }
        let Some(m) = self.metric_view() else {
            return;
        };
        m.heartbeat_ns.store(now_ns, Ordering::Relaxed);
        m.in_backp.store(self.in_backp as u64, Ordering::Relaxed);
        m.backp_cnt.store(self.backp_cnt, Ordering::Relaxed);
        m.loops.store(self.loops, Ordering::Relaxed);
        for (slot, t) in m.time_ns.iter().zip(self.acc) {
            slot.store(ticks_to_ns(t), Ordering::Relaxed);
        }
        if read_ctx {
            if let Some((vol, invol)) = sys::thread_context_switches() {
                m.ctx_vol.store(vol, Ordering::Relaxed);
                m.ctx_invol.store(invol, Ordering::Relaxed);
            }
        }
    }

    /// Consumes the stem, returning the tile.
    pub fn into_tile(self) -> T {
        self.tile
    }
}

/// Marks a tile metrics object failed (a tile thread that panicked or errored).
pub fn mark_failed(metrics: &Region) -> Result<()> {
    TileMetrics::join(metrics)?
        .state
        .store(TileState::Failed as u64, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod idle_tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_work_starts_it_over() {
        let mut idle = Idle {
            strategy: IdleStrategy::Backoff {
                min_micros: 10,
                max_micros: 40,
            },
            streak: 0,
            sleep_micros: 0,
        };
        let slept: Vec<u64> = (0..5).map(|_| idle.backoff(10, 40)).collect();
        assert_eq!(slept, [10, 20, 40, 40, 40]);
        idle.busy();
        assert_eq!(idle.backoff(10, 40), 10, "work starts the backoff over");
        assert_eq!(
            idle.backoff(50, 20),
            50,
            "a cap below the floor sleeps the floor"
        );
    }
}

#[cfg(test)]
mod tests;
