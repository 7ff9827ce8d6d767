//! Throughput of 64-byte frags between two threads pinned to two cores:
//! a dyno-tango link (reliable consumer, depth 4096) against an `rtrb` ring of
//! `[u8; 64]` (capacity 4096), and the cost of the stem's time accounting.
//!
//! Run: `cargo bench -p dyno-tango --bench link` (release profile). Rounds are
//! interleaved (A B C D, A B C D, ...) and each figure is the median of the rounds with
//! its min-max spread.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use dyno_tango::link::{HeapLink, Poll};
use dyno_tango::mcache::FragMeta;
use dyno_tango::sys::pin_current_thread;
use dyno_tango::tile::{
    FragOutcome, IdleStrategy, InLink, OutLink, Outputs, Stem, StemOptions, Tile,
};

const DEPTH: u64 = 4096;
const FRAGS: u64 = 20_000_000;
const ROUNDS: usize = 7;

fn pin(cpu: usize) {
    // Single-core machines run unpinned.
    let _ = pin_current_thread(cpu);
}

fn link_round() -> f64 {
    let link = HeapLink::new(DEPTH, 64, 0, 1).unwrap();
    let mut tx = link.producer();
    let mut rx = link.reliable_consumer(0).unwrap();
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            pin(0);
            let mut msg = [0u8; 64];
            let mut sent = 0u64;
            while sent < FRAGS {
                msg[0] = sent as u8;
                if tx.try_publish(sent, &msg, 0, 0, 0).is_ok() {
                    sent += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        s.spawn(move || {
            pin(1);
            let mut buf = [0u8; 64];
            let mut got = 0u64;
            while got < FRAGS {
                match rx.poll() {
                    Poll::Ready(meta) => {
                        rx.read(&meta, &mut buf).unwrap();
                        black_box(&buf);
                        got += 1;
                        if got.is_multiple_of(256) {
                            rx.publish_progress();
                        }
                    }
                    Poll::CaughtUp => {
                        rx.publish_progress();
                        std::hint::spin_loop();
                    }
                    Poll::Overrun { .. } => panic!("reliable consumer overrun"),
                }
            }
        });
    });
    FRAGS as f64 / start.elapsed().as_secs_f64()
}

fn rtrb_round() -> f64 {
    let (mut tx, mut rx) = rtrb::RingBuffer::<[u8; 64]>::new(DEPTH as usize);
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            pin(0);
            let mut msg = [0u8; 64];
            let mut sent = 0u64;
            while sent < FRAGS {
                msg[0] = sent as u8;
                if tx.push(msg).is_ok() {
                    sent += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        s.spawn(move || {
            pin(1);
            let mut got = 0u64;
            while got < FRAGS {
                match rx.pop() {
                    Ok(m) => {
                        black_box(&m);
                        got += 1;
                    }
                    Err(_) => std::hint::spin_loop(),
                }
            }
        });
    });
    FRAGS as f64 / start.elapsed().as_secs_f64()
}

struct Source {
    sent: u64,
}

impl Tile for Source {
    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        if self.sent == FRAGS {
            return false;
        }
        let msg = [self.sent as u8; 64];
        if out.publish(0, self.sent, &msg, 0).is_ok() {
            self.sent += 1;
        }
        true
    }
    fn after_frag(&mut self, _: usize, _: &FragMeta, _: &[u8], _: &mut Outputs) -> FragOutcome {
        FragOutcome::Done
    }
    fn finished(&self) -> bool {
        self.sent == FRAGS
    }
}

struct Sink {
    got: u64,
}

impl Tile for Sink {
    fn after_frag(&mut self, _: usize, _: &FragMeta, p: &[u8], _: &mut Outputs) -> FragOutcome {
        black_box(p);
        self.got += 1;
        FragOutcome::Done
    }
    fn finished(&self) -> bool {
        self.got == FRAGS
    }
}

