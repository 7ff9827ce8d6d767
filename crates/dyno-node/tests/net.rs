//! Three nodes in a line over real TCP links (dyno-net) on loopback, and a node of
//! another genesis that tries to join: it is refused, and the line's chains agree.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dyno_node::config::{NodeConfig, PeerEntry};
use dyno_node::genesis::{Genesis, GenesisFile, Validator};
use dyno_node::log::now_ns;
use dyno_node::service::RunningNode;
use dyno_node::transport::Input;
use dyno_txn::bank::transfer_block;

fn genesis(network: &str, start_ms: u64) -> Arc<Genesis> {
    genesis_with(network, start_ms, 200)
}

fn genesis_with(network: &str, start_ms: u64, slot_ms: u64) -> Arc<Genesis> {
    Arc::new(
        GenesisFile {
            network: network.into(),
            seed: 3,
            accounts: 32,
            balance: 1_000_000,
            slot_ms,
            genesis_time_ms: start_ms,
            max_block_txs: dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
            validators: ["a", "b", "c"]
                .iter()
                .map(|id| Validator {
                    id: id.to_string(),
                    stake: 1,
                })
                .collect(),
        }
        .load(),
    )
}

fn config(
    id: &str,
    peers: &[(&str, SocketAddr)],
    log: Option<PathBuf>,
    metrics: bool,
) -> NodeConfig {
    NodeConfig {
        id: id.into(),
        genesis: PathBuf::from("unused"),
        peer_listen: "127.0.0.1:0".parse().unwrap(),
        ingress_listen: None,
        metrics_listen: metrics.then(|| "127.0.0.1:0".parse().unwrap()),
        node_log: log,
        max_block_txs: Some(1000),
        mempool_capacity: 1000,
        lead_until_slot: None,
        control: None,
        verify_tiles: None,
        verify_batch: None,
        replay_threads: None,
        bank_tiles: None,
        ingress_tps_per_connection: None,
        forge: Default::default(),
        forge_at: Default::default(),
        peers: peers
            .iter()
            .map(|(id, addr)| PeerEntry {
                id: id.to_string(),
                addr: addr.to_string(),
                latency_ms: 2.0,
                bandwidth_mbit: Some(100.0),
            })
            .collect(),
    }
}

fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn a_line_over_tcp_converges_and_a_foreign_genesis_is_refused() {
    let start_ms = now_ns() / 1_000_000 + 500;
    let g = genesis("tcp-line", start_ms);
    let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    // The smaller id dials: c and b only accept from a and b respectively.
    let c = RunningNode::start(&config("c", &[("b", nowhere)], None, false), g.clone()).unwrap();
    let b = RunningNode::start(
        &config("b", &[("a", nowhere), ("c", c.peer_addr)], None, true),
        g.clone(),
    )
    .unwrap();
    let a =
        RunningNode::start(&config("a", &[("b", b.peer_addr)], None, false), g.clone()).unwrap();
    // Another network's "a" dials b too.
    let foreign = RunningNode::start(
        &config("a", &[("b", b.peer_addr)], None, false),
        genesis("other", start_ms),
    )
    .unwrap();
    let metrics = b.metrics_addr.unwrap();
    let ready = get(metrics, "/ready");
    assert!(
        ready.contains(" 200 ") && ready.ends_with("ready\n"),
        "{ready}"
    );
    std::thread::sleep(Duration::from_millis(600));
    for t in transfer_block(&g.accounts, 20, 8) {
        c.inbox().send(Input::Tx(t)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1400));
    // Stop mid-slot, so no block is half way along the line.
    let now = now_ns();
    let mid = g.slot_start_ns(g.slot_at(now) + 1) + g.slot_ns() / 2;
    std::thread::sleep(Duration::from_nanos(mid - now));
    let text = get(metrics, "/metrics");
    drop(foreign);
    let (sa, sb, sc) = (a.stop(), b.stop(), c.stop());
    assert!(sa.chain.len() >= 5, "{} blocks", sa.chain.len());
    // One chain: every node holds the same blocks. The stop is mid-slot, but on a loaded
    // machine the newest block can still be on its way to the end of the line, so a node
    // may lack that one tip block (and nothing else).
    let shortest = [&sa, &sb, &sc].iter().map(|s| s.chain.len()).min().unwrap();
    for s in [&sa, &sb, &sc] {
        assert!(s.chain.len() <= shortest + 1, "{:?}", s.chain);
        assert_eq!(s.chain[..shortest], sa.chain[..shortest]);
    }
    assert_eq!(sc.fates.executed + sc.fates.failed, 20);
    assert!(
        sb.counters
            .refused
            .get("wrong_genesis")
            .copied()
            .unwrap_or(0)
            >= 1,
        "{:?}",
        sb.counters.refused
    );
    assert!(
        text.contains("dyno_node_peer_refused_total{reason=\"wrong_genesis\"}"),
        "{text}"
    );
    assert!(text.contains("dyno_node_blocks_adopted_total"));
    assert!(text.contains("dyno_node_orphans_dropped_total 0"), "{text}");
    assert!(text.contains("# TYPE dyno_build_info gauge"), "{text}");
}

