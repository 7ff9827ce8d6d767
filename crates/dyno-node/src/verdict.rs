//! What validation says about a block and what a leader builds on: the types the
//! block tree (`chain`) and the entry-by-entry sealer (`seal`) both use. They live below
//! both, so `seal` does not import `chain`'s file for them while `chain` imports `seal`'s
//! (no file circle: this module imports neither).

use std::sync::Arc;

use crate::block::Block;
use crate::hash::Hash;

/// Why a block was refused (the `reason` of a `rejected` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
///
/// Bytes that are not a block never get here: they are refused as the peer's message
/// (`refused`, `malformed_block`), since their hash is only what they claim.
pub enum Reject {
    /// More transactions than the genesis's `max_block_txs`.
    TooManyTxs,
    /// The leader is not the slot's scheduled leader.
    WrongLeader,
    /// The parent is unknown (the caller fetches it first).
    UnknownParent,
    /// The parent's state is no longer kept.
    ParentTooOld,
    /// Height is not the parent's plus one, or the slot not after the parent's.
    BadHeight,
    /// The PoH chain does not start at the parent's end, or an entry's hash is wrong.
    BadPoh,
    /// A transaction does not decode or its signature does not verify.
    BadSignature,
    /// A transaction already in the block or its recent ancestors.
    DuplicateTx,
    /// Replay ends in another state hash than the header's.
    StateMismatch,
    /// The block is from a slot that has not started yet.
    FutureSlot,
    /// The signature is not the named leader's signature of the block hash.
    BadLeaderSignature,
}

impl Reject {
    /// snake_case name for the log and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Reject::TooManyTxs => "too_many_txs",
            Reject::WrongLeader => "wrong_leader",
            Reject::UnknownParent => "unknown_parent",
            Reject::ParentTooOld => "parent_too_old",
            Reject::BadHeight => "bad_height",
            Reject::BadPoh => "bad_poh",
            Reject::BadSignature => "bad_signature",
            Reject::DuplicateTx => "duplicate_tx",
            Reject::StateMismatch => "state_mismatch",
            Reject::FutureSlot => "future_slot",
            Reject::BadLeaderSignature => "bad_leader_signature",
        }
    }

    /// The failure is the header's (every copy of this block hash fails alike, so the
    /// hash can be refused for good; `UnknownParent` reaches a verdict only for a child
    /// of a refused block, the caller fetches other parents); otherwise it is this copy
    /// of the body's, and another peer may serve a good one.
    pub fn is_header_level(self) -> bool {
        matches!(
            self,
            Reject::WrongLeader
                | Reject::BadHeight
                | Reject::ParentTooOld
                | Reject::UnknownParent
                | Reject::TooManyTxs
        )
    }

    /// Every reason (metrics list them all, zero or not).
    pub const ALL: [Reject; 11] = [
        Reject::TooManyTxs,
        Reject::WrongLeader,
        Reject::UnknownParent,
        Reject::ParentTooOld,
        Reject::BadHeight,
        Reject::BadPoh,
        Reject::BadSignature,
        Reject::DuplicateTx,
        Reject::StateMismatch,
        Reject::FutureSlot,
        Reject::BadLeaderSignature,
    ];
}

/// A block that passed validation, ready to insert.
#[derive(Debug)]
pub struct Checked {
    /// The block hash.
    pub hash: Hash,
    /// The block.
    pub block: Block,
    pub(crate) balances: Vec<u64>,
    /// Signature tags of its transactions, with whether each executed (else failed).
    pub outcomes: Vec<(u128, bool)>,
}

/// What a leader builds its block on (`Chain::forge_base` in `chain`).
#[derive(Debug, Clone)]
pub struct ForgeBase {
    /// The tip's hash.
    pub parent: Hash,
    /// Balances after the tip.
    pub balances: Arc<Vec<u64>>,
    /// The tip's height.
    pub height: u64,
    /// The tip's PoH end (the new block's PoH start).
    pub poh_start: Hash,
}
