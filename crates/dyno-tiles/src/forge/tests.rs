//! The tile forge against a sequential replay: same statuses, same balances, a PoH
//! chain a follower recomputes, slot after slot on the state it is given.

use sha2::{Digest, Sha256};

use super::*;
use crate::bank::{execute, fund_initial_accounts, transfer_block, Outcome};
use crate::ledger::{hash_once, mix};

/// Replays `entries` on `balances` one transaction at a time; returns the balances and
/// checks every entry's hash from `start` with the statuses the replay found.
fn replay(g: &Genesis, balances: &[u64], start: [u8; 32], entries: &[ForgedEntry]) -> Vec<u64> {
    let store = AccountStore::restore(g, balances).unwrap();
    let mut prev = start;
    for e in entries {
        let mut records = Vec::new();
        for (t, ok) in e.txs.iter().zip(&e.executed) {
            let d = crate::tx::decode(t).unwrap();
            let seed = u64::from_le_bytes(d.signature[..8].try_into().unwrap());
            let (o, _) = execute(&store, &d.message, seed);
            assert_eq!(
                o == Outcome::Executed,
                *ok,
                "the bank's status is the replay's"
            );
            records.extend_from_slice(&t[..64]);
            records.push(!ok as u8);
        }
        let mut h = prev;
        for _ in 0..e.num_hashes {
            h = hash_once(&h);
        }
        if !e.txs.is_empty() {
            h = mix(&h, &Sha256::digest(&records).into());
        }
        assert!(e.num_hashes <= 64, "at most a tick of hashes per entry");
        assert_eq!(h, e.hash, "the entry's hash follows from its predecessor");
        prev = h;
    }
    store.balances()
}

#[test]
fn slots_forged_by_the_tiles_replay_to_the_same_state() {
    let g = Arc::new(fund_initial_accounts(32, 1_000_000, 3));
    let mut forge = TileForge::start(&ForgeConfig::default(), g.clone()).unwrap();
    let until = || Instant::now() + Duration::from_secs(20);
    let genesis_balances = AccountStore::new(&g).balances();
    // More than IN_FLIGHT, so feeding waits for poh to record.
    let txs = transfer_block(&g, IN_FLIGHT + 500, 1);
    let one = forge
        .forge(&genesis_balances, [7; 32], &txs, until(), until())
        .unwrap();
    assert_eq!(one.unrecorded, 0);
    let recorded: usize = one.entries.iter().map(|e| e.txs.len()).sum();
    assert_eq!(
        recorded,
        IN_FLIGHT + 500,
        "every transaction is in one entry"
    );
    let after_one = replay(&g, &genesis_balances, [7; 32], &one.entries);
    assert_eq!(after_one, one.balances);
    assert_ne!(after_one, genesis_balances);
    // The next slot builds on the state it is given (here: the first slot's), with the
    // PoH chain starting where it is told, on the same threads.
    let end = one.entries.last().unwrap().hash;
    let two = forge
        .forge(
            &after_one,
            end,
            &transfer_block(&g, 100, 2),
            until(),
            until(),
        )
        .unwrap();
    assert_eq!(replay(&g, &after_one, end, &two.entries), two.balances);
    // A fork: the genesis state again, other transactions.
    let three = forge
        .forge(
            &genesis_balances,
            [1; 32],
            &transfer_block(&g, 50, 3),
            until(),
            until(),
        )
        .unwrap();
    assert_eq!(
        replay(&g, &genesis_balances, [1; 32], &three.entries),
        three.balances
    );
    let empty = forge.forge(&after_one, end, &[], until(), until()).unwrap();
    assert!(empty.entries.is_empty() && empty.balances == after_one);
    // Feeding already over: nothing is fed, nothing recorded, all of it left over.
    let past = Instant::now();
    let none = forge
        .forge(&after_one, end, &transfer_block(&g, 10, 4), past, until())
        .unwrap();
    assert_eq!((none.entries.len(), none.unrecorded), (0, 10));
    forge.shutdown();
}

