//! Does the harness cost anything? BLAKE2-256 through `dyno_hw::measure` against a bare
//! loop over the same crate and buffer in the same process, interleaved round by round so
//! drift of the machine lands on both alike.
//!
//! `cargo bench -p dyno-hw --bench harness_overhead [-- SECONDS ROUNDS]` (default 2 s, 7 rounds).

use dyno_hw::{measure, Context, Durations, MetricId};
use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn bare_loop(limit: Duration) -> f64 {
    let buffer = vec![0x66u8; 32 * 1024];
    let mut n = 0u64;
    let start = Instant::now();
    loop {
        let h = blake2b_simd::Params::new()
            .hash_length(32)
            .hash(black_box(&buffer));
        black_box(h);
        n += 1;
        if start.elapsed() >= limit {
            break;
        }
    }
    (n * 32 * 1024) as f64 / start.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let secs: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(7);
    let limit = Duration::from_secs_f64(secs);
    let ctx = Context {
        base_path: std::env::temp_dir(),
        parallel_cores: 1,
        cores_online: 1,
    };
    let durations = Durations::uniform(limit);
    let stop = AtomicBool::new(false);
    let (mut harness, mut bare) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which goes first so neither always runs on a warmer core.
        let first_harness = round % 2 == 0;
        for turn in 0..2 {
            if (turn == 0) == first_harness {
                let m = measure(MetricId::Blake2256, &ctx, &durations, &stop).expect("measure");
                harness.push(m.score);
            } else {
                bare.push(bare_loop(limit));
            }
        }
    }
    let mib = 1024.0 * 1024.0;
    let (h, b) = (median(&mut harness) / mib, median(&mut bare) / mib);
    println!("BLAKE2-256, {rounds} interleaved rounds of {secs} s each");
    println!(
        "  dyno harness: median {h:.2} MiB/s  (all: {:?})",
        harness
            .iter()
            .map(|x| (x / mib * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    );
    println!(
        "  bare loop:    median {b:.2} MiB/s  (all: {:?})",
        bare.iter()
            .map(|x| (x / mib * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    );
    println!("  harness / bare = {:.4}", h / b);
}
