//! Graceful overload: the ingress refuses a client's transaction before anything is
//! spent on it when the node could not keep it anyway.
//!
//! A node offered more than it lands fills its mempool; every transaction after that
//! was still verified (the most expensive step) and then dropped as `dropped_full` at
//! the mempool, so an overloaded node spent its cores on work it threw away and landed
//! less than at its capacity. The [`Admission`] gate runs in the ingress's sink, before
//! the verify threads: a transaction is taken only while the mempool plus what is on
//! its way to it (queued for, or in, the verify threads and the node loop's inbox) has
//! room. Refused ones cost one counter read, are counted by reason here, and are
//! answered to the client as refused (the ingress's per-connection progress, which
//! `dyno load` reports per second and in total). Before it comes to that, the ingress
//! does not read a stream client at all while [`Admission::has_room`] is false (up to a
//! pause of `dyno_net::Room::MAX_PAUSE`), so QUIC's flow control holds the client back.
//!
//! The node loop publishes the mempool's size after each client transaction it takes,
//! before it counts that transaction off the way, so the gate's sum never reads low
//! and the mempool is never offered more than it holds by the ingress (relays and
//! transactions put back after a fork switch may still fill it: those are refused at the
//! mempool as before).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Client transactions the ingress may have on their way to the node loop at once (in
/// the verify threads or the inbox), whatever the mempool's room: bounds memory under a
/// flat-out load.
pub const MAX_ON_THE_WAY: usize = 1 << 16;

/// Why the gate refused a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The mempool and what is on its way fill its capacity.
    MempoolFull,
    /// [`MAX_ON_THE_WAY`] transactions are on their way already.
    QueueFull,
}

impl Refusal {
    /// snake_case name for metrics.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::MempoolFull => "mempool_full",
            Refusal::QueueFull => "queue_full",
        }
    }
}

/// The gate between the ingress and the verify threads (shared by the ingress's sink
/// and the node loop).
#[derive(Debug)]
pub struct Admission {
    capacity: usize,
    /// Taken by the gate, not yet taken in by the node loop.
    on_the_way: AtomicUsize,
    /// The mempool's size as the node loop last published it.
    mempool: AtomicUsize,
    refused_mempool_full: AtomicU64,
    refused_queue_full: AtomicU64,
}

impl Admission {
    /// A gate for a mempool of `capacity` transactions.
    pub fn new(capacity: usize) -> Admission {
        Admission {
            capacity,
            on_the_way: AtomicUsize::new(0),
            mempool: AtomicUsize::new(0),
            refused_mempool_full: AtomicU64::new(0),
            refused_queue_full: AtomicU64::new(0),
        }
    }

    /// Takes one transaction (it is now on its way: the caller hands it on), or refuses
    /// it and counts why. Called by one thread (the ingress's).
    pub fn admit(&self) -> Result<(), Refusal> {
        let on_the_way = self.on_the_way.load(Relaxed);
        let refusal = if on_the_way >= MAX_ON_THE_WAY {
            Refusal::QueueFull
        } else if on_the_way + self.mempool.load(Relaxed) >= self.capacity {
            Refusal::MempoolFull
        } else {
            self.on_the_way.fetch_add(1, Relaxed);
            return Ok(());
        };
        match refusal {
            Refusal::MempoolFull => &self.refused_mempool_full,
            Refusal::QueueFull => &self.refused_queue_full,
        }
        .fetch_add(1, Relaxed);
        Err(refusal)
    }

    /// True while [`Admission::admit`] would take one more (the ingress pauses a stream
    /// while it is false).
    pub fn has_room(&self) -> bool {
        let on_the_way = self.on_the_way.load(Relaxed);
        on_the_way < MAX_ON_THE_WAY && on_the_way + self.mempool.load(Relaxed) < self.capacity
    }

    /// The node loop took one transaction in; `mempool` is the mempool's size after it.
    pub fn taken(&self, mempool: usize) {
        self.mempool.store(mempool, Relaxed);
        self.on_the_way.fetch_sub(1, Relaxed);
    }

    /// The mempool's size changed (a block was adopted, relays came in).
    pub fn mempool_now(&self, mempool: usize) {
        self.mempool.store(mempool, Relaxed);
    }

    /// Transactions on their way now.
    pub fn on_the_way(&self) -> usize {
        self.on_the_way.load(Relaxed)
    }

    /// Refusals so far: (mempool full, queue full).
    pub fn refused(&self) -> (u64, u64) {
        (
            self.refused_mempool_full.load(Relaxed),
            self.refused_queue_full.load(Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_keeps_the_mempool_and_the_way_to_it_within_capacity() {
        let a = Admission::new(3);
        assert_eq!(a.admit(), Ok(()));
        assert_eq!(a.admit(), Ok(()));
        assert_eq!(a.admit(), Ok(()));
        assert!(!a.has_room());
        assert_eq!(a.admit(), Err(Refusal::MempoolFull), "three on the way");
        // The loop takes two into the mempool: still full.
        a.taken(1);
        a.taken(2);
        assert_eq!(a.admit(), Err(Refusal::MempoolFull));
        // A block takes them out of the mempool: room for two more.
        a.mempool_now(0);
        assert!(a.has_room());
        assert_eq!(a.admit(), Ok(()));
        assert_eq!(a.admit(), Ok(()));
        assert_eq!(a.admit(), Err(Refusal::MempoolFull));
        assert_eq!(a.on_the_way(), 3);
        assert_eq!(a.refused(), (3, 0));
    }

    #[test]
    fn the_way_to_the_mempool_is_bounded_whatever_its_room() {
        let a = Admission::new(usize::MAX);
        for _ in 0..MAX_ON_THE_WAY {
            a.admit().unwrap();
        }
        assert_eq!(a.admit(), Err(Refusal::QueueFull));
        a.taken(1);
        assert_eq!(a.admit(), Ok(()));
        assert_eq!(a.refused(), (0, 1));
    }
}
