//! Parity benchmark: Substrate's own machine benchmarks (`sc-sysinfo`, the crate behind
//! `benchmark machine` and a node's start-up check) beside dyno-hw's, in one process.
//!
//! Every round measures each metric once with each implementation, back to back, the
//! order alternating from round to round (upstream first in even rounds, dyno first in
//! odd ones) so that a machine drifting during the run does not favour one side. The
//! figure that matters is the median over rounds of the paired ratio dyno / upstream:
//! 1.0 means dyno reports the score a Substrate node would report on this machine.
//!
//! ```text
//! cargo run --release --manifest-path parity/Cargo.toml -- --rounds 10 --seconds 5 --dir .
//! ```
//!
//! `--self-check` measures sc-sysinfo against itself (the "dyno" column is a second
//! sc-sysinfo measurement): the spread of that A/A ratio is the noise floor of this
//! machine, the yardstick for reading a dyno/upstream ratio near 1.0.
//!
//! `--process-per-measurement` runs every measurement in a fresh child process of this
//! binary, so nothing one measurement leaves behind (buffers, heap, the pages the kernel
//! handed out) is seen by the next. It is how the memory copy's last difference was found:
//! fresh processes pinned to one CPU (`taskset -c 0`) read dyno 14-17% above sc-sysinfo in
//! every round, and the system calls showed why: sc-sysinfo's buffers are `Vec<i32>` (the
//! fill value's inferred type), 256 MiB each, not the 64 MiB its comment says. dyno-hw
//! now builds the same buffers.
//!
//! `--verify-paths` instead times the steps of the SR25519 path one by one (sp-io's host
//! function, sp-core's `Pair::verify`, dyno-hw's verification), to show where a
//! difference in that score comes from.
#![deny(unsafe_code)]
#![deny(missing_docs)]

use dyno_hw::{Context, Durations, MetricId};
use sc_sysinfo::ExecutionLimit;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Substrate's six metrics, in upstream order.
const METRICS: [MetricId; 6] = [
    MetricId::Blake2256,
    MetricId::Blake2256Parallel,
    MetricId::Sr25519Verify,
    MetricId::MemCopy,
    MetricId::DiskSeqWrite,
    MetricId::DiskRndWrite,
];

/// What the command line asked for.
struct Options {
    rounds: usize,
    seconds: f32,
    dir: PathBuf,
    parallel_cores: usize,
    metrics: Vec<MetricId>,
    verify_paths: bool,
    self_check: bool,
    /// Run each measurement in a child process.
    isolate: bool,
    /// Set in such a child: measure `metrics[0]` once with this side and print the score.
    child: Option<Side>,
}

/// Which implementation a measurement runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Upstream,
    Dyno,
}

const USAGE: &str = "usage: dyno-parity [--rounds N] [--seconds S] [--dir DIR] [--parallel-cores N] [--only METRIC,...] [--verify-paths] [--self-check] [--process-per-measurement]";

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        rounds: 10,
        seconds: 5.0,
        dir: PathBuf::from("."),
        parallel_cores: 8,
        metrics: METRICS.to_vec(),
        verify_paths: false,
        self_check: false,
        isolate: false,
        child: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.to_string());
        }
        if flag == "--verify-paths" {
            o.verify_paths = true;
            continue;
        }
        if flag == "--self-check" {
            o.self_check = true;
            continue;
        }
        if flag == "--process-per-measurement" {
            o.isolate = true;
            continue;
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |what: &str| format!("{flag} `{value}`: {what}");
        match flag.as_str() {
            "--rounds" => {
                o.rounds = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| bad("expected a whole number of rounds, 1..=1000"))?
            }
            "--seconds" => {
                o.seconds = value
                    .parse()
                    .ok()
                    .filter(|s: &f32| s.is_finite() && *s > 0.0 && *s <= 3600.0)
                    .ok_or_else(|| bad("expected seconds, more than 0 and at most 3600"))?
            }
            "--dir" => o.dir = PathBuf::from(&value),
            "--child" => {
                o.child = Some(match value.as_str() {
                    "upstream" => Side::Upstream,
                    "dyno" => Side::Dyno,
                    _ => return Err(bad("expected upstream or dyno")),
                })
            }

            "--parallel-cores" => {
                o.parallel_cores = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=4096).contains(n))
                    .ok_or_else(|| bad("expected a thread count, 1..=4096"))?
            }
            "--only" => {
                o.metrics = value
                    .split(',')
                    .map(|name| {
                        MetricId::parse(name)
                            .filter(|m| METRICS.contains(m))
                            .ok_or_else(|| {
                                bad(&format!("`{name}` is not one of Substrate's six metrics"))
                            })
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown flag `{flag}`\n{USAGE}")),
        }
    }
    if o.metrics.iter().any(|m| m.is_disk()) {
        dyno_hw::preflight::check_base_path(&o.dir).map_err(|e| format!("--dir: {e}"))?;
    }
    Ok(o)
}

