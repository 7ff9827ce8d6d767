//! Shared metrics objects: one per tile, one per link (producer side) and one per
//! consumer of a link. Each is written by exactly one thread (the tile that owns it;
//! the `slow` counter of a consumer is written by the link's producer) and read by any
//! number of monitors, possibly through a read-only map. Fields are cumulative totals
//! stored at housekeeping, so a reader never sees a counter go backwards.
//!
//! Layouts (all fields little-endian u64 atomics, objects 64-byte multiples):
//!
//! ```text
//! TileMetrics (256 B): magic version pid tid cpu heartbeat_ns state in_backp backp_cnt
//!                      ctx_vol ctx_invol loops time_ns[8] pad[12]
//! LinkMetrics (128 B): magic version frags bytes tx_seq depth mtu pad[9]
//! ConsumerMetrics (128 B): magic version reliable frags bytes filt1 filt2 ovrnp ovrnr
//!                      slow rx_seq pad[5]
//! ```
//! The magic is written last at creation (Release); readers check it (Acquire).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::link::{ConsumerCounters, ProducerCounters};
use crate::mcache::check_magic;
use crate::region::{Region, SharedPod};

/// Layout version of the metrics objects.
pub const METRICS_VERSION: u64 = 1;
/// Magic of a tile metrics object ("dynotile").
pub const TILE_METRICS_MAGIC: u64 = 0x6479_6e6f_7469_6c65;
/// Magic of a link metrics object ("dynolink").
pub const LINK_METRICS_MAGIC: u64 = 0x6479_6e6f_6c69_6e6b;
/// Magic of a consumer metrics object ("dynocons").
pub const CONSUMER_METRICS_MAGIC: u64 = 0x6479_6e6f_636f_6e73;

/// The exclusive categories every run-loop iteration is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bucket {
    /// Housekeeping (heartbeat, progress, credits, metrics).
    Housekeeping = 0,
    /// Waiting for credits (backpressured by a reliable consumer).
    Backpressure = 1,
    /// Polling inputs with nothing new (caught up), including idling.
    CaughtUp = 2,
    /// Handling an overrun found while polling.
    OverrunPolling = 3,
    /// Handling a frag overwritten while it was being read.
    OverrunReading = 4,
    /// Skipping a frag filtered on its sig, before reading it.
    FilteredBeforeRead = 5,
    /// Handling a frag the tile filtered after reading it.
    FilteredAfterRead = 6,
    /// Doing the tile's work (a frag processed, or a frag generated).
    Finish = 7,
}

/// Number of buckets.
pub const BUCKETS: usize = 8;

impl Bucket {
    /// All buckets in index order.
    pub const ALL: [Bucket; BUCKETS] = [
        Bucket::Housekeeping,
        Bucket::Backpressure,
        Bucket::CaughtUp,
        Bucket::OverrunPolling,
        Bucket::OverrunReading,
        Bucket::FilteredBeforeRead,
        Bucket::FilteredAfterRead,
        Bucket::Finish,
    ];

    /// Short stable name (metric label and JSON key).
    pub fn name(self) -> &'static str {
        match self {
            Bucket::Housekeeping => "hkeep",
            Bucket::Backpressure => "backp",
            Bucket::CaughtUp => "wait",
            Bucket::OverrunPolling => "ovrnp",
            Bucket::OverrunReading => "ovrnr",
            Bucket::FilteredBeforeRead => "filt1",
            Bucket::FilteredAfterRead => "filt2",
            Bucket::Finish => "finish",
        }
    }
}

/// Tile state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileState {
    /// Created, not yet running.
    Boot = 0,
    /// In its run loop.
    Running = 1,
    /// Left its run loop normally.
    Halted = 2,
    /// Failed (error or panic).
    Failed = 3,
}

impl TileState {
    /// Decodes a state word.
    pub fn from_word(w: u64) -> TileState {
        match w {
            1 => TileState::Running,
            2 => TileState::Halted,
            3 => TileState::Failed,
            _ => TileState::Boot,
        }
    }

    /// Stable name.
    pub fn name(self) -> &'static str {
        match self {
            TileState::Boot => "boot",
            TileState::Running => "run",
            TileState::Halted => "halt",
            TileState::Failed => "fail",
        }
    }
}

/// Shared metrics of one tile.
#[repr(C)]
#[derive(Debug)]
pub struct TileMetrics {
    magic: AtomicU64,
    version: AtomicU64,
    /// Process id.
    pub pid: AtomicU64,
    /// Kernel thread id.
    pub tid: AtomicU64,
    /// Pinned CPU, or u64::MAX when floating.
    pub cpu: AtomicU64,
    /// Wall-clock ns of the last housekeeping.
    pub heartbeat_ns: AtomicU64,
    /// [`TileState`] word.
    pub state: AtomicU64,
    /// 1 while backpressured.
    pub in_backp: AtomicU64,
    /// Times the tile entered backpressure.
    pub backp_cnt: AtomicU64,
    /// Voluntary context switches of the tile thread.
    pub ctx_vol: AtomicU64,
    /// Involuntary context switches of the tile thread.
    pub ctx_invol: AtomicU64,
    /// Run-loop iterations.
    pub loops: AtomicU64,
    /// Nanoseconds charged to each [`Bucket`].
    pub time_ns: [AtomicU64; BUCKETS],
    _pad: [AtomicU64; 12],
}

