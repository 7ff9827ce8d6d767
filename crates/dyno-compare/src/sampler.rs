//! The /proc sampler, from [`dyno_proc::sampler`] (where `dyno cluster` reaches it too),
//! and what compare derives from its samples: spans of seconds at high CPU use.
//!
//! The tree sampled is the node's spawned process and all its descendants; see
//! [`dyno_proc::sampler`] for what is read and how processes that come and go are counted.

pub use dyno_proc::procfs::{
    clock_ticks_per_second, own_cpu_seconds, own_thread_cpu_ns, parse_io, parse_stat, parse_status,
    StatFields, StatusFields,
};
pub use dyno_proc::sampler::*;

/// CPU share at or above which a second counts towards a "CPU 85% span".
pub const CPU_SPAN_THRESHOLD: f64 = 85.0;

/// Lengths (in samples) of the maximal runs of consecutive samples whose CPU use is at or
/// above `threshold` percent, in order of occurrence.
pub fn cpu_spans(cpu_percent: &[f64], threshold: f64) -> Vec<usize> {
    let mut spans = Vec::new();
    let mut current = 0;
    for &c in cpu_percent {
        if c >= threshold {
            current += 1;
        } else if current > 0 {
            spans.push(current);
            current = 0;
        }
    }
    if current > 0 {
        spans.push(current);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spans_are_maximal_runs_at_or_above_threshold() {
        let cpu = [90.0, 85.0, 84.9, 100.0, 0.0, 0.0, 99.0, 99.0, 99.0];
        assert_eq!(cpu_spans(&cpu, 85.0), vec![2, 1, 3]);
        assert_eq!(cpu_spans(&[], 85.0), Vec::<usize>::new());
        assert_eq!(cpu_spans(&[10.0, 20.0], 85.0), Vec::<usize>::new());
    }

    proptest! {
        #[test]
        fn span_lengths_count_every_busy_sample(cpu in proptest::collection::vec(0.0f64..120.0, 0..200)) {
            let spans = cpu_spans(&cpu, CPU_SPAN_THRESHOLD);
            let busy = cpu.iter().filter(|&&c| c >= CPU_SPAN_THRESHOLD).count();
            prop_assert_eq!(spans.iter().sum::<usize>(), busy);
            prop_assert!(spans.iter().all(|&l| l > 0));
            let starts = cpu.iter().enumerate()
                .filter(|&(i, &c)| c >= CPU_SPAN_THRESHOLD && (i == 0 || cpu[i - 1] < CPU_SPAN_THRESHOLD))
                .count();
            prop_assert_eq!(spans.len(), starts);
        }
    }
}
