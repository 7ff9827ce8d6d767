//! The dcache: the payload ring of a link, in 64-byte chunks.
//!
//! # Byte layout (version 1)
//!
//! ```text
//! offset  size       field
//!      0     8       magic  = DCACHE_MAGIC, stored last by `new` (Release)
//!      8     8       version = 1
//!     16     8       mtu    (largest payload in bytes, <= 65535)
//!     24     8       chunk_cnt (number of 64-byte data chunks)
//!     32    96       padding (zero)
//!    128  64*chunk_cnt  data, viewed as little-endian u64 words
//! ```
//!
//! # Sizing rule: a payload outlives its record
//! The producer places frags one after another (`compact_next`): the next frag starts
//! right after the previous one, and wraps to chunk 0 when a frag of `mtu` bytes would not
//! fit before the end, so at most `mtu_chunks - 1` chunks are wasted per lap. With
//! `chunk_cnt = (depth + 2) * mtu_chunks`, a frag `s'` can only overlap the chunks of frag
//! `s` after more than `depth * mtu_chunks` chunks were handed out since `s`, that is
//! after more than `depth` frags, so `s' >= s + depth + 1` and the mcache line of `s` was
//! already overwritten (marker store and Release fence of `s + depth`) before the
//! first payload byte of `s'` is written. A reader that copied the payload of `s` and then
//! still finds `s` in its line (Acquire fence, then load) therefore holds an untorn copy.
//!
//! # Store order
//! The producer writes the payload (Relaxed word stores) before publishing the record
//! (whose final seq store is Release), so a reader that sees the record sees the payload.
//! Lifecycle: `new` / `join` / drop (leave) / `delete`, as for the mcache.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::mcache::check_magic;
use crate::region::{Region, SharedPod};

/// Magic number of a formatted dcache ("dynodcac").
pub const DCACHE_MAGIC: u64 = 0x6479_6e6f_6463_6163;
/// Layout version written by this library.
pub const DCACHE_VERSION: u64 = 1;
/// Byte offset of the data.
pub const DCACHE_HEADER: usize = 128;
/// Chunk size in bytes.
pub const CHUNK_SZ: usize = 64;
/// Largest payload a frag can carry (its size is a u16).
pub const MAX_MTU: usize = u16::MAX as usize;

#[repr(C)]
struct DcacheHeader {
    magic: AtomicU64,
    version: AtomicU64,
    mtu: AtomicU64,
    chunk_cnt: AtomicU64,
    _pad: [AtomicU64; 12],
}

// SAFETY: repr(C), atomics only, valid for all bit patterns.
unsafe impl SharedPod for DcacheHeader {}

const _: () = assert!(std::mem::size_of::<DcacheHeader>() == DCACHE_HEADER);
const _: () = assert!(CHUNK_SZ.is_multiple_of(8));

/// Chunks needed for `sz` payload bytes.
#[inline(always)]
pub fn chunks_for(sz: usize) -> usize {
    sz.div_ceil(CHUNK_SZ)
}

/// A joined dcache.
#[derive(Debug, Clone)]
pub struct Dcache {
    region: Region,
    /// Largest payload, bytes. Invariant: 1 <= mtu <= MAX_MTU.
    mtu: usize,
    /// Invariant: chunk_cnt >= mtu_chunks and the data fits in `region`.
    chunk_cnt: usize,
}

impl Dcache {
    /// Data chunks for a link of `depth` records carrying payloads up to `mtu` bytes.
    pub fn chunk_cnt(mtu: usize, depth: u64) -> usize {
        (depth as usize + 2) * chunks_for(mtu.max(1))
    }

    /// Bytes needed for a dcache of `chunk_cnt(mtu, depth)` chunks.
    pub fn footprint(mtu: usize, depth: u64) -> usize {
        DCACHE_HEADER + Self::chunk_cnt(mtu, depth) * CHUNK_SZ
    }

    // `new` formats shared memory in place (the new/join/leave/delete lifecycle of a
    // shared object); the handle comes from `join`.
    #[allow(clippy::new_ret_no_self)]
    /// Formats `region` as a dcache for payloads up to `mtu` bytes on a link of `depth`.
    pub fn new(region: &Region, mtu: usize, depth: u64) -> Result<()> {
        if mtu == 0 || mtu > MAX_MTU {
            return Err(Error::Invalid(format!(
                "dcache mtu {mtu} must be in [1, {MAX_MTU}]"
            )));
        }
        let need = Self::footprint(mtu, depth);
        if !region.is_writable() || region.len() < need {
            return Err(Error::Invalid(format!(
                "dcache (mtu {mtu}, depth {depth}) needs {need} writable bytes, region has {}",
                region.len()
            )));
        }
        let hdr: &DcacheHeader = region.get(0)?;
        hdr.magic.store(0, Ordering::Relaxed);
        hdr.version.store(DCACHE_VERSION, Ordering::Relaxed);
        hdr.mtu.store(mtu as u64, Ordering::Relaxed);
        hdr.chunk_cnt
            .store(Self::chunk_cnt(mtu, depth) as u64, Ordering::Relaxed);
        hdr.magic.store(DCACHE_MAGIC, Ordering::Release);
        Ok(())
    }

