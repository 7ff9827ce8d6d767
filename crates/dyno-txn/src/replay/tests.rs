use super::*;
use crate::bank::{fund_initial_accounts, transfer_block, FailReason, Genesis};
use crate::tx::{AccountRef, Message, TxKind};
use proptest::prelude::*;

/// One generated transaction: which kind, its accounts (indices may fall outside the
/// account space), payer signing or not, fee and amount or budget.
#[derive(Debug, Clone)]
struct Spec {
    transfer: bool,
    accounts: Vec<(u32, bool)>,
    signer_is_payer: bool,
    fee: u64,
    value: u64,
    sig: [u8; 8],
}

fn spec(accounts: u32, hot: u32) -> impl Strategy<Value = Spec> {
    // Most indices hit a few hot accounts (conflicts), some any account, a few none.
    let index = prop_oneof![
        6 => 0..hot.max(1),
        3 => 0..accounts,
        1 => accounts..accounts + 4,
    ];
    (
        any::<bool>(),
        proptest::collection::vec((index, any::<bool>()), 1..=4),
        prop::bool::weighted(0.95),
        0u64..60,
        0u64..700,
        any::<[u8; 8]>(),
    )
        .prop_map(
            |(transfer, accounts, signer_is_payer, fee, value, sig)| Spec {
                transfer,
                accounts,
                signer_is_payer,
                fee,
                value,
                sig,
            },
        )
}

/// The encoded transaction `s` describes, shaped as decoding accepts it (payer
/// writable; a transfer's two first accounts distinct and writable). Never signed:
/// replay does not check signatures.
fn build(g: &Genesis, s: &Spec) -> Vec<u8> {
    let mut accounts: Vec<AccountRef> = s
        .accounts
        .iter()
        .map(|&(index, writable)| AccountRef { index, writable })
        .collect();
    accounts[0].writable = true;
    let kind = if s.transfer {
        if accounts.len() < 2 {
            accounts.push(AccountRef {
                index: accounts[0].index + 1,
                writable: true,
            });
        }
        accounts[1].writable = true;
        if accounts[1].index == accounts[0].index {
            accounts[1].index = accounts[0].index + 1;
        }
        TxKind::Transfer { amount: s.value }
    } else {
        TxKind::Script {
            budget: s.value % 64,
        }
    };
    let n = g.pubkeys.len();
    let payer = accounts[0].index as usize;
    let signer = if s.signer_is_payer && payer < n {
        g.pubkeys[payer]
    } else {
        g.pubkeys[(payer + 1) % n]
    };
    let mut out = vec![0u8; 64];
    out[..8].copy_from_slice(&s.sig);
    Message {
        signer,
        recent_hash: [0; 32],
        fee: s.fee,
        kind,
        accounts,
    }
    .encode_into(&mut out);
    out
}

fn block() -> impl Strategy<Value = (usize, Vec<Spec>, usize)> {
    (2usize..40).prop_flat_map(|accounts| {
        let hot = (accounts as u32 / 8).max(1);
        (
            Just(accounts),
            proptest::collection::vec(spec(accounts as u32, hot), 0..400),
            2usize..7,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 96 }))]

    /// Any block, any number of threads, short or ample balances: the outcome and fee of
    /// every transaction and every balance after it are sequential replay's; a block of
    /// transfers whose payers can pay is replayed without an ordered remainder.
    #[test]
    fn parallel_replay_is_sequential_replay(
        (accounts, specs, threads) in block(),
        balance in prop_oneof![Just(400u64), Just(1u64 << 40)],
    ) {
        // A small balance, so fees and transfers fail often; a large one, so they do not.
        let g = fund_initial_accounts(accounts, balance, 5);
        let txs: Vec<Vec<u8>> = specs.iter().map(|s| build(&g, s)).collect();
        let seq_store = AccountStore::new(&g);
        let seq = replay_sequential(&seq_store, &txs).unwrap();
        let par_store = AccountStore::new(&g);
        let (par, in_order) = replay_on(&par_store, &txs, threads).unwrap();
        prop_assert_eq!(par.len(), seq.len());
        prop_assert_eq!(par.into_vec(), seq.clone());
        prop_assert_eq!(par_store.balances(), seq_store.balances());
        prop_assert_eq!(par_store.state_hash(), seq_store.state_hash());
        if balance > 1 << 20 && specs.iter().all(|s| s.transfer) {
            prop_assert_eq!(in_order, 0);
        }
        let fees: u128 = seq.iter().map(|e| e.1 as u128).sum();
        prop_assert_eq!(seq_store.total() + fees, g.total());
    }

    /// Bytes with bad transactions among good ones: the first bad one is named, on any
    /// number of threads, by the check and by replay alike.
    #[test]
    fn the_first_undecodable_transaction_is_named_on_any_threads(
        bad in proptest::collection::vec(0usize..600, 0..4),
        threads in 1usize..6,
    ) {
        let g = fund_initial_accounts(8, 1_000, 2);
        let mut raw = transfer_block(&g, 600, 4);
        for &b in &bad {
            if b % 2 == 0 {
                raw[b].truncate(100); // too short
            } else {
                raw[b][136] = 7; // an unknown kind: its accounts still read
            }
        }
        let expected = bad.iter().copied().min();
        prop_assert_eq!(first_undecodable_on(&raw, threads), expected);
        let store = AccountStore::new(&g);
        prop_assert_eq!(replay_on(&store, &raw, threads).err(), expected);
        prop_assert_eq!(replay_sequential(&AccountStore::new(&g), &raw).err(), expected);
    }
}

