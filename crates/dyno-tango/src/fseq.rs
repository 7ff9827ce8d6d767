//! The fseq: a reliable consumer's published progress (flow-control sequence).
//!
//! # Byte layout (version 1)
//!
//! ```text
//! offset  size  field
//!      0     8  magic = FSEQ_MAGIC, stored last by `new` (Release)
//!      8     8  version = 1
//!     16     8  seq0  (initial value of seq)
//!     24    40  padding (zero)
//!     64     8  seq: the next sequence number the consumer will process
//!     72    56  padding (zero; seq has its own cache line pair)
//! ```
//!
//! The consumer stores `seq` with Release after it finished with every frag before it;
//! the producer loads it with Acquire when refreshing credits, so a producer that reuses a
//! line or payload chunk only does so after the consumer is done with it. The value is
//! published lazily (housekeeping, or when caught up), which only makes credits
//! conservative. Lifecycle: `new` / `join` / drop / `delete`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::mcache::check_magic;
use crate::region::{Region, SharedPod};

/// Magic number of a formatted fseq ("dynofseq").
pub const FSEQ_MAGIC: u64 = 0x6479_6e6f_6673_6571;
/// Layout version written by this library.
pub const FSEQ_VERSION: u64 = 1;
/// Bytes of an fseq.
pub const FSEQ_FOOTPRINT: usize = 128;

#[repr(C)]
struct FseqLayout {
    magic: AtomicU64,
    version: AtomicU64,
    seq0: AtomicU64,
    _pad0: [AtomicU64; 5],
    seq: AtomicU64,
    _pad1: [AtomicU64; 7],
}

// SAFETY: repr(C), atomics only, valid for all bit patterns.
unsafe impl SharedPod for FseqLayout {}

const _: () = assert!(std::mem::size_of::<FseqLayout>() == FSEQ_FOOTPRINT);
const _: () = assert!(std::mem::offset_of!(FseqLayout, seq) == 64);

/// A joined fseq.
#[derive(Debug, Clone)]
pub struct Fseq {
    region: Region,
}

impl Fseq {
    // `new` formats shared memory in place (the new/join/leave/delete lifecycle of a
    // shared object); the handle comes from `join`.
    #[allow(clippy::new_ret_no_self)]
    /// Formats `region` as an fseq starting at `seq0`.
    pub fn new(region: &Region, seq0: u64) -> Result<()> {
        let f: &FseqLayout = region.get(0)?;
        f.magic.store(0, Ordering::Relaxed);
        f.version.store(FSEQ_VERSION, Ordering::Relaxed);
        f.seq0.store(seq0, Ordering::Relaxed);
        f.seq.store(seq0, Ordering::Relaxed);
        f.magic.store(FSEQ_MAGIC, Ordering::Release);
        Ok(())
    }

    /// Joins a formatted fseq.
    pub fn join(region: &Region) -> Result<Fseq> {
        let f: &FseqLayout = region.get(0)?;
        check_magic("fseq", &f.magic, FSEQ_MAGIC, &f.version, FSEQ_VERSION)?;
        Ok(Fseq {
            region: region.clone(),
        })
    }

    /// Clears the magic: later joins fail.
    pub fn delete(region: &Region) -> Result<()> {
        let f: &FseqLayout = region.get(0)?;
        f.magic.store(0, Ordering::Release);
        Ok(())
    }

    fn layout(&self) -> &FseqLayout {
        self.region.get(0).expect("checked by join")
    }

    /// The published progress.
    #[inline(always)]
    pub fn query(&self) -> u64 {
        self.layout().seq.load(Ordering::Acquire)
    }

    /// Publishes progress (consumer only).
    #[inline(always)]
    pub(crate) fn update(&self, seq: u64) {
        self.layout().seq.store(seq, Ordering::Release);
    }
}
