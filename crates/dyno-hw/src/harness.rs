//! The one timing loop every machine benchmark goes through.
//!
//! It follows Substrate's `benchmark machine` exactly, so scores stay comparable with the
//! published minimums: one untimed warm-up iteration, then iterations until the elapsed
//! time reaches the limit (checked after each iteration, no iteration cap), and
//! `score = work_per_iteration * iterations / elapsed_seconds`. The only addition is a
//! stop flag, checked between iterations, so Ctrl-C ends a measurement within one
//! iteration instead of after the whole time limit.

use crate::HwError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// One prepared benchmark: owns its buffers, keys and files, and does one unit of work
/// per call. Everything costly to build happens before the first call.
pub trait Workload: Send {
    /// How much one [`Workload::iterate`] does, in the metric's unit (bytes for
    /// throughputs, signatures or hashes for rates).
    fn work_per_iteration(&self) -> f64;

    /// One timed iteration. Results must be passed through [`std::hint::black_box`] so
    /// the work cannot be optimised away.
    fn iterate(&mut self) -> Result<(), HwError>;
}

/// The raw outcome of one measurement, kept so that reports can show time and
/// repetitions, not only the score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// The score in the metric's base unit per second.
    pub score: f64,
    /// Timed iterations (the warm-up is not counted); per thread for parallel runs.
    pub iterations: u64,
    /// Wall time of the timed iterations; the longest thread's for parallel runs.
    pub elapsed: Duration,
    /// Threads that ran the workload at once.
    pub threads: usize,
}

/// How per-thread scores of a parallel measurement combine into one score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Average of per-thread throughputs: a per-core figure (Substrate's parallel BLAKE2).
    Average,
    /// Sum of per-thread throughputs: the machine's total.
    Sum,
}

/// Runs one workload on the current thread: warm-up, then the timed loop.
pub fn run_timed(
    workload: &mut dyn Workload,
    limit: Duration,
    stop: &AtomicBool,
) -> Result<Measurement, HwError> {
    workload.iterate()?;
    let start = Instant::now();
    let mut iterations = 0u64;
    let elapsed = loop {
        if stop.load(Ordering::Relaxed) {
            return Err(HwError::Interrupted);
        }
        workload.iterate()?;
        iterations += 1;
        let elapsed = start.elapsed();
        if elapsed >= limit {
            break elapsed;
        }
    };
    Ok(Measurement {
        score: workload.work_per_iteration() * iterations as f64 / elapsed.as_secs_f64(),
        iterations,
        elapsed,
        threads: 1,
    })
}

/// Runs `threads` copies of a workload at once, each on its own unpinned thread, started
/// together behind a barrier after every copy is set up, and combines their scores.
pub fn run_parallel<F>(
    threads: usize,
    setup: F,
    limit: Duration,
    combine: Combine,
    stop: &AtomicBool,
) -> Result<Measurement, HwError>
where
    F: Fn() -> Result<Box<dyn Workload>, HwError> + Sync,
{
    let threads = threads.max(1);
    // Every thread waits here once set up (or failed), so no thread measures while
    // another is still filling buffers.
    let barrier = Arc::new(Barrier::new(threads));
    let results: Vec<Result<Measurement, HwError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                let setup = &setup;
                scope.spawn(move || {
                    let prepared = setup();
                    barrier.wait();
                    run_timed(prepared?.as_mut(), limit, stop)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(HwError::Failed("a benchmark thread panicked".into())))
            })
            .collect()
    });
    let mut scores = Vec::with_capacity(threads);
    let mut iterations = 0;
    let mut elapsed = Duration::ZERO;
    for r in results {
        let m = r?;
        scores.push(m.score);
        iterations += m.iterations;
        elapsed = elapsed.max(m.elapsed);
    }
    Ok(Measurement {
        score: combine_scores(&scores, combine),
        iterations: iterations / threads as u64,
        elapsed,
        threads,
    })
}

