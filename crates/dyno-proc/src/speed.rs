//! A machine-speed reference: a fixed piece of CPU work timed in on-CPU nanoseconds of
//! the calling thread, run by the sampler beside the measured node.
//!
//! Why: on a shared VM the CPU time a node needs for the *same* work moves by several
//! percent from one execution to the next (the power study of issue 13 measured 6-8%
//! per 3 s execution on a quiet 2-vCPU VM, with the node's own fixed-work stages slower
//! in the same executions and neighbouring executions alike: the machine's speed, not the
//! node, moved). CPU seconds per transaction divided by the seconds this reference took
//! in the same window cancels what both felt: frequency, a neighbour's cache and memory
//! traffic, hypervisor time charged to the guest. It cannot cancel what only the node
//! feels (where the scheduler put its threads).
//!
//! The work is a dependent walk through a 256 KiB table (a random cyclic permutation, so
//! every step waits for the last load, in L2 on common cores) mixed with a multiply and
//! xor-shift per step: loads and arithmetic both, like a node's hashing and bookkeeping,
//! and nothing the optimiser can drop (the result is returned and checked in tests).
//! Timed with the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`, nanoseconds on CPU, up
//! to date at the call; `/proc/thread-self/schedstat` lags by up to a tick and read 0 for
//! a 3 ms piece of work), so time the thread spent preempted does not count.

use crate::procfs::own_thread_cpu_ns;

/// Entries of the table (8 bytes each: 256 KiB).
pub const TABLE_ENTRIES: usize = 32 * 1024;

/// Steps of one reference piece of work: about 2-4 ms on a current x86 core, long against
/// the nanosecond clock's reading cost, short against the sampler's one-second interval.
pub const STEPS: u32 = 1 << 19;

/// The reference work and its table.
#[derive(Debug, Clone)]
pub struct SpeedProbe {
    table: Vec<u32>,
}

impl Default for SpeedProbe {
    fn default() -> Self {
        Self::new()
    }
}

impl SpeedProbe {
    /// The table: one cycle through every entry (Sattolo's shuffle with a fixed
    /// generator, so every probe everywhere walks the same path).
    pub fn new() -> SpeedProbe {
        let mut table: Vec<u32> = (0..TABLE_ENTRIES as u32).collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..TABLE_ENTRIES).rev() {
            state = xorshift(state);
            let j = (state % i as u64) as usize;
            table.swap(i, j);
        }
        SpeedProbe { table }
    }

    /// Walks `steps` steps from entry 0 and returns the mixed value: the work itself.
    pub fn work(&self, steps: u32) -> u64 {
        let mut at = 0u32;
        let mut acc = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..steps {
            at = self.table[at as usize];
            acc = xorshift(acc.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(at));
        }
        std::hint::black_box(acc)
    }

    /// On-CPU seconds of one reference piece of work ([`STEPS`] steps) on the calling
    /// thread; `None` where the thread CPU clock is not available.
    pub fn measure(&self) -> Option<f64> {
        let before = own_thread_cpu_ns()?;
        std::hint::black_box(self.work(STEPS));
        let after = own_thread_cpu_ns()?;
        Some(after.saturating_sub(before) as f64 * 1e-9)
    }
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_one_cycle_through_every_entry() {
        let probe = SpeedProbe::new();
        let mut seen = vec![false; TABLE_ENTRIES];
        let mut at = 0u32;
        for _ in 0..TABLE_ENTRIES {
            assert!(!seen[at as usize], "entry {at} visited twice");
            seen[at as usize] = true;
            at = probe.table[at as usize];
        }
        assert_eq!(at, 0, "the walk returns to its start after every entry");
    }

    #[test]
    fn the_work_is_the_same_everywhere_and_depends_on_its_length() {
        let a = SpeedProbe::new();
        let b = SpeedProbe::new();
        assert_eq!(a.work(1000), b.work(1000));
        assert_ne!(a.work(1000), a.work(1001));
    }

    #[test]
    fn a_measurement_is_on_cpu_time_of_the_work() {
        let probe = SpeedProbe::new();
        // Thread CPU clocks exist on every Linux this runs on: the reading must be there
        // and nonzero (the stale schedstat read 0 for work of this length).
        for _ in 0..5 {
            let s = probe.measure().expect("the thread CPU clock");
            assert!(s > 0.0 && s < 60.0, "{s}");
        }
    }
}
