//! What the /proc sampler costs: samples one process once a second for N seconds and
//! reports the CPU time this process used doing so, as a share of one core.
//!
//! ```text
//! cargo run --release -p dyno-compare --example sampler_cost -- 30          # samples a `sleep`
//! cargo run --release -p dyno-compare --example sampler_cost -- 30 <PID>    # samples PID
//! ```
//!
//! Sleeping between samples costs nothing, so the share is (time spent reading and
//! parsing /proc) / (wall time). The target must live for the whole window. The sampler
//! reads the target and all its descendants, so a `sh -c` launcher PID works too.

use dyno_compare::sampler::{own_cpu_seconds, own_thread_cpu_ns, sample_between, ProcSampler};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    let (pid, mut child) = match args.next().and_then(|s| s.parse::<u32>().ok()) {
        Some(pid) => (pid, None),
        None => {
            let c = std::process::Command::new("sleep")
                .arg((seconds + 5).to_string())
                .spawn()
                .expect("cannot start sleep");
            (c.id(), Some(c))
        }
    };
    let sampler = ProcSampler::new(pid);
    let cpu0 = own_cpu_seconds().unwrap_or(0.0);
    let ns0 = own_thread_cpu_ns().unwrap_or(0);
    let start = Instant::now();
    let mut prev = sampler.read().expect("target not readable");
    let mut n = 0;
    let mut last_cpu = 0.0;
    for tick in 1..=seconds {
        let due = start + Duration::from_secs(tick);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let next = sampler.read().expect("target vanished");
        last_cpu = sample_between(&prev, &next, sampler.clk_tck()).cpu_percent;
        prev = next;
        n += 1;
    }
    let wall = start.elapsed().as_secs_f64();
    let used = own_cpu_seconds().unwrap_or(0.0) - cpu0;
    let used_ns = own_thread_cpu_ns().unwrap_or(0).saturating_sub(ns0) as f64;
    println!(
        "{n} samples of pid {pid} ({} threads, last CPU {last_cpu:.1}%) in {wall:.1} s: \
         sampling thread on CPU {:.2} ms = {:.4}% of one core ({:.0} us per sample); \
         whole process {used:.2} s by clock ticks of 1/{} s",
        prev.threads(),
        used_ns / 1e6,
        100.0 * used_ns / 1e9 / wall,
        used_ns / 1e3 / n.max(1) as f64,
        sampler.clk_tck()
    );
    if let Some(c) = child.as_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
}
