//! `dyno load`'s sender against one node over QUIC: every transaction sent is accounted
//! for by exactly one fate at the node.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use dyno_node::config::NodeConfig;
use dyno_node::genesis::{Genesis, GenesisFile, Validator};
use dyno_node::load::{connect, run_load, sign_transfers, LoadPlan, LoadReport};
use dyno_node::log::now_ns;
use dyno_node::service::RunningNode;

#[test]
fn every_transaction_sent_gets_exactly_one_fate() {
    fates_hold(1, 1, 1);
}

#[test]
fn several_connections_and_verify_tiles_account_for_every_transaction_too() {
    fates_hold(3, 2, 64);
}

/// A node with `verify_tiles` checking batches of up to `verify_batch`, fed by
/// `connections` connections (a sender thread each).
fn fates_hold(connections: usize, verify_tiles: usize, verify_batch: usize) {
    let g = Arc::new(
        GenesisFile {
            network: "load".into(),
            seed: 2,
            accounts: 64,
            balance: 1_000_000_000,
            slot_ms: 200,
            genesis_time_ms: now_ns() / 1_000_000,
            max_block_txs: dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
            validators: vec![Validator {
                id: "solo".into(),
                stake: 1,
            }],
        }
        .load(),
    );
    let cfg = NodeConfig {
        id: "solo".into(),
        genesis: PathBuf::from("unused"),
        peer_listen: "127.0.0.1:0".parse().unwrap(),
        ingress_listen: Some("127.0.0.1:0".parse().unwrap()),
        metrics_listen: None,
        node_log: None,
        max_block_txs: Some(500),
        mempool_capacity: 800,
        lead_until_slot: None,
        control: None,
        verify_tiles: Some(verify_tiles),
        verify_batch: Some(verify_batch),
        replay_threads: None,
        bank_tiles: None,
        ingress_tps_per_connection: None,
        forge: Default::default(),
        forge_at: Default::default(),
        peers: Vec::new(),
    };
    let node = RunningNode::start(&cfg, g.clone()).unwrap();
    let plan = LoadPlan {
        targets: vec![node.ingress_addr.unwrap()],
        rate: 3000,
        duration: Duration::from_millis(1500),
        pool: 4000,
        connections,
        datagrams: false,
        nonce: 77,
    };
    let mut txs = sign_transfers(&g, plan.pool, plan.nonce);
    // Some of every kind of bad input: a duplicate, a bad signature, garbage.
    txs[10] = txs[9].clone();
    txs[20][70] ^= 1;
    txs[30] = vec![1, 2, 3];
    let clients = connect(&g, &plan).unwrap();
    let mut seconds = 0;
    let report = run_load(&plan, clients, &txs, &AtomicBool::new(false), &mut |_| {
        seconds += 1
    });
    std::thread::sleep(Duration::from_millis(300));
    let ingress = node.ingress_counters().unwrap();
    let st = node.stop();
    let f = st.fates;
    assert_eq!(report.errors, 0, "{:?}", report.first_error);
    assert_eq!(report.connections, connections);
    assert!(report.sent >= 3000, "sent {}", report.sent);
    assert_eq!(report.targets[0].taken, Some(report.sent));
    assert_eq!(report.targets[0].refused, Some(ingress.dropped_full));
    assert_eq!(
        report.sent,
        ingress.accepted + ingress.dropped_full + ingress.malformed + ingress.oversized
    );
    assert_eq!(ingress.accepted, f.received);
    assert_eq!(f.settled(), f.received, "{f:?}");
    assert_eq!(f.duplicate, 1);
    assert_eq!(f.invalid_signature, 1);
    assert_eq!(f.malformed + ingress.malformed, 1);
    assert!(f.executed > 0);
    assert!(seconds >= 1);
}

/// A genesis of 64 accounts whose only slot leader, `idle`, never runs, and the config of
/// `solo`, a node that so leads no slot (nothing leaves its mempool) with an ingress.
fn solo(network: &str, mempool: usize, tps: Option<u32>) -> (Arc<Genesis>, NodeConfig) {
    let g = Arc::new(
        GenesisFile {
            network: network.into(),
            seed: 3,
            accounts: 64,
            balance: 1_000_000_000,
            slot_ms: 200,
            genesis_time_ms: now_ns() / 1_000_000,
            max_block_txs: dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
            validators: vec![
                Validator {
                    id: "idle".into(),
                    stake: 1,
                },
                Validator {
                    id: "solo".into(),
                    stake: 0,
                },
            ],
        }
        .load(),
    );
    let cfg = NodeConfig {
        id: "solo".into(),
        genesis: PathBuf::from("unused"),
        peer_listen: "127.0.0.1:0".parse().unwrap(),
        ingress_listen: Some("127.0.0.1:0".parse().unwrap()),
        metrics_listen: None,
        node_log: None,
        max_block_txs: None,
        mempool_capacity: mempool,
        lead_until_slot: None,
        control: None,
        verify_tiles: Some(2),
        verify_batch: Some(8),
        replay_threads: None,
        bank_tiles: None,
        ingress_tps_per_connection: tps,
        forge: Default::default(),
        forge_at: Default::default(),
        peers: Vec::new(),
    };
    (g, cfg)
}