/// One score from sc-sysinfo, in bytes per second, exactly as `benchmark machine` calls
/// it: a duration-only limit (`ExecutionLimit::from_secs_f32`).
fn upstream(metric: MetricId, o: &Options) -> Result<f64, String> {
    let limit = ExecutionLimit::from_secs_f32(o.seconds);
    let score = match metric {
        MetricId::Blake2256 => sc_sysinfo::benchmark_cpu(limit),
        MetricId::Blake2256Parallel => {
            sc_sysinfo::benchmark_cpu_parallelism(limit, o.parallel_cores)
        }
        MetricId::Sr25519Verify => sc_sysinfo::benchmark_sr25519_verify(limit),
        MetricId::MemCopy => sc_sysinfo::benchmark_memory(limit),
        MetricId::DiskSeqWrite => sc_sysinfo::benchmark_disk_sequential_writes(limit, &o.dir)?,
        MetricId::DiskRndWrite => sc_sysinfo::benchmark_disk_random_writes(limit, &o.dir)?,
        other => return Err(format!("{other} is not a Substrate metric")),
    };
    Ok(score.as_bytes())
}

/// One score of `side` for `metric`: in this process, or in a fresh child process of this
/// binary under `--process-per-measurement`.
fn measure_side(side: Side, metric: MetricId, o: &Options) -> Result<f64, String> {
    if !o.isolate {
        return match side {
            Side::Upstream => upstream(metric, o),
            Side::Dyno => dyno(metric, o),
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("locating this binary: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--child")
        .arg(if side == Side::Upstream {
            "upstream"
        } else {
            "dyno"
        })
        .arg("--only")
        .arg(metric.to_string())
        .arg("--seconds")
        .arg(o.seconds.to_string())
        .arg("--dir")
        .arg(&o.dir)
        .arg("--parallel-cores")
        .arg(o.parallel_cores.to_string());
    if o.self_check {
        cmd.arg("--self-check");
    }
    let out = cmd.output().map_err(|e| format!("starting a child: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "child {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .map_err(|_| format!("child printed `{}`, not a score", text.trim()))
}

/// One score from dyno-hw, in bytes per second (from sc-sysinfo again under `--self-check`).
fn dyno(metric: MetricId, o: &Options) -> Result<f64, String> {
    if o.self_check {
        return upstream(metric, o);
    }
    let ctx = Context {
        base_path: o.dir.clone(),
        parallel_cores: o.parallel_cores,
        cores_online: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let durations = Durations::uniform(Duration::from_secs_f32(o.seconds));
    dyno_hw::measure(metric, &ctx, &durations, &AtomicBool::new(false))
        .map(|m| m.score)
        .map_err(|e| e.to_string())
}

/// Zero-based ranks `(lo, hi)` of sorted samples that bracket the population median with
/// at least 95% confidence, whatever the distribution: the count of samples below the
/// median is binomial(n, 1/2), so the interval [x(k), x(n+1-k)] misses it with
/// probability 2 P(X < k). `None` when even the extremes cannot reach 95% (n < 6).
fn median_interval(n: usize) -> Option<(usize, usize)> {
    // P(X <= j) for X ~ binomial(n, 1/2), accumulated term by term.
    let mut term = 0.5f64.powi(n as i32);
    let mut below = 0.0;
    let mut k = 0;
    for j in 0..n {
        below += term;
        if 2.0 * below > 0.05 {
            break;
        }
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    (k >= 1).then(|| (k - 1, n - k))
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

const MIB: f64 = 1024.0 * 1024.0;

fn main() -> ExitCode {
    if cfg!(debug_assertions) {
        eprintln!("error: a debug build measures nothing a node would; run with --release");
        return ExitCode::from(2);
    }
    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if o.verify_paths {
        verify_paths(&o);
        return ExitCode::SUCCESS;
    }
    if let Some(side) = o.child {
        return match measure_side(side, o.metrics[0], &o) {
            Ok(score) => {
                println!("{score}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        };
    }
    // Per metric: (upstream, dyno) score of every round.
    let mut scores: Vec<Vec<(f64, f64)>> = vec![Vec::new(); o.metrics.len()];
    for round in 0..o.rounds {
        for (i, &metric) in o.metrics.iter().enumerate() {
            let upstream_first = round % 2 == 0;
            let (up, dy) = (Side::Upstream, Side::Dyno);
            let pair = if upstream_first {
                measure_side(up, metric, &o)
                    .and_then(|u| measure_side(dy, metric, &o).map(|d| (u, d)))
            } else {
                measure_side(dy, metric, &o)
                    .and_then(|d| measure_side(up, metric, &o).map(|u| (u, d)))
            };
            let (u, d) = match pair {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: round {} {metric}: {e}", round + 1);
                    return ExitCode::from(1);
                }
            };
            eprintln!(
                "round {:>2}/{} {:<18} sc-sysinfo {:>12.2} MiB/s  dyno {:>12.2} MiB/s  ratio {:.4}{}",
                round + 1,
                o.rounds,
                metric.display(o.parallel_cores),
                u / MIB,
                d / MIB,
                d / u,
                if upstream_first { "" } else { "  (dyno first)" }
            );
            scores[i].push((u, d));
        }
    }
    println!(
        "sc-sysinfo 51.0.0 vs {} {}: {} interleaved rounds of {} s per measurement{}, disk in {}",
        if o.self_check {
            "itself (--self-check, the noise floor)"
        } else {
            "dyno-hw"
        },
        env!("CARGO_PKG_VERSION"),
        o.rounds,
        o.seconds,
        if o.isolate {
            ", each in a fresh process"
        } else {
            ""
        },
        o.dir.display()
    );
    println!(
        "| {:<22} | {:>18} | {:>18} | {:>20} | {:>17} | {:>19} |",
        "Function",
        "sc-sysinfo median",
        "dyno median",
        "median ratio (paired)",
        "ratio min .. max",
        "median's 95% interval"
    );
    println!(
        "|{:-<24}|{:-<20}|{:-<20}|{:-<23}|{:-<19}|{:-<23}|",
        "", "", "", "", "", ""
    );
    for (metric, s) in o.metrics.iter().zip(&scores) {
        let mut ratios: Vec<f64> = s.iter().map(|(u, d)| d / u).collect();
        ratios.sort_by(f64::total_cmp);
        let up: Vec<f64> = s.iter().map(|p| p.0).collect();
        let dy: Vec<f64> = s.iter().map(|p| p.1).collect();
        let interval = median_interval(ratios.len()).map_or_else(
            || "- (needs 6+ rounds)".to_string(),
            |(lo, hi)| format!("{:.4} .. {:.4}", ratios[lo], ratios[hi]),
        );
        println!(
            "| {:<22} | {:>12.2} MiB/s | {:>12.2} MiB/s | {:>21.4} | {:>7.4} .. {:<7.4} | {:>21} |",
            metric.display(o.parallel_cores),
            median(&up) / MIB,
            median(&dy) / MIB,
            median(&ratios),
            ratios[0],
            ratios[ratios.len() - 1],
            interval
        );
    }
    ExitCode::SUCCESS
}

/// CPU time this thread has used: unlike wall time, it does not grow while the thread
/// waits for a core, which on a shared machine is most of the noise.
#[allow(unsafe_code)]
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_THREAD_CPUTIME_ID is a clock
    // every Linux provides; clock_gettime writes only into `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Verifications per second of `verify` over sc-sysinfo's 2048 signed messages, timed as
/// the harness times (one untimed pass, then passes until `seconds` of wall time have
/// elapsed), per wall second and per second of this thread's CPU time.
fn verify_rate(
    seconds: f32,
    sigs: &[sp_core::sr25519::Signature],
    msgs: &[Vec<u8>],
    mut verify: impl FnMut(&sp_core::sr25519::Signature, &[u8]) -> bool,
) -> (f64, f64) {
    let mut pass = || {
        for (sig, msg) in sigs.iter().zip(msgs) {
            assert!(std::hint::black_box(verify(sig, msg)), "a signature failed");
        }
    };
    pass();
    let start = std::time::Instant::now();
    let cpu_start = thread_cpu_time();
    let mut passes = 0u64;
    while start.elapsed().as_secs_f32() < seconds {
        pass();
        passes += 1;
    }
    let done = (passes * sigs.len() as u64) as f64;
    (
        done / start.elapsed().as_secs_f64(),
        done / (thread_cpu_time() - cpu_start).as_secs_f64(),
    )
}

/// Times each step of the SR25519 path, interleaved round by round.
fn verify_paths(o: &Options) {
    use sp_core::{sr25519, Pair};
    use std::hint::black_box;
    let pair = sr25519::Pair::from_string("//Alice", None).expect("//Alice is a valid URI");
    let mut rng = sc_sysinfo_rng();
    let msgs: Vec<Vec<u8>> = (0..2048)
        .map(|_| {
            let mut m = vec![0u8; 32];
            rand_core_fill(&mut rng, &mut m);
            m
        })
        .collect();
    let sigs: Vec<sr25519::Signature> = msgs.iter().map(|m| pair.sign(m)).collect();
    let names = [
        "sp_io::crypto::sr25519_verify (sc-sysinfo)",
        "sp_core::sr25519::Pair::verify",
        "dyno_hw::bench::sr25519_verify",
        "key and signatures parsed once (dyno before)",
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut cpu_rates: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for round in 0..o.rounds {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.rotate_left(round % names.len());
        for i in order {
            let (r, cpu) = match i {
                0 => verify_rate(o.seconds, &sigs, &msgs, |s, m| {
                    sp_io::crypto::sr25519_verify(black_box(s), m, &pair.public())
                }),
                1 => verify_rate(o.seconds, &sigs, &msgs, |s, m| {
                    sr25519::Pair::verify(black_box(s), m, &pair.public())
                }),
                2 => verify_rate(o.seconds, &sigs, &msgs, |s, m| {
                    let public: [u8; 32] = pair.public().0;
                    dyno_hw::bench::sr25519_verify(&black_box(s).0, m, &public)
                }),
                _ => {
                    let public = schnorrkel::PublicKey::from_bytes(&pair.public().0)
                        .expect("Alice's public key parses");
                    let parsed: Vec<schnorrkel::Signature> = sigs
                        .iter()
                        .map(|s| schnorrkel::Signature::from_bytes(&s.0).expect("signature parses"))
                        .collect();
                    // Every pass walks the signatures in order, so the pre-parsed list
                    // is walked in step with them.
                    let mut next = parsed.iter().cycle();
                    verify_rate(o.seconds, &sigs, &msgs, move |_, m| {
                        let sig = next.next().expect("cycle never ends");
                        public
                            .verify_simple(b"substrate", m, black_box(sig))
                            .is_ok()
                    })
                }
            };
            eprintln!(
                "round {:>2}/{} {:<44} {:>10.0} verifies/s {:>10.0} per CPU second",
                round + 1,
                o.rounds,
                names[i],
                r,
                cpu
            );
            rates[i].push(r);
            cpu_rates[i].push(cpu);
        }
    }
    let base = median(&rates[0]);
    let cpu_base = median(&cpu_rates[0]);
    println!(
        "SR25519 verification paths, {} rounds of {} s each, rotated order",
        o.rounds, o.seconds
    );
    println!(
        "| {:<44} | {:>12} | {:>8} | {:>16} | {:>8} |",
        "path", "verifies/s", "ratio", "per CPU second", "ratio"
    );
    for ((name, r), c) in names.iter().zip(&rates).zip(&cpu_rates) {
        println!(
            "| {:<44} | {:>12.0} | {:>8.4} | {:>16.0} | {:>8.4} |",
            name,
            median(r),
            median(r) / base,
            median(c),
            median(c) / cpu_base
        );
    }
}

/// sc-sysinfo's seeded generator (the same as dyno-hw's).
fn sc_sysinfo_rng() -> rand_pcg::Pcg64 {
    rand_pcg::Pcg64::new(0xcafef00dd15ea5e5, 0xa02bdbf7bb3c0a7ac28fa16a64abf96)
}

fn rand_core_fill(rng: &mut rand_pcg::Pcg64, buf: &mut [u8]) {
    use rand_core::RngCore;
    rng.fill_bytes(buf);
}

#[cfg(test)]
mod tests {
    use super::median_interval;

    #[test]
    fn median_interval_follows_the_binomial_table() {
        assert_eq!(median_interval(5), None, "2/32 > 5%: no interval");
        assert_eq!(median_interval(6), Some((0, 5)));
        assert_eq!(median_interval(10), Some((1, 8)), "x(2)..x(9), 97.9%");
        assert_eq!(median_interval(20), Some((5, 14)), "x(6)..x(15), 95.9%");
        assert_eq!(median_interval(30), Some((9, 20)), "x(10)..x(21), 95.7%");
    }
}
