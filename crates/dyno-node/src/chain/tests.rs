//! Validation rejects each kind of corruption; fork choice is a total order every node
//! computes alike.

use std::sync::Arc;

use dyno_txn::bank::transfer_block;

use super::*;
use crate::genesis::{GenesisFile, Validator};
use crate::hash::Hash;

fn genesis() -> Arc<Genesis> {
    Arc::new(
        GenesisFile {
            network: "chain".into(),
            seed: 9,
            accounts: 16,
            balance: 1_000_000,
            slot_ms: 100,
            genesis_time_ms: 0,
            max_block_txs: crate::genesis::DEFAULT_MAX_BLOCK_TXS,
            validators: ["a", "b"]
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

trait ForgeOk {
    fn forge_ok(&self, slot: u64, leader: &str, txs: Vec<Vec<u8>>) -> Checked;
}

impl ForgeOk for Chain {
    fn forge_ok(&self, slot: u64, leader: &str, txs: Vec<Vec<u8>>) -> Checked {
        self.forge(slot, leader, txs).expect("a slot after the tip")
    }
}

/// Signs `b` again with its named leader's key (after a test changed its header).
fn resign(g: &Genesis, mut b: Block) -> Block {
    use ed25519_dalek::Signer;
    let key = g.leader_key(&b.header.leader).unwrap();
    b.signature = key.sign(b.header.hash().as_bytes()).to_bytes();
    b
}

fn adopt(chain: &mut Chain, c: Checked) -> Hash {
    let bytes = Arc::new(c.block.encode());
    let h = c.hash;
    chain.insert(c, bytes);
    h
}

#[test]
fn each_corruption_has_its_reason() {
    let g = genesis();
    let chain = Chain::new(g.clone());
    let txs = transfer_block(&g.accounts, 4, 1);
    let good = chain.forge_ok(3, g.leader(3), txs.clone()).block;
    assert!(chain.check(good.clone(), 3).is_ok());
    let check = |b: Block, now: u64| chain.check(resign(&g, b), now).map(|_| ()).unwrap_err();
    assert_eq!(check(good.clone(), 2), Reject::FutureSlot);
    let mut b = good.clone();
    b.header.leader = if g.leader(3) == "a" { "b" } else { "a" }.into();
    assert_eq!(check(b, 3), Reject::WrongLeader);
    let mut b = good.clone();
    b.header.parent = Hash([1; 32]);
    assert_eq!(check(b, 3), Reject::UnknownParent);
    let mut b = good.clone();
    b.header.height = 2;
    assert_eq!(check(b, 3), Reject::BadHeight);
    let mut b = good.clone();
    b.header.poh_end.0[5] ^= 1;
    assert_eq!(check(b, 3), Reject::BadPoh);
    let mut b = good.clone();
    b.entries[0].num_hashes = 0;
    assert_eq!(check(b, 3), Reject::BadPoh);
    let mut b = good.clone();
    let mut bad = txs.clone();
    bad[2][100] ^= 1;
    (b.entries, b.header.poh_end) = Block::entries_of(b.header.poh_start, bad);
    assert_eq!(check(b, 3), Reject::BadSignature);
    let mut b = good.clone();
    let twice = vec![txs[0].clone(), txs[0].clone()];
    (b.entries, b.header.poh_end) = Block::entries_of(b.header.poh_start, twice);
    b.header.tx_count = 2;
    assert_eq!(check(b, 3), Reject::DuplicateTx);
    let mut b = good.clone();
    b.header.state_hash.0[0] ^= 1;
    assert_eq!(check(b, 3), Reject::StateMismatch);
    // The network's block limit is the genesis's: a block above it is refused by its
    // header alone, whatever its body.
    let mut small = g.file.clone();
    small.max_block_txs = 3;
    let strict = Chain::new(Arc::new(small.load()));
    let g2 = strict.genesis.clone();
    let over = strict
        .forge_ok(3, g2.leader(3), transfer_block(&g2.accounts, 4, 1))
        .block;
    assert_eq!(strict.check(over, 3).unwrap_err(), Reject::TooManyTxs);
    assert!(Reject::TooManyTxs.is_header_level());
    // Unsigned after a change: nothing else is looked at.
    let mut b = good;
    b.header.state_hash.0[0] ^= 1;
    assert_eq!(chain.check(b, 3).unwrap_err(), Reject::BadLeaderSignature);
}

#[test]
fn poh_work_is_bounded_by_the_forger_shape() {
    let g = genesis();
    let chain = Chain::new(g.clone());
    let good = chain
        .forge_ok(3, g.leader(3), transfer_block(&g.accounts, 4, 1))
        .block;
    // One hash more than the forger does, with the hash chain made consistent: a peer
    // could ask for 2^50 this way and stall the node loop.
    let mut b = good.clone();
    let e = &mut b.entries[0];
    e.num_hashes = crate::block::HASHES_PER_ENTRY + 1;
    let ok = vec![true; e.txs.len()];
    let mixin = crate::block::mixin(&e.txs, &ok);
    e.hash = crate::block::next_hash(&b.header.poh_start, e.num_hashes, Some(mixin));
    b.header.poh_end = e.hash;
    assert_eq!(chain.check(resign(&g, b), 3).unwrap_err(), Reject::BadPoh);
    let mut b = good.clone();
    b.entries[0].num_hashes = 1 << 50;
    assert_eq!(chain.check(resign(&g, b), 3).unwrap_err(), Reject::BadPoh);
    // An extra tick entry, hashes consistent: a block of the tile forge has ticks
    // between its microblocks, so this one is valid (its work is bounded all the same).
    let mut b = good;
    let tick = crate::block::next_hash(&b.header.poh_end, crate::block::HASHES_PER_ENTRY, None);
    b.entries.push(crate::block::Entry {
        num_hashes: crate::block::HASHES_PER_ENTRY,
        hash: tick,
        txs: Vec::new(),
    });
    (b.header.entry_count, b.header.poh_end) = (2, tick);
    assert!(chain.check(resign(&g, b.clone()), 3).is_ok());
    // Its status changed (executed -> failed) is another chain: refused.
    b.entries[0].hash.0[0] ^= 1;
    assert_eq!(chain.check(resign(&g, b), 3).unwrap_err(), Reject::BadPoh);
}

#[test]
fn a_block_signed_by_another_than_its_named_leader_is_refused() {
    use ed25519_dalek::Signer;
    let g = genesis();
    let chain = Chain::new(g.clone());
    let leader = g.leader(3);
    let other = if leader == "a" { "b" } else { "a" };
    let mut b = chain.forge_ok(3, leader, Vec::new()).block;
    // The other validator forges the scheduled leader's block with its own key.
    b.signature = g
        .leader_key(other)
        .unwrap()
        .sign(b.header.hash().as_bytes())
        .to_bytes();
    assert_eq!(chain.check(b, 3).unwrap_err(), Reject::BadLeaderSignature);
    let ok = chain.forge_ok(3, leader, Vec::new());
    let mut c = chain;
    adopt(&mut c, ok);
    assert!(
        c.forge(3, leader, Vec::new()).is_none(),
        "tip already at slot 3"
    );
    assert!(c.forge(2, leader, Vec::new()).is_none(), "tip past slot 2");
    assert!(c.forge(4, g.leader(4), Vec::new()).is_some());
}

#[test]
fn old_bodies_are_pruned_and_headers_kept() {
    let g = genesis();
    let mut c = Chain::new(g.clone());
    let mut hashes = Vec::new();
    for slot in 1..=KEEP_BODIES + 10 {
        let b = c.forge_ok(slot, g.leader(slot), Vec::new());
        hashes.push(adopt(&mut c, b));
    }
    assert!(c.bytes(&hashes[0]).is_none(), "the oldest body is dropped");
    assert!(c.header(&hashes[0]).is_some(), "its header stays");
    assert!(c
        .bytes(&hashes[hashes.len() - 1 - KEEP_BODIES as usize])
        .is_some());
    assert_eq!(c.best_chain().len(), hashes.len());
    assert!(c.by_height.len() as u64 <= KEEP_BODIES + 1);
}

#[test]
fn a_transaction_already_in_an_ancestor_is_refused_and_left_out_when_forging() {
    let g = genesis();
    let mut chain = Chain::new(g.clone());
    let txs = transfer_block(&g.accounts, 3, 2);
    let first = chain.forge_ok(1, g.leader(1), txs.clone());
    adopt(&mut chain, first);
    let again = chain.forge_ok(2, g.leader(2), txs.clone());
    assert_eq!(again.block.header.tx_count, 0, "the forger skips them");
    let mut b = again.block;
    (b.entries, b.header.poh_end) = Block::entries_of(b.header.poh_start, txs[..1].to_vec());
    b.header.tx_count = 1;
    assert_eq!(
        chain.check(resign(&g, b), 2).unwrap_err(),
        Reject::DuplicateTx
    );
}

#[test]
fn fork_choice_is_height_then_lowest_hash_whatever_the_arrival_order() {
    let g = genesis();
    let base = Chain::new(g.clone());
    // Two competing blocks on genesis (slots 1 and 2), then a child of the higher-hash one.
    let x = base.forge_ok(1, g.leader(1), Vec::new());
    let y = base.forge_ok(2, g.leader(2), transfer_block(&g.accounts, 1, 5));
    let (xh, yh) = (x.hash, y.hash);
    let low = xh.min(yh);
    let mut tips = Vec::new();
    for order in [[0, 1], [1, 0]] {
        let mut c = Chain::new(g.clone());
        for i in order {
            let b = if i == 0 { &x } else { &y };
            let fresh = c.check(b.block.clone(), 10).unwrap();
            adopt(&mut c, fresh);
        }
        assert_eq!(c.tip().hash, low, "equal height: the lowest hash");
        tips.push(c.tip());
        // Build on the loser: height 2 beats either.
        let high = xh.max(yh);
        let parent_slot = if high == xh { 1 } else { 2 };
        let mut on_loser = Chain::new(g.clone());
        let loser = if high == xh { &x } else { &y };
        let fresh = on_loser.check(loser.block.clone(), 10).unwrap();
        adopt(&mut on_loser, fresh);
        let child = on_loser.forge_ok(parent_slot + 2, g.leader(parent_slot + 2), Vec::new());
        let fresh = c.check(child.block.clone(), 10).unwrap();
        let ch = adopt(&mut c, fresh);
        assert_eq!(c.tip().hash, ch, "the longer chain wins");
        assert_eq!(c.tip().height, 2);
        assert_eq!(c.tip().state_hash, child.block.header.state_hash);
    }
    assert_eq!(tips[0], tips[1]);
}

#[test]
fn a_fork_switch_names_the_abandoned_blocks() {
    let g = genesis();
    let mut c = Chain::new(g.clone());
    let tx = transfer_block(&g.accounts, 1, 7);
    // Tip A1 (with a transaction), then a competing chain B1 <- B2 wins.
    let a1 = c.forge_ok(1, g.leader(1), tx.clone());
    let mut other = Chain::new(g.clone());
    let b1 = other.forge_ok(2, g.leader(2), Vec::new());
    let b1h = adopt(&mut other, b1);
    let b2 = other.forge_ok(3, g.leader(3), Vec::new());
    let a1h = adopt(&mut c, a1);
    assert!(c.on_best_chain(dyno_txn::tx::sig_tag(&tx[0])));
    let b1 = other.bytes(&b1h).unwrap();
    let fresh = c.check(Block::decode(&b1).unwrap(), 10).unwrap();
    adopt(&mut c, fresh);
    let fresh = c.check(b2.block, 10).unwrap();
    adopt(&mut c, fresh);
    assert_eq!(c.tip().height, 2, "the longer B chain is the tip");
    assert_eq!(c.abandoned_by_switch(&c.tip().hash), Vec::<Hash>::new());
    assert!(
        !c.on_best_chain(dyno_txn::tx::sig_tag(&tx[0])),
        "the B chain lacks it"
    );
    assert_eq!(c.abandoned_by_switch(&a1h), vec![a1h]);
}

#[test]
fn transactions_verified_at_admission_are_not_verified_again() {
    let g = genesis();
    let chain = Chain::new(g.clone());
    let mut txs = transfer_block(&g.accounts, 2, 3);
    txs[1][70] ^= 1;
    // The forger trusts its candidates (admission verified them): this block carries a
    // transaction whose signature fails.
    let b = chain.forge_ok(3, g.leader(3), txs.clone()).block;
    assert_eq!(chain.check(b.clone(), 3).unwrap_err(), Reject::BadSignature);
    let bad = txs[1].clone();
    let known = move |t: &[u8]| t == bad.as_slice();
    assert!(
        chain.check_with(b.clone(), 3, &known).is_ok(),
        "not verified again"
    );
    let other = txs[0].clone();
    let known = move |t: &[u8]| t == other.as_slice();
    assert_eq!(
        chain.check_with(b, 3, &known).unwrap_err(),
        Reject::BadSignature,
        "only the bytes vouched for skip the check"
    );
}

#[test]
fn a_follower_validating_on_many_threads_judges_as_on_one() {
    let g = genesis();
    let txs = transfer_block(&g.accounts, 200, 4);
    let layouts = [1, 2, 5]
        .into_iter()
        .flat_map(|t| [1, 7, 64].map(|b| (t, b)));
    for (threads, batch) in layouts {
        let chain = Chain::new(g.clone())
            .with_verify_threads(threads)
            .with_verify_batch(batch);
        let good = chain.forge_ok(3, g.leader(3), txs.clone()).block;
        assert!(chain.check(good, 3).is_ok(), "{threads} threads");
        // A bad signature in the last chunk, whichever thread checks it.
        let mut bad = txs.clone();
        bad[190][70] ^= 1;
        let b = chain.forge_ok(3, g.leader(3), bad).block;
        assert_eq!(
            chain.check(b, 3).unwrap_err(),
            Reject::BadSignature,
            "{threads} threads, batches of {batch}"
        );
    }
}

#[test]
fn a_chain_replaying_on_several_threads_judges_as_one_thread() {
    let g = genesis();
    let one = Chain::new(g.clone());
    let four = Chain::new(g.clone()).with_replay_threads(4);
    // Enough transactions for the parallel path (several hundred per thread), over 16
    // accounts: conflicts everywhere.
    let txs = transfer_block(&g.accounts, 1_500, 6);
    let good = one.forge_ok(3, g.leader(3), txs.clone());
    let by_four = four.forge_ok(3, g.leader(3), txs);
    assert_eq!(good.hash, by_four.hash, "the same block, forged either way");
    let (a, b) = (
        one.check(good.block.clone(), 3).unwrap(),
        four.check(good.block.clone(), 3).unwrap(),
    );
    assert_eq!(
        (a.hash, &a.balances, &a.outcomes),
        (b.hash, &b.balances, &b.outcomes)
    );
    let judged = |b: Block| {
        (
            one.check(resign(&g, b.clone()), 3).map(|c| c.hash),
            four.check(resign(&g, b), 3).map(|c| c.hash),
        )
    };
    let mut bad = good.block.clone();
    bad.header.state_hash.0[0] ^= 1;
    assert_eq!(
        judged(bad),
        (Err(Reject::StateMismatch), Err(Reject::StateMismatch))
    );
    // A transaction that does not decode, late in the block.
    let mut bad = good.block.clone();
    let last = bad.entries.len() - 1;
    bad.entries[last].txs[0].truncate(100);
    assert_eq!(
        judged(bad),
        (Err(Reject::BadSignature), Err(Reject::BadSignature))
    );
    // Two transactions swapped across entries: the PoH records no longer match.
    let mut bad = good.block.clone();
    let t = bad.entries[0].txs[0].clone();
    bad.entries[0].txs[0] = bad.entries[last].txs[0].clone();
    bad.entries[last].txs[0] = t;
    assert_eq!(judged(bad), (Err(Reject::BadPoh), Err(Reject::BadPoh)));
}
