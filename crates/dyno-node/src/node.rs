//! The node loop: slots, forging, block announce/fetch/validate/adopt, mempool relay.
//!
//! One thread owns the chain and the mempool and blocks on one channel of [`Input`]s
//! with a timeout at the next slot boundary, so an idle node costs a few wake-ups a
//! second. In a slot it leads, the node forges the block across the slot from what its
//! mempool holds at the start and what arrives during it (at most `max_block_txs`),
//! still serving its inputs between turns of the forging (see the `leader` module), then adopts
//! the block itself and announces its header; the block leaves during its own slot and
//! its propagation is measured from the slot's scheduled start.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use dyno_tiles::forge::{ForgeConfig, TileForge};

use crate::admission::Admission;
use crate::block::{Block, Header};
use crate::chain::{Chain, Checked, Tip, KEEP_STATES};
use crate::genesis::Genesis;
use crate::hash::Hash;
use crate::log::{now_ns, EventLog};
use crate::mempool::{Admit, Fates, Mempool};
use crate::transport::{Input, Message, Transport};

// One loop state, `Node`, split by role: what it holds as a leader (`leader::Leader`:
// how it forges, the slot being forged, its margin, its lies), as a follower
// (`follower::Follower`: fetches, orphans, refusals, the range request, equivocation
// evidence) and as a relay (`relay::RelayQueue`), beside what every role shares. Each
// role's state is its file's type; its methods are an `impl Node` block there, since a
// role's work uses the shared state too (the chain, the log, the transport). Nothing
// outside `node` sees the roles.
mod byzantine;
mod defence;
mod follower;
mod leader;
mod relay;
mod sync;

use follower::Follower;
use leader::{Forge, Leader, TileLeader};
use relay::RelayQueue;

pub use byzantine::SLOTS_REMEMBERED;
pub use defence::{MAX_FETCHES, MAX_FETCHES_PER_PEER, MAX_REJECTED, MISBEHAVING_BAN, STRIKES};
pub use follower::{MAX_ORPHANS, MAX_ORPHAN_BYTES};
pub use sync::{SYNC_MAX_BLOCKS, SYNC_MAX_BYTES};

/// Longest the loop sleeps without looking at the stop flag.
const WAKE: Duration = Duration::from_millis(250);

/// The tile forge's layout in a node: no verify tile, since every transaction in the
/// mempool had its signature checked at admission (the ingress's verify threads, or
/// `Mempool::offer` for relays), so the leader checks each once. Received blocks are
/// still checked in full. `bank_tiles` bank tiles (the node config's `bank_tiles`).
pub(crate) fn tile_forge_config(bank_tiles: usize) -> ForgeConfig {
    ForgeConfig {
        verify_tiles: 0,
        ..ForgeConfig::with_banks(bank_tiles)
    }
}

/// A peer's relay batch is sent once it holds this many bytes of transactions (about
/// a hundred transfers: one frame well under a TCP window)...
pub const RELAY_BATCH_BYTES: usize = 16 * 1024;
/// ... or once its first transaction has waited this long: short beside a slot, so a
/// relayed transaction still reaches the next leader in time, long enough that a node
/// under load sends a frame per batch rather than per transaction.
pub const RELAY_FLUSH: Duration = Duration::from_millis(5);

/// How a node runs.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// This node's id (a validator of the genesis).
    pub id: String,
    /// Peer ids (announcements and relays go to them).
    pub peers: Vec<String>,
    /// Mempool capacity.
    pub mempool_capacity: usize,
    /// Most transactions in one block.
    pub max_block_txs: usize,
    /// A fetch not answered within this is asked again of another announcer.
    pub fetch_timeout: Duration,
    /// Lead no slot after this one (none: lead forever). A cluster run ends its load
    /// phase with quiet slots so every node can converge before it stops.
    pub lead_until: Option<u64>,
    /// How a leader builds its blocks.
    pub forge: ForgeMode,
    /// How far this node's slot clock is ahead of the wall clock, ns (negative:
    /// behind): a clock-skew fault, changed while the node runs (the control file).
    /// It moves when the node thinks slots start, never the times its log records.
    pub clock_skew_ns: Arc<AtomicI64>,
    /// Threads the signatures of a block this node validates are checked on.
    pub verify_tiles: usize,
    /// Signatures checked as one batch on each of those threads.
    pub verify_batch: usize,
    /// When a leader cuts its block from the mempool.
    pub forge_at: ForgeAt,
    /// How this node misbehaves, if its control file says so (a node under test in a
    /// cluster's byzantine fault); none for an honest node, changed while it runs.
    pub misbehave: Arc<Mutex<Option<crate::control::Misbehave>>>,
    /// Threads a block this node validates is decoded and replayed on.
    pub replay_threads: usize,
    /// Bank tiles of the leader's forge.
    pub bank_tiles: usize,
}