#[test]
fn links_slower_than_a_slot_fork_and_every_node_converges() {
    // 120 ms a hop and 150 ms slots: a block from one end of the line reaches the other
    // after the next leader has started, so forks happen; after the last led slot,
    // every node must hold the same tip.
    let start_ms = now_ns() / 1_000_000 + 500;
    let g = genesis_with("forks", start_ms, 150);
    let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let slow = |mut c: NodeConfig| {
        for p in &mut c.peers {
            p.latency_ms = 120.0;
        }
        c.lead_until_slot = Some(14);
        c
    };
    let c = RunningNode::start(
        &slow(config("c", &[("b", nowhere)], None, false)),
        g.clone(),
    )
    .unwrap();
    let b = RunningNode::start(
        &slow(config(
            "b",
            &[("a", nowhere), ("c", c.peer_addr)],
            None,
            false,
        )),
        g.clone(),
    )
    .unwrap();
    let a = RunningNode::start(
        &slow(config("a", &[("b", b.peer_addr)], None, false)),
        g.clone(),
    )
    .unwrap();
    let quiet = g.slot_start_ns(15) + 1_500_000_000;
    std::thread::sleep(Duration::from_nanos(quiet.saturating_sub(now_ns())));
    let (sa, sb, sc) = (a.stop(), b.stop(), c.stop());
    assert!(sa.chain.len() >= 5, "{} blocks", sa.chain.len());
    assert_eq!((&sa.tip, &sa.chain), (&sb.tip, &sb.chain));
    assert_eq!((&sb.tip, &sb.chain), (&sc.tip, &sc.chain));
    let forged = sa.counters.forged + sb.counters.forged + sc.counters.forged;
    assert!(forged as usize >= sa.chain.len());
}

#[test]
fn every_listener_is_bound_before_the_first_peer_is_dialed() {
    use std::net::{TcpListener, UdpSocket};
    let g = genesis("bind-order", now_ns() / 1_000_000 + 60_000);
    // "b" is a plain listener: node "a" (the smaller id) dials it as soon as it starts.
    let peer = TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let ingress = udp.local_addr().unwrap();
    drop(udp);
    let mut cfg = config("a", &[("b", peer.local_addr().unwrap())], None, true);
    cfg.ingress_listen = Some(ingress);
    let node = std::thread::spawn(move || RunningNode::start(&cfg, g).unwrap());
    let (_dialed, _) = peer.accept().unwrap();
    // The dial has arrived: the QUIC ingress must hold its port already.
    let taken = UdpSocket::bind(ingress).is_err();
    let node = node.join().unwrap();
    assert!(
        taken,
        "the ingress was not bound when the node dialed its peer"
    );
    assert_eq!(node.ingress_addr, Some(ingress));
    node.stop();
}