#[test]
fn every_failure_kind_is_reached_by_the_generated_blocks() {
    // The property above is only as strong as its blocks: check that a fixed sample of
    // them holds conflicts and every way a transaction fails.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut reasons = Vec::new();
    let mut executed = 0;
    for _ in 0..20 {
        let (accounts, specs, _) = block().new_tree(&mut runner).unwrap().current();
        let g = fund_initial_accounts(accounts, 400, 5);
        let txs: Vec<Vec<u8>> = specs.iter().map(|s| build(&g, s)).collect();
        for (o, _) in replay_sequential(&AccountStore::new(&g), &txs).unwrap() {
            match o {
                Outcome::Executed => executed += 1,
                Outcome::Failed { reason, .. } => {
                    reasons.push(reason);
                }
            }
        }
    }
    assert!(executed > 100, "{executed} executed");
    for r in [
        FailReason::BadAccount,
        FailReason::FeeUnpaid,
        FailReason::InsufficientFunds,
        FailReason::ScriptAborted,
    ] {
        assert!(reasons.contains(&r), "{r:?} never happened");
    }
}

#[test]
fn a_chain_of_conflicts_runs_in_block_order() {
    // Every transfer moves a balance on one account ring and each depends on the one
    // before: no payer can pay its block's transfers from its balance, so the whole
    // block is the ordered remainder, run in order after the tally.
    let g = fund_initial_accounts(4, 100, 9);
    let txs: Vec<Vec<u8>> = (0..2_000u32)
        .map(|i| {
            build(
                &g,
                &Spec {
                    transfer: true,
                    accounts: vec![(i % 4, true), ((i + 1) % 4, true)],
                    signer_is_payer: true,
                    fee: 1,
                    value: 50 + (i % 7) as u64 * 10,
                    sig: [i as u8; 8],
                },
            )
        })
        .collect();
    let seq_store = AccountStore::new(&g);
    let seq = replay_sequential(&seq_store, &txs).unwrap();
    let a = AccountStore::new(&g);
    let (done, in_order) = replay_on(&a, &txs, 3).unwrap();
    assert_eq!(done.into_vec(), seq);
    assert_eq!(a.balances(), seq_store.balances());
    // No payer can pay its block's transfers: every one runs in order.
    assert_eq!(in_order, txs.len());
}

#[test]
fn payers_who_can_pay_leave_nothing_in_order_and_one_who_cannot_only_its_own() {
    let g = fund_initial_accounts(64, 1_000_000, 6);
    let txs = transfer_block(&g, 3_000, 8);
    let seq_store = AccountStore::new(&g);
    let seq = replay_sequential(&seq_store, &txs).unwrap();
    let a = AccountStore::new(&g);
    let (done, in_order) = replay_on(&a, &txs, 4).unwrap();
    assert_eq!((done.into_vec(), in_order), (seq, 0));
    assert_eq!(a.balances(), seq_store.balances());
    // The first payer now starts with nothing: its transfers (and those alone) run in
    // order, some fail, and the result is still sequential replay's.
    let payer_of = |t: &Vec<u8>| crate::tx::decode(t).unwrap().message.accounts[0].index;
    let first = payer_of(&txs[0]);
    let mut balances = vec![1_000_000; 64];
    balances[first as usize] = 0;
    let seq_store = AccountStore::restore(&g, &balances).unwrap();
    let seq = replay_sequential(&seq_store, &txs).unwrap();
    assert!(seq.iter().any(|(o, _)| *o != Outcome::Executed));
    let paid_by_first = txs.iter().filter(|t| payer_of(t) == first).count();
    let b = AccountStore::restore(&g, &balances).unwrap();
    let (done, in_order) = replay_on(&b, &txs, 4).unwrap();
    assert_eq!(done.into_vec(), seq);
    assert_eq!(b.balances(), seq_store.balances());
    assert_eq!(in_order, paid_by_first);
}

