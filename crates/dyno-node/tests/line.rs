//! Three nodes in a line (a - b - c) over in-memory links: blocks forged anywhere reach
//! every node with the same state hash, a transaction sent to the end of the line is
//! executed by another node's block, and corrupt blocks change nobody's chain.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use dyno_node::block::Block;
use dyno_node::chain::Chain;
use dyno_node::genesis::{Genesis, GenesisFile, Validator};
use dyno_node::hash::hex;
use dyno_node::hash::Hash;
use dyno_node::log::{now_ns, EventLog};
use dyno_node::node::{ForgeAt, ForgeMode, Node, NodeOptions, Status};
use dyno_node::transport::{Input, MemHub, Message};
use dyno_txn::bank::transfer_block;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::Value;

const SLOT_MS: u64 = 150;

fn genesis(stakes: &[(&str, u64)]) -> Arc<Genesis> {
    // Slot 0 starts a little ahead, so every node is up before the first slot.
    let start_ms = now_ns() / 1_000_000 + 300;
    Arc::new(
        GenesisFile {
            network: "line".into(),
            seed: 5,
            accounts: 64,
            balance: 1_000_000,
            slot_ms: SLOT_MS,
            genesis_time_ms: start_ms,
            max_block_txs: dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
            validators: stakes
                .iter()
                .map(|(id, stake)| Validator {
                    id: id.to_string(),
                    stake: *stake,
                })
                .collect(),
        }
        .load(),
    )
}

/// Running nodes; dropping it stops and joins them (also when an assertion fails).
struct Line {
    stop: Arc<AtomicBool>,
    inboxes: HashMap<String, Sender<Input>>,
    handles: Vec<(String, JoinHandle<Status>)>,
    logs: HashMap<String, PathBuf>,
    hub: MemHub,
    forge: ForgeMode,
    forge_at: ForgeAt,
    _dir: tempfile::TempDir,
}

impl Line {
    fn start(g: &Arc<Genesis>, links: &[(&str, &[&str])]) -> Line {
        Line::start_with(g, links, ForgeMode::Tiles)
    }

    fn start_with_at(g: &Arc<Genesis>, links: &[(&str, &[&str])], forge_at: ForgeAt) -> Line {
        let mut line = Line::start_with(g, &[], ForgeMode::Tiles);
        line.forge_at = forge_at;
        line.add(g, links);
        line
    }

    fn start_with(g: &Arc<Genesis>, links: &[(&str, &[&str])], forge: ForgeMode) -> Line {
        let stop = Arc::new(AtomicBool::new(false));
        let mut line = Line {
            stop,
            inboxes: HashMap::new(),
            handles: Vec::new(),
            logs: HashMap::new(),
            hub: MemHub::new(),
            forge,
            forge_at: ForgeAt::WholeSlot,
            _dir: tempfile::tempdir().unwrap(),
        };
        line.add(g, links);
        line
    }

    /// Starts more nodes (a node that joins late).
    fn add(&mut self, g: &Arc<Genesis>, links: &[(&str, &[&str])]) {
        let (hub, stop, forge, forge_at) = (
            self.hub.clone(),
            self.stop.clone(),
            self.forge,
            self.forge_at,
        );
        let line = self;
        let dir = line._dir.path().to_path_buf();
        for (id, peers) in links {
            let (tx, rx) = channel();
            let transport = hub.join(id, tx.clone(), peers);
            let path = dir.join(format!("{id}.jsonl"));
            let log = Arc::new(EventLog::open(id, Some(&path)).unwrap());
            let mut opts = NodeOptions::new(id, peers.iter().map(|p| p.to_string()).collect());
            // In-memory links answer at once; a short timeout lets the tests see a
            // fetch given up on within a few slots.
            opts.fetch_timeout = Duration::from_millis(150);
            opts.forge = forge;
            opts.forge_at = forge_at;
            let node = Node::new(
                opts,
                g.clone(),
                log,
                Box::new(transport),
                Arc::new(Mutex::new(None)),
            );
            let stop = stop.clone();
            line.handles.push((
                id.to_string(),
                std::thread::spawn(move || node.run(rx, &stop)),
            ));
            line.inboxes.insert(id.to_string(), tx);
            line.logs.insert(id.to_string(), path);
        }
    }

