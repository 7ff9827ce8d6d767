//! A leader that lies (its misbehaviour switch on, as a cluster's byzantine fault sets
//! it) and peers that send what is not the protocol, over in-memory links: honest nodes
//! record equivocations, refuse invalid blocks with the reason, give withheld blocks up,
//! cut a peer whose messages do not decode and bound the fetches one peer can start.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use dyno_node::block::Header;
use dyno_node::control::{InvalidFlavour, Misbehave};
use dyno_node::genesis::{Genesis, GenesisFile, Validator};
use dyno_node::hash::Hash;
use dyno_node::log::{now_ns, EventLog};
use dyno_node::node::{ForgeMode, Node, NodeOptions, Status, MAX_FETCHES_PER_PEER, STRIKES};
use dyno_node::transport::{Input, MemHub, Message};
use serde_json::Value;

const SLOT_MS: u64 = 150;

struct Net {
    /// The leader's stop switch, apart from the others', so a test can let the honest
    /// nodes settle on what the leader sent before they stop.
    leader_stop: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    hub: MemHub,
    inboxes: HashMap<String, Sender<Input>>,
    handles: Vec<JoinHandle<Status>>,
    logs: HashMap<String, PathBuf>,
    genesis: Arc<Genesis>,
    _dir: tempfile::TempDir,
}