/// Sends `pool` transfers (signed with `nonce`) to `node` over one stream connection as
/// fast as it takes them, for at most `duration`.
fn flat_out(
    g: &Genesis,
    node: &RunningNode,
    pool: usize,
    duration: Duration,
    nonce: u64,
) -> LoadReport {
    let plan = LoadPlan {
        targets: vec![node.ingress_addr.unwrap()],
        rate: 0,
        duration,
        pool,
        connections: 1,
        datagrams: false,
        nonce,
    };
    let txs = sign_transfers(g, plan.pool, plan.nonce);
    let clients = connect(g, &plan).unwrap();
    run_load(&plan, clients, &txs, &AtomicBool::new(false), &mut |_| {})
}

/// A paced load over several connections: `dyno load`'s default pool (rate x duration + 1)
/// lasts the duration, though every sender but one sends its last turn before the end;
/// a pool of three quarters of that runs out.
#[test]
fn a_paced_load_over_several_connections_runs_out_only_when_its_pool_does() {
    let (g, cfg) = solo("paced", 1000, None);
    let node = RunningNode::start(&cfg, g.clone()).unwrap();
    for (pool, nonce, runs_out) in [(201, 81, false), (150, 82, true)] {
        let plan = LoadPlan {
            targets: vec![node.ingress_addr.unwrap()],
            rate: 200,
            duration: Duration::from_secs(1),
            pool,
            connections: 3,
            datagrams: false,
            nonce,
        };
        let txs = sign_transfers(&g, plan.pool, plan.nonce);
        let clients = connect(&g, &plan).unwrap();
        let r = run_load(&plan, clients, &txs, &AtomicBool::new(false), &mut |_| {});
        assert_eq!(r.errors, 0, "{:?}", r.first_error);
        assert_eq!(r.pool_exhausted, runs_out, "pool {pool}: {}", r.text());
        assert!(r.sent >= 150, "pool {pool}: {}", r.text());
    }
    node.stop();
}

/// Graceful overload: a node whose mempool is full refuses further client transactions
/// at its ingress, before any signature check, and the load sees them refused.
#[test]
fn a_full_mempool_refuses_at_the_ingress_without_verifying() {
    let (g, cfg) = solo("overload", 40, None);
    let node = RunningNode::start(&cfg, g.clone()).unwrap();
    let report = flat_out(&g, &node, 300, Duration::from_secs(5), 78);
    // The admitted ones may still be in the verify threads: wait for them, then a little
    // longer, so a refused one that had been verified after all would be counted too.
    for _ in 0..500 {
        if node.verified().is_some_and(|(p, r)| p + r >= 40) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let verified = node.verified().unwrap();
    let ingress = node.ingress_counters().unwrap();
    let st = node.stop();
    assert_eq!(report.sent, 300);
    // The load sees every refusal.
    assert_eq!(report.targets[0].taken, Some(300));
    assert_eq!(report.targets[0].refused, Some(260));
    assert_eq!((ingress.accepted, ingress.dropped_full), (40, 260));
    // The stream was paused first (a node that stays full refuses after each pause).
    assert!(ingress.paused >= 1);
    // Exactly the mempool's capacity was verified and admitted; the rest cost no check.
    assert_eq!(verified, (40, 0));
    assert_eq!(st.mempool, 40);
    assert_eq!(st.fates.received, 40);
    assert_eq!(
        st.fates.dropped_full, 0,
        "nothing verified only to be dropped"
    );
    assert_eq!(st.counters.ingress_refused.get("mempool_full"), Some(&260));
    assert_eq!(st.counters.ingress_refused.get("queue_full"), Some(&0));
}

/// A node's per-connection rate: one load connection above it is slowed to it (the
/// ingress reads its stream no faster), and nothing it sends is lost or refused.
#[test]
fn a_connection_above_the_nodes_rate_is_slowed_to_it_and_loses_nothing() {
    let (g, cfg) = solo("rate", 100_000, Some(200));
    let node = RunningNode::start(&cfg, g.clone()).unwrap();
    let start = std::time::Instant::now();
    let report = flat_out(&g, &node, 150, Duration::from_secs(30), 79);
    let took = start.elapsed();
    let ingress = node.ingress_counters().unwrap();
    node.stop();
    assert_eq!(report.sent, 150);
    assert_eq!(report.targets[0].taken, Some(150));
    assert_eq!(report.targets[0].refused, Some(0));
    // 200 a second, 20 at once: 150 take at least 0.65 s however fast the machine.
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert!(ingress.throttled >= 1);
    assert_eq!((ingress.accepted, ingress.over_rate), (150, 0));
}
