//! Differential: a block built from the input, replayed in parallel
//! (`dyno_txn::replay::replay_on_threads`, 2 to 5 threads, however small the block)
//! and sequentially (`replay_sequential`) from the same balances. Every transaction's
//! outcome and fee, every balance after the block and the first transaction that does
//! not decode must be the same.
//!
//! Input: byte 0 the accounts (2 to 33) and the threads, byte 1 the starting balances
//! (short ones make fees and transfers fail; large ones let every payer pay), then 16
//! bytes a transaction: kind (transfer, script, or raw bytes that may not decode), up to
//! four account indices (some outside the account space), the signer (the payer's key or
//! another's), fee and value.
#![no_main]

use std::sync::OnceLock;

use dyno_txn::bank::{fund_initial_accounts, AccountStore, Genesis};
use dyno_txn::replay::{replay_on_threads, replay_sequential};
use dyno_txn::tx::{AccountRef, Message, TxKind};
use libfuzzer_sys::fuzz_target;

/// Genesis keys for every account count (deriving keys is the slow part of a run).
fn genesis(accounts: usize) -> &'static Genesis {
    static G: OnceLock<Vec<Genesis>> = OnceLock::new();
    &G.get_or_init(|| (2..=33).map(|n| fund_initial_accounts(n, 0, 9)).collect())[accounts - 2]
}

fn tx(g: &Genesis, b: &[u8; 16]) -> Vec<u8> {
    let n = g.pubkeys.len() as u32;
    if b[0] % 8 == 7 {
        // Raw bytes: too short, or a header with a count its length does not match.
        return b[1..].to_vec();
    }
    let count = 1 + (b[1] % 4) as usize;
    let mut accounts: Vec<AccountRef> = (0..count)
        .map(|i| AccountRef {
            index: u32::from(b[2 + i]) % (n + 2),
            writable: b[6] >> i & 1 == 1,
        })
        .collect();
    accounts[0].writable = true;
    let value = u64::from(u16::from_le_bytes([b[10], b[11]])) << (b[12] % 40);
    let kind = if b[0] % 2 == 0 {
        if accounts.len() < 2 {
            accounts.push(AccountRef {
                index: (accounts[0].index + 1) % (n + 2),
                writable: true,
            });
        }
        accounts[1].writable = true;
        if accounts[1].index == accounts[0].index {
            accounts[1].index = (accounts[0].index + 1) % (n + 2);
        }
        TxKind::Transfer { amount: value }
    } else {
        TxKind::Script { budget: value % 64 }
    };
    let payer = accounts[0].index as usize % g.pubkeys.len();
    let signer = if b[7] % 16 == 0 {
        g.pubkeys[(payer + 1) % g.pubkeys.len()]
    } else {
        g.pubkeys[payer]
    };
    let mut out = vec![b[13]; 64];
    Message {
        signer,
        recent_hash: [0; 32],
        fee: u64::from(b[8]) << (b[9] % 48),
        kind,
        accounts,
    }
    .encode_into(&mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let [head, money, rest @ ..] = data else {
        return;
    };
    let accounts = 2 + (head % 32) as usize;
    let threads = 2 + (head >> 5) as usize % 4;
    let g = genesis(accounts);
    let txs: Vec<Vec<u8>> = rest
        .chunks_exact(16)
        .map(|c| tx(g, c.try_into().expect("16 bytes")))
        .collect();
    // Balances from a few units to near u64::MAX / accounts (the supply then fits).
    let balance = (u64::from(*money) << (money % 56)) / accounts as u64;
    let balances: Vec<u64> = (0..accounts as u64)
        .map(|i| balance.saturating_add(i))
        .collect();
    let seq_store = AccountStore::restore(g, &balances).expect("the genesis's accounts");
    let par_store = AccountStore::restore(g, &balances).expect("the genesis's accounts");
    let seq = replay_sequential(&seq_store, &txs);
    let par = replay_on_threads(&par_store, &txs, threads);
    match (seq, par) {
        (Ok(seq), Ok(par)) => {
            assert_eq!(par.into_vec(), seq, "outcomes");
            assert_eq!(par_store.balances(), seq_store.balances(), "balances");
        }
        (Err(s), Err(p)) => assert_eq!(p, s, "first undecodable"),
        (s, p) => panic!("sequential {s:?}, parallel {:?}", p.map(|r| r.len())),
    }
});
