//! One client cannot lock a node's ports against the rest (issue 47, item 9): a client
//! that keeps 100 connections open to the metrics port, or 300 to the peer port, and
//! never sends a byte, re-opening each one the node closes, does not stop a scrape or a
//! peer's hello. No assertion depends on the machine's speed: the bounds are generous and
//! the flood keeps going for as long as the test waits.

use crate::harness::{dyno_process, events, free_tcp, node_genesis, write, Reaped};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `count` idle connections to `addr`, each re-opened when the node closes it, until
/// dropped.
struct IdleFlood {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl IdleFlood {
    fn start(addr: SocketAddr, count: usize) -> IdleFlood {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let connect = move || TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok();
        let mut open: Vec<Option<TcpStream>> = (0..count).map(|_| connect()).collect();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                for c in &mut open {
                    let closed = c.as_mut().is_none_or(|s| {
                        s.set_nonblocking(true).is_err()
                            || matches!(s.read(&mut [0u8; 64]), Ok(0))
                            || matches!(s.read(&mut [0u8; 1]), Err(e) if e.kind() != std::io::ErrorKind::WouldBlock)
                    });
                    if closed {
                        *c = connect();
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        IdleFlood {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for IdleFlood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A one- or two-validator genesis in `dir`, slot 0 a few seconds away.
fn genesis(dir: &Path, validators: &str) {
    let flags = ["--accounts", "8", "--slot-ms", "500", "--start-in", "2"];
    node_genesis(dir, validators, &flags);
}

fn node(dir: &Path, cfg: &Path, seconds: &str) -> Reaped {
    Reaped(Some(
        dyno_process()
            .current_dir(dir)
            .args(["node", "run", "--quiet", "--duration", seconds, "--config"])
            .arg(cfg)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

/// The answer to `GET /metrics`, or "" when none came.
fn scrape(port: u16) -> String {
    use std::io::Write;
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = write!(s, "GET /metrics HTTP/1.0\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn a_hundred_idle_connections_do_not_stop_a_scrape() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "n1=1");
    let port = free_tcp();
    let cfg = write(
        &dir.path().join("n1.toml"),
        &format!(
            "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:0\"\n\
             metrics_listen = \"127.0.0.1:{port}\"\n"
        ),
    );
    let _node = node(dir.path(), &cfg, "120");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !scrape(port).starts_with("HTTP/1.1 200") {
        assert!(
            Instant::now() < deadline,
            "the node's metrics never answered"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let _flood = IdleFlood::start(([127, 0, 0, 1], port).into(), 100);
    for i in 0..5 {
        let answer = scrape(port);
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "scrape {i} under the flood: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn three_hundred_idle_connections_do_not_stop_a_peers_hello() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "a=1,b=1");
    let (pa, pb) = (free_tcp(), free_tcp());
    let config = |id: &str, port: u16, other: &str, other_port: u16| {
        write(
            &dir.path().join(format!("{id}.toml")),
            &format!(
                "id = \"{id}\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:{port}\"\n\
                 node_log = \"{id}.jsonl\"\n\n[[peers]]\nid = \"{other}\"\naddr = \"127.0.0.1:{other_port}\"\n"
            ),
        )
    };
    // `a` has the smaller id: it dials, `b` only accepts, so `b` hears `a` only through
    // the port the flood holds.
    let (ca, cb) = (config("a", pa, "b", pb), config("b", pb, "a", pa));
    let b = node(dir.path(), &cb, "20");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", pb)).is_err() {
        assert!(Instant::now() < deadline, "node b never listened");
        std::thread::sleep(Duration::from_millis(200));
    }
    let flood = IdleFlood::start(([127, 0, 0, 1], pb).into(), 300);
    let _a = node(dir.path(), &ca, "30");
    // b's log is complete once b ends by itself; the flood goes on until then.
    let out = b.wait_output();
    drop(flood);
    assert!(out.status.success(), "b: {out:?}");
    let connected = events(&dir.path().join("b.jsonl"), "connected");
    assert!(
        connected.iter().any(|e| e["peer"] == "a"),
        "b never heard a's hello under the flood: {connected:?}"
    );
}
