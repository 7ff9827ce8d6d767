//! The mcache: a ring of 32-byte frag records (the metadata half of a link).
//!
//! # Byte layout (version 1)
//!
//! ```text
//! offset  size  field
//!      0     8  magic   = MCACHE_MAGIC, stored last by `new` (Release), cleared by `delete`
//!      8     8  version = 1
//!     16     8  depth   (power of two, >= 2)
//!     24     8  seq0    (first sequence number the producer publishes)
//!     32    32  padding (zero)
//!     64     8  seq_hint: the producer's next sequence number, refreshed at housekeeping
//!     72    56  padding (zero; keeps seq_hint alone on its cache line pair)
//!    128  32*d  lines[depth]; the record for sequence number s lives in lines[s & (depth-1)]
//! ```
//!
//! One line ([`FragLine`], 32 bytes, 32-byte aligned, so two lines per cache line):
//!
//! ```text
//!  0  seq    u64   sequence number of the frag in the line (or seq-1 while being written)
//!  8  sig    u64   application signature, for filtering before reading the payload
//! 16  chunk  u32   payload position in the dcache, in 64-byte chunks
//! 20  sz     u16   payload size in bytes
//! 22  ctl    u16   control bits (application defined; 0 by default)
//! 24  tsorig u32   low 32 bits of the origin timestamp (ns)
//! 28  tspub  u32   low 32 bits of the publish timestamp (ns)
//! ```
//!
//! # Lifecycle
//! `Mcache::new` formats a zeroed region (lines start "older than seq0", so a consumer
//! waiting for `seq0` sees "caught up"), `Mcache::join` validates magic, version and
//! size and gives a handle (any number of joins, in any process), dropping the handle is
//! the leave, and `Mcache::delete` clears the magic so later joins fail.
//!
//! # Store order and what a reader may trust
//! The single producer publishing sequence number `s` into line `l = s & (depth-1)`:
//! 1. `l.seq = s - 1` (Relaxed), then a Release fence: the line is now "in progress";
//!    to a reader expecting the previous occupant `s - depth` it looks newer (overrun),
//!    to a reader expecting `s` it looks older (caught up).
//! 2. the body fields (Relaxed stores);
//! 3. `l.seq = s` (Release).
//!
//! A reader expecting `s` loads `l.seq` (Acquire). Older: caught up. Newer: overrun while
//! polling. Equal: it loads the body (Relaxed), issues an Acquire fence and re-loads
//! `l.seq`; only if it is still `s` is the body the one published for `s` (the
//! seqlock argument: any body store it observed from a later publish is preceded by that
//! publish's marker store and Release fence, so the re-load would see a newer seq).
//! Every field is an atomic, so a torn or stale line is a detected value, never a data
//! race. The payload is validated the same way after copying (see [`crate::dcache`]).

use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::region::{Region, SharedPod};
use crate::seq::{seq_diff, seq_inc};

/// Magic number of a formatted mcache ("dynomcac").
pub const MCACHE_MAGIC: u64 = 0x6479_6e6f_6d63_6163;
/// Layout version written by this library.
pub const MCACHE_VERSION: u64 = 1;
/// Byte offset of the first line.
pub const MCACHE_HEADER: usize = 128;

/// One frag record as stored in the ring. All fields are atomics (see module docs).
#[repr(C, align(32))]
#[derive(Debug)]
pub struct FragLine {
    seq: AtomicU64,
    sig: AtomicU64,
    chunk: AtomicU32,
    sz: AtomicU16,
    ctl: AtomicU16,
    tsorig: AtomicU32,
    tspub: AtomicU32,
}

// SAFETY: repr(C), atomics only, valid for all bit patterns.
unsafe impl SharedPod for FragLine {}

#[repr(C)]
struct McacheHeader {
    magic: AtomicU64,
    version: AtomicU64,
    depth: AtomicU64,
    seq0: AtomicU64,
    _pad0: [AtomicU64; 4],
    seq_hint: AtomicU64,
    _pad1: [AtomicU64; 7],
}

// SAFETY: repr(C), atomics only, valid for all bit patterns.
unsafe impl SharedPod for McacheHeader {}

const _: () = assert!(std::mem::size_of::<FragLine>() == 32);
const _: () = assert!(std::mem::align_of::<FragLine>() == 32);
const _: () = assert!(std::mem::size_of::<McacheHeader>() == MCACHE_HEADER);
const _: () = assert!(std::mem::offset_of!(FragLine, chunk) == 16);
const _: () = assert!(std::mem::offset_of!(FragLine, tspub) == 28);
const _: () = assert!(std::mem::offset_of!(McacheHeader, seq_hint) == 64);

