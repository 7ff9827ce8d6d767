//! The block tree of one node: validation with replay, fork choice, and forging on the
//! chosen tip.
//!
//! Every valid block is kept with the balances after it (a snapshot), so switching forks
//! is choosing another tip: the state of any recent block is at hand, nothing is undone.
//! Snapshots of blocks more than [`KEEP_STATES`] below the tip are dropped; a block built
//! on one of those is refused (`parent_too_old`). Bodies and transaction tags are kept
//! [`KEEP_BODIES`] heights below the tip (a fork from the oldest kept state still sees
//! its whole replay window), only the header after that. Pruning walks the heights that
//! left a window since the last tip change, not every block.
//!
//! Fork choice: the highest block wins; at equal height, the lowest block hash. It is a
//! total order on blocks every node computes alike, so nodes that hold the same blocks
//! hold the same tip.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use dyno_txn::bank::{AccountStore, Outcome};
use dyno_txn::replay;
use dyno_txn::tx;

use crate::block::{Block, Entry, Header, HASHES_PER_ENTRY};
use crate::genesis::Genesis;
use crate::hash::Hash;
use crate::seal::Sealer;
pub use crate::verdict::{Checked, ForgeBase, Reject};

/// Heights below the tip whose state snapshots are kept (the deepest fork switch).
pub const KEEP_STATES: u64 = 64;
/// Ancestors searched for a repeated transaction (replay protection window, in blocks).
pub const DEDUP_DEPTH: usize = 256;
/// Heights below the tip whose bodies and transaction tags are kept: a child of the
/// oldest kept state searches [`DEDUP_DEPTH`] ancestors below it.
pub const KEEP_BODIES: u64 = KEEP_STATES + DEDUP_DEPTH as u64;

#[derive(Debug)]
struct Node {
    header: Header,
    bytes: Option<Arc<Vec<u8>>>,
    balances: Option<Arc<Vec<u64>>>,
    /// Its transactions' tags, with whether each executed.
    tags: tx::TagMap<bool>,
    /// It has been on the best chain (its `adopted` is logged once).
    adopted: bool,
}

/// What a child block builds on: balances, height, slot (none at genesis), PoH end.
type ParentState = (Arc<Vec<u64>>, u64, Option<u64>, Hash);

/// The block tree.
#[derive(Debug)]
pub struct Chain {
    genesis: Arc<Genesis>,
    blocks: HashMap<Hash, Node>,
    genesis_balances: Arc<Vec<u64>>,
    tip: Hash,
    /// Blocks by height, for heights whose body is still kept.
    by_height: BTreeMap<u64, Vec<Hash>>,
    /// Heights below this have no state snapshot.
    states_from: u64,
    /// Threads a block's signatures are checked on ([`crate::verify::verify_all`]).
    verify_threads: usize,
    /// Signatures checked as one batch on each of those threads.
    verify_batch: usize,
    /// Threads a block's transactions are decoded and executed on ([`replay`]).
    replay_threads: usize,
}

/// What the chain's tip is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tip {
    /// Block hash (the genesis hash before any block).
    pub hash: Hash,
    /// Height.
    pub height: u64,
    /// Slot (none at genesis).
    pub slot: Option<u64>,
    /// State hash.
    pub state_hash: Hash,
}

impl Chain {
    /// The chain at genesis.
    pub fn new(genesis: Arc<Genesis>) -> Chain {
        let balances = Arc::new(vec![genesis.file.balance; genesis.file.accounts]);
        Chain {
            tip: genesis.hash,
            genesis,
            blocks: HashMap::new(),
            genesis_balances: balances,
            by_height: BTreeMap::new(),
            states_from: 0,
            verify_threads: 1,
            verify_batch: crate::verify::DEFAULT_VERIFY_BATCH,
            replay_threads: 1,
        }
    }