/// When a leader's block is cut (`forge_at` in a node config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgeAt {
    /// The tiles are fed across the slot, from the snapshot and every transaction
    /// admitted during it, up to a measured margin before the slot's end: the most
    /// transactions per block, announced late in the slot.
    #[default]
    WholeSlot,
    /// Cardano's way: the block is the mempool's snapshot at the slot's start, forged
    /// and announced as soon as the tiles have recorded it; transactions arriving during
    /// the slot wait for the next. What propagation measures is then the network's.
    SlotStart,
}

/// How a leader builds its blocks (`forge = "tiles"` or `"sequential"` in a node config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeMode {
    /// With the leader pipeline's tiles (verify, dedup, pack, bank, poh), started once
    /// with the node: the block is what today's pipeline makes of the snapshot.
    #[default]
    Tiles,
    /// With one sequential bank on the node's loop thread: the baseline the tiles are
    /// compared against, and a node that must not start extra threads.
    Sequential,
}

impl NodeOptions {
    /// Defaults for node `id` with `peers`.
    pub fn new(id: &str, peers: Vec<String>) -> NodeOptions {
        NodeOptions {
            id: id.to_string(),
            peers,
            mempool_capacity: 100_000,
            max_block_txs: 20_000,
            fetch_timeout: Duration::from_secs(1),
            lead_until: None,
            forge: ForgeMode::default(),
            clock_skew_ns: Arc::new(AtomicI64::new(0)),
            verify_tiles: 1,
            verify_batch: crate::verify::DEFAULT_VERIFY_BATCH,
            forge_at: ForgeAt::default(),
            misbehave: Arc::new(Mutex::new(None)),
            replay_threads: 1,
            bank_tiles: 1,
        }
    }
}

/// Counters of the node (the metrics endpoint and the final summary show them).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    /// Blocks this node forged.
    pub forged: u64,
    /// Blocks adopted (forged here or fetched).
    pub adopted: u64,
    /// Times the tip moved to another branch (a fork switch: a block whose parent was not
    /// the tip became the tip).
    pub fork_switches: u64,
    /// Blocks rejected, by reason.
    pub rejected: HashMap<&'static str, u64>,
    /// Headers received.
    pub headers_received: u64,
    /// Fetches asked.
    pub fetches: u64,
    /// Range requests asked while catching up (each round counts).
    pub sync_requests: u64,
    /// Fetch bytes received.
    pub fetched_bytes: u64,
    /// Blocks given up on after every request went unanswered.
    pub fetches_abandoned: u64,
    /// Headers not fetched: a slot not yet begun (beyond the next), a leader not
    /// scheduled for the slot, or a height too far below the tip to build on.
    pub headers_ignored: u64,
    /// Blocks dropped because [`MAX_ORPHANS`] (or [`MAX_ORPHAN_BYTES`]) already waited
    /// for parents.
    pub orphans_dropped: u64,
    /// Announced blocks not fetched because [`MAX_FETCHES`] were in flight, or
    /// [`MAX_FETCHES_PER_PEER`] of the announcer's.
    pub fetches_shed: u64,
    /// Equivocations recorded: a second valid block for a slot already seen, logged
    /// (`equivocation`) with both signed headers.
    pub equivocations: u64,
    /// Links cut for misbehaving ([`STRIKES`] messages that are not the protocol), by
    /// peer.
    pub peers_cut: HashMap<String, u64>,
    /// Peer messages that were not a protocol message.
    pub bad_messages: u64,
    /// Block bodies from peers whose bytes were not a block at all (refused as the
    /// peer's message, `malformed_block`; not a block rejection).
    pub malformed_blocks: u64,
    /// Connections the transport refused, by reason, and bodies that were not a block
    /// (`malformed_block`).
    pub refused: HashMap<String, u64>,
    /// Block bodies a peer sent that failed validation or did not decode, by peer.
    pub bad_bodies: HashMap<String, u64>,
    /// Transactions relayed to peers (one per transaction per peer).
    pub relayed: u64,
    /// Relay frames sent to peers (each carries a batch of transactions).
    pub relay_frames: u64,
    /// Blocks the pipeline's tiles forged.
    pub forged_by_tiles: u64,
    /// Slots the tiles could not forge, forged by the sequential bank instead.
    pub forge_fallbacks: u64,
    /// Why the tiles last failed to forge, if they ever did.
    pub last_forge_fallback: Option<String>,
    /// Transactions queued for a slot (its snapshot and arrivals) and not fed to the
    /// tiles when feeding stopped (they stay in the mempool for a later block).
    pub forge_unrecorded: u64,
    /// Last stage times of a forged block, s (leader check, ticking, snapshot, forged, adopted).
    pub last_forge_stages_s: [f64; 5],
    /// Last validation + replay time of a fetched block, s.
    pub last_validate_s: f64,
    /// Client transactions the ingress refused before any signature check, by reason
    /// (`mempool_full`, `queue_full`; [`crate::admission`]): the refusals `dyno load`
    /// sees. Empty without an ingress.
    pub ingress_refused: HashMap<&'static str, u64>,
}

