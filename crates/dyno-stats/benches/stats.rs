//! Times the bootstrap workload of a large study: 50 subjects x 5 metrics x 20 samples, a
//! 10,000-resample percentile bootstrap CI of the median for each (250 intervals), on one
//! core. Target: under 2 s. Run with `cargo bench -p dyno-stats`.

use std::hint::black_box;
use std::time::Instant;

use dyno_stats::bootstrap_median_ci;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

const SUBJECTS: usize = 50;
const METRICS: usize = 5;
const SAMPLES: usize = 20;
const RESAMPLES: usize = 10_000;

fn main() {
    let mut rng = Pcg64::seed_from_u64(2024);
    let samples: Vec<Vec<f64>> = (0..SUBJECTS * METRICS)
        .map(|i| {
            let center = 100.0 + i as f64;
            (0..SAMPLES)
                .map(|_| center * (1.0 + 0.03 * (rng.gen::<f64>() - 0.5)))
                .collect()
        })
        .collect();

    let mut best = f64::INFINITY;
    for round in 0..3 {
        let start = Instant::now();
        let mut width_sum = 0.0;
        for (i, data) in samples.iter().enumerate() {
            let ci = bootstrap_median_ci(black_box(data), 0.95, RESAMPLES, i as u64)
                .expect("valid sample");
            width_sum += ci.high - ci.low;
        }
        let secs = start.elapsed().as_secs_f64();
        black_box(width_sum);
        best = best.min(secs);
        println!(
            "round {round}: {SUBJECTS} subjects x {METRICS} metrics x {SAMPLES} samples, \
             {RESAMPLES} resamples each: {secs:.3} s"
        );
    }
    println!("bootstrap workload (best of 3): {best:.3} s (target < 2 s)");
}