#[test]
fn a_store_whose_supply_overflows_a_u64_replays_in_order_with_the_overflow_refused() {
    // Two accounts near u64::MAX: a credit between them overflows, which only the
    // sequential kernel (checking each credit) gets right; the replay takes it.
    let g = fund_initial_accounts(64, 1, 3);
    let mut balances = vec![1_000; 64];
    balances[0] = u64::MAX - 10;
    balances[1] = u64::MAX - 10;
    let txs: Vec<Vec<u8>> = (0..600u32)
        .map(|i| {
            let (from, to) = if i % 3 == 0 {
                (0, 1)
            } else {
                (2 + i % 60, 2 + (i + 7) % 60)
            };
            build(
                &g,
                &Spec {
                    transfer: true,
                    accounts: vec![(from, true), (to, true)],
                    signer_is_payer: true,
                    fee: 1,
                    value: 100,
                    sig: [i as u8; 8],
                },
            )
        })
        .collect();
    let seq_store = AccountStore::restore(&g, &balances).unwrap();
    let seq = replay_sequential(&seq_store, &txs).unwrap();
    assert!(seq.contains(&(
        Outcome::Failed {
            reason: FailReason::InsufficientFunds,
            fee_charged: 1
        },
        1
    )));
    let par_store = AccountStore::restore(&g, &balances).unwrap();
    assert!(!par_store.credits_cannot_overflow());
    assert_eq!(replay(&par_store, &txs, 2).unwrap().into_vec(), seq);
    assert_eq!(par_store.balances(), seq_store.balances());
}

#[test]
fn small_blocks_use_fewer_threads() {
    assert_eq!(threads_for(0, 8), 1);
    assert_eq!(threads_for(MIN_TXS_PER_THREAD * 2, 8), 2);
    assert_eq!(threads_for(1_000_000, 8), 8);
    assert_eq!(threads_for(1_000_000, 0), 1);
    assert!(default_replay_threads() >= 1);
}

#[test]
fn results_chunked_differently_are_equal_in_block_order_and_any_result_round_trips() {
    let r = |n: u64| (Outcome::Executed, n);
    let a = Replayed::of(vec![r(1), r(2), r(3)]);
    let mut b = Replayed {
        chunks: vec![vec![word(r(1)).unwrap(), 0], vec![0]],
        whole: Default::default(),
    };
    b.set(1, 2, r(2));
    b.set(2, 2, r(3));
    assert_eq!(a, b);
    assert_eq!((a.len(), a.is_empty()), (3, false));
    assert_ne!(a, Replayed::of(vec![r(1), r(3), r(2)]));
    assert!(Replayed::default().is_empty());
    assert_eq!(b.into_iter().map(|e| e.1).collect::<Vec<_>>(), [1, 2, 3]);
    // Every outcome, with fees that fit a word and fees that do not.
    let failed = |reason, fee| {
        (
            Outcome::Failed {
                reason,
                fee_charged: fee,
            },
            fee,
        )
    };
    let all = vec![
        r(0),
        r(u64::MAX),
        failed(FailReason::BadAccount, 0),
        failed(FailReason::FeeUnpaid, 0),
        failed(FailReason::InsufficientFunds, 7),
        failed(FailReason::ScriptAborted, 1 << 61),
        (
            Outcome::Failed {
                reason: FailReason::InsufficientFunds,
                fee_charged: 3,
            },
            5,
        ),
    ];
    let kept = Replayed::of(all.clone());
    assert_eq!(kept.whole.len(), 3);
    // The ordered remainder passes by the word of a transaction that cannot be loaded.
    assert_eq!(word(failed(FailReason::BadAccount, 0)), Some(NOT_LOADED));
    assert!(all
        .iter()
        .filter(|e| **e != failed(FailReason::BadAccount, 0))
        .all(|&e| word(e) != Some(NOT_LOADED)));
    assert_eq!(kept.clone().into_vec(), all);
    assert_eq!(kept.into_iter().collect::<Vec<_>>(), all);
    // A result kept whole, then overwritten by one that fits, is no longer kept.
    let mut c = Replayed::of(vec![r(u64::MAX)]);
    c.set(0, 1, r(4));
    assert!(c.whole.is_empty());
    assert_eq!(c.into_vec(), [r(4)]);
}
