//! Shaping error on a 50 ms link: how late (actual - configured) a message is delivered.
//!
//! Part 1 runs the real path: two `PeerNet`s on loopback with the real-time timer turned
//! on (it is off by default), an unshaped bandwidth and 50 ms latency, messages sent every 1-3 ms (never queued behind each other, so the
//! configured delay of each is exactly 50 ms). It reports the error at the timer's
//! delivery (`received_ns`, what the node logs) and at the moment the consuming thread
//! got the event. Part 2 runs the delivery timer alone under four precision settings to
//! show what timer slack, a final spin and the real-time class buy.
//!
//! `cargo bench -p dyno-net --bench shaping` (prints a table; asserts nothing).

use std::sync::mpsc;
use std::time::Duration;

use dyno_net::shape::{DeliveryTimer, TimerPrecision};
use dyno_net::{unix_ns, LinkShape, PeerConfig, PeerEvent, PeerNet, PeerOptions, PeerSpec};

const MESSAGES: usize = 600;
const LATENCY_NS: u64 = 50_000_000;

fn main() {
    println!(
        "shaping error on a {} ms link, {MESSAGES} messages per row (us: actual - configured)",
        LATENCY_NS / 1_000_000
    );
    println!(
        "{:<44} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "path", "min", "p50", "p99", "max", "early"
    );
    for (name, errors) in peer_path() {
        row(name, errors);
    }
    for (name, p) in [
        (
            "timer only, kernel default slack 50 us",
            TimerPrecision {
                slack_ns: 50_000,
                spin_ns: 0,
                realtime: false,
            },
        ),
        (
            "timer only, slack 1 ns (default)",
            TimerPrecision {
                slack_ns: 1,
                spin_ns: 0,
                realtime: false,
            },
        ),
        (
            "timer only, slack 1 ns + 100 us spin",
            TimerPrecision {
                slack_ns: 1,
                spin_ns: 100_000,
                realtime: false,
            },
        ),
        (
            "timer only, slack 1 ns, SCHED_FIFO",
            TimerPrecision {
                slack_ns: 1,
                spin_ns: 0,
                realtime: true,
            },
        ),
    ] {
        row(name, timer_only(p));
    }
}

/// Pseudo-random gaps of 1-3 ms (a fixed LCG: the same schedule every run).
fn gaps() -> impl Iterator<Item = Duration> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    std::iter::repeat_with(move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        Duration::from_micros(1_000 + (x >> 33) % 2_000)
    })
}

/// The PeerNet path's rows: error at delivery and at the consumer against the delivery
/// time the shaper scheduled, error at delivery against the time stamped just before
/// `send` (adds the sender's own delay), and the duration of each `send` call.
fn peer_path() -> Vec<(&'static str, Vec<i64>)> {
    let cfg = |id: &str| PeerConfig {
        node_id: id.into(),
        genesis_hash: [9; 32],
        listen: "127.0.0.1:0".parse().unwrap(),
        max_frame: 1 << 20,
    };
    let shape = LinkShape {
        latency: Duration::from_nanos(LATENCY_NS),
        bandwidth_bps: None,
    };
    // One link on an otherwise idle network: the case the real-time timer is for (it is
    // off by default, see TimerPrecision::realtime).
    let opts = PeerOptions {
        timer: TimerPrecision {
            realtime: true,
            ..TimerPrecision::default()
        },
        ..PeerOptions::default()
    };
    let (b, b_rx) = PeerNet::start_with(
        cfg("b"),
        vec![PeerSpec {
            id: "a".into(),
            addr: "127.0.0.1:9".into(),
            shape,
        }],
        opts,
    )
    .unwrap();
    let (a, a_rx) = PeerNet::start_with(
        cfg("a"),
        vec![PeerSpec {
            id: "b".into(),
            addr: b.local_addr().to_string(),
            shape,
        }],
        opts,
    )
    .unwrap();
    assert!(matches!(a_rx.recv().unwrap(), PeerEvent::Connected { .. }));
    // (received_ns, when the consuming thread had it, the sender's stamp), in link order.
    let consumer = std::thread::spawn(move || {
        let mut got = Vec::with_capacity(MESSAGES);
        while got.len() < MESSAGES {
            if let PeerEvent::Message {
                payload,
                received_ns,
                ..
            } = b_rx.recv().unwrap()
            {
                let now = unix_ns();
                let stamp = u64::from_be_bytes(payload[..8].try_into().unwrap());
                got.push((received_ns, now, stamp));
            }
        }
        got
    });
    let (mut scheduled, mut send_call) = (Vec::new(), Vec::new());
    for gap in gaps().take(MESSAGES) {
        let stamp = unix_ns();
        let mut payload = stamp.to_be_bytes().to_vec();
        payload.resize(200, 0);
        scheduled.push(a.send_scheduled("b", payload).unwrap());
        send_call.push((unix_ns() - stamp) as i64);
        std::thread::sleep(gap);
    }
    let got = consumer.join().unwrap();
    a.shutdown();
    b.shutdown();
    let diff = |x: u64, y: u64| x as i64 - y as i64;
    vec![
        (
            "PeerNet, at delivery (received_ns)",
            got.iter()
                .zip(&scheduled)
                .map(|(g, d)| diff(g.0, *d))
                .collect(),
        ),
        (
            "PeerNet, at the consuming thread",
            got.iter()
                .zip(&scheduled)
                .map(|(g, d)| diff(g.1, *d))
                .collect(),
        ),
        (
            "PeerNet, at delivery, from the send stamp",
            got.iter().map(|g| diff(g.0, g.2 + LATENCY_NS)).collect(),
        ),
        ("PeerNet, duration of the send call itself", send_call),
    ]
}

fn timer_only(p: TimerPrecision) -> Vec<i64> {
    let (tx, rx) = mpsc::channel();
    let timer = DeliveryTimer::start("bench-timer", p, move |due: u64, now| {
        let _ = tx.send(now as i64 - due as i64);
    })
    .unwrap();
    let mut errors = Vec::with_capacity(MESSAGES);
    let mut pending = 0;
    for gap in gaps().take(MESSAGES) {
        let due = unix_ns() + LATENCY_NS;
        timer.push(due, due);
        pending += 1;
        std::thread::sleep(gap);
        while let Ok(e) = rx.try_recv() {
            errors.push(e);
            pending -= 1;
        }
    }
    for _ in 0..pending {
        errors.push(rx.recv().unwrap());
    }
    timer.stop();
    errors
}

fn row(name: &str, mut ns: Vec<i64>) {
    ns.sort_unstable();
    let q = |f: f64| ns[((ns.len() - 1) as f64 * f).round() as usize] as f64 / 1_000.0;
    let early = ns.iter().filter(|e| **e < 0).count();
    println!(
        "{:<44} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8}",
        name,
        q(0.0),
        q(0.5),
        q(0.99),
        q(1.0),
        early
    );
}