/// What the node shows while it runs and returns when it stops.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    /// Tip height.
    pub height: u64,
    /// Tip hash.
    pub tip: Hash,
    /// Tip state hash.
    pub state_hash: Hash,
    /// Mempool size.
    pub mempool: usize,
    /// Fates of client transactions.
    pub fates: Fates,
    /// Counters.
    pub counters: Counters,
    /// The best chain, genesis side first; in the final status only (empty while
    /// running).
    pub chain: Vec<ChainEntry>,
}

/// One block of the best chain in a node's final [`Status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainEntry {
    /// Its slot.
    pub slot: u64,
    /// Its hash.
    pub block: Hash,
    /// The state hash after it.
    pub state_hash: Hash,
    /// The leader that forged it.
    pub leader: String,
}

impl serde::Serialize for ChainEntry {
    /// As the node's summary has always written a block of its chain: `[slot, block,
    /// state hash, leader]`, hashes in hex.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.slot, self.block, self.state_hash, &self.leader).serialize(s)
    }
}

/// A running node's state (owned by its loop thread): what every role shares, then
/// what it holds as the leader of its slots, as the follower of the others' blocks and
/// as a relay of transactions.
pub struct Node {
    opts: NodeOptions,
    genesis: Arc<Genesis>,
    log: Arc<EventLog>,
    transport: Box<dyn Transport>,
    chain: Chain,
    mempool: Mempool,
    counters: Counters,
    status: Arc<Mutex<Option<Status>>>,
    /// When `status` was last refreshed.
    published: Instant,
    /// Transactions landed since the last per-second line.
    landed_since: u64,
    /// The ingress's gate ([`crate::admission`]), told the mempool's size.
    admission: Option<Arc<Admission>>,
    /// Messages of each peer's link that were not the protocol ([`STRIKES`]).
    strikes: HashMap<String, u32>,
    leader: Leader,
    follower: Follower,
    relay: RelayQueue,
}

impl Node {
    /// A node at genesis. `status` is refreshed after every input (the metrics endpoint
    /// and tests read it).
    pub fn new(
        opts: NodeOptions,
        genesis: Arc<Genesis>,
        log: Arc<EventLog>,
        transport: Box<dyn Transport>,
        status: Arc<Mutex<Option<Status>>>,
    ) -> Node {
        Node {
            mempool: Mempool::new(opts.mempool_capacity),
            chain: Chain::new(genesis.clone())
                .with_verify_threads(opts.verify_tiles)
                .with_verify_batch(opts.verify_batch)
                .with_replay_threads(opts.replay_threads),
            opts,
            genesis,
            log,
            transport,
            counters: Counters::default(),
            status,
            published: Instant::now()
                .checked_sub(Duration::from_secs(1))
                .unwrap_or_else(Instant::now),
            landed_since: 0,
            admission: None,
            strikes: HashMap::new(),
            leader: Leader::default(),
            follower: Follower::default(),
            relay: RelayQueue::default(),
        }
    }