    /// Decodes and executes a block's transactions on up to `n` threads
    /// ([`dyno_txn::replay`]); the outcomes, the state and so every verdict are those of
    /// one thread.
    pub fn with_replay_threads(mut self, n: usize) -> Chain {
        self.replay_threads = n.max(1);
        self
    }

    /// Checks blocks' signatures on `n` threads (a follower keeping up with a leader
    /// whose ingress verifies on many); the verdicts are those of one thread.
    pub fn with_verify_threads(mut self, n: usize) -> Chain {
        self.verify_threads = n.max(1);
        self
    }

    /// Checks a block's signatures in batches of `n` (1: one by one); the verdicts are
    /// those of single verification (one ZIP 215 rule, [`dyno_txn::sig`]).
    pub fn with_verify_batch(mut self, n: usize) -> Chain {
        self.verify_batch = n.max(1);
        self
    }

    /// The block with this hash is held (or is genesis).
    pub fn contains(&self, hash: &Hash) -> bool {
        *hash == self.genesis.hash || self.blocks.contains_key(hash)
    }

    /// The encoded block (to serve a fetch); none when unknown or pruned.
    pub fn bytes(&self, hash: &Hash) -> Option<Arc<Vec<u8>>> {
        self.blocks.get(hash).and_then(|n| n.bytes.clone())
    }

