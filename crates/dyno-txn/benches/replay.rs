//! Replay of one block as a follower validates it (decode and execute every transaction;
//! signatures are checked elsewhere): a 20,000-transfer block over 1,024 accounts,
//! with [`replay_sequential`] and with [`dyno_txn::replay`] on 1, 2, 4, ... threads
//! (powers of two up to the cores, and the core count itself), twice: from balances
//! every payer can pay its block's transfers from (group `replay_20000_txs_1024_accounts`:
//! no transaction needs the block's order), and from balances of 1,500, which some
//! payers' transfers in the block exceed (group `..._tight`: their transactions run in
//! block order after the parallel tally).
//!
//! Run: `cargo bench -p dyno-txn --bench replay` (`scripts/bench/crates.sh replay`). On
//! another machine, copy the bench executable alone (`cargo bench -p dyno-txn --bench
//! replay --no-run` prints its path, `target/release/deps/replay-HASH`) and run
//! `./replay-HASH --bench` there. The speed-up at N threads is `sequential` over
//! `parallel/N` (both medians of criterion's samples).
//!
//! `ceiling/N` is what the machine itself offers in the same run: the block cut in N
//! contiguous parts, each decoded and executed on a thread of the pool the replay uses
//! ([`dyno_txn::replay::pool`]) against its own copy of the accounts, with no order
//! kept between them and no results kept (a wrong replay doing the same
//! per-transaction work): `sequential` over `ceiling/N` is about
//! the most a parallel replay can gain here. A machine whose other cores are busy shows
//! it (a ceiling near 1).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use dyno_txn::bank::{
    execute, fund_initial_accounts, transfer_block, AccountStore, DEFAULT_BALANCE,
};
use dyno_txn::replay::{replay, replay_sequential, seed_of};
use dyno_txn::tx;

const BLOCK: usize = 20_000;
const ACCOUNTS: usize = 1_024;
/// A starting balance some payers' debits in the block exceed (an account pays about
/// 20 transfers of 5 + 1..=100), so the block's order decides some outcomes.
const TIGHT_BALANCE: u64 = 1_500;

fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out: Vec<usize> = (0..)
        .map(|k| 1usize << k)
        .take_while(|&n| n <= cores)
        .collect();
    if !out.contains(&cores) {
        out.push(cores);
    }
    out
}

fn bench_replay(c: &mut Criterion) {
    let g = fund_initial_accounts(ACCOUNTS, DEFAULT_BALANCE, 1);
    let block = transfer_block(&g, BLOCK, 42);
    for (name, balance) in [("", DEFAULT_BALANCE), ("_tight", TIGHT_BALANCE)] {
        let balances = vec![balance; ACCOUNTS];
        let fresh = || AccountStore::restore(&g, &balances).expect("genesis balances");
        let mut group = c.benchmark_group(format!("replay_{BLOCK}_txs_{ACCOUNTS}_accounts{name}"));
        group.sample_size(50);
        group.bench_function("sequential", |b| {
            b.iter(|| {
                let store = fresh();
                let done = replay_sequential(&store, black_box(&block)).expect("well formed");
                black_box((done.len(), store.balance(0)))
            })
        });
        for threads in thread_counts() {
            group.bench_with_input(
                BenchmarkId::new("parallel", threads),
                &threads,
                |b, &threads| {
                    b.iter(|| {
                        let store = fresh();
                        let done = replay(&store, black_box(&block), threads).expect("well formed");
                        black_box((done.len(), store.balance(0)))
                    })
                },
            );
        }
        if balance != DEFAULT_BALANCE {
            group.finish();
            continue;
        }
        let pool = dyno_txn::replay::pool().expect("the replay threads start");
        for threads in thread_counts().into_iter().filter(|&n| n > 1) {
            let size = BLOCK.div_ceil(threads);
            group.bench_with_input(BenchmarkId::new("ceiling", threads), &threads, |b, _| {
                b.iter(|| {
                    // On the pool the replay uses, so both pay the same to start.
                    pool.in_place_scope(|s| {
                        for part in block.chunks(size) {
                            let fresh = &fresh;
                            s.spawn(move |_| {
                                let store = fresh();
                                let mut fees = 0u64;
                                for raw in part {
                                    let t = tx::decode(black_box(raw)).expect("well formed");
                                    fees = fees
                                        .wrapping_add(execute(&store, &t.message, seed_of(&t)).1);
                                }
                                black_box(fees);
                            });
                        }
                    })
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