    /// Tells `admission` (the ingress's gate) of each client transaction taken from
    /// the inbox and of the mempool's size, so the ingress refuses, before any signature
    /// check, what the mempool could not hold.
    pub fn with_admission(mut self, admission: Arc<Admission>) -> Node {
        self.admission = Some(admission);
        self
    }

    /// Runs until `stop` is raised, an [`Input::Stop`] arrives, or every sender is gone;
    /// returns the final status. Logs `started` first.
    pub fn run(mut self, inputs: Receiver<Input>, stop: &AtomicBool) -> Status {
        self.log.event(
            "started",
            json!({
                "genesis_hash": self.genesis.hash.to_string(),
                "genesis_time_ns": self.genesis.genesis_time_ns(),
                "slot_ns": self.genesis.slot_ns(),
                "peers": self.opts.peers,
            }),
        );
        if self.opts.forge == ForgeMode::Tiles {
            match TileForge::start(
                &tile_forge_config(self.opts.bank_tiles),
                self.genesis.accounts.clone(),
            ) {
                Ok(forge) => {
                    self.leader.forge = Forge::Tiles(Box::new(TileLeader { forge, lead: None }));
                }
                Err(e) => self.fall_back(e.to_string()),
            }
        }
        let t0 = Instant::now();
        let mut next_second = t0 + Duration::from_secs(1);
        // Slots already running when the node starts are not led: forging late would
        // only make a fork.
        let mut done_slot = (self.clock_ns() >= self.genesis.genesis_time_ns())
            .then(|| self.genesis.slot_at(self.clock_ns()));
        self.publish();
        while !stop.load(Ordering::Relaxed) {
            let now = self.clock_ns();
            if now >= self.genesis.genesis_time_ns() {
                let slot = self.genesis.slot_at(now);
                if done_slot.is_none_or(|d| slot > d) {
                    done_slot = Some(slot);
                    if self.genesis.leader(slot) == self.opts.id
                        && self.opts.lead_until.is_none_or(|u| slot <= u)
                    {
                        self.lead(slot, now);
                    }
                }
            }
            self.step_lead();
            self.forget_lies_when_honest();
            let boundary = match done_slot {
                Some(s) => self.genesis.slot_start_ns(s + 1),
                None => self.genesis.genesis_time_ns(),
            };
            let mut wait = Duration::from_nanos(boundary.saturating_sub(self.clock_ns()))
                .min(WAKE)
                .min(next_second.saturating_duration_since(Instant::now()));
            if let Some(due) = self.relay.due {
                wait = wait.min(due.saturating_duration_since(Instant::now()));
            }
            if let Some(due) = self.lead_due() {
                wait = wait.min(due.saturating_duration_since(Instant::now()));
            }
            match inputs.recv_timeout(wait) {
                Ok(Input::Stop) => break,
                Ok(i) => {
                    self.handle(i);
                    // Take whatever else is queued, up to the next slot boundary (a
                    // long queue must not make the node miss a slot it leads) or,
                    // while a slot is forged, the next turn of its forging.
                    let lead_due = self.lead_due();
                    while self.clock_ns() < boundary && lead_due.is_none_or(|d| Instant::now() < d)
                    {
                        let Ok(i) = inputs.try_recv() else { break };
                        if matches!(i, Input::Stop) {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        self.handle(i);
                        self.flush_relay_if_due();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.flush_relay_if_due();
            self.retry_fetches();
            if let Some(a) = &self.admission {
                a.mempool_now(self.mempool.len());
            }
            if Instant::now() >= next_second {
                self.second(t0.elapsed().as_secs_f64());
                next_second += Duration::from_secs(1);
            }
            self.publish();
        }
        self.flush_relay();
        if let Forge::Tiles(tiles) = std::mem::take(&mut self.leader.forge) {
            let TileLeader { forge, lead } = *tiles;
            drop(lead);
            forge.shutdown();
        }
        let _ = self.log.flush();
        let last = self.status_now(true);
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = Some(last.clone());
        last
    }

    /// The node's slot clock: the wall clock plus any clock-skew fault.
    fn clock_ns(&self) -> u64 {
        let skew = self.opts.clock_skew_ns.load(Ordering::Relaxed);
        now_ns().saturating_add_signed(skew)
    }

    fn second(&mut self, t: f64) {
        self.log.line(&json!({
            "kind": "second",
            "t": t,
            "tps": self.landed_since,
            "mempool": self.mempool.len(),
            "height": self.chain.tip().height,
        }));
        self.landed_since = 0;
        let _ = self.log.flush();
    }

    /// The status; `with_chain` lists the whole best chain (the final status only: it
    /// costs a walk over every block).
    fn status_now(&self, with_chain: bool) -> Status {
        let tip: Tip = self.chain.tip();
        let walk = if with_chain {
            self.chain.best_chain()
        } else {
            Vec::new()
        };
        let mut chain: Vec<_> = walk
            .into_iter()
            .filter_map(|h| {
                self.chain.header(&h).map(|hd| ChainEntry {
                    slot: hd.slot,
                    block: h,
                    state_hash: hd.state_hash,
                    leader: hd.leader.clone(),
                })
            })
            .collect();
        chain.reverse();
        Status {
            height: tip.height,
            tip: tip.hash,
            state_hash: tip.state_hash,
            mempool: self.mempool.len(),
            fates: self.mempool.fates(),
            counters: Counters {
                ingress_refused: self.admission.as_ref().map_or_else(HashMap::new, |a| {
                    let (full, queue) = a.refused();
                    HashMap::from([("mempool_full", full), ("queue_full", queue)])
                }),
                ..self.counters.clone()
            },
            chain,
        }
    }

    fn publish(&mut self) {
        // At most ten times a second: the status is for people and scrapers.
        if self.published.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.published = Instant::now();
        let s = self.status_now(false);
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
    }

    fn broadcast(&self, m: &Message, except: Option<&str>) -> u64 {
        let bytes = m.encode();
        let mut n = 0;
        for p in &self.opts.peers {
            if Some(p.as_str()) != except && self.transport.send(p, bytes.clone()) {
                n += 1;
            }
        }
        n
    }

    /// Stores a valid block. If it joins the best chain, it and every block a fork
    /// switch selected with it (oldest first) are adopted: their transactions leave the
    /// mempool and `adopted` is logged, once per block ever; the transactions of the
    /// blocks a switch abandoned go back to the mempool. A valid block on a losing fork
    /// is only stored (and adopted if a later switch selects it).
    fn adopt(&mut self, c: Checked, bytes: Arc<Vec<u8>>) {
        let parent = c.block.header.parent;
        let hash = c.hash;
        let old_tip = self.chain.tip().hash;
        if !self.chain.insert(c, bytes) {
            return;
        }
        let selected = if parent == old_tip {
            vec![hash]
        } else {
            self.counters.fork_switches += 1;
            self.return_abandoned(&old_tip);
            self.chain.selected_by_switch(&old_tip)
        };
        for b in selected {
            let Some((h, outcomes)) = self.chain.mark_adopted(&b) else {
                continue;
            };
            self.mempool.settle(&outcomes);
            self.landed_since += outcomes.len() as u64;
            self.counters.adopted += 1;
            self.log.event(
                "adopted",
                json!({"slot": h.slot, "block": b.to_string(), "height": h.height,
                       "state_hash": h.state_hash.to_string()}),
            );
        }
    }

    /// After a fork switch, transactions of the abandoned blocks that the new chain
    /// lacks go back to the mempool, so the next leaders include them (their fates were
    /// counted when those blocks were adopted and stay as they are).
    fn return_abandoned(&mut self, old_tip: &Hash) {
        for b in self.chain.abandoned_by_switch(old_tip) {
            let Some(bytes) = self.chain.bytes(&b) else {
                continue;
            };
            let Ok(block) = Block::decode(&bytes) else {
                continue;
            };
            for t in block.txs() {
                if !self.chain.on_best_chain(dyno_txn::tx::sig_tag(t)) {
                    self.mempool.put_back(t);
                }
            }
        }
    }

    fn handle(&mut self, i: Input) {
        match i {
            Input::Tx(b) => self.client_tx(b, None),
            Input::CheckedTx {
                bytes,
                signature_ok,
            } => self.client_tx(bytes, Some(signature_ok)),
            Input::Peer {
                peer,
                payload,
                received_ns,
            } => {
                let n = payload.len();
                match Message::decode(&payload) {
                    None => {
                        self.counters.bad_messages += 1;
                        self.strike(&peer, "a message that does not decode");
                    }
                    Some(m) => self.message(&peer, m, received_ns),
                }
                // Handled: the peer's link may read that much more.
                self.transport.taken(&peer, n);
            }
            Input::CheckedRelay { peer, txs } => {
                // The bytes of the relay frame these came in (1 + 2 + len each): they
                // counted against the peer's inbound budget until now.
                let n = 1 + txs.iter().map(|(t, _)| 2 + t.len()).sum::<usize>();
                for (b, verdict) in txs {
                    if self.mempool.offer_verified(&b, false, verdict) == Admit::Added {
                        self.offer_to_lead(&b);
                        self.relay(b, Some(&peer));
                    }
                }
                self.transport.taken(&peer, n);
            }
            Input::Connected(p) => {
                self.forgive(&p);
                self.log.event("connected", json!({"peer": p}));
            }
            Input::Disconnected { peer, reason } => self
                .log
                .event("disconnected", json!({"peer": peer, "reason": reason})),
            Input::Refused { remote, reason } => {
                *self.counters.refused.entry(reason.clone()).or_default() += 1;
                self.log
                    .event("refused", json!({"remote": remote, "reason": reason}));
            }
            Input::Stop => {}
        }
    }

    fn client_tx(&mut self, b: Vec<u8>, signature_ok: Option<bool>) {
        let admit = self.mempool.offer_verified(&b, true, signature_ok);
        // The mempool's size before the transaction is counted off the way to it: the
        // gate's sum of the two never reads low.
        if let Some(a) = &self.admission {
            a.taken(self.mempool.len());
        }
        if admit == Admit::Added {
            self.offer_to_lead(&b);
            self.relay(b, None);
        }
    }

    fn message(&mut self, peer: &str, m: Message, received_ns: u64) {
        match m {
            Message::Tx(b) => self.peer_tx(peer, b),
            Message::Txs(txs) => {
                for (b, admit) in self.mempool.offer_relayed(txs) {
                    if admit == Admit::Added {
                        self.offer_to_lead(&b);
                        self.relay(b, Some(peer));
                    }
                }
            }
            Message::GetBlock(h) => {
                if let Some(lie) = self.leader.lies.answer(&h) {
                    if let Some(b) = lie {
                        self.transport
                            .send(peer, Message::Block(b.as_ref().clone()).encode());
                    }
                    return;
                }
                if let Some(b) = self.chain.bytes(&h) {
                    self.transport
                        .send(peer, Message::Block(b.as_ref().clone()).encode());
                }
            }
            Message::Header(b) => {
                self.counters.headers_received += 1;
                let Ok(h) = Header::decode(&b) else {
                    self.counters.bad_messages += 1;
                    self.strike(peer, "a header that does not decode");
                    return;
                };
                let hash = h.hash();
                self.log.event_at(
                    "header_received",
                    received_ns,
                    json!({"slot": h.slot, "block": hash.to_string(), "peer": peer}),
                );
                // Cheap checks before spending a request and a transfer on it.
                let current = self.genesis.slot_at(self.clock_ns());
                if h.slot > current + 1
                    || self.genesis.leader(h.slot) != h.leader
                    || h.height.saturating_add(KEEP_STATES) < self.chain.tip().height
                {
                    self.counters.headers_ignored += 1;
                    return;
                }
                if self.sync_for(&h, hash, peer) {
                    return;
                }
                self.want(hash, Some(h.slot), peer);
            }
            Message::Block(b) => self.body(peer, b, received_ns),
            Message::GetChain { to, locator } => self.serve_range(peer, to, &locator),
            Message::Chain(blocks) => self.take_range(peer, blocks, received_ns),
        }
    }

    fn peer_tx(&mut self, peer: &str, b: Vec<u8>) {
        if self.mempool.offer(&b, false) == Admit::Added {
            self.offer_to_lead(&b);
            self.relay(b, Some(peer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_entry_is_written_as_the_summary_always_had_it() {
        let e = ChainEntry {
            slot: 7,
            block: Hash([0xab; 32]),
            state_hash: Hash([0x01; 32]),
            leader: "n1".into(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!([7, "ab".repeat(32), "01".repeat(32), "n1"])
        );
    }
}
