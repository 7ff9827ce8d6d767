//! Link shaping in user space: one-way latency and bandwidth of one direction of a link.
//!
//! The model is a single FIFO wire per direction, as `tc netem delay L rate R` builds it:
//! a frame queued at `t` starts serialising when the wire is free, takes
//! `bytes * 8 / bandwidth` on it, and reaches the far side `latency` after its last bit
//! left. [`LinkSchedule`] computes that delivery time; [`DeliveryTimer`] holds frames
//! until their time on ONE thread per network (a binary heap it owns, fed by a channel
//! whose timed receive is its only wait), never a sleep per message.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::NetError;

/// One-way shaping of one direction of a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShape {
    /// Propagation delay added to every frame after it has been serialised.
    pub latency: Duration,
    /// Wire speed in bits per second; `None` is unlimited (no serialisation delay).
    pub bandwidth_bps: Option<u64>,
}

impl LinkShape {
    /// No delay and no bandwidth limit: frames are delivered as soon as they arrive.
    pub const UNSHAPED: LinkShape = LinkShape {
        latency: Duration::ZERO,
        bandwidth_bps: None,
    };

    /// True when this shape adds nothing (frames bypass the timer).
    pub fn is_unshaped(&self) -> bool {
        self.latency.is_zero() && self.bandwidth_bps.is_none()
    }

    /// Time `bytes` occupy the wire at this bandwidth, in nanoseconds (rounded up, so a
    /// frame is never early). A bandwidth of 0 bits/s is treated as 1 bit/s.
    pub fn serialisation_ns(&self, bytes: usize) -> u64 {
        match self.bandwidth_bps {
            None => 0,
            Some(bps) => {
                let bps = u128::from(bps.max(1));
                let ns = (bytes as u128 * 8 * 1_000_000_000).div_ceil(bps);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }
}

/// The sender's state of one shaped direction: when its wire is free again.
#[derive(Clone, Debug)]
pub struct LinkSchedule {
    shape: LinkShape,
    /// Unix ns at which the last queued frame's last bit leaves the wire.
    wire_free_ns: u64,
    /// Delivery time of the previous frame: deliveries never reorder, even if the wall
    /// clock steps back.
    last_due_ns: u64,
}

impl LinkSchedule {
    /// A fresh, idle direction shaped by `shape`.
    pub fn new(shape: LinkShape) -> Self {
        LinkSchedule {
            shape,
            wire_free_ns: 0,
            last_due_ns: 0,
        }
    }

    /// The shape this schedule applies.
    pub fn shape(&self) -> LinkShape {
        self.shape
    }

    /// Queues a frame of `bytes` at `now_ns` (unix ns) and returns the unix ns at which
    /// the far side may deliver it: `max(now, wire free) + bytes*8/bandwidth + latency`.
    pub fn schedule(&mut self, now_ns: u64, bytes: usize) -> u64 {
        self.schedule_as(self.shape, now_ns, bytes)
    }

    /// Like [`LinkSchedule::schedule`], with this one frame shaped by `shape` instead of
    /// the link's own (a fault's extra latency, jitter or lower bandwidth) on the same
    /// wire: deliveries still never reorder.
    pub fn schedule_as(&mut self, shape: LinkShape, now_ns: u64, bytes: usize) -> u64 {
        let start = now_ns.max(self.wire_free_ns);
        let departs = start.saturating_add(shape.serialisation_ns(bytes));
        self.wire_free_ns = departs;
        let latency_ns = u64::try_from(shape.latency.as_nanos()).unwrap_or(u64::MAX);
        let due = departs.saturating_add(latency_ns).max(self.last_due_ns);
        self.last_due_ns = due;
        due
    }
}

/// Wall-clock time in nanoseconds since the Unix epoch (the clock of the node logs).
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// How the timer thread waits for a due time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerPrecision {
    /// Timer slack asked of the kernel for the timer thread (Linux default: 50 us).
    pub slack_ns: u64,
    /// The last part of a wait that is spun instead of slept (0 = never spin). Spinning
    /// buys precision with CPU that nodes sharing a few cores need for themselves.
    pub spin_ns: u64,
    /// Run the timer thread in the SCHED_FIFO real-time class when permitted (it sleeps
    /// between deliveries, so it takes CPU only to deliver). Ignored when not permitted.
    ///
    /// Off by default: the timer hands items over through std channels shared with
    /// normal-priority threads, and their spin-then-park waits can turn into a priority
    /// inversion under FIFO that holds a core for up to the kernel's real-time budget
    /// (950 ms of every second), with dozens of nodes on a few cores. For one shaped link
    /// on an otherwise quiet machine (the shaping bench) it is worth turning on.
    pub realtime: bool,
}

impl TimerPrecision {
    /// Asks the kernel for this precision on the calling thread (a timer's or an I/O
    /// thread's). A refusal only costs precision (the default 50 us slack, normal
    /// priority), so it is not an error.
    pub(crate) fn apply_to_this_thread(&self) {
        let _ = crate::sys::set_timer_slack_ns(self.slack_ns);
        if self.realtime {
            let _ = crate::sys::set_realtime_fifo(REALTIME_PRIORITY);
        }
    }
}

impl Default for TimerPrecision {
    /// 1 ns slack, no spin, normal scheduling class: see docs/network.md for the
    /// measurements behind this choice.
    fn default() -> Self {
        TimerPrecision {
            slack_ns: 1,
            spin_ns: 0,
            realtime: false,
        }
    }
}

/// SCHED_FIFO priority of a real-time timer thread: low in the range, above every normal
/// thread and below the kernel's own real-time threads.
pub(crate) const REALTIME_PRIORITY: i32 = 10;

/// A queued item in a timer's heap, ordered by due time then arrival (the thread timer
/// here and the peer network's timer task share it).
pub(crate) struct Pending<T> {
    pub(crate) due_ns: u64,
    /// Arrival order: equal due times leave in the order they were queued.
    pub(crate) seq: u64,
    pub(crate) item: T,
}

impl<T> PartialEq for Pending<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.seq) == (other.due_ns, other.seq)
    }
}
impl<T> Eq for Pending<T> {}
impl<T> PartialOrd for Pending<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Pending<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.due_ns, self.seq).cmp(&(other.due_ns, other.seq))
    }
}