/// The metadata of one frag, as read from a validated line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FragMeta {
    /// Sequence number.
    pub seq: u64,
    /// Application signature (filter key).
    pub sig: u64,
    /// Payload position in the dcache, in 64-byte chunks.
    pub chunk: u32,
    /// Payload size in bytes.
    pub sz: u16,
    /// Control bits.
    pub ctl: u16,
    /// Low 32 bits of the origin timestamp (ns).
    pub tsorig: u32,
    /// Low 32 bits of the publish timestamp (ns).
    pub tspub: u32,
}

/// What a reader found in the line of the sequence number it expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineState {
    /// The line holds an older frag: nothing new yet.
    CaughtUp,
    /// The line holds the expected frag, validated.
    Ready(FragMeta),
    /// The line holds a newer sequence number (`found`): the reader was overrun.
    Overrun {
        /// The sequence number found in the line.
        found: u64,
    },
}

/// A joined mcache.
#[derive(Debug, Clone)]
pub struct Mcache {
    region: Region,
    /// Invariant: points at `depth` lines inside `region` (checked by `join`).
    lines: NonNull<FragLine>,
    /// Invariant: a power of two >= 2.
    depth: u64,
    seq0: u64,
}

// SAFETY: `lines` points into `region`, which is Send + Sync and only accessed atomically.
unsafe impl Send for Mcache {}
// SAFETY: as above.
unsafe impl Sync for Mcache {}

impl Mcache {
    /// Bytes needed for an mcache of `depth` lines.
    pub fn footprint(depth: u64) -> usize {
        MCACHE_HEADER + 32 * depth as usize
    }

    fn check_depth(depth: u64) -> Result<()> {
        if depth < 2 || !depth.is_power_of_two() || depth > 1 << 32 {
            return Err(Error::Invalid(format!(
                "mcache depth {depth} must be a power of two in [2, 2^32]"
            )));
        }
        Ok(())
    }

    // `new` formats shared memory in place (the new/join/leave/delete lifecycle of a
    // shared object); the handle comes from `join`.
    #[allow(clippy::new_ret_no_self)]
    /// Formats `region` as an mcache of `depth` lines whose producer starts at `seq0`.
    pub fn new(region: &Region, depth: u64, seq0: u64) -> Result<()> {
        Self::check_depth(depth)?;
        if !region.is_writable() || region.len() < Self::footprint(depth) {
            return Err(Error::Invalid(format!(
                "mcache of depth {depth} needs {} writable bytes, region has {}",
                Self::footprint(depth),
                region.len()
            )));
        }
        let hdr: &McacheHeader = region.get(0)?;
        hdr.magic.store(0, Ordering::Relaxed);
        hdr.version.store(MCACHE_VERSION, Ordering::Relaxed);
        hdr.depth.store(depth, Ordering::Relaxed);
        hdr.seq0.store(seq0, Ordering::Relaxed);
        hdr.seq_hint.store(seq0, Ordering::Relaxed);
        let lines: &[FragLine] = region.slice(MCACHE_HEADER, depth as usize)?;
        let mask = depth - 1;
        for i in 0..depth {
            let s = seq_inc(seq0, i);
            let line = &lines[(s & mask) as usize];
            // One lap behind: a reader expecting `s` sees an older frag (caught up).
            line.seq.store(s.wrapping_sub(depth), Ordering::Relaxed);
            line.sig.store(0, Ordering::Relaxed);
            line.chunk.store(0, Ordering::Relaxed);
            line.sz.store(0, Ordering::Relaxed);
            line.ctl.store(0, Ordering::Relaxed);
            line.tsorig.store(0, Ordering::Relaxed);
            line.tspub.store(0, Ordering::Relaxed);
        }
        hdr.magic.store(MCACHE_MAGIC, Ordering::Release);
        Ok(())
    }

    /// Joins a formatted mcache.
    pub fn join(region: &Region) -> Result<Mcache> {
        let hdr: &McacheHeader = region.get(0)?;
        check_magic(
            "mcache",
            &hdr.magic,
            MCACHE_MAGIC,
            &hdr.version,
            MCACHE_VERSION,
        )?;
        let depth = hdr.depth.load(Ordering::Relaxed);
        Self::check_depth(depth)?;
        let lines: &[FragLine] = region.slice(MCACHE_HEADER, depth as usize)?;
        // From the whole slice (not its first element), so the pointer may reach every line.
        let lines = NonNull::from(lines).cast::<FragLine>();
        Ok(Mcache {
            region: region.clone(),
            lines,
            depth,
            seq0: hdr.seq0.load(Ordering::Relaxed),
        })
    }

    /// Clears the magic: later joins fail. Existing handles stay memory-safe.
    pub fn delete(region: &Region) -> Result<()> {
        let hdr: &McacheHeader = region.get(0)?;
        hdr.magic.store(0, Ordering::Release);
        Ok(())
    }

