//! A listed peer that floods a node with garbage at full speed for 10 s: the node's RSS
//! stays under the bound docs/node.md states, it goes on forging and its follower goes on
//! adopting, and the flooder is cut, refused and counted. The test asserts bounds and
//! counts, never a speed.

use crate::harness::{alone, dyno_process, events_so_far, free_tcp, node_genesis, write, Reaped};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How much the node's RSS may grow while flooded: what a peer may make it hold is the
/// bytes its link reads ahead of the node (16 MiB) plus what the node loop may have
/// waiting (64 MiB) plus one frame, with room for the allocator's own slack.
const RSS_GROWTH_BOUND: u64 = 128 << 20;
const FLOOD: Duration = Duration::from_secs(10);

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The peer protocol's opening as node `id` (dyno-net's frame module, written out: a test
/// plays the peer).
fn opening(genesis: &[u8], id: &str) -> Vec<u8> {
    let mut b = b"DYNOPEER".to_vec();
    b.extend_from_slice(&1u16.to_be_bytes());
    let body_len = 1 + 1 + 32 + 1 + id.len();
    b.extend_from_slice(&(body_len as u32).to_be_bytes());
    b.extend_from_slice(&[1, 0]);
    b.extend_from_slice(genesis);
    b.push(id.len() as u8);
    b.extend_from_slice(id.as_bytes());
    b
}

/// A burst of data frames whose payloads are no protocol message, and now and then a
/// frame longer than any node accepts.
fn garbage(seed: &mut u64, oversized: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * 1024);
    for _ in 0..256 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let len = 1 + (*seed % 120) as usize;
        out.extend_from_slice(&((1 + 8 + len) as u32).to_be_bytes());
        out.push(2);
        out.extend_from_slice(&0u64.to_be_bytes());
        out.push(9 + (*seed >> 8) as u8 % 200); // no message has this tag
        out.extend((1..len).map(|i| (*seed >> (i % 56)) as u8));
    }
    if oversized {
        out.extend_from_slice(&u32::MAX.to_be_bytes());
        out.push(2);
    }
    out
}

struct FloodTally {
    connections: u64,
    refused: u64,
    bytes: u64,
}