enum Command<T> {
    Deliver { due_ns: u64, item: T },
    Stop,
}

/// Holds items until their due time (unix ns) and hands each to a callback on one thread.
///
/// Senders hand items over through a channel and the heap is the timer thread's alone:
/// with a heap behind a mutex, a sender preempted while holding the lock (routine when
/// nodes outnumber cores) held the timer up for a whole scheduler slice.
pub struct DeliveryTimer<T: Send + 'static> {
    commands: Sender<Command<T>>,
    pending: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> DeliveryTimer<T> {
    /// Starts the timer thread; `deliver(item, now_ns)` runs on it for each due item.
    pub fn start(
        name: &str,
        precision: TimerPrecision,
        mut deliver: impl FnMut(T, u64) + Send + 'static,
    ) -> Result<Self, NetError> {
        let (commands, inbox) = mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let left = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                precision.apply_to_this_thread();
                run_timer(&inbox, &left, precision, &mut deliver);
            })
            .map_err(|source| NetError::Thread {
                name: name.to_string(),
                source,
            })?;
        Ok(DeliveryTimer {
            commands,
            pending,
            thread: Some(thread),
        })
    }

    /// Queues `item` for delivery at `due_ns` (unix ns; a past time delivers at once).
    pub fn push(&self, due_ns: u64, item: T) {
        self.pending.fetch_add(1, AtomicOrdering::Relaxed);
        // Fails only once the thread has stopped, when nothing is delivered any more.
        let _ = self.commands.send(Command::Deliver { due_ns, item });
    }

    /// Items waiting for their time.
    pub fn pending(&self) -> usize {
        self.pending.load(AtomicOrdering::Relaxed)
    }

    /// Stops the thread, dropping undelivered items, and joins it.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl<T: Send + 'static> Drop for DeliveryTimer<T> {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn run_timer<T>(
    inbox: &Receiver<Command<T>>,
    pending: &AtomicUsize,
    precision: TimerPrecision,
    deliver: &mut impl FnMut(T, u64),
) {
    let mut heap: BinaryHeap<Reverse<Pending<T>>> = BinaryHeap::new();
    let mut next_seq = 0u64;
    loop {
        let now = unix_ns();
        let command = match heap.peek().map(|Reverse(p)| p.due_ns) {
            Some(due) if due <= now => {
                if let Some(Reverse(p)) = heap.pop() {
                    deliver(p.item, unix_ns());
                    pending.fetch_sub(1, AtomicOrdering::Relaxed);
                }
                continue;
            }
            Some(due) if due - now <= precision.spin_ns => {
                while unix_ns() < due {
                    std::hint::spin_loop();
                }
                continue;
            }
            Some(due) => {
                match inbox.recv_timeout(Duration::from_nanos(due - now - precision.spin_ns)) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            None => match inbox.recv() {
                Ok(c) => c,
                Err(_) => return,
            },
        };
        // Take everything already queued before looking at the clock again.
        for c in std::iter::once(command).chain(inbox.try_iter()) {
            match c {
                Command::Deliver { due_ns, item } => {
                    heap.push(Reverse(Pending {
                        due_ns,
                        seq: next_seq,
                        item,
                    }));
                    next_seq += 1;
                }
                Command::Stop => return,
            }
        }
    }
}

/// Locks, ignoring poisoning: the protected state stays consistent at every unlock.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn shape(ms: u64, bps: Option<u64>) -> LinkShape {
        LinkShape {
            latency: Duration::from_millis(ms),
            bandwidth_bps: bps,
        }
    }

    #[test]
    fn serialisation_rounds_up() {
        let s = shape(0, Some(8_000_000)); // 1 byte per us
        assert_eq!(s.serialisation_ns(1000), 1_000_000);
        assert_eq!(shape(0, Some(3)).serialisation_ns(1), 2_666_666_667);
        assert_eq!(shape(0, None).serialisation_ns(1 << 30), 0);
    }

    #[test]
    fn back_to_back_frames_queue_behind_each_other() {
        let mut link = LinkSchedule::new(shape(50, Some(8_000_000)));
        let t0 = 1_000_000_000;
        // 1000 bytes at 1 byte/us = 1 ms on the wire each.
        assert_eq!(link.schedule(t0, 1000), t0 + 1_000_000 + 50_000_000);
        assert_eq!(link.schedule(t0, 1000), t0 + 2_000_000 + 50_000_000);
        // After the wire went idle, a frame starts at its own queue time.
        let later = t0 + 10_000_000;
        assert_eq!(link.schedule(later, 1000), later + 1_000_000 + 50_000_000);
    }

    #[test]
    fn deliveries_never_reorder_when_the_clock_steps_back() {
        let mut link = LinkSchedule::new(shape(5, None));
        let a = link.schedule(2_000_000_000, 10);
        let b = link.schedule(1_000_000_000, 10);
        assert!(b >= a);
    }

    #[test]
    fn timer_delivers_in_due_order_and_not_early() {
        let (tx, rx) = mpsc::channel();
        let timer = DeliveryTimer::start("test-timer", TimerPrecision::default(), move |i, at| {
            let _ = tx.send((i, at));
        })
        .unwrap();
        let base = unix_ns() + 20_000_000;
        // Pushed out of order; two share a due time and must keep their push order.
        timer.push(base + 2_000_000, 3u32);
        timer.push(base, 1u32);
        timer.push(base + 1_000_000, 2u32);
        timer.push(base + 1_000_000, 22u32);
        let got: Vec<(u32, u64)> = (0..4).map(|_| rx.recv().unwrap()).collect();
        let order: Vec<u32> = got.iter().map(|g| g.0).collect();
        assert_eq!(order, vec![1, 2, 22, 3]);
        let due = [base, base + 1_000_000, base + 1_000_000, base + 2_000_000];
        for ((_, at), due) in got.iter().zip(due) {
            assert!(*at >= due, "delivered {} ns early", due - at);
        }
        timer.stop();
    }

    #[test]
    fn stop_drops_pending_items_and_joins() {
        let (tx, rx) = mpsc::channel::<u8>();
        let timer = DeliveryTimer::start("test-timer", TimerPrecision::default(), move |i, _| {
            let _ = tx.send(i);
        })
        .unwrap();
        timer.push(unix_ns() + 60_000_000_000, 1);
        assert_eq!(timer.pending(), 1);
        timer.stop();
        // The callback (and its sender) is gone with the joined thread.
        assert!(rx.recv().is_err());
    }
}