/// The score of several threads from theirs: their mean or their total.
fn combine_scores(scores: &[f64], combine: Combine) -> f64 {
    let total: f64 = scores.iter().sum();
    match combine {
        Combine::Average => total / scores.len().max(1) as f64,
        Combine::Sum => total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload that counts its calls and fails on request.
    struct Counting {
        calls: u64,
        fail_at: Option<u64>,
        sleep: Duration,
    }

    impl Workload for Counting {
        fn work_per_iteration(&self) -> f64 {
            10.0
        }
        fn iterate(&mut self) -> Result<(), HwError> {
            self.calls += 1;
            if Some(self.calls) == self.fail_at {
                return Err(HwError::Failed("boom".into()));
            }
            std::thread::sleep(self.sleep);
            Ok(())
        }
    }

    #[test]
    fn warm_up_is_not_counted_and_score_follows_the_formula() {
        let mut w = Counting {
            calls: 0,
            fail_at: None,
            sleep: Duration::from_millis(2),
        };
        let m = run_timed(&mut w, Duration::from_millis(20), &AtomicBool::new(false)).unwrap();
        assert_eq!(w.calls, m.iterations + 1, "one untimed warm-up call");
        assert!(m.elapsed >= Duration::from_millis(20));
        let expected = 10.0 * m.iterations as f64 / m.elapsed.as_secs_f64();
        assert_eq!(m.score, expected);
    }

    #[test]
    fn a_zero_limit_still_times_one_iteration() {
        let mut w = Counting {
            calls: 0,
            fail_at: None,
            sleep: Duration::ZERO,
        };
        let m = run_timed(&mut w, Duration::ZERO, &AtomicBool::new(false)).unwrap();
        assert_eq!(m.iterations, 1);
    }

    #[test]
    fn errors_and_stops_end_the_loop() {
        let mut w = Counting {
            calls: 0,
            fail_at: Some(3),
            sleep: Duration::ZERO,
        };
        let err = run_timed(&mut w, Duration::from_secs(60), &AtomicBool::new(false));
        assert!(matches!(err, Err(HwError::Failed(_))));
        let mut w = Counting {
            calls: 0,
            fail_at: None,
            sleep: Duration::ZERO,
        };
        let err = run_timed(&mut w, Duration::from_secs(60), &AtomicBool::new(true));
        assert!(matches!(err, Err(HwError::Interrupted)));
        assert_eq!(w.calls, 1, "only the warm-up ran");
    }

    #[test]
    fn parallel_scores_average_or_sum() {
        let make = || -> Result<Box<dyn Workload>, HwError> {
            Ok(Box::new(Counting {
                calls: 0,
                fail_at: None,
                sleep: Duration::from_millis(1),
            }))
        };
        let stop = AtomicBool::new(false);
        let avg =
            run_parallel(3, make, Duration::from_millis(10), Combine::Average, &stop).unwrap();
        let sum = run_parallel(3, make, Duration::from_millis(10), Combine::Sum, &stop).unwrap();
        assert_eq!((avg.threads, sum.threads), (3, 3));
        // Each call sleeps at least 1 ms, so each thread scores at most 10 units per ms
        // however slow the machine: the average is bounded by one thread, the sum by three.
        assert!(avg.score > 0.0 && avg.score <= 10_000.0 + 1e-9);
        assert!(sum.score > 0.0 && sum.score <= 30_000.0 + 1e-9);
        assert_eq!(combine_scores(&[1.0, 2.0, 6.0], Combine::Average), 3.0);
        assert_eq!(combine_scores(&[1.0, 2.0, 6.0], Combine::Sum), 9.0);
        let failing =
            || -> Result<Box<dyn Workload>, HwError> { Err(HwError::Failed("setup".into())) };
        assert!(run_parallel(2, failing, Duration::from_millis(1), Combine::Sum, &stop).is_err());
    }
}