/// Shared metrics of one link, written by its producer.
#[repr(C)]
#[derive(Debug)]
pub struct LinkMetrics {
    magic: AtomicU64,
    version: AtomicU64,
    /// Frags published.
    pub frags: AtomicU64,
    /// Payload bytes published.
    pub bytes: AtomicU64,
    /// Producer's next sequence number.
    pub tx_seq: AtomicU64,
    /// Ring depth.
    pub depth: AtomicU64,
    /// Largest payload.
    pub mtu: AtomicU64,
    _pad: [AtomicU64; 9],
}

/// Shared metrics of one consumer of a link, written by the consumer tile (and `slow`
/// by the producer).
#[repr(C)]
#[derive(Debug)]
pub struct ConsumerMetrics {
    magic: AtomicU64,
    version: AtomicU64,
    /// 1 for a reliable consumer.
    pub reliable: AtomicU64,
    /// Frags read.
    pub frags: AtomicU64,
    /// Bytes read.
    pub bytes: AtomicU64,
    /// Frags filtered before reading.
    pub filt1: AtomicU64,
    /// Frags filtered after reading.
    pub filt2: AtomicU64,
    /// Frags lost, overrun while polling.
    pub ovrnp: AtomicU64,
    /// Frags lost, overrun while reading.
    pub ovrnr: AtomicU64,
    /// Times this consumer was the slowest while its producer was backpressured.
    pub slow: AtomicU64,
    /// Consumer's next sequence number.
    pub rx_seq: AtomicU64,
    _pad: [AtomicU64; 5],
}

impl LinkMetrics {
    /// Stores the producer's counters (housekeeping; the producer's thread only).
    pub fn store_counters(&self, c: &ProducerCounters) {
        self.frags.store(c.frags, Ordering::Relaxed);
        self.bytes.store(c.bytes, Ordering::Relaxed);
    }

    /// The producer's counters as last stored.
    pub fn counters(&self) -> ProducerCounters {
        ProducerCounters {
            frags: self.frags.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

impl ConsumerMetrics {
    /// Stores the consumer's counters (housekeeping; the consumer's thread only).
    pub fn store_counters(&self, c: &ConsumerCounters) {
        self.frags.store(c.frags, Ordering::Relaxed);
        self.bytes.store(c.bytes, Ordering::Relaxed);
        self.filt1.store(c.filt1, Ordering::Relaxed);
        self.filt2.store(c.filt2, Ordering::Relaxed);
        self.ovrnp.store(c.ovrnp, Ordering::Relaxed);
        self.ovrnr.store(c.ovrnr, Ordering::Relaxed);
    }

    /// The consumer's counters as last stored.
    pub fn counters(&self) -> ConsumerCounters {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ConsumerCounters {
            frags: ld(&self.frags),
            bytes: ld(&self.bytes),
            filt1: ld(&self.filt1),
            filt2: ld(&self.filt2),
            ovrnp: ld(&self.ovrnp),
            ovrnr: ld(&self.ovrnr),
        }
    }
}

// SAFETY: repr(C), atomics only, valid for all bit patterns.
unsafe impl SharedPod for TileMetrics {}
// SAFETY: as above.
unsafe impl SharedPod for LinkMetrics {}
// SAFETY: as above.
unsafe impl SharedPod for ConsumerMetrics {}

const _: () = assert!(std::mem::size_of::<TileMetrics>() == 256);
const _: () = assert!(std::mem::size_of::<LinkMetrics>() == 128);
const _: () = assert!(std::mem::size_of::<ConsumerMetrics>() == 128);

macro_rules! metrics_object {
    ($ty:ident, $magic:ident, $what:literal) => {
        impl $ty {
            /// Bytes of the object.
            pub const FOOTPRINT: usize = std::mem::size_of::<$ty>();

            /// Formats a zeroed region and returns a view.
            pub fn new(region: &Region) -> Result<&$ty> {
                let m: &$ty = region.get(0)?;
                m.version.store(METRICS_VERSION, Ordering::Relaxed);
                m.magic.store($magic, Ordering::Release);
                Ok(m)
            }

            /// Joins a formatted object (works on read-only regions).
            pub fn join(region: &Region) -> Result<&$ty> {
                let m: &$ty = region.get(0)?;
                check_magic($what, &m.magic, $magic, &m.version, METRICS_VERSION)?;
                Ok(m)
            }
        }
    };
}

metrics_object!(TileMetrics, TILE_METRICS_MAGIC, "tile metrics");
metrics_object!(LinkMetrics, LINK_METRICS_MAGIC, "link metrics");
metrics_object!(ConsumerMetrics, CONSUMER_METRICS_MAGIC, "consumer metrics");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_format_and_join() {
        let r = Region::heap(TileMetrics::FOOTPRINT).unwrap();
        assert!(TileMetrics::join(&r).is_err());
        let m = TileMetrics::new(&r).unwrap();
        m.time_ns[Bucket::Finish as usize].store(5, Ordering::Relaxed);
        let j = TileMetrics::join(&r).unwrap();
        assert_eq!(j.time_ns[7].load(Ordering::Relaxed), 5);
        assert!(
            LinkMetrics::join(&r).is_err(),
            "a tile object is not a link object"
        );
        assert_eq!(Bucket::ALL.len(), BUCKETS);
        for (i, b) in Bucket::ALL.iter().enumerate() {
            assert_eq!(*b as usize, i);
        }
    }
}
