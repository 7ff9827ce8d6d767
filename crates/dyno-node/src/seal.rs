//! Sealing a block entry by entry, as the poh tile records them: each entry is replayed
//! through a sequential bank on arrival (as every follower will replay it) and its PoH
//! link checked with the statuses that replay finds, so when the slot ends only the
//! last entries are left to replay before the header is signed.

use std::sync::Arc;

use ed25519_dalek::Signer;

use dyno_txn::bank::{execute, AccountStore, Outcome};
use dyno_txn::tx;

use crate::block::{Block, Entry, Header, HASHES_PER_ENTRY};
use crate::genesis::Genesis;
use crate::hash::Hash;
use crate::verdict::{Checked, ForgeBase, Reject};

/// A block being sealed on a [`ForgeBase`].
pub struct Sealer {
    genesis: Arc<Genesis>,
    base: ForgeBase,
    store: AccountStore,
    outcomes: Vec<(u128, bool)>,
    entries: Vec<Entry>,
    /// The PoH chain's hash after the last entry pushed.
    prev: Hash,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("entries", &self.entries.len())
            .field("txs", &self.outcomes.len())
            .finish()
    }
}

impl Sealer {
    /// A block with no entry yet on `base`.
    pub fn new(genesis: Arc<Genesis>, base: ForgeBase) -> Sealer {
        let store = AccountStore::restore(&genesis.accounts, &base.balances)
            .expect("snapshots have the genesis account count");
        Sealer {
            prev: base.poh_start,
            genesis,
            base,
            store,
            outcomes: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Transactions in the entries pushed so far.
    pub fn txs(&self) -> usize {
        self.outcomes.len()
    }

    /// Replays `e` after the entries pushed so far and checks its PoH link; an error
    /// (and nothing kept of `e`) when a transaction does not decode or the link does
    /// not hold: a follower would refuse the block.
    pub fn push(&mut self, e: Entry) -> Result<(), Reject> {
        if e.num_hashes > HASHES_PER_ENTRY {
            return Err(Reject::BadPoh);
        }
        let mut decoded = Vec::with_capacity(e.txs.len());
        for t in &e.txs {
            decoded.push(tx::decode(t).map_err(|_| Reject::BadSignature)?);
        }
        let mut ok = Vec::with_capacity(e.txs.len());
        for (t, d) in e.txs.iter().zip(&decoded) {
            let seed = u64::from_le_bytes(d.signature[..8].try_into().expect("8"));
            let (o, _) = execute(&self.store, &d.message, seed);
            ok.push(o == Outcome::Executed);
            self.outcomes.push((tx::sig_tag(t), o == Outcome::Executed));
        }
        let mixin = (!e.txs.is_empty()).then(|| crate::block::mixin(&e.txs, &ok));
        if crate::block::next_hash(&self.prev, e.num_hashes, mixin) != e.hash {
            // The bank already ran these: the sealer is spoiled; the caller drops it.
            return Err(Reject::BadPoh);
        }
        self.prev = e.hash;
        self.entries.push(e);
        Ok(())
    }

    /// Signs the block of `slot` led by `leader` with the entries pushed; an error
    /// when `leader` is not a validator.
    pub fn finish(self, slot: u64, leader: &str) -> Result<Checked, Reject> {
        let key = self.genesis.leader_key(leader).ok_or(Reject::WrongLeader)?;
        let header = Header {
            slot,
            height: self.base.height + 1,
            parent: self.base.parent,
            leader: leader.to_string(),
            entry_count: self.entries.len() as u32,
            poh_start: self.base.poh_start,
            poh_end: self.prev,
            tx_count: self.outcomes.len() as u32,
            state_hash: Hash(dyno_txn::bank::state_hash_of(&self.store.balances())),
        };
        let hash = header.hash();
        Ok(Checked {
            hash,
            block: Block {
                header,
                signature: key.sign(hash.as_bytes()).to_bytes(),
                entries: self.entries,
            },
            balances: self.store.balances(),
            outcomes: self.outcomes,
        })
    }
}