    /// Joins a formatted dcache.
    pub fn join(region: &Region) -> Result<Dcache> {
        let hdr: &DcacheHeader = region.get(0)?;
        check_magic(
            "dcache",
            &hdr.magic,
            DCACHE_MAGIC,
            &hdr.version,
            DCACHE_VERSION,
        )?;
        let mtu = hdr.mtu.load(Ordering::Relaxed) as usize;
        let chunk_cnt = hdr.chunk_cnt.load(Ordering::Relaxed) as usize;
        if mtu == 0 || mtu > MAX_MTU || chunk_cnt < chunks_for(mtu) {
            return Err(Error::Invalid(format!(
                "dcache header is inconsistent (mtu {mtu}, chunk_cnt {chunk_cnt})"
            )));
        }
        // Bounds check of the whole data area once, here.
        region.slice::<AtomicU64>(DCACHE_HEADER, chunk_cnt * CHUNK_SZ / 8)?;
        Ok(Dcache {
            region: region.clone(),
            mtu,
            chunk_cnt,
        })
    }

    /// Clears the magic: later joins fail.
    pub fn delete(region: &Region) -> Result<()> {
        let hdr: &DcacheHeader = region.get(0)?;
        hdr.magic.store(0, Ordering::Release);
        Ok(())
    }

    /// Largest payload in bytes.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    fn words(&self) -> &[AtomicU64] {
        self.region
            .slice(DCACHE_HEADER, self.chunk_cnt * CHUNK_SZ / 8)
            .expect("checked by join")
    }

    /// The chunk after a frag of `sz` bytes at `chunk`, wrapping so that a frag of `mtu`
    /// bytes always fits at the returned chunk.
    #[inline(always)]
    pub fn compact_next(&self, chunk: u32, sz: usize) -> u32 {
        let next = chunk as usize + chunks_for(sz);
        if next + chunks_for(self.mtu) > self.chunk_cnt {
            0
        } else {
            next as u32
        }
    }

    /// Writes `payload` at `chunk` (producer only; `payload.len() <= mtu`).
    #[inline(always)]
    pub(crate) fn write(&self, chunk: u32, payload: &[u8]) {
        debug_assert!(payload.len() <= self.mtu);
        debug_assert!(chunk as usize + chunks_for(self.mtu) <= self.chunk_cnt);
        let base = chunk as usize * (CHUNK_SZ / 8);
        let words = &self.words()[base..base + payload.len().div_ceil(8)];
        let mut src = payload.chunks_exact(8);
        for (w, b) in words.iter().zip(&mut src) {
            w.store(
                u64::from_le_bytes(b.try_into().expect("8 bytes")),
                Ordering::Relaxed,
            );
        }
        let rest = src.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            words[words.len() - 1].store(u64::from_le_bytes(last), Ordering::Relaxed);
        }
    }

    /// Copies `sz` bytes at `chunk` into `buf`. Returns `None` when `chunk`/`sz` lie
    /// outside the data area or `buf` is too small (a corrupt or hostile record).
    /// The copy may be torn: the caller validates it by re-checking the mcache line.
    #[inline(always)]
    pub fn read(&self, chunk: u32, sz: usize, buf: &mut [u8]) -> Option<usize> {
        if sz > self.mtu || sz > buf.len() || chunk as usize + chunks_for(sz) > self.chunk_cnt {
            return None;
        }
        let base = chunk as usize * (CHUNK_SZ / 8);
        let words = &self.words()[base..base + sz.div_ceil(8)];
        let dst = &mut buf[..sz];
        let mut chunks = dst.chunks_exact_mut(8);
        for (w, d) in words.iter().zip(&mut chunks) {
            d.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let n = rest.len();
            let last = words[words.len() - 1].load(Ordering::Relaxed).to_le_bytes();
            rest.copy_from_slice(&last[..n]);
        }
        Some(sz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_and_wrap() {
        let r = Region::heap(Dcache::footprint(100, 4)).unwrap();
        Dcache::new(&r, 100, 4).unwrap();
        let d = Dcache::join(&r).unwrap();
        assert_eq!(Dcache::chunk_cnt(100, 4), 12);
        let payload: Vec<u8> = (0..100u8).collect();
        d.write(2, &payload);
        let mut buf = [0u8; 128];
        assert_eq!(d.read(2, 100, &mut buf), Some(100));
        assert_eq!(&buf[..100], &payload[..]);
        assert_eq!(d.read(2, 13, &mut buf[..13]), Some(13));
        assert_eq!(d.read(11, 100, &mut buf), None);
        assert_eq!(d.read(0, 101, &mut buf), None);
        // 12 chunks, mtu 2 chunks: from 8, a 2-chunk frag leads to 10 (fits), then wrap.
        assert_eq!(d.compact_next(8, 100), 10);
        assert_eq!(d.compact_next(10, 100), 0);
    }
}
