//! Raw shared regions: the memory links and metrics are laid out in.
//!
//! A [`Region`] is a byte range that may be written concurrently by other threads or
//! processes. It is backed either by a heap allocation (tests, Miri, single-process use)
//! or by a memory map of a workspace file. Objects are placed in a region as `#[repr(C)]`
//! structs made only of atomics ([`SharedPod`]): every shared access is an atomic access,
//! so concurrent readers and writers never race in the sense of the Rust memory model,
//! and an all-zero region is a valid (unformatted) value of every such struct.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Error, Result};

/// Alignment of every region and of every object placed in a workspace: two cache lines,
/// so no two objects share a line or an adjacent-line prefetch pair.
pub const REGION_ALIGN: usize = 128;

/// Types that may be viewed in shared memory.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, contain only atomics (or arrays of them), have no
/// padding that matters, and be valid for every bit pattern (in particular all zeros).
pub unsafe trait SharedPod: Sync {}

// SAFETY: atomics are valid for every bit pattern and accessed only atomically.
unsafe impl SharedPod for std::sync::atomic::AtomicU64 {}
// SAFETY: as above.
unsafe impl SharedPod for std::sync::atomic::AtomicU32 {}

enum Backing {
    Heap { ptr: NonNull<u8>, layout: Layout },
    // The maps are held only to keep the memory mapped.
    MapMut(#[allow(dead_code)] memmap2::MmapMut),
    Map(#[allow(dead_code)] memmap2::Mmap),
}

impl Drop for Backing {
    fn drop(&mut self) {
        if let Backing::Heap { ptr, layout } = self {
            // SAFETY: `ptr` came from `alloc_zeroed(layout)` in `Region::heap` and the
            // backing is dropped once, when the last `Region` sharing it goes away.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), *layout) };
        }
    }
}

// SAFETY: the backing owns plain memory or a map; all access to the bytes goes through
// atomics (see `SharedPod`), so sharing across threads is sound.
unsafe impl Send for Backing {}
// SAFETY: as above.
unsafe impl Sync for Backing {}

/// A shared byte range, cheap to clone (the backing is reference counted).
#[derive(Clone)]
pub struct Region {
    /// Start of the range. Invariant: aligned to [`REGION_ALIGN`] for regions handed out
    /// by `heap`/workspaces, valid for `len` bytes while `backing` lives.
    ptr: NonNull<u8>,
    /// Length in bytes.
    len: usize,
    /// False for read-only maps: only loads are allowed (callers never get a writer view).
    writable: bool,
    backing: Arc<Backing>,
}

// SAFETY: see `Backing`; a Region only hands out `&T` for `T: SharedPod` (atomics).
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("len", &self.len)
            .field("writable", &self.writable)
            .finish()
    }
}

impl Region {
    /// A zeroed, writable heap region of `len` bytes, aligned to [`REGION_ALIGN`].
    pub fn heap(len: usize) -> Result<Region> {
        let layout = Layout::from_size_align(len.max(1), REGION_ALIGN)
            .map_err(|e| Error::Invalid(format!("heap region of {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            Error::Invalid(format!("heap region of {len} bytes: allocation failed"))
        })?;
        Ok(Region {
            ptr,
            len,
            writable: true,
            backing: Arc::new(Backing::Heap { ptr, layout }),
        })
    }

    /// A writable region over a whole mutable map.
    pub(crate) fn from_map_mut(mut map: memmap2::MmapMut) -> Region {
        let len = map.len();
        let ptr = NonNull::new(map.as_mut_ptr()).expect("mmap never returns null");
        Region {
            ptr,
            len,
            writable: true,
            backing: Arc::new(Backing::MapMut(map)),
        }
    }

    /// A read-only region over a whole map.
    pub(crate) fn from_map(map: memmap2::Mmap) -> Region {
        let len = map.len();
        let ptr = NonNull::new(map.as_ptr() as *mut u8).expect("mmap never returns null");
        Region {
            ptr,
            len,
            writable: false,
            backing: Arc::new(Backing::Map(map)),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the region has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True unless the region is a read-only map.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The sub-range `[offset, offset + len)`, sharing the backing.
    pub fn sub(&self, offset: usize, len: usize) -> Result<Region> {
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "sub-region [{offset}, +{len}) outside a region of {} bytes",
                    self.len
                ))
            })?;
        debug_assert!(end <= self.len);
        Ok(Region {
            // SAFETY: offset <= len (checked above), so the pointer stays in the allocation.
            ptr: unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(offset)) },
            len,
            writable: self.writable,
            backing: Arc::clone(&self.backing),
        })
    }

    /// A shared view of a `T` at `offset` (bounds and alignment checked).
    pub fn get<T: SharedPod>(&self, offset: usize) -> Result<&T> {
        self.check::<T>(offset, 1)?;
        // SAFETY: in bounds and aligned (checked), `T: SharedPod` is valid for any bytes
        // and only accessed atomically; the backing outlives `&self`.
        Ok(unsafe { &*(self.ptr.as_ptr().add(offset) as *const T) })
    }

    /// A shared view of `n` consecutive `T`s at `offset` (bounds and alignment checked).
    pub fn slice<T: SharedPod>(&self, offset: usize, n: usize) -> Result<&[T]> {
        self.check::<T>(offset, n)?;
        // SAFETY: as in `get`, for `n` elements.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(offset) as *const T, n) })
    }

    fn check<T>(&self, offset: usize, n: usize) -> Result<()> {
        let size = std::mem::size_of::<T>()
            .checked_mul(n)
            .and_then(|s| s.checked_add(offset));
        let addr = self.ptr.as_ptr() as usize + offset;
        match size {
            Some(end) if end <= self.len && addr.is_multiple_of(std::mem::align_of::<T>()) => {
                Ok(())
            }
            _ => Err(Error::Invalid(format!(
                "{n} x {} bytes at offset {offset} do not fit (aligned) in a region of {} bytes",
                std::mem::size_of::<T>(),
                self.len
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn heap_region_is_zeroed_aligned_and_bounds_checked() {
        let r = Region::heap(256).unwrap();
        assert_eq!(r.len(), 256);
        let w: &[AtomicU64] = r.slice(0, 32).unwrap();
        assert!(w.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        assert!(r.slice::<AtomicU64>(0, 33).is_err());
        assert!(r.get::<AtomicU64>(3).is_err());
        let s = r.sub(128, 128).unwrap();
        s.get::<AtomicU64>(0).unwrap().store(7, Ordering::Relaxed);
        assert_eq!(w[16].load(Ordering::Relaxed), 7);
        assert!(r.sub(200, 100).is_err());
    }
}
