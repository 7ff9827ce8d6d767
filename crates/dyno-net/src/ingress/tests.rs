//! QUIC ingress on loopback: accounting of every transaction, refusals, shutdown.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::*;
use crate::error::NetError;

const GENESIS: [u8; 32] = [0x33; 32];

fn config(max_frame: usize) -> IngressConfig {
    IngressConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        genesis_hash: GENESIS,
        max_frame,
        max_tps_per_connection: None,
    }
}

/// A server whose node refuses every tenth transaction it is offered (a full queue).
fn server(max_frame: usize) -> (Ingress, Arc<AtomicU64>) {
    let offered = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&offered);
    let ingress = Ingress::start(config(max_frame), move |tx: &[u8]| {
        assert!(!tx.is_empty());
        seen.fetch_add(1, Relaxed) % 10 != 9
    })
    .unwrap();
    (ingress, offered)
}

fn txs(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![(i % 251) as u8 + 1; 178]).collect()
}

#[test]
fn stream_mode_accounts_for_every_transaction() {
    let (ingress, offered) = server(1232);
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    assert_eq!(client.mode(), IngressMode::Stream);
    let all = txs(2000);
    for chunk in all.chunks(64) {
        client.send_batch(chunk).unwrap();
    }
    client.send(&all[0]).unwrap();
    let report = client.close().unwrap();
    assert_eq!(
        report,
        IngressReport {
            sent: 2001,
            taken: 2001,
            refused: 200,
        }
    );
    let c = ingress.counters();
    assert_eq!(offered.load(Relaxed), 2001);
    assert_eq!((c.accepted, c.dropped_full), (1801, 200));
    assert_eq!(
        (c.connections, c.malformed, c.oversized, c.unknown_clients),
        (1, 0, 0, 0)
    );
    assert_eq!(c.bytes, 2001 * 178);
    ingress.shutdown();
}

#[test]
fn datagram_mode_counts_what_it_loses() {
    let (ingress, _) = server(1232);
    let client =
        IngressClient::connect_with(ingress.local_addr(), GENESIS, IngressMode::Datagram).unwrap();
    for chunk in txs(1000).chunks(50) {
        client.send_batch(chunk).unwrap();
    }
    let report = client.close().unwrap();
    let c = ingress.counters();
    assert_eq!(report.sent, 1000);
    // Every datagram is either handed to the node or counted lost by the client.
    assert_eq!(c.accepted + c.dropped_full, report.taken);
    assert!(report.taken <= report.sent);
    // The node refused every tenth datagram that reached it, and only those.
    assert_eq!(c.dropped_full, report.taken / 10);
    assert_eq!(report.refused, c.dropped_full);
    assert_eq!((c.malformed, c.oversized), (0, 0));
    ingress.shutdown();
}

#[test]
fn malformed_and_oversized_are_counted_and_the_server_keeps_serving() {
    let (ingress, _) = server(256);
    let addr = ingress.local_addr();
    let d = IngressClient::connect_with(addr, GENESIS, IngressMode::Datagram).unwrap();
    d.send_batch(&[vec![], vec![7; 300], vec![7; 100]]).unwrap();
    assert_eq!(
        d.close().unwrap(),
        IngressReport {
            sent: 3,
            taken: 1,
            refused: 0
        }
    );
    let c = ingress.counters();
    assert_eq!((c.malformed, c.oversized, c.accepted), (1, 1, 1));

    let s = IngressClient::connect(addr, GENESIS).unwrap();
    s.send_batch(&[vec![], vec![9; 10]]).unwrap();
    s.send(&[9; 300]).unwrap();
    // The server cut the stream at the oversized frame: no count comes back.
    assert!(matches!(s.close(), Err(NetError::QuicSend { .. })));
    let c = ingress.counters();
    assert_eq!((c.malformed, c.oversized, c.accepted), (2, 2, 2));

    let again = IngressClient::connect(addr, GENESIS).unwrap();
    again.send(&[1; 200]).unwrap();
    assert_eq!(again.close().unwrap().taken, 1);
    assert_eq!(ingress.counters().connections, 3);
    ingress.shutdown();
}