/// Connects as `id` and writes garbage as fast as the node takes it until `stop`,
/// reconnecting whenever the node cuts or refuses the link.
fn flood(addr: std::net::SocketAddr, genesis: &[u8], id: &str, stop: &AtomicBool) -> FloodTally {
    let mut t = FloodTally {
        connections: 0,
        refused: 0,
        bytes: 0,
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut burst = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if s.write_all(&opening(genesis, id)).is_err() {
            continue;
        }
        // The node's preamble and hello: status 0 is accepted, anything else refused.
        let mut reply = [0u8; 10 + 4 + 2];
        if s.read_exact(&mut reply).is_err() || reply[15] != 0 {
            t.refused += 1;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        t.connections += 1;
        while !stop.load(Ordering::Relaxed) {
            burst += 1;
            let g = garbage(&mut seed, burst.is_multiple_of(64));
            match s.write_all(&g) {
                Ok(()) => t.bytes += g.len() as u64,
                Err(_) => break,
            }
        }
    }
    t
}

#[test]
fn a_peer_flooding_garbage_for_ten_seconds_is_cut_and_counted_while_the_node_keeps_forging() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--slot-ms", "300", "--start-in", "2", "--accounts", "64"];
    node_genesis(dir.path(), "n1=1,n2=0,n3=0", &flags);
    let (p1, p2, dead) = (free_tcp(), free_tcp(), free_tcp());
    // n1 leads every slot; n2 follows; n3 is listed (at an address nobody serves) and
    // is who the flood claims to be.
    let c1 = write(
        &dir.path().join("n1.toml"),
        &format!(
            "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:{p1}\"\n\
             node_log = \"n1.jsonl\"\nforge = \"sequential\"\n\n\
             [[peers]]\nid = \"n2\"\naddr = \"127.0.0.1:{p2}\"\n\n\
             [[peers]]\nid = \"n3\"\naddr = \"127.0.0.1:{dead}\"\n"
        ),
    );
    let c2 = write(
        &dir.path().join("n2.toml"),
        &format!(
            "id = \"n2\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:{p2}\"\n\
             node_log = \"n2.jsonl\"\nforge = \"sequential\"\n\n\
             [[peers]]\nid = \"n1\"\naddr = \"127.0.0.1:{p1}\"\n"
        ),
    );
    let start = |cfg: &Path| {
        Reaped(Some(
            dyno_process()
                .args([
                    "node",
                    "run",
                    "--quiet",
                    "--duration",
                    "18",
                    "--format",
                    "json",
                ])
                .arg("--config")
                .arg(cfg)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ))
    };
    let (mut n1, n2) = (start(&c1), start(&c2));
    let pid = n1.0.as_ref().unwrap().id();
    let log1 = dir.path().join("n1.jsonl");
    let log2 = dir.path().join("n2.jsonl");
    // Wait for the chain to run: n2 has adopted a block of n1's.
    let t0 = Instant::now();
    while events_so_far(&log2, "adopted").is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no block adopted before the flood"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let genesis = unhex(
        events_so_far(&log1, "started")[0]["genesis_hash"]
            .as_str()
            .unwrap(),
    );
    let before = rss_bytes(pid).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flooder = {
        let stop = stop.clone();
        let addr = format!("127.0.0.1:{p1}").parse().unwrap();
        std::thread::spawn(move || flood(addr, &genesis, "n3", &stop))
    };
    let flood_start = Instant::now();
    let flood_start_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut peak = before;
    while flood_start.elapsed() < FLOOD {
        peak = peak.max(rss_bytes(pid).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let flood_end_ns = flood_start_ns + FLOOD.as_nanos() as u64;
    let tally = flooder.join().unwrap();
    let out1 = n1.0.take().unwrap().wait_with_output().unwrap();
    drop(n2);
    assert!(
        peak <= before + RSS_GROWTH_BOUND,
        "n1's RSS grew from {before} to {peak} bytes under the flood (bound {RSS_GROWTH_BOUND})"
    );
    assert!(
        tally.bytes > 0 && tally.connections >= 1,
        "the flood never got through"
    );
    // Forging and adopting went on through the flood: 10 s is 33 slots of 300 ms; on a
    // busy machine some may be late, but most must be there.
    let during = |log: &Path, name: &str| {
        events_so_far(log, name)
            .iter()
            .filter(|e| (flood_start_ns..flood_end_ns).contains(&e["ts_ns"].as_u64().unwrap()))
            .count()
    };
    let (forged, adopted) = (during(&log1, "forged"), during(&log2, "adopted"));
    assert!(
        forged >= 16,
        "n1 forged only {forged} blocks during the flood"
    );
    assert!(
        adopted >= 16,
        "n2 adopted only {adopted} blocks during the flood"
    );
    // The flooder was cut for misbehaving, refused while banned, and counted.
    let cut = events_so_far(&log1, "peer_cut");
    assert!(!cut.is_empty(), "the flooder was never cut");
    assert!(cut.iter().all(|c| c["peer"] == "n3"));
    let summary: serde_json::Value = serde_json::from_slice(&out1.stdout).unwrap();
    assert_eq!(summary["schema"], "dyno.node.summary/1", "{summary}");
    let counters = &summary["status"]["counters"];
    assert!(
        counters["peers_cut"]["n3"].as_u64().unwrap() >= 1,
        "{counters}"
    );
    assert!(
        counters["bad_messages"].as_u64().unwrap() >= 64,
        "{counters}"
    );
    let refused = &counters["refused"];
    assert!(
        refused["banned"].as_u64().unwrap_or(0) + refused["oversized"].as_u64().unwrap_or(0) >= 1,
        "{refused}"
    );
    assert!(tally.refused >= 1 || refused["oversized"].as_u64().unwrap_or(0) >= 1);
}