    /// Stops in the middle of a slot (in-memory propagation takes well under half a
    /// slot), returns each node's final status.
    fn stop_mid_slot(&mut self, g: &Genesis) -> HashMap<String, Status> {
        let now = now_ns();
        let mid = g.slot_start_ns(g.slot_at(now) + 1) + g.slot_ns() / 2;
        std::thread::sleep(Duration::from_nanos(mid - now));
        self.stop.store(true, Ordering::SeqCst);
        self.handles
            .drain(..)
            .map(|(id, h)| (id, h.join().expect("node thread")))
            .collect()
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for (_, h) in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

fn events(path: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "event" && v["event"] == name)
        .collect()
}

/// Signs `b` again with its named leader's key (after a test changed its header).
fn resign(g: &Genesis, mut b: Block) -> Block {
    let key = g.leader_key(&b.header.leader).unwrap();
    b.signature = key.sign(b.header.hash().as_bytes()).to_bytes();
    b
}

/// Sleeps into slot `slot`, a quarter of it gone.
fn sleep_into_slot(g: &Genesis, slot: u64) {
    let at = g.slot_start_ns(slot) + g.slot_ns() / 4;
    std::thread::sleep(Duration::from_nanos(at.saturating_sub(now_ns())));
}

fn sleep_slots(n: u64) {
    std::thread::sleep(Duration::from_millis(SLOT_MS * n));
}

const LINE: [(&str, &[&str]); 3] = [("a", &["b"]), ("b", &["a", "c"]), ("c", &["b"])];

#[test]
fn every_forged_block_is_adopted_everywhere_with_the_same_state() {
    let g = genesis(&[("a", 1), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &LINE);
    // Load at both ends, so blocks carry transactions relayed along the line.
    let txs = transfer_block(&g.accounts, 60, 11);
    std::thread::sleep(Duration::from_millis(300));
    for (i, t) in txs.into_iter().enumerate() {
        let to = if i % 2 == 0 { "a" } else { "c" };
        line.inboxes[to].send(Input::Tx(t)).unwrap();
        if i % 10 == 9 {
            sleep_slots(1);
        }
    }
    sleep_slots(4);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);

    let mut forged = HashSet::new();
    for p in logs.values() {
        for e in events(p, "forged") {
            forged.insert(e["block"].as_str().unwrap().to_string());
        }
    }
    assert!(forged.len() >= 8, "{} blocks in ~10 slots", forged.len());
    let reference = &st["a"].chain;
    let mut states: HashMap<String, String> = HashMap::new();
    for (id, p) in &logs {
        let mut times: HashMap<String, usize> = HashMap::new();
        for e in events(p, "adopted") {
            *times
                .entry(e["block"].as_str().unwrap().into())
                .or_default() += 1;
        }
        assert!(
            times.values().all(|&n| n == 1),
            "{id} adopted a block twice: {times:?}"
        );
        let adopted: HashMap<String, String> = events(p, "adopted")
            .into_iter()
            .map(|e| {
                (
                    e["block"].as_str().unwrap().to_string(),
                    e["state_hash"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        // A forged block a fork left behind is adopted by nobody but its leader; every
        // block of the final chain is adopted by every node.
        let on_chain: HashSet<String> = reference.iter().map(|e| e.block.to_string()).collect();
        for b in forged.iter().filter(|b| on_chain.contains(*b)) {
            let s = adopted
                .get(b)
                .unwrap_or_else(|| panic!("{id} never adopted {b}"));
            let first = states.entry(b.clone()).or_insert_with(|| s.clone());
            assert_eq!(first, s, "{id} has another state after {b}");
        }
        assert_eq!(&st[id].chain, reference, "{id}'s chain differs from a's");
        assert!(
            st[id].counters.rejected.is_empty(),
            "{id}: {:?}",
            st[id].counters.rejected
        );
    }
    let executed: u64 = st.values().map(|s| s.fates.executed + s.fates.failed).sum();
    assert_eq!(executed, 60, "every client transaction landed once");
    // Every block came out of the pipeline's tiles (the default forge), none out of
    // the sequential fallback: tile-forged blocks are what the followers adopted.
    for (id, s) in &st {
        let c = &s.counters;
        assert_eq!(
            (c.forged_by_tiles, c.forge_fallbacks),
            (c.forged, 0),
            "{id}: {:?}",
            c.last_forge_fallback
        );
    }
    let with_txs = forged_with_txs(&logs);
    assert!(with_txs >= 1, "some tile-forged block carried transactions");
}

/// Forged blocks (any node) that carried at least one transaction.
fn forged_with_txs(logs: &HashMap<String, PathBuf>) -> usize {
    logs.values()
        .flat_map(|p| events(p, "forged"))
        .filter(|e| e["txs"].as_u64().unwrap_or(0) > 0)
        .count()
}

#[test]
fn the_sequential_forge_stays_an_option_and_its_blocks_are_adopted_alike() {
    let g = genesis(&[("a", 1), ("b", 1), ("c", 1)]);
    let mut line = Line::start_with(&g, &LINE, ForgeMode::Sequential);
    std::thread::sleep(Duration::from_millis(300));
    for t in transfer_block(&g.accounts, 20, 12) {
        line.inboxes["a"].send(Input::Tx(t)).unwrap();
    }
    sleep_slots(4);
    let st = line.stop_mid_slot(&g);
    let reference = &st["a"].chain;
    for (id, s) in &st {
        assert_eq!(&s.chain, reference, "{id}");
        assert_eq!(s.counters.forged_by_tiles, 0, "{id}");
    }
    let executed: u64 = st.values().map(|s| s.fates.executed + s.fates.failed).sum();
    assert_eq!(executed, 20);
}

#[test]
fn a_transaction_sent_to_the_end_of_the_line_is_executed_by_another_leader() {
    // c has no stake: it never leads, so only a relayed copy can land.
    let g = genesis(&[("a", 1), ("b", 1), ("c", 0)]);
    let mut line = Line::start(&g, &LINE);
    let t = transfer_block(&g.accounts, 1, 99).remove(0);
    let tag = hex(&t[..64]);
    std::thread::sleep(Duration::from_millis(300));
    line.inboxes["c"].send(Input::Tx(t.clone())).unwrap();
    sleep_slots(4);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    let c = &st["c"];
    assert_eq!(
        (c.fates.received, c.fates.executed + c.fates.failed),
        (1, 1)
    );
    let holder = events(&logs["a"], "forged")
        .into_iter()
        .chain(events(&logs["b"], "forged"))
        .find(|e| e["txs"] == 1)
        .expect("a block with the transaction, forged by a or b");
    assert!(c
        .chain
        .iter()
        .any(|e| e.block.to_string() == holder["block"].as_str().unwrap()));
    assert!(!tag.is_empty());
}

#[test]
fn corrupt_blocks_are_rejected_and_never_passed_on() {
    let g = genesis(&[("a", 1), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &LINE);
    // Into slot 2: slot 1 is past, so its blocks are judged on their content.
    std::thread::sleep(Duration::from_nanos(
        g.slot_start_ns(2) + g.slot_ns() / 4 - now_ns(),
    ));
    // Blocks built on genesis by a rogue peer "x" connected to a only: each is wrong in
    // one way.
    let chain = Chain::new(g.clone());
    let slot = 1;
    let leader = g.leader(slot).to_string();
    let txs = transfer_block(&g.accounts, 3, 4);
    let good = chain.forge(slot, &leader, txs.clone()).unwrap().block;
    let mut corrupt = Vec::new();
    let mut b = good.clone();
    b.header.state_hash.0[0] ^= 1;
    corrupt.push((resign(&g, b), "state_mismatch"));
    let mut b = good.clone();
    b.header.leader = ["a", "b", "c"]
        .into_iter()
        .find(|&l| l != leader)
        .unwrap()
        .into();
    corrupt.push((resign(&g, b), "wrong_leader"));
    // x names the scheduled leader but signs with a key of its own.
    let mut b = good.clone();
    b.signature = SigningKey::from_bytes(&[1; 32])
        .sign(b.header.hash().as_bytes())
        .to_bytes();
    corrupt.push((b, "bad_leader_signature"));
    let mut b = good.clone();
    b.entries[0].txs[0][70] ^= 1;
    corrupt.push((b, "bad_signature"));
    // The PoH chain broken inside the body (the header commits to its end only).
    let mut b = good.clone();
    b.entries[0].hash.0[3] ^= 1;
    corrupt.push((b, "bad_poh"));
    let mut b = good.clone();
    let mut txs_bad = txs.clone();
    txs_bad[1][70] ^= 1;
    let (entries, end) = dyno_node::block::Block::entries_of(b.header.poh_start, txs_bad);
    (b.entries, b.header.poh_end) = (entries, end);
    corrupt.push((resign(&g, b), "bad_signature"));
    let mut b = good.clone();
    b.header.parent = Hash([9; 32]);
    corrupt.push((resign(&g, b), "unknown_parent"));
    let mut hashes = HashSet::new();
    for (b, _) in &corrupt {
        let h = b.header.hash();
        hashes.insert(h.to_string());
        line.hub
            .deliver("x", "a", Message::Header(b.header.encode()).encode());
        line.hub
            .deliver("x", "a", Message::Block(b.encode()).encode());
    }
    // A child of the wrong-leader block: refused without fetching its refused parent.
    let refused_parent = corrupt[1].0.header.hash();
    let mut child = good.clone();
    (child.header.parent, child.header.slot) = (refused_parent, 2);
    child.header.leader = g.leader(2).into();
    let child = resign(&g, child);
    let child_hash = child.header.hash().to_string();
    line.hub
        .deliver("x", "a", Message::Block(child.encode()).encode());
    // A body that is not a block at all.
    line.hub
        .deliver("x", "a", Message::Block(vec![7; 40]).encode());
    // Long enough for the unanswered parent fetch to be given up on (5 x 150 ms).
    sleep_slots(7);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    let reasons: HashSet<String> = events(&logs["a"], "rejected")
        .into_iter()
        .map(|e| e["reason"].as_str().unwrap().to_string())
        .collect();
    for r in [
        "state_mismatch",
        "wrong_leader",
        "bad_poh",
        "bad_signature",
        "bad_leader_signature",
    ] {
        assert!(
            reasons.contains(r),
            "a did not reject one for {r}: {reasons:?}"
        );
    }
    assert!(
        events(&logs["a"], "rejected")
            .iter()
            .any(|e| e["block"] == child_hash.as_str() && e["reason"] == "unknown_parent"),
        "the child of a refused block waited for it"
    );
    // The body that is not a block is a refusal of x's message, not a zero block.
    assert!(
        events(&logs["a"], "refused")
            .iter()
            .any(|e| e["peer"] == "x" && e["reason"] == "malformed_block"),
        "no refusal of the junk body"
    );
    assert!(events(&logs["a"], "rejected")
        .iter()
        .all(|e| e["block"] != hex(&[0; 32]).as_str()));
    for (id, s) in &st {
        assert!(
            s.chain
                .iter()
                .all(|e| !hashes.contains(&e.block.to_string())),
            "{id} adopted a corrupt block"
        );
        assert_eq!(s.chain, st["a"].chain);
    }
    // The child of a parent nobody serves is given up on after its tries.
    assert!(
        st["a"].counters.fetches_abandoned >= 1,
        "{:?}",
        st["a"].counters
    );
    for id in ["b", "c"] {
        for e in events(&logs[id], "header_received") {
            assert!(
                !hashes.contains(e["block"].as_str().unwrap()),
                "{id} heard of a corrupt block"
            );
        }
    }
}

#[test]
fn a_node_that_joins_late_syncs_the_chain_back_to_genesis_in_ranges() {
    let g = genesis(&[("a", 1), ("b", 1), ("c", 0)]);
    let mut line = Line::start(&g, &[("a", &["b"]), ("b", &["a", "c"])]);
    sleep_slots(8);
    line.add(&g, &[("c", &["b"])]);
    sleep_slots(3);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    let len = st["a"].chain.len();
    assert!(len >= 6, "{len} blocks");
    assert_eq!(st["c"].chain, st["a"].chain, "c caught up");
    // The gap came as ranges, not one parent per round trip.
    let ranges = events(&logs["c"], "sync_requested").len();
    let singles = events(&logs["c"], "fetch_requested").len();
    assert!(ranges >= 1, "c asked for a range");
    assert!(
        ranges + singles < len,
        "{ranges} ranges and {singles} single fetches for {len} blocks"
    );
    let caught = events(&logs["c"], "caught_up");
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert!(caught[0]["blocks"].as_u64().unwrap() >= 6, "{caught:?}");
    assert!(caught[0]["height"].as_u64().unwrap() >= 6, "{caught:?}");
    assert_eq!(caught[0]["peer"], "b");
}

#[test]
fn relays_are_batched_and_every_relayed_transaction_lands() {
    // c never leads: all 40 must travel c -> b (-> a) to be executed.
    let g = genesis(&[("a", 1), ("b", 1), ("c", 0)]);
    let mut line = Line::start(&g, &LINE);
    std::thread::sleep(Duration::from_millis(300));
    for t in transfer_block(&g.accounts, 40, 77) {
        line.inboxes["c"].send(Input::Tx(t)).unwrap();
    }
    sleep_slots(4);
    let st = line.stop_mid_slot(&g);
    let c = &st["c"];
    assert_eq!(c.fates.received, 40);
    assert_eq!(c.fates.executed + c.fates.failed, 40, "{:?}", c.fates);
    assert_eq!(c.counters.relayed, 40, "each sent once to c's only peer");
    assert!(
        c.counters.relay_frames < 40,
        "several transactions per frame: {} frames",
        c.counters.relay_frames
    );
}

#[test]
fn a_garbage_body_for_a_real_header_does_not_make_the_node_refuse_the_block() {
    // a never leads (stake 0): the blocks x sends are the only ones, so they are adopted.
    let g = genesis(&[("a", 0), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &[("a", &[])]);
    sleep_into_slot(&g, 2);
    let good = Chain::new(g.clone())
        .forge(1, g.leader(1), transfer_block(&g.accounts, 2, 21))
        .unwrap()
        .block;
    let hash = good.header.hash().to_string();
    // Same header, a transaction altered: this copy fails (bad_signature), the block
    // does not.
    let mut garbage = good.clone();
    garbage.entries[0].txs[0][70] ^= 1;
    let header = Message::Header(good.header.encode()).encode();
    line.hub.deliver("x", "a", header.clone());
    line.hub.deliver("y", "a", header);
    line.hub
        .deliver("x", "a", Message::Block(garbage.encode()).encode());
    line.hub
        .deliver("x", "a", Message::Block(good.encode()).encode());
    sleep_slots(2);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    let a = &logs["a"];
    assert!(events(a, "rejected")
        .iter()
        .any(|e| e["block"] == hash.as_str() && e["reason"] == "bad_signature"));
    assert!(
        events(a, "fetch_requested")
            .iter()
            .any(|e| e["block"] == hash.as_str() && e["peer"] == "y"),
        "the other announcer was asked after x's bad copy"
    );
    assert_eq!(
        events(a, "adopted")
            .iter()
            .filter(|e| e["block"] == hash.as_str())
            .count(),
        1,
        "the real block was adopted"
    );
    assert_eq!(st["a"].counters.bad_bodies.get("x"), Some(&1));
}

#[test]
fn bytes_that_are_not_a_block_are_counted_as_malformed_not_rejected() {
    let g = genesis(&[("a", 0), ("b", 1)]);
    let mut line = Line::start(&g, &[("a", &[])]);
    line.hub
        .deliver("x", "a", Message::Block(vec![7; 40]).encode());
    sleep_slots(1);
    let st = line.stop_mid_slot(&g);
    let c = &st["a"].counters;
    assert_eq!(c.malformed_blocks, 1);
    assert_eq!(c.refused.get("malformed_block"), Some(&1));
    assert!(c.rejected.is_empty(), "{:?}", c.rejected);
    let text = dyno_node::metrics::metrics_text(Some(&st["a"]), None, None);
    assert!(
        text.contains("dyno_node_malformed_blocks_total 1\n"),
        "{text}"
    );
    assert!(
        !text.contains("reason=\"malformed\""),
        "no rejection reason that nothing counts: {text}"
    );
}

#[test]
fn two_copies_of_a_waiting_block_are_adopted_once() {
    // a never leads (stake 0): the blocks x sends are the only ones, so they are adopted.
    let g = genesis(&[("a", 0), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &[("a", &[])]);
    sleep_into_slot(&g, 3);
    let mut other = Chain::new(g.clone());
    let b1 = other
        .forge(1, g.leader(1), transfer_block(&g.accounts, 2, 31))
        .unwrap();
    let (h1, bytes1) = (b1.hash, b1.block.encode());
    other.insert(b1, Arc::new(bytes1.clone()));
    let b2 = other.forge(2, g.leader(2), Vec::new()).unwrap();
    let (h2, bytes2) = (b2.hash, b2.block.encode());
    // The child twice (a fetch answered after it was asked again), then its parent.
    for b in [&bytes2, &bytes2, &bytes1] {
        line.hub
            .deliver("x", "a", Message::Block(b.clone()).encode());
    }
    sleep_slots(2);
    let logs = line.logs.clone();
    line.stop_mid_slot(&g);
    let a = &logs["a"];
    for h in [h1, h2] {
        let n = events(a, "adopted")
            .iter()
            .filter(|e| e["block"] == h.to_string().as_str())
            .count();
        assert_eq!(n, 1, "{h} adopted {n} times");
    }
    // The parent was asked for before anything said its slot: the line has none.
    let ask = events(a, "fetch_requested")
        .into_iter()
        .find(|e| e["block"] == h1.to_string().as_str())
        .expect("the parent was fetched");
    assert!(ask.get("slot").is_none(), "{ask}");
}

#[test]
fn a_block_on_a_losing_fork_is_adopted_only_when_a_switch_selects_it() {
    // a never leads (stake 0): only the blocks x delivers make its chain.
    let g = genesis(&[("a", 0), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &[("a", &[])]);
    let t = transfer_block(&g.accounts, 1, 77).remove(0);
    line.inboxes["a"].send(Input::Tx(t.clone())).unwrap();
    sleep_into_slot(&g, 6);
    // P1 <- P2 on genesis; Q1 <- Q2 <- Q3 on genesis, Q1 holding a's client transaction.
    let chain_of = |first: u64, n: u64, txs: Vec<Vec<u8>>| {
        let mut c = Chain::new(g.clone());
        let mut out = Vec::new();
        for (i, slot) in (first..first + n).enumerate() {
            let txs = if i == 0 { txs.clone() } else { Vec::new() };
            let b = c.forge(slot, g.leader(slot), txs).unwrap();
            let bytes = b.block.encode();
            out.push((b.hash.to_string(), bytes.clone()));
            c.insert(b, Arc::new(bytes));
        }
        out
    };
    let p = chain_of(1, 2, Vec::new());
    let q = chain_of(3, 3, vec![t]);
    for (_, b) in p.iter().chain(&q) {
        line.hub
            .deliver("x", "a", Message::Block(b.clone()).encode());
    }
    sleep_slots(2);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    let lines: Vec<Value> = std::fs::read_to_string(&logs["a"])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |event: &str, block: &str| {
        let found: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i]["event"] == event && lines[i]["block"] == block)
            .collect();
        assert_eq!(found.len(), 1, "{event} {block}: {found:?}");
        found[0]
    };
    for (b, _) in p.iter().chain(&q) {
        at("adopted", b);
    }
    // Q1 (height 1 while P2 was the tip) waits for the switch Q2 (if its hash is below
    // P2's) or Q3 makes.
    assert!(
        at("adopted", &q[0].0) > at("validated", &q[1].0),
        "Q1 was adopted before a switch selected it"
    );
    assert_eq!(st["a"].tip.to_string(), q[2].0);
    let f = st["a"].fates;
    assert_eq!((f.executed + f.failed, f.in_flight), (1, 0));
}

#[test]
fn implausible_headers_are_not_fetched_and_orphans_are_capped() {
    let g = genesis(&[("a", 0), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &[("a", &[])]);
    sleep_into_slot(&g, 2);
    let good = Chain::new(g.clone())
        .forge(1, g.leader(1), Vec::new())
        .unwrap()
        .block;
    // A header from a slot far ahead, and one naming a leader the slot does not have.
    let mut future = good.header.clone();
    future.slot = 1_000;
    future.leader = g.leader(1_000).into();
    let mut wrong = good.header.clone();
    wrong.leader = if wrong.leader == "b" { "c" } else { "b" }.into();
    let ignored: Vec<String> = [future, wrong]
        .into_iter()
        .map(|h| {
            line.hub
                .deliver("x", "a", Message::Header(h.encode()).encode());
            h.hash().to_string()
        })
        .collect();
    // More parentless blocks than may wait.
    for i in 0..=dyno_node::node::MAX_ORPHANS as u32 {
        let mut b = good.clone();
        b.header.parent.0[..4].copy_from_slice(&i.to_le_bytes());
        b.header.parent.0[31] = 1;
        let b = resign(&g, b);
        line.hub
            .deliver("x", "a", Message::Block(b.encode()).encode());
    }
    sleep_slots(1);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    assert!(events(&logs["a"], "fetch_requested")
        .iter()
        .all(|e| !ignored.iter().any(|h| e["block"] == h.as_str())));
    let c = &st["a"].counters;
    assert_eq!(c.headers_ignored, 2, "{c:?}");
    assert!(c.orphans_dropped >= 1, "{c:?}");
}

#[test]
fn a_transaction_sent_mid_slot_lands_in_that_slots_block() {
    let (_line, logs, st, slot) = send_mid_slot(ForgeAt::WholeSlot);
    let forged = slot_event(&logs["a"], "forged", slot);
    assert_eq!(
        forged["txs"], 1,
        "the transaction is in the slot's own block"
    );
    assert_eq!(st["a"].counters.forge_fallbacks, 0);
    assert_eq!(st["a"].fates.executed + st["a"].fates.failed, 1);
    // The follower replayed it to the same state.
    assert_eq!(st["b"].chain, st["a"].chain);
    assert!(st["b"]
        .chain
        .iter()
        .any(|e| e.block.to_string() == forged["block"].as_str().unwrap()));
}

#[test]
fn forging_at_the_slot_start_leaves_a_mid_slot_transaction_to_the_next_block() {
    // Cardano's way: the block is the slot start's snapshot, announced at once; a
    // transaction admitted during the slot waits for the leader's next slot.
    let (_line, logs, st, slot) = send_mid_slot(ForgeAt::SlotStart);
    assert_eq!(slot_event(&logs["a"], "forged", slot)["txs"], 0);
    let next = slot_event(&logs["a"], "forged", slot + 1);
    assert_eq!(next["txs"], 1, "in the next slot's block");
    assert_eq!(slot_event(&logs["a"], "snapshot", slot + 1)["txs"], 1);
    assert_eq!(st["a"].counters.forge_fallbacks, 0);
    assert_eq!(st["a"].fates.executed + st["a"].fates.failed, 1);
    assert_eq!(st["b"].chain, st["a"].chain);
}

/// The `name` event of `slot` in a node log.
fn slot_event(log: &Path, name: &str, slot: u64) -> Value {
    events(log, name)
        .into_iter()
        .find(|e| e["slot"] == slot)
        .unwrap_or_else(|| panic!("no {name} event for slot {slot}"))
}

/// Leader `a` (every slot) and follower `b`, forging `forge_at`; one transaction sent to
/// `a` a third of the way into slot 1, after its snapshot; stopped mid-slot a few slots
/// later. Returns the stopped line (its directory holds the logs), the logs, the
/// statuses and the slot.
fn send_mid_slot(forge_at: ForgeAt) -> MidSlot {
    // Slots long enough that "after the slot's snapshot, well before its end" holds
    // on any machine: the transaction is sent a third of the way in.
    let start_ms = now_ns() / 1_000_000 + 300;
    let g = Arc::new(
        GenesisFile {
            network: "midslot".into(),
            seed: 6,
            accounts: 64,
            balance: 1_000_000,
            slot_ms: 1_200,
            genesis_time_ms: start_ms,
            max_block_txs: dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
            validators: vec![
                Validator {
                    id: "a".into(),
                    stake: 1,
                },
                Validator {
                    id: "b".into(),
                    stake: 0,
                },
            ],
        }
        .load(),
    );
    let mut line = Line::start_with_at(&g, &[("a", &["b"]), ("b", &["a"])], forge_at);
    let slot = 1;
    let at = g.slot_start_ns(slot) + g.slot_ns() / 3;
    std::thread::sleep(Duration::from_nanos(at.saturating_sub(now_ns())));
    let t = transfer_block(&g.accounts, 1, 77).remove(0);
    line.inboxes["a"].send(Input::Tx(t)).unwrap();
    // Into the next slot, so its block is forged too.
    sleep_into_slot(&g, slot + 2);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    assert_eq!(
        slot_event(&logs["a"], "snapshot", slot)["txs"],
        0,
        "sent after the slot's snapshot"
    );
    (line, logs, st, slot)
}

type MidSlot = (Line, HashMap<String, PathBuf>, HashMap<String, Status>, u64);

#[test]
fn a_leader_forging_every_slot_answers_fetches_while_it_forges() {
    // a leads every slot and forges across most of each (its snapshot at the slot's
    // start, its block forged about three quarters in). The test plays its peer b: a
    // third into each of several slots, while a forges, it asks a for the block a
    // announced last. A loop blocked while it forges would answer only after `forged`;
    // a's loop answers in between. (A real late joiner's catch-up starts at a's
    // announcement, right after `forged`, and is over long before the next slot's
    // forging on an in-memory link, so it cannot show this.)
    let g = genesis(&[("a", 1), ("b", 0)]);
    let mut line = Line::start(&g, &[("a", &["b"])]);
    let (b_tx, b_rx) = channel();
    let _b = line.hub.join("b", b_tx, &["a"]);
    for t in transfer_block(&g.accounts, 40, 13) {
        line.inboxes["a"].send(Input::Tx(t)).unwrap();
    }
    let mut last_header = None;
    let mut asked = 0;
    let mut answers = Vec::new();
    let drain = |last_header: &mut Option<Hash>, answers: &mut Vec<u64>| {
        while let Ok(Input::Peer {
            payload,
            received_ns,
            ..
        }) = b_rx.try_recv()
        {
            match Message::decode(&payload) {
                Some(Message::Header(h)) => {
                    *last_header = Some(dyno_node::block::Header::decode(&h).unwrap().hash())
                }
                Some(Message::Block(_)) => answers.push(received_ns),
                _ => {}
            }
        }
    };
    for slot in 3..9 {
        let at = g.slot_start_ns(slot) + g.slot_ns() / 3;
        std::thread::sleep(Duration::from_nanos(at.saturating_sub(now_ns())));
        drain(&mut last_header, &mut answers);
        if let Some(h) = last_header {
            line.hub.deliver("b", "a", Message::GetBlock(h).encode());
            asked += 1;
        }
    }
    sleep_slots(1);
    drain(&mut last_header, &mut answers);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    assert!(
        asked >= 4,
        "only {asked} requests: a announced too few blocks"
    );
    assert_eq!(answers.len(), asked, "a answered every request");
    assert_eq!(st["a"].counters.forge_fallbacks, 0);
    // a's forging windows: from its snapshot to its block forged, per slot.
    let t = |e: &Value| e["ts_ns"].as_u64().unwrap();
    let opened: HashMap<u64, u64> = events(&logs["a"], "snapshot")
        .iter()
        .map(|e| (e["slot"].as_u64().unwrap(), t(e)))
        .collect();
    let windows: Vec<(u64, u64)> = events(&logs["a"], "forged")
        .iter()
        .filter_map(|e| opened.get(&e["slot"].as_u64().unwrap()).map(|&o| (o, t(e))))
        .collect();
    let mid_forge = answers
        .iter()
        .filter(|&&at| windows.iter().any(|&(o, f)| (o..f).contains(&at)))
        .count();
    assert!(
        mid_forge > 0,
        "none of a's {} answers came while it forged",
        answers.len()
    );
}

#[test]
fn a_node_on_a_fork_asks_for_the_range_above_its_locator_and_serves_ranges_too() {
    // a never leads; x is the test's own peer: it reads what a sends it.
    let g = genesis(&[("a", 0), ("b", 1), ("c", 1)]);
    let mut line = Line::start(&g, &[("a", &["x"])]);
    let (x_tx, x_rx) = channel();
    let _x = line.hub.join("x", x_tx, &["a"]);
    sleep_into_slot(&g, 6);
    let chain_of = |first: u64, n: u64| {
        let mut c = Chain::new(g.clone());
        let mut out = Vec::new();
        for slot in first..first + n {
            let b = c.forge(slot, g.leader(slot), Vec::new()).unwrap();
            let bytes = b.block.encode();
            out.push((b.hash, bytes.clone()));
            c.insert(b, Arc::new(bytes));
        }
        out
    };
    // a holds P1 <- P2; the network's chain is Q1 <- Q2 <- Q3, also on genesis.
    let p = chain_of(1, 2);
    let q = chain_of(3, 3);
    for (_, b) in &p {
        line.hub
            .deliver("x", "a", Message::Block(b.clone()).encode());
    }
    sleep_slots(1);
    let q3_header = Block::decode(&q[2].1).unwrap().header.encode();
    line.hub
        .deliver("x", "a", Message::Header(q3_header).encode());
    let asked = loop {
        let Input::Peer { payload, .. } = x_rx.recv_timeout(Duration::from_secs(10)).unwrap()
        else {
            continue;
        };
        if let Some(m @ Message::GetChain { .. }) = Message::decode(&payload) {
            break m;
        }
    };
    // The locator: tip, tip-1 and genesis; the target: the announced block.
    assert_eq!(
        asked,
        Message::GetChain {
            to: q[2].0,
            locator: vec![p[1].0, p[0].0, g.hash],
        }
    );
    let range: Vec<Vec<u8>> = q.iter().map(|(_, b)| b.clone()).collect();
    line.hub.deliver("x", "a", Message::Chain(range).encode());
    sleep_slots(1);
    // Serving: from a locator holding Q1, a sends Q2 and Q3, oldest first.
    line.hub.deliver(
        "x",
        "a",
        Message::GetChain {
            to: q[2].0,
            locator: vec![Hash([9; 32]), q[0].0],
        }
        .encode(),
    );
    let served = loop {
        let Input::Peer { payload, .. } = x_rx.recv_timeout(Duration::from_secs(10)).unwrap()
        else {
            continue;
        };
        if let Some(Message::Chain(blocks)) = Message::decode(&payload) {
            break blocks;
        }
    };
    assert_eq!(served, vec![q[1].1.clone(), q[2].1.clone()]);
    let logs = line.logs.clone();
    let st = line.stop_mid_slot(&g);
    assert_eq!(st["a"].tip, q[2].0, "a switched to the longer chain");
    let caught = events(&logs["a"], "caught_up");
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert_eq!(
        (caught[0]["blocks"].as_u64(), caught[0]["height"].as_u64()),
        (Some(3), Some(3))
    );
}