#[test]
fn unknown_clients_are_refused_and_counted() {
    let (ingress, _) = server(1232);
    let addr = ingress.local_addr();
    let wrong_alpn = IngressClient::connect_alpn(addr, GENESIS, IngressMode::Stream, b"not-dyno/0");
    assert!(matches!(wrong_alpn, Err(NetError::QuicConnect { .. })));
    let wrong_genesis = IngressClient::connect(addr, [0x44; 32]);
    match wrong_genesis {
        Err(NetError::QuicConnect { reason, .. }) => assert!(reason.contains("refused")),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a client of another genesis was accepted"),
    }
    let good = IngressClient::connect(addr, GENESIS).unwrap();
    good.send(&[5; 178]).unwrap();
    assert_eq!(good.close().unwrap().taken, 1);
    let c = ingress.counters();
    assert_eq!((c.unknown_clients, c.connections), (2, 1));
    ingress.shutdown();
}

fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .count()
}

#[test]
#[cfg(target_os = "linux")]
fn shutdown_joins_the_server_thread_and_frees_the_port() {
    let (ingress, _) = server(1232);
    let addr: SocketAddr = ingress.local_addr();
    let name = format!("net-quic-{}", addr.port());
    let client = IngressClient::connect(addr, GENESIS).unwrap();
    client.send(&[1; 10]).unwrap();
    assert_eq!(threads_named(&name), 1);
    // Shut down with a client still connected: the server must not wait for it.
    ingress.shutdown();
    assert_eq!(threads_named(&name), 0);
    std::net::UdpSocket::bind(addr).unwrap();
    assert!(client.close().is_err());
}

#[test]
fn the_server_reports_progress_while_a_client_sends() {
    let (ingress, _) = server(1232);
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    assert_eq!(client.progress(), (0, 0));
    client.send_batch(&txs(100)).unwrap();
    // Within a few progress periods the counts arrive without closing the stream.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while client.progress() != (90, 10) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        client.progress(),
        (90, 10),
        "accepted, refused (every tenth)"
    );
    let report = client.close().unwrap();
    assert_eq!((report.taken, report.refused), (100, 10));
    ingress.shutdown();
}

#[test]
#[cfg(target_os = "linux")]
fn a_server_on_a_shared_io_thread_starts_no_thread_of_its_own() {
    let io = crate::io::IoThread::start("net-io-ingress", Default::default()).unwrap();
    let ingress = Ingress::start_on(io.handle(), config(1232), |_: &[u8]| true).unwrap();
    let name = format!("net-quic-{}", ingress.local_addr().port());
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    client.send_batch(&txs(10)).unwrap();
    assert_eq!(client.close().unwrap().taken, 10);
    assert_eq!(threads_named(&name), 0);
    assert_eq!(ingress.counters().accepted, 10);
    ingress.shutdown();
    io.stop();
}

#[test]
fn a_stream_is_not_read_while_the_node_has_no_room_and_is_refused_only_after_the_longest_pause() {
    // The node has room for 50, then none until the test makes some.
    let taken = Arc::new(AtomicU64::new(0));
    let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (t, o) = (Arc::clone(&taken), Arc::clone(&open));
    let room = Room {
        has_room: Box::new(move || o.load(Relaxed) || t.load(Relaxed) < 50),
        max_pause: std::time::Duration::from_millis(50),
    };
    let t = Arc::clone(&taken);
    let ingress = Ingress::start_paused(
        config(1232),
        move |_: &[u8]| t.fetch_add(1, Relaxed) < 50 || open.load(Relaxed),
        Some(room),
    )
    .unwrap();
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    client.send_batch(&txs(200)).unwrap();
    // It takes its 50, then pauses the stream instead of refusing what follows.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ingress.counters().paused == 0 {
        assert!(std::time::Instant::now() < deadline, "never paused");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // A pause that outlasts max_pause offers the rest of that read to the node, which
    // refuses it: the client's stream still ends, every transaction answered.
    let report = client.close().unwrap();
    assert_eq!(report.sent, 200);
    assert_eq!(report.taken, 200);
    let c = ingress.counters();
    assert_eq!(c.accepted + c.dropped_full, 200);
    assert_eq!(c.accepted, 50);
    assert_eq!(report.refused, 150);
    ingress.shutdown();
}

