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

/// Working state of [`MemCopy`].
pub struct MemCopyWorkload {
    src: Vec<u8>,
    dst: Vec<u8>,
}

impl MemCopyWorkload {
    fn new() -> Self {
        // Built as upstream builds them (an empty Vec resized with the fill byte), so the
        // allocation and its placement are the same; filling writes every page, so the
        // kernel's page faults are not measured.
        let mut src = Vec::new();
        src.resize(COPY_SIZE, 0x66);
        let mut dst = Vec::new();
        dst.resize(COPY_SIZE, 0x77);
        MemCopyWorkload { src, dst }
    }
}

impl Workload for MemCopyWorkload {
    fn work_per_iteration(&self) -> f64 {
        COPY_SIZE as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        // Upstream touches both buffers through volatile accesses before and after the
        // copy so the compiler can neither drop nor hoist it; black_box is the safe
        // equivalent. The copy itself is one call of the C library's memcpy.
        black_box(&mut self.src[..]);
        black_box(&mut self.dst[..]);
        self.dst.copy_from_slice(&self.src);
        black_box(&mut self.dst[..]);
        black_box(&mut self.src[..]);
        Ok(())
    }
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
        Ok(Box::new(MemCopyWorkload::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_moves_every_byte() {
        let mut w = MemCopyWorkload::new();
        assert!(w.dst.iter().all(|b| *b == 0x77));
        w.iterate().unwrap();
        assert!(w.dst.iter().all(|b| *b == 0x66));
        assert_eq!(w.work_per_iteration(), 67_108_864.0);
    }
}