fn stem_round(accounting: bool) -> f64 {
    let link = HeapLink::new(DEPTH, 64, 0, 1).unwrap();
    let opts = StemOptions {
        idle: IdleStrategy::Spin,
        lazy_ns: StemOptions::lazy_for_depth(DEPTH),
        accounting,
    };
    let mut src = Stem::new(
        Source { sent: 0 },
        Vec::new(),
        vec![OutLink {
            producer: link.producer(),
            metrics: None,
            slow: vec![None],
        }],
        None,
        opts.clone(),
    );
    let mut sink = Stem::new(
        Sink { got: 0 },
        vec![InLink {
            consumer: link.reliable_consumer(0).unwrap(),
            metrics: None,
        }],
        Vec::new(),
        None,
        opts,
    );
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(0);
            src.run(&stop)
        });
        s.spawn(|| {
            pin(1);
            sink.run(&stop)
        });
    });
    FRAGS as f64 / start.elapsed().as_secs_f64()
}

/// A tile that does nothing but count its loop iterations: the per-iteration cost of
/// the loop itself, with and without accounting, on one thread.
struct Spinner {
    n: u64,
}

const LOOPS: u64 = 50_000_000;

impl Tile for Spinner {
    fn after_credit(&mut self, _: &mut Outputs) -> bool {
        self.n = black_box(self.n + 1);
        true
    }
    fn after_frag(&mut self, _: usize, _: &FragMeta, _: &[u8], _: &mut Outputs) -> FragOutcome {
        FragOutcome::Done
    }
    fn finished(&self) -> bool {
        self.n >= LOOPS
    }
}

/// Nanoseconds per empty loop iteration.
fn loop_round(accounting: bool) -> f64 {
    let opts = StemOptions {
        idle: IdleStrategy::Spin,
        lazy_ns: 100_000,
        accounting,
    };
    let mut stem = Stem::new(Spinner { n: 0 }, Vec::new(), Vec::new(), None, opts);
    pin(0);
    let start = Instant::now();
    stem.run(&AtomicBool::new(false));
    start.elapsed().as_nanos() as f64 / stem.tile().n as f64
}

fn summary(name: &str, mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    println!(
        "{name:<28} median {:>7.2} M frags/s  (min {:.2}, max {:.2}, {} rounds)",
        med / 1e6,
        v[0] / 1e6,
        v[v.len() - 1] / 1e6,
        v.len()
    );
    med
}

fn main() {
    if cfg!(debug_assertions) {
        println!("WARNING: debug build; figures are meaningless");
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before the run: {}", load.trim());
    // A `cargo test --benches` smoke run passes `--bench`-less args; keep it short.
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 1 } else { ROUNDS };
    let (mut link, mut rb, mut with, mut without) = (vec![], vec![], vec![], vec![]);
    let (mut it_on, mut it_off) = (vec![], vec![]);
    for _ in 0..rounds {
        link.push(link_round());
        rb.push(rtrb_round());
        with.push(stem_round(true));
        without.push(stem_round(false));
        it_on.push(loop_round(true));
        it_off.push(loop_round(false));
    }
    println!("64-byte frags, 2 threads on 2 cores, depth {DEPTH}, {FRAGS} frags per round");
    let l = summary("dyno-tango link", link);
    let r = summary("rtrb 0.3 [u8; 64]", rb);
    let w = summary("stem, accounting on", with);
    let wo = summary("stem, accounting off", without);
    println!("link / rtrb = {:.2}", l / r);
    println!(
        "accounting cost = {:.1} % of stem throughput",
        (1.0 - w / wo) * 100.0
    );
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0], v[v.len() - 1])
    };
    let (on, on_lo, on_hi) = median(it_on);
    let (off, off_lo, off_hi) = median(it_off);
    println!(
        "empty loop iteration: {on:.2} ns with accounting ({on_lo:.2}-{on_hi:.2}), \
         {off:.2} ns without ({off_lo:.2}-{off_hi:.2}): +{:.2} ns per iteration",
        on - off
    );
}
