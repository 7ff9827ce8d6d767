//! Validation rejects each kind of corruption; fork choice is a total order every node
//! computes alike.

use std::sync::Arc;

use dyno_txn::bank::transfer_block;

use super::*;
use crate::genesis::{GenesisFile, Validator};

fn genesis() -> Arc<Genesis> {
    Arc::new(
        GenesisFile {
            network: "chain".into(),
            seed: 9,
            accounts: 16,
            balance: 1_000_000,
            slot_ms: 100,
            genesis_time_ms: 0,
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

fn adopt(chain: &mut Chain, c: Checked) -> [u8; 32] {
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
    let good = chain.forge(3, g.leader(3), txs.clone()).block;
    assert!(chain.check(good.clone(), 3).is_ok());
    let check = |b: Block, now: u64| chain.check(b, now).map(|_| ()).unwrap_err();
    assert_eq!(check(good.clone(), 2), Reject::FutureSlot);
    let mut b = good.clone();
    b.header.leader = if g.leader(3) == "a" { "b" } else { "a" }.into();
    assert_eq!(check(b, 3), Reject::WrongLeader);
    let mut b = good.clone();
    b.header.parent = [1; 32];
    assert_eq!(check(b, 3), Reject::UnknownParent);
    let mut b = good.clone();
    b.header.height = 2;
    assert_eq!(check(b, 3), Reject::BadHeight);
    let mut b = good.clone();
    b.header.poh_end[5] ^= 1;
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
    let mut b = good;
    b.header.state_hash[0] ^= 1;
    assert_eq!(check(b, 3), Reject::StateMismatch);
}

#[test]
fn a_transaction_already_in_an_ancestor_is_refused_and_left_out_when_forging() {
    let g = genesis();
    let mut chain = Chain::new(g.clone());
    let txs = transfer_block(&g.accounts, 3, 2);
    let first = chain.forge(1, g.leader(1), txs.clone());
    adopt(&mut chain, first);
    let again = chain.forge(2, g.leader(2), txs.clone());
    assert_eq!(again.block.header.tx_count, 0, "the forger skips them");
    let mut b = again.block;
    (b.entries, b.header.poh_end) = Block::entries_of(b.header.poh_start, txs[..1].to_vec());
    b.header.tx_count = 1;
    assert_eq!(chain.check(b, 2).unwrap_err(), Reject::DuplicateTx);
}

#[test]
fn fork_choice_is_height_then_lowest_hash_whatever_the_arrival_order() {
    let g = genesis();
    let base = Chain::new(g.clone());
    // Two competing blocks on genesis (slots 1 and 2), then a child of the higher-hash one.
    let x = base.forge(1, g.leader(1), Vec::new());
    let y = base.forge(2, g.leader(2), transfer_block(&g.accounts, 1, 5));
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
        let child = on_loser.forge(parent_slot + 2, g.leader(parent_slot + 2), Vec::new());
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
    let a1 = c.forge(1, g.leader(1), tx.clone());
    let mut other = Chain::new(g.clone());
    let b1 = other.forge(2, g.leader(2), Vec::new());
    let b1h = adopt(&mut other, b1);
    let b2 = other.forge(3, g.leader(3), Vec::new());
    let a1h = adopt(&mut c, a1);
    assert!(c.on_best_chain(dyno_txn::tx::sig_tag(&tx[0])));
    let b1 = other.bytes(&b1h).unwrap();
    let fresh = c.check(Block::decode(&b1).unwrap(), 10).unwrap();
    adopt(&mut c, fresh);
    let fresh = c.check(b2.block, 10).unwrap();
    adopt(&mut c, fresh);
    assert_eq!(c.tip().height, 2, "the longer B chain is the tip");
    assert_eq!(c.abandoned_by_switch(&c.tip().hash), Vec::<[u8; 32]>::new());
    assert!(
        !c.on_best_chain(dyno_txn::tx::sig_tag(&tx[0])),
        "the B chain lacks it"
    );
    assert_eq!(c.abandoned_by_switch(&a1h), vec![a1h]);
}