#[test]
fn a_paused_stream_resumes_when_the_node_has_room_again_and_nothing_is_refused() {
    let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let o = Arc::clone(&open);
    // A pause longer than the test: only room ends it.
    let room = Room {
        has_room: Box::new(move || o.load(Relaxed)),
        max_pause: std::time::Duration::from_secs(3600),
    };
    let ingress = Ingress::start_paused(config(1232), |_: &[u8]| true, Some(room)).unwrap();
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    client.send_batch(&txs(100)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ingress.counters().paused == 0 {
        assert!(std::time::Instant::now() < deadline, "never paused");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(
        ingress.counters().accepted,
        0,
        "nothing is read while paused"
    );
    open.store(true, Relaxed);
    let report = client.close().unwrap();
    assert_eq!((report.sent, report.taken, report.refused), (100, 100, 0));
    assert_eq!(ingress.counters().accepted, 100);
    ingress.shutdown();
}

/// A server that takes everything, limited to `tps` transactions a second a connection.
fn limited(tps: u32) -> Ingress {
    let cfg = IngressConfig {
        max_tps_per_connection: Some(tps),
        ..config(1232)
    };
    Ingress::start(cfg, |_: &[u8]| true).unwrap()
}

#[test]
fn a_stream_above_its_connections_rate_is_read_no_faster_and_loses_nothing() {
    // 200 a second, 20 at once: 120 transactions take at least (120 - 20) / 200 s.
    let ingress = limited(200);
    let start = std::time::Instant::now();
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    client.send_batch(&txs(120)).unwrap();
    let report = client.close().unwrap();
    let took = start.elapsed();
    assert_eq!((report.sent, report.taken, report.refused), (120, 120, 0));
    assert!(took >= std::time::Duration::from_millis(500), "{took:?}");
    let c = ingress.counters();
    assert_eq!((c.accepted, c.over_rate), (120, 0));
    assert!(c.throttled >= 1);
    ingress.shutdown();
}

#[test]
fn a_throttled_client_gets_no_more_than_a_second_of_its_rate_ahead_of_the_node() {
    // 200 a second of frames up to 1,232 bytes: a window of 247,200 bytes. 400 frames of
    // 1,204 bytes are 481,600: the client's writes wait until the server has read the
    // 195 or so frames beyond the window, about (195 - 20) / 200 s. With the 8 MiB
    // window of an unlimited server they return at once.
    assert_eq!(super::stream_window(Some(200), 1232), 247_200);
    assert_eq!(super::stream_window(Some(1), 1232), 16 * 1236);
    assert_eq!(super::stream_window(None, 1232), 8 << 20);
    assert_eq!(super::stream_window(Some(u32::MAX), usize::MAX), 8 << 20);
    let ingress = limited(200);
    let client = IngressClient::connect(ingress.local_addr(), GENESIS).unwrap();
    let big: Vec<Vec<u8>> = (0..400).map(|i| vec![(i % 251) as u8 + 1; 1200]).collect();
    let start = std::time::Instant::now();
    client.send_batch(&big).unwrap();
    let written = start.elapsed();
    let report = client.close().unwrap();
    assert_eq!((report.sent, report.taken), (400, 400));
    assert!(
        written >= std::time::Duration::from_millis(500),
        "the client wrote 481,600 bytes in {written:?}"
    );
    ingress.shutdown();
}

#[test]
fn datagrams_above_their_connections_rate_are_refused_before_the_node_sees_them() {
    let offered = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&offered);
    let cfg = IngressConfig {
        max_tps_per_connection: Some(100),
        ..config(1232)
    };
    let ingress = Ingress::start(cfg, move |_: &[u8]| {
        seen.fetch_add(1, Relaxed);
        true
    })
    .unwrap();
    let start = std::time::Instant::now();
    let client =
        IngressClient::connect_with(ingress.local_addr(), GENESIS, IngressMode::Datagram).unwrap();
    for chunk in txs(300).chunks(50) {
        client.send_batch(chunk).unwrap();
    }
    let report = client.close().unwrap();
    let took = start.elapsed().as_secs_f64();
    let c = ingress.counters();
    // What reached the server was offered to the node or refused for the rate.
    assert_eq!(c.accepted + c.over_rate, report.taken);
    assert_eq!(c.accepted, offered.load(Relaxed));
    assert_eq!(report.refused, c.over_rate);
    assert!(c.over_rate >= 1, "{c:?}");
    // No more than 10 at once plus 100 a second of the time the client was connected.
    assert!(
        c.accepted as f64 <= 10.0 + 100.0 * took + 1.0,
        "{c:?} in {took} s"
    );
    assert_eq!(c.throttled, 0);
    ingress.shutdown();
}