    /// Number of lines.
    pub fn depth(&self) -> u64 {
        self.depth
    }

    /// The producer's first sequence number.
    pub fn seq0(&self) -> u64 {
        self.seq0
    }

    fn header(&self) -> &McacheHeader {
        self.region.get(0).expect("checked by join")
    }

    /// The producer's next sequence number as of its last housekeeping.
    pub fn seq_hint(&self) -> u64 {
        self.header().seq_hint.load(Ordering::Acquire)
    }

    pub(crate) fn set_seq_hint(&self, seq: u64) {
        self.header().seq_hint.store(seq, Ordering::Release);
    }

    #[inline(always)]
    fn line(&self, seq: u64) -> &FragLine {
        let idx = (seq & (self.depth - 1)) as usize;
        debug_assert!((idx as u64) < self.depth);
        // SAFETY: idx < depth and `lines` points at `depth` lines kept alive by `region`.
        unsafe { &*self.lines.as_ptr().add(idx) }
    }

    /// Publishes one record. Only the link's single producer calls this.
    #[inline(always)]
    pub(crate) fn publish(&self, meta: &FragMeta) {
        let line = self.line(meta.seq);
        line.seq.store(meta.seq.wrapping_sub(1), Ordering::Relaxed);
        fence(Ordering::Release);
        line.sig.store(meta.sig, Ordering::Relaxed);
        line.chunk.store(meta.chunk, Ordering::Relaxed);
        line.sz.store(meta.sz, Ordering::Relaxed);
        line.ctl.store(meta.ctl, Ordering::Relaxed);
        line.tsorig.store(meta.tsorig, Ordering::Relaxed);
        line.tspub.store(meta.tspub, Ordering::Relaxed);
        line.seq.store(meta.seq, Ordering::Release);
    }

    /// Reads the line of `seq` (see the module docs for the protocol).
    #[inline(always)]
    pub fn query(&self, seq: u64) -> LineState {
        let line = self.line(seq);
        let found = line.seq.load(Ordering::Acquire);
        let d = seq_diff(found, seq);
        if d < 0 {
            return LineState::CaughtUp;
        }
        if d > 0 {
            return LineState::Overrun { found };
        }
        let meta = FragMeta {
            seq,
            sig: line.sig.load(Ordering::Relaxed),
            chunk: line.chunk.load(Ordering::Relaxed),
            sz: line.sz.load(Ordering::Relaxed),
            ctl: line.ctl.load(Ordering::Relaxed),
            tsorig: line.tsorig.load(Ordering::Relaxed),
            tspub: line.tspub.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        let again = line.seq.load(Ordering::Relaxed);
        if again == seq {
            LineState::Ready(meta)
        } else {
            LineState::Overrun { found: again }
        }
    }

    /// Re-reads the sequence number in the line of `seq` after an Acquire fence: true
    /// when the line still holds `seq`, i.e. nothing read since was overwritten.
    #[inline(always)]
    pub fn still_holds(&self, seq: u64) -> bool {
        fence(Ordering::Acquire);
        self.line(seq).seq.load(Ordering::Relaxed) == seq
    }
}

/// Validates a magic/version pair (magic read with Acquire so the rest is visible).
pub(crate) fn check_magic(
    what: &str,
    magic: &AtomicU64,
    expected: u64,
    version: &AtomicU64,
    expected_version: u64,
) -> Result<()> {
    let found = magic.load(Ordering::Acquire);
    if found != expected {
        return Err(Error::BadMagic {
            what: what.to_string(),
            found,
            expected,
        });
    }
    let v = version.load(Ordering::Relaxed);
    if v != expected_version {
        return Err(Error::BadVersion {
            what: what.to_string(),
            found: v,
            expected: expected_version,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_and_protocol() {
        let r = Region::heap(Mcache::footprint(8)).unwrap();
        assert!(matches!(Mcache::join(&r), Err(Error::BadMagic { .. })));
        assert!(Mcache::new(&r, 6, 0).is_err());
        Mcache::new(&r, 8, 100).unwrap();
        let m = Mcache::join(&r).unwrap();
        assert_eq!(m.depth(), 8);
        assert_eq!(m.query(100), LineState::CaughtUp);
        let meta = FragMeta {
            seq: 100,
            sig: 7,
            chunk: 3,
            sz: 64,
            ctl: 1,
            tsorig: 2,
            tspub: 3,
        };
        m.publish(&meta);
        assert_eq!(m.query(100), LineState::Ready(meta));
        assert!(m.still_holds(100));
        assert_eq!(m.query(101), LineState::CaughtUp);
        m.publish(&FragMeta { seq: 108, ..meta });
        assert_eq!(m.query(100), LineState::Overrun { found: 108 });
        Mcache::delete(&r).unwrap();
        assert!(Mcache::join(&r).is_err());
    }
}
