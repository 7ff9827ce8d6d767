//! Memory bandwidth: one 64 MiB memcpy per iteration.

use super::{Benchmark, Context, Execution};
use crate::harness::{Combine, Workload};
use crate::{HwError, MetricId};
use std::hint::black_box;

/// Substrate copies 64 MiB: larger than any last-level cache, long enough to time.
const COPY_SIZE: usize = 64 * 1024 * 1024;

/// A 64 MiB copy between two pre-faulted buffers (source 0x66, destination 0x77), as
/// upstream. `copy_from_slice` on slices this large lowers to the C library's `memcpy`,
/// the same routine upstream calls directly.
pub struct MemCopy {
    /// Copy on every online core at once and sum the bandwidth (dyno's extra).
    pub all_cores: bool,
}

/// The buffers a copy runs between.
enum Buffers {
    /// Substrate's, exactly: sc-sysinfo 51 builds them as `Vec::new()` resized to 64 Mi
    /// elements of the fill value, and nothing there names the element type, so Rust
    /// infers `i32`: each buffer is 256 MiB (every page written when filled) and the
    /// memcpy of 64 MiB copies the first quarter. Copying 64 MiB inside 256 MiB buffers
    /// is measurably slower on some machines than between two 64 MiB ones (14-17% on the
    /// 2-vCPU EPYC VM of BENCHMARKS.md, "Substrate parity"), so dyno builds the same.
    Substrate { src: Vec<i32>, dst: Vec<i32> },
    /// 64 MiB each, for the all-cores copy (dyno's own metric: 512 MiB a core would not
    /// fit many-core machines).
    Bytes { src: Vec<u8>, dst: Vec<u8> },
}

/// Working state of [`MemCopy`].
pub struct MemCopyWorkload {
    buffers: Buffers,
}

impl MemCopyWorkload {
    fn new(substrate: bool) -> Self {
        let buffers = if substrate {
            Buffers::Substrate {
                src: filled(COPY_SIZE, 0x66),
                dst: filled(COPY_SIZE, 0x77),
            }
        } else {
            Buffers::Bytes {
                src: filled(COPY_SIZE, 0x66),
                dst: filled(COPY_SIZE, 0x77),
            }
        };
        MemCopyWorkload { buffers }
    }
}

impl Workload for MemCopyWorkload {
    fn work_per_iteration(&self) -> f64 {
        COPY_SIZE as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        match &mut self.buffers {
            Buffers::Substrate { src, dst } => fenced_copy(src, dst),
            Buffers::Bytes { src, dst } => fenced_copy(src, dst),
        }
        Ok(())
    }
}

/// `len` elements of `value`, built as upstream builds its buffers (an empty Vec resized
/// with the fill value): every page is written, so no page fault is timed later.
fn filled<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = Vec::new();
    v.resize(len, value);
    v
}

/// Copies the first [`COPY_SIZE`] bytes of `src` over `dst`: one call of the C library's
/// memcpy (`copy_from_slice` on slices this large lowers to it), with both buffers fenced
/// before and after as upstream fences them with volatile accesses (black_box is the safe
/// equivalent), so the compiler can neither drop nor hoist the copy.
fn fenced_copy<T: Copy>(src: &mut [T], dst: &mut [T]) {
    let n = COPY_SIZE / std::mem::size_of::<T>();
    black_box(&mut *src);
    black_box(&mut *dst);
    dst[..n].copy_from_slice(&src[..n]);
    black_box(&mut *dst);
    black_box(&mut *src);
}

impl Benchmark for MemCopy {
    fn id(&self) -> MetricId {
        if self.all_cores {
            MetricId::MemCopyAllCores
        } else {
            MetricId::MemCopy
        }
    }
    fn execution(&self, ctx: &Context) -> Execution {
        if self.all_cores {
            Execution::Parallel {
                threads: ctx.cores_online,
                combine: Combine::Sum,
            }
        } else {
            Execution::Single
        }
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        Ok(Box::new(MemCopyWorkload::new(!self.all_cores)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrates_copy_moves_64_mib_inside_256_mib_buffers() {
        let mut w = MemCopyWorkload::new(true);
        w.iterate().unwrap();
        let Buffers::Substrate { src, dst } = &w.buffers else {
            panic!("Substrate's buffers")
        };
        // As sc-sysinfo: 64 Mi i32 elements each, the first 64 MiB copied.
        assert_eq!(src.len(), COPY_SIZE);
        assert_eq!(std::mem::size_of_val(&dst[..]), 4 * COPY_SIZE);
        let copied = COPY_SIZE / 4;
        assert!(dst[..copied].iter().all(|v| *v == 0x66));
        assert!(dst[copied..].iter().all(|v| *v == 0x77));
        assert_eq!(w.work_per_iteration(), 67_108_864.0);
    }

    #[test]
    fn the_all_cores_copy_moves_every_byte_of_64_mib() {
        let mut w = MemCopyWorkload::new(false);
        w.iterate().unwrap();
        let Buffers::Bytes { dst, .. } = &w.buffers else {
            panic!("byte buffers")
        };
        assert_eq!(dst.len(), COPY_SIZE);
        assert!(dst.iter().all(|b| *b == 0x66));
        assert_eq!(w.work_per_iteration(), 67_108_864.0);
    }
}