#[test]
fn a_slot_forged_in_steps_takes_transactions_fed_while_it_runs() {
    let g = Arc::new(fund_initial_accounts(32, 1_000_000, 3));
    let mut forge = TileForge::start(&ForgeConfig::default(), g.clone()).unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let base = AccountStore::new(&g).balances();
    assert!(!forge.feed(&transfer_block(&g, 1, 9)[0]), "no slot open");
    let txs = transfer_block(&g, 300, 5);
    forge.begin(&base, [3; 32], until).unwrap();
    let mut entries = Vec::new();
    let mut fed = 0;
    // The first half, then what poh recorded of it, then the rest: a transaction fed
    // after entries were taken lands in the same slot.
    for (i, t) in txs.iter().enumerate() {
        if i == 150 {
            while entries
                .iter()
                .map(|e: &ForgedEntry| e.txs.len())
                .sum::<usize>()
                == 0
            {
                entries.extend(forge.entries(Duration::from_millis(5)).unwrap());
            }
        }
        while !forge.feed(t) {
            entries.extend(forge.entries(Duration::from_millis(1)).unwrap());
        }
        fed += 1;
    }
    assert_eq!(forge.fed(), fed);
    let done = forge.finish(until).unwrap();
    entries.extend(done.entries);
    let recorded: Vec<&Vec<u8>> = entries.iter().flat_map(|e| &e.txs).collect();
    assert_eq!(
        recorded.len(),
        300,
        "every transaction fed is recorded once"
    );
    assert_eq!(replay(&g, &base, [3; 32], &entries), done.balances);
    // The next slot starts on this one's end, on its own block's state: ticks poh
    // recorded after the block's last entry are not taken for the new slot's.
    let end = entries.last().unwrap().hash;
    std::thread::sleep(Duration::from_millis(5));
    let next = forge
        .forge(
            &done.balances,
            end,
            &transfer_block(&g, 20, 6),
            until,
            until,
        )
        .unwrap();
    assert_eq!(
        replay(&g, &done.balances, end, &next.entries),
        next.balances
    );
    assert!(forge.finish(until).is_err(), "no slot open");
    forge.shutdown();
}

#[test]
fn without_verify_tiles_checked_transactions_go_straight_to_dedup() {
    let g = Arc::new(fund_initial_accounts(32, 1_000_000, 3));
    let cfg = ForgeConfig {
        verify_tiles: 0,
        ..ForgeConfig::default()
    };
    let mut forge = TileForge::start(&cfg, g.clone()).unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let base = AccountStore::new(&g).balances();
    let txs = transfer_block(&g, 200, 8);
    let slot = forge.forge(&base, [4; 32], &txs, until, until).unwrap();
    let recorded: usize = slot.entries.iter().map(|e| e.txs.len()).sum();
    assert_eq!(recorded, 200);
    assert_eq!(replay(&g, &base, [4; 32], &slot.entries), slot.balances);
    forge.shutdown();
}

#[test]
fn several_banks_on_hot_accounts_record_an_order_they_executed_in() {
    // Six accounts shared by every transfer, three banks: pack keeps sending conflicting
    // microblocks to different banks. Poh must record them in the order they ran (pack
    // releases a microblock's locks only once poh recorded it), or a sequential replay
    // of the entries, which is what a follower does, reaches other balances or statuses.
    // Small balances make some transfers fail, so the statuses depend on the order too.
    let g = Arc::new(fund_initial_accounts(6, 3_000, 4));
    let mut forge = TileForge::start(&ForgeConfig::with_banks(3), g.clone()).unwrap();
    let until = || Instant::now() + Duration::from_secs(20);
    let genesis_balances = AccountStore::new(&g).balances();
    for round in 0..3u64 {
        let txs = transfer_block(&g, 3_000, 10 + round);
        let slot = forge
            .forge(&genesis_balances, [round as u8; 32], &txs, until(), until())
            .unwrap();
        let recorded: usize = slot.entries.iter().map(|e| e.txs.len()).sum();
        assert_eq!(recorded, txs.len());
        let failed = slot
            .entries
            .iter()
            .flat_map(|e| &e.executed)
            .filter(|ok| !**ok)
            .count();
        assert!(failed > 0, "some transfers fail on these balances");
        assert_eq!(
            replay(&g, &genesis_balances, [round as u8; 32], &slot.entries),
            slot.balances
        );
    }
}