    /// The header of a held block.
    pub fn header(&self, hash: &Hash) -> Option<&Header> {
        self.blocks.get(hash).map(|n| &n.header)
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True before any block.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The chosen tip.
    pub fn tip(&self) -> Tip {
        match self.blocks.get(&self.tip) {
            None => Tip {
                hash: self.genesis.hash,
                height: 0,
                slot: None,
                state_hash: Hash(dyno_txn::bank::state_hash_of(&self.genesis_balances)),
            },
            Some(n) => Tip {
                hash: self.tip,
                height: n.header.height,
                slot: Some(n.header.slot),
                state_hash: n.header.state_hash,
            },
        }
    }

    /// Hashes from the tip back to genesis (excluded), tip first.
    pub fn best_chain(&self) -> Vec<Hash> {
        let mut out = Vec::new();
        let mut h = self.tip;
        while let Some(n) = self.blocks.get(&h) {
            out.push(h);
            h = n.header.parent;
        }
        out
    }

    /// Blocks on the chain ending at `old_tip` that are not on the chain ending at the
    /// current tip (what a fork switch abandoned), newest first; empty when the current
    /// tip extends `old_tip`.
    pub fn abandoned_by_switch(&self, old_tip: &Hash) -> Vec<Hash> {
        let mut on_best = HashSet::new();
        let mut h = self.tip;
        let old_height = self.blocks.get(old_tip).map_or(0, |n| n.header.height);
        while let Some(n) = self.blocks.get(&h) {
            if n.header.height < old_height.saturating_sub(KEEP_STATES) {
                break;
            }
            on_best.insert(h);
            h = n.header.parent;
        }
        let mut out = Vec::new();
        let mut h = *old_tip;
        while let Some(n) = self.blocks.get(&h) {
            if on_best.contains(&h) || out.len() as u64 > KEEP_STATES {
                break;
            }
            out.push(h);
            h = n.header.parent;
        }
        out
    }

    /// Blocks on the best chain that are not on the chain ending at `old_tip` (what a
    /// switch from `old_tip` selected), oldest first.
    pub fn selected_by_switch(&self, old_tip: &Hash) -> Vec<Hash> {
        let mut on_old = HashSet::new();
        let mut h = *old_tip;
        while let Some(n) = self.blocks.get(&h) {
            if on_old.len() as u64 > KEEP_BODIES {
                break;
            }
            on_old.insert(h);
            h = n.header.parent;
        }
        let mut out = Vec::new();
        let mut h = self.tip;
        while let Some(n) = self.blocks.get(&h) {
            if on_old.contains(&h) || out.len() as u64 > KEEP_BODIES {
                break;
            }
            out.push(h);
            h = n.header.parent;
        }
        out.reverse();
        out
    }

    /// Marks `hash` as having been on the best chain; returns its header and its
    /// transactions' (tag, executed) the first time, none after (or when unknown).
    pub fn mark_adopted(&mut self, hash: &Hash) -> Option<(Header, Vec<(u128, bool)>)> {
        let n = self.blocks.get_mut(hash)?;
        if n.adopted {
            return None;
        }
        n.adopted = true;
        Some((
            n.header.clone(),
            n.tags.iter().map(|(t, e)| (*t, *e)).collect(),
        ))
    }

    /// A transaction with this tag is on the best chain (within [`DEDUP_DEPTH`] blocks).
    pub fn on_best_chain(&self, tag: u128) -> bool {
        self.seen_in_ancestry(&self.tip.clone(), tag)
    }

    fn state_of(&self, hash: &Hash) -> Result<ParentState, Reject> {
        if *hash == self.genesis.hash {
            return Ok((self.genesis_balances.clone(), 0, None, self.genesis.hash));
        }
        let n = self.blocks.get(hash).ok_or(Reject::UnknownParent)?;
        let b = n.balances.clone().ok_or(Reject::ParentTooOld)?;
        Ok((b, n.header.height, Some(n.header.slot), n.header.poh_end))
    }

    /// A transaction with this tag is in `from` or one of its [`DEDUP_DEPTH`] ancestors.
    fn seen_in_ancestry(&self, from: &Hash, tag: u128) -> bool {
        let mut h = *from;
        for _ in 0..DEDUP_DEPTH {
            match self.blocks.get(&h) {
                Some(n) if n.tags.contains_key(&tag) => return true,
                Some(n) => h = n.header.parent,
                None => return false,
            }
        }
        false
    }

    /// Validates `block`: the leader's signature first (nothing else is worked on for
    /// an unsigned block), then slot, leader, parent, height, the shape and PoH chain of
    /// the entries, every transaction signature, no repeated transaction, and replay to
    /// the header's state hash. `current_slot` is the slot running now (blocks from
    /// later slots are refused).
    pub fn check(&self, block: Block, current_slot: u64) -> Result<Checked, Reject> {
        self.check_with(block, current_slot, &|_| false)
    }

    /// [`Chain::check`], skipping the signature check of each transaction for which
    /// `verified` says its exact bytes were verified already (the node's mempool
    /// holds them: they were checked at admission, so a block of relayed transactions
    /// costs no second verification).
    pub fn check_with(
        &self,
        block: Block,
        current_slot: u64,
        verified: &(dyn Fn(&[u8]) -> bool + Sync),
    ) -> Result<Checked, Reject> {
        let h = &block.header;
        let Some(key) = self.genesis.leader_verifying_key(&h.leader) else {
            return Err(Reject::WrongLeader);
        };
        let hash = h.hash();
        // The seal is judged by the rule every signature in the chain is (ZIP 215).
        if !dyno_txn::sig::verify(&key.to_bytes(), hash.as_bytes(), &block.signature) {
            return Err(Reject::BadLeaderSignature);
        }
        if h.slot > current_slot {
            return Err(Reject::FutureSlot);
        }
        if self.genesis.leader(h.slot) != h.leader {
            return Err(Reject::WrongLeader);
        }
        if h.tx_count > self.genesis.file.max_block_txs {
            return Err(Reject::TooManyTxs);
        }
        let (balances, height, slot, poh_end) = self.state_of(&h.parent)?;
        if h.height != height + 1 || slot.is_some_and(|s| h.slot <= s) {
            return Err(Reject::BadHeight);
        }
        // At most HASHES_PER_ENTRY hashes per entry (the tick length every forger
        // uses), so the PoH work a peer can ask of this node is bounded by the bytes it
        // sent (a claimed 2^50 hashes would stall the loop). Checked before any work.
        if h.poh_start != poh_end
            || h.entry_count as usize != block.entries.len()
            || block
                .entries
                .iter()
                .any(|e| e.num_hashes > HASHES_PER_ENTRY)
        {
            return Err(Reject::BadPoh);
        }
        let txs: Vec<&[u8]> = block.txs().map(Vec::as_slice).collect();
        if replay::first_undecodable(&txs, self.replay_threads).is_some()
            || crate::verify::verify_all(&txs, self.verify_threads, self.verify_batch, verified)
                .is_err()
        {
            return Err(Reject::BadSignature);
        }
        let mut tags = tx::TagSet::default();
        for t in block.txs() {
            let tag = tx::sig_tag(t);
            if !tags.insert(tag) || self.seen_in_ancestry(&h.parent, tag) {
                return Err(Reject::DuplicateTx);
            }
        }
        let (after, outcomes) = self.replay(&balances, &txs);
        // The chain mixes in each entry's records (signature and status), so it is
        // checked with the statuses this replay found.
        let mut prev = h.poh_start;
        let mut at = 0;
        for e in &block.entries {
            let mixin = (!e.txs.is_empty()).then(|| {
                let ok: Vec<bool> = outcomes[at..at + e.txs.len()].iter().map(|o| o.1).collect();
                crate::block::mixin(&e.txs, &ok)
            });
            at += e.txs.len();
            if crate::block::next_hash(&prev, e.num_hashes, mixin) != e.hash {
                return Err(Reject::BadPoh);
            }
            prev = e.hash;
        }
        if prev != h.poh_end {
            return Err(Reject::BadPoh);
        }
        if Hash(dyno_txn::bank::state_hash_of(&after)) != h.state_hash {
            return Err(Reject::StateMismatch);
        }
        Ok(Checked {
            hash,
            block,
            balances: after,
            outcomes,
        })
    }

    /// Executes `txs` (every one decodes: the caller checked) on `balances`
    /// ([`replay::replay`] on the chain's replay threads): the balances after them and
    /// each one's (signature tag, executed).
    fn replay<B: AsRef<[u8]> + Sync>(
        &self,
        balances: &[u64],
        txs: &[B],
    ) -> (Vec<u64>, Vec<(u128, bool)>) {
        let store = AccountStore::restore(&self.genesis.accounts, balances)
            .expect("snapshots have the genesis account count");
        let done = replay::replay(&store, txs, self.replay_threads)
            .expect("the caller checked that every transaction decodes");
        let outcomes = txs
            .iter()
            .zip(done)
            .map(|(t, (o, _))| (tx::sig_tag(t.as_ref()), o == Outcome::Executed))
            .collect();
        (store.balances(), outcomes)
    }

    /// Inserts a checked block; returns true when it became the tip.
    pub fn insert(&mut self, c: Checked, bytes: Arc<Vec<u8>>) -> bool {
        let tags = c.outcomes.iter().copied().collect();
        let header = c.block.header;
        let better = self.better(&header, &c.hash);
        self.by_height
            .entry(header.height)
            .or_default()
            .push(c.hash);
        self.blocks.insert(
            c.hash,
            Node {
                header,
                bytes: Some(bytes),
                balances: Some(Arc::new(c.balances)),
                tags,
                adopted: false,
            },
        );
        if better {
            self.tip = c.hash;
            self.prune();
        }
        better
    }

    fn better(&self, h: &Header, hash: &Hash) -> bool {
        let t = self.tip();
        (h.height, std::cmp::Reverse(*hash)) > (t.height, std::cmp::Reverse(t.hash))
    }

    /// Drops the snapshots of heights that fell more than [`KEEP_STATES`] below the tip
    /// and the bodies and tags of heights more than [`KEEP_BODIES`] below, visiting only
    /// the heights that crossed since the last call (the tip only rises, so do both).
    fn prune(&mut self) {
        let tip = self.tip().height;
        let states_from = tip.saturating_sub(KEEP_STATES);
        if states_from > self.states_from {
            for hashes in self
                .by_height
                .range(self.states_from..states_from)
                .map(|e| e.1)
            {
                for h in hashes {
                    if let Some(n) = self.blocks.get_mut(h) {
                        n.balances = None;
                    }
                }
            }
            self.states_from = states_from;
        }
        let bodies_from = tip.saturating_sub(KEEP_BODIES);
        let kept = self.by_height.split_off(&bodies_from);
        for h in std::mem::replace(&mut self.by_height, kept)
            .into_values()
            .flatten()
        {
            if let Some(n) = self.blocks.get_mut(&h) {
                (n.bytes, n.balances, n.tags) = (None, None, tx::TagMap::default());
            }
        }
    }

    /// The tip's state a leader forges on: balances, height and PoH end; none when the
    /// tip is already at `slot` or later (a block there could only be refused).
    pub fn forge_base(&self, slot: u64) -> Option<ForgeBase> {
        if self.tip().slot.is_some_and(|s| s >= slot) {
            return None;
        }
        let (balances, height, _, poh_end) = self
            .state_of(&self.tip)
            .expect("the tip's state is always kept");
        Some(ForgeBase {
            parent: self.tip,
            balances,
            height,
            poh_start: poh_end,
        })
    }

    /// The candidates a block on the tip may hold, in order: each decodes, appears once,
    /// and is not in the tip's recent ancestry.
    pub fn admissible(&self, candidates: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let mut tags = tx::TagSet::default();
        candidates
            .into_iter()
            .filter(|t| {
                let tag = tx::sig_tag(t);
                tx::decode(t).is_ok() && tags.insert(tag) && !self.seen_in_ancestry(&self.tip, tag)
            })
            .collect()
    }

    /// Forges the block of `slot` led by `leader` on the tip from `candidates` (already
    /// verified at admission) with a sequential bank: keeps the [`Chain::admissible`]
    /// ones, executes them in order, signs it with the leader's key. Returns the block
    /// (validated by construction); none when the tip is already at `slot` or later or
    /// `leader` is not a validator.
    pub fn forge(&self, slot: u64, leader: &str, candidates: Vec<Vec<u8>>) -> Option<Checked> {
        let base = self.forge_base(slot)?;
        let txs = self.admissible(candidates);
        let (_, outcomes) = self.replay(&base.balances, &txs);
        let executed: Vec<bool> = outcomes.iter().map(|o| o.1).collect();
        let (entries, _) = Block::entries_with(base.poh_start, txs, &executed);
        self.seal(slot, leader, &base, entries).ok()
    }

    /// Seals a block of `slot` on `base` from `entries` (the PoH entries in the order
    /// they were recorded, from `base.poh_start`): replays them sequentially, as every
    /// follower will, checks that the PoH chain holds with the statuses that replay
    /// finds, takes the state hash from it and signs. An error when `leader` is not a
    /// validator or the entries are not a chain from the tip a follower would accept.
    pub fn seal(
        &self,
        slot: u64,
        leader: &str,
        base: &ForgeBase,
        entries: Vec<Entry>,
    ) -> Result<Checked, Reject> {
        let mut sealer = self.sealer(base.clone());
        for e in entries {
            sealer.push(e)?;
        }
        sealer.finish(slot, leader)
    }

    /// A block to seal entry by entry on `base` (see [`Sealer`]).
    pub fn sealer(&self, base: ForgeBase) -> Sealer {
        Sealer::new(self.genesis.clone(), base)
    }

    /// `t` may go into a block on the tip: it decodes and is not in the tip's recent
    /// ancestry (a block's own repeats are the caller's to exclude).
    pub fn fresh_on_tip(&self, t: &[u8]) -> bool {
        tx::decode(t).is_ok() && !self.seen_in_ancestry(&self.tip, tx::sig_tag(t))
    }
}

#[cfg(test)]
mod tests;
