//! The benchmarks, one small unit each behind [`Benchmark`], registered in [`registry`].
//!
//! Adding a metric means: a [`MetricId`] variant, one `Benchmark` implementation, one
//! line in [`registry`]. The harness owns warm-up, time limits and black-boxing.

mod cpu;
mod disk;
mod exec;
mod memory;

pub use cpu::{sr25519_verify, Blake2, Blake2Parallel, Ed25519, Sha256Chain, Sr25519};
pub use disk::{
    clear_leftovers, random_positions, remove_temp_files, DiskRndWrite, DiskSeqWrite, RND_FILE,
    SEQ_FILE,
};
pub use exec::TransferExecute;
pub use memory::MemCopy;

use crate::harness::{Combine, Workload};
use crate::{HwError, MetricId};
use std::path::PathBuf;

/// What every benchmark may need to know about this session.
#[derive(Debug, Clone)]
pub struct Context {
    /// Directory for the disk benchmarks' files.
    pub base_path: PathBuf,
    /// Threads of the parallel BLAKE2 benchmark (upstream default 8).
    pub parallel_cores: usize,
    /// Logical CPUs online (threads of the all-cores copy).
    pub cores_online: usize,
}

impl Context {
    /// A context for unit tests: the system temp dir, small thread counts.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Context {
        Context {
            base_path: std::env::temp_dir(),
            parallel_cores: 2,
            cores_online: 2,
        }
    }
}

/// How a benchmark's workload is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// One workload on the calling thread.
    Single,
    /// `threads` workloads at once, scores combined.
    Parallel {
        /// Number of threads.
        threads: usize,
        /// How their scores combine.
        combine: Combine,
    },
}

/// One machine benchmark: its identity, how it runs, and how to prepare its workload.
pub trait Benchmark: Sync {
    /// Which metric it measures (name, unit, category come from the id).
    fn id(&self) -> MetricId;
    /// Single-threaded or parallel.
    fn execution(&self, ctx: &Context) -> Execution;
    /// Builds the buffers, keys and files; not timed.
    fn prepare(&self, ctx: &Context) -> Result<Box<dyn Workload>, HwError>;
    /// The reported score from the harness's rate (work per second); the rate itself for
    /// throughputs.
    fn score(&self, rate: f64) -> f64 {
        rate
    }
}

/// The one list of benchmarks, in running order.
pub fn registry() -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(Blake2),
        Box::new(Blake2Parallel),
        Box::new(Sr25519),
        Box::new(MemCopy { all_cores: false }),
        Box::new(DiskSeqWrite),
        Box::new(DiskRndWrite),
        Box::new(Ed25519 { batch: false }),
        Box::new(Ed25519 { batch: true }),
        Box::new(Sha256Chain),
        Box::new(MemCopy { all_cores: true }),
        Box::new(TransferExecute),
    ]
}

/// The benchmark for one metric.
pub fn benchmark(id: MetricId) -> Box<dyn Benchmark> {
    registry()
        .into_iter()
        .find(|b| b.id() == id)
        .expect("every MetricId has a registered benchmark (tested)")
}

/// Upstream's generator and seed for messages, file contents and shuffles.
pub(crate) fn seeded_rng() -> rand_pcg::Pcg64 {
    rand_pcg::Pcg64::new(0xcafef00dd15ea5e5, 0xa02bdbf7bb3c0a7ac28fa16a64abf96)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_covers_every_metric_once_in_order() {
        let ids: Vec<MetricId> = registry().iter().map(|b| b.id()).collect();
        assert_eq!(ids, MetricId::ALL.to_vec());
    }

    #[test]
    fn seeded_stream_is_upstreams_pcg64() {
        use rand_core::RngCore;
        // Two generators with the same seed agree, and the seed is not the default.
        let (mut a, mut b) = (seeded_rng(), seeded_rng());
        let x = a.next_u64();
        assert_eq!(x, b.next_u64());
        assert_ne!(x, rand_pcg::Pcg64::new(0, 0).next_u64());
    }
}