/// `a` (all the stake, lying as `misbehave` says) linked to `b` and `c`, which link to
/// each other too; `x` is listed by `b` only, for tests that play a bad peer.
fn start(misbehave: Option<Misbehave>) -> Net {
    let genesis = Arc::new(
        GenesisFile {
            network: "byz".into(),
            seed: 9,
            accounts: 16,
            balance: 1_000_000,
            slot_ms: SLOT_MS,
            genesis_time_ms: now_ns() / 1_000_000 + 300,
            max_block_txs: 1000,
            validators: [("a", 1), ("b", 0), ("c", 0), ("x", 0)]
                .iter()
                .map(|(id, stake)| Validator {
                    id: id.to_string(),
                    stake: *stake,
                })
                .collect(),
        }
        .load(),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut net = Net {
        leader_stop: Arc::new(AtomicBool::new(false)),
        stop: Arc::new(AtomicBool::new(false)),
        hub: MemHub::new(),
        inboxes: HashMap::new(),
        handles: Vec::new(),
        logs: HashMap::new(),
        genesis,
        _dir: dir,
    };
    for (id, peers) in [
        ("a", vec!["b", "c"]),
        ("b", vec!["a", "c", "x"]),
        ("c", vec!["a", "b"]),
    ] {
        let (tx, rx) = channel();
        let transport = net.hub.join(id, tx.clone(), &peers);
        let path = net._dir.path().join(format!("{id}.jsonl"));
        let log = Arc::new(EventLog::open(id, Some(&path)).unwrap());
        let mut opts = NodeOptions::new(id, peers.iter().map(|p| p.to_string()).collect());
        opts.fetch_timeout = Duration::from_millis(100);
        opts.forge = ForgeMode::Sequential;
        if id == "a" {
            *opts.misbehave.lock().unwrap() = misbehave;
        }
        let node = Node::new(
            opts,
            net.genesis.clone(),
            log,
            Box::new(transport),
            Arc::new(Mutex::new(None)),
        );
        let stop = if id == "a" {
            net.leader_stop.clone()
        } else {
            net.stop.clone()
        };
        net.handles
            .push(std::thread::spawn(move || node.run(rx, &stop)));
        net.inboxes.insert(id.to_string(), tx);
        net.logs.insert(id.to_string(), path);
    }
    net
}

impl Net {
    fn events(&self, id: &str, name: &str) -> Vec<Value> {
        std::fs::read_to_string(&self.logs[id])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["kind"] == "event" && v["event"] == name)
            .collect()
    }

    /// Runs until `done` holds (checked every slot) or 60 slots pass; stops the leader,
    /// gives the others three slots to take in what is still in flight, then stops them.
    fn run_until(self, done: impl Fn(&Net) -> bool) -> (Net, Vec<Status>) {
        for _ in 0..60 {
            std::thread::sleep(Duration::from_millis(SLOT_MS));
            if done(&self) {
                break;
            }
        }
        let mut me = self;
        me.leader_stop.store(true, Ordering::Relaxed);
        let mut handles = me.handles.drain(..);
        let mut statuses = vec![handles.next().unwrap().join().unwrap()];
        std::thread::sleep(Duration::from_millis(3 * SLOT_MS));
        me.stop.store(true, Ordering::Relaxed);
        statuses.extend(handles.map(|h| h.join().unwrap()));
        (me, statuses)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.leader_stop.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[test]
fn an_equivocating_leader_is_recorded_with_both_signed_headers_and_the_chain_converges() {
    let net = start(Some(Misbehave::Equivocate));
    let (net, statuses) = net.run_until(|n| {
        !n.events("b", "equivocation").is_empty() && !n.events("c", "equivocation").is_empty()
    });
    for id in ["b", "c"] {
        let e = &net.events(id, "equivocation")[0];
        assert_eq!(e["leader"], "a");
        let headers = e["evidence"]["headers"].as_array().unwrap();
        // Both headers are the same slot's, and different.
        let h: Vec<Header> = headers
            .iter()
            .map(|h| {
                let b = h.as_str().unwrap();
                let bytes: Vec<u8> = (0..b.len() / 2)
                    .map(|i| u8::from_str_radix(&b[2 * i..2 * i + 2], 16).unwrap())
                    .collect();
                Header::decode(&bytes).unwrap()
            })
            .collect();
        assert_eq!(h[0].slot, h[1].slot);
        assert_ne!(h[0].hash(), h[1].hash());
    }
    assert!(!net.events("a", "misbehaved").is_empty());
    assert!(statuses[1].counters.equivocations >= 1);
    // Every node holds both blocks of each slot, so fork choice picks the same one.
    assert_eq!(statuses[1].tip, statuses[2].tip, "b and c disagree");
}

#[test]
fn invalid_blocks_of_each_flavour_are_refused_with_their_reason_and_never_adopted() {
    for (flavour, reason) in [
        (InvalidFlavour::BadSignature, "bad_leader_signature"),
        (InvalidFlavour::StateHash, "state_mismatch"),
        (InvalidFlavour::Poh, "bad_poh"),
    ] {
        let net = start(Some(Misbehave::InvalidBlock { flavour }));
        let (net, statuses) = net.run_until(|n| n.events("b", "rejected").len() >= 2);
        let rejected = net.events("b", "rejected");
        assert!(!rejected.is_empty(), "{flavour:?}: nothing rejected");
        assert!(
            rejected.iter().all(|r| r["reason"] == reason),
            "{rejected:?}"
        );
        assert_eq!(
            statuses[1].counters.adopted, 0,
            "{flavour:?}: b adopted a lie"
        );
        assert_eq!(statuses[1].height, 0);
        // The liar keeps none of its invalid blocks either.
        assert!(net.events("a", "adopted").is_empty());
    }
}

#[test]
fn a_withheld_block_is_asked_for_then_given_up_and_never_adopted() {
    let net = start(Some(Misbehave::Withhold));
    let (net, statuses) = net.run_until(|n| !n.events("b", "fetch_abandoned").is_empty());
    let abandoned = &net.events("b", "fetch_abandoned")[0];
    assert_eq!(abandoned["tries"], 5);
    let withheld: Vec<Value> = net.events("a", "misbehaved");
    assert!(withheld.iter().any(|w| w["block"] == abandoned["block"]));
    assert_eq!(
        statuses[1].counters.adopted, 0,
        "b adopted a block never served"
    );
}

#[test]
fn a_peer_whose_messages_do_not_decode_is_cut_and_its_made_up_fetches_are_bounded() {
    let net = start(None);
    // x sends STRIKES messages that are not the protocol.
    for i in 0..STRIKES {
        net.hub.deliver("x", "b", vec![200, i as u8]);
    }
    // and announces made-up blocks of the current slot by its leader.
    let slot = net.genesis.slot_at(now_ns());
    for i in 0..(MAX_FETCHES_PER_PEER + 40) {
        // On a parent b holds (genesis), so each is a fetch, not a range sync.
        let h = Header {
            slot,
            height: 1,
            parent: net.genesis.hash,
            leader: "a".into(),
            entry_count: 1,
            poh_start: Hash([0; 32]),
            poh_end: Hash([1; 32]),
            tx_count: 0,
            state_hash: Hash([i as u8; 32]),
        };
        net.hub
            .deliver("x", "b", Message::Header(h.encode()).encode());
    }
    let (net, statuses) = net.run_until(|n| !n.events("b", "peer_cut").is_empty());
    let cut = net.events("b", "peer_cut");
    assert_eq!(cut[0]["peer"], "x");
    assert!(cut[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("64 messages"));
    let c = &statuses[1].counters;
    assert_eq!(c.peers_cut["x"], 1);
    assert!(c.bad_messages >= STRIKES as u64);
    // Only MAX_FETCHES_PER_PEER of x's announcements started a fetch.
    assert!(c.fetches_shed >= 40, "{c:?}");
}
