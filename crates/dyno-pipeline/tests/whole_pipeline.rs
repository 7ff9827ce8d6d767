//! The whole leader pipeline for about three seconds on this machine's cores, with
//! per-transaction audit records, checked for correctness (never for speed).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_pipeline::{run_bench, BenchConfig, BenchOptions};

fn config(dir: &std::path::Path, reliable: bool) -> BenchConfig {
    let text = format!(
        r#"
[layout]
affinity = "floating"
verify_tile_count = {verify}
bank_tile_count = 2
link_depth = {depth}
ingress_reliable = {reliable}
[workspace]
name = "pipeline-test-{reliable}"
dir = "{d}"
size_mb = 64
[genesis]
fund_initial_accounts = 1024
balance = 200000
[bench]
presign = 20000
rate = {rate}
contention = 0.3
hot_accounts = 4
invalid_fraction = 0.05
duplicate_fraction = 0.05
script_fraction = 0.2
script_budget = 2000
[verify]
batch = {batch}
[dedup]
depth = 65536
[pack]
max_txs_per_microblock = 31
block_cost_limit = 4000000
microblocks_per_bank = 4
[poh]
hashes_per_tick = 200
tick_ns = 2000000
ticks_per_slot = 8
[store]
enabled = true
dir = "{d}"
"#,
        d = dir.display(),
        depth = if reliable { 1024 } else { 64 },
        // The lossy run also splits ingress over two verify tiles verifying in batches.
        verify = if reliable { 1 } else { 2 },
        batch = if reliable { 1 } else { 16 },
        rate = if reliable { 2000 } else { 4000 },
    );
    BenchConfig::from_toml(&text, "test.toml").unwrap()
}

/// The two runs share two cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(reliable: bool) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), reliable);
    let opts = BenchOptions {
        duration: Duration::from_secs(3),
        audit: true,
        verify_ledger: true,
    };
    let r = run_bench(&cfg, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let a = r.audit.as_ref().unwrap();
    let f = r.fates;
    eprintln!("reliable ingress {reliable}: {f:?}");
    assert!(!r.check_failed());

    // The JSON document is the report's fields and its schema, nothing else.
    let run = dyno_pipeline::BenchRun {
        report: r.clone(),
        started_at: 0.0,
        run_id: None,
    };
    let mut fields = serde_json::to_value(&r).unwrap();
    fields["schema"] = dyno_pipeline::session::BENCH_SCHEMA.into();
    assert_eq!(serde_json::to_value(run.document()).unwrap(), fields);

    // Conservation: balances plus fees collected never change.
    assert!(
        r.conserved,
        "genesis {} != balances + fees {}",
        r.genesis_total, r.final_total
    );

    // Every generated transaction has exactly one fate.
    let mut fate: HashMap<u64, &str> = HashMap::new();
    let mut put = |id: u64, what: &'static str| {
        assert!(id < f.generated, "{what}: id {id} was never generated");
        if let Some(prev) = fate.insert(id, what) {
            panic!("transaction {id} is both {prev} and {what}");
        }
    };
    for b in &a.banks {
        for x in &b.records {
            put(x.id, if x.ok { "executed" } else { "failed" });
        }
    }
    for v in &a.verify {
        v.invalid_ids.iter().for_each(|&id| put(id, "invalid"));
        v.overrun_ids.iter().for_each(|&id| put(id, "overrun"));
    }
    a.dedup
        .duplicate_ids
        .iter()
        .for_each(|&id| put(id, "duplicate"));
    a.pack
        .dropped_ids
        .iter()
        .for_each(|&id| put(id, "pack-dropped"));
    assert_eq!(fate.len() as u64, f.settled(), "{f:?}");
    assert_eq!(f.settled() + f.in_flight, f.generated, "{f:?}");
    if f.in_flight != 0 {
        eprintln!(
            "slots {} ticks {} pack {:?}",
            r.poh_slots, r.poh_ticks, a.pack
        );
        for c in &r.window.consumers {
            eprintln!(
                "{} {} rx {} frags {} slow {}",
                c.link, c.tile, c.rx_seq, c.counters.frags, c.slow
            );
        }
        for l in &r.window.links {
            eprintln!("{} tx {}", l.name, l.tx_seq);
        }
        for t in &r.window.tiles {
            eprintln!(
                "{} {:?} {}",
                t.name,
                t.time_ns.shares().map(|x| (x * 100.0) as u32),
                t.state
            );
        }
    }
    assert_eq!(
        f.in_flight, 0,
        "the pipeline drains: {f:?} {:?}",
        r.warnings
    );
    assert!(
        f.executed > 0 && f.invalid_signature > 0 && f.duplicate > 0,
        "{f:?}"
    );
    if reliable {
        assert_eq!(f.overrun_ingress, 0);
    }

    // No transaction executes twice; invalid signatures never execute.
    let invalid: HashSet<u128> = a.benchg.invalid_tags.iter().copied().collect();
    let mut seen = HashSet::new();
    for b in &a.banks {
        for x in &b.records {
            assert!(seen.insert(x.tag), "signature of {} executed twice", x.id);
            assert!(
                !invalid.contains(&x.tag),
                "invalid signature {} executed",
                x.id
            );
        }
    }

    // No two transactions of one microblock conflict on a written account.
    let mut microblocks = 0;
    for b in &a.banks {
        for mb in &b.microblock_accounts {
            microblocks += 1;
            let mut writes = HashSet::new();
            let mut reads = HashSet::new();
            for accts in mb {
                for r in accts.iter().filter(|r| r.writable) {
                    assert!(
                        !reads.contains(&r.index),
                        "write after read of {} in one microblock",
                        r.index
                    );
                    assert!(
                        writes.insert(r.index),
                        "two writes of {} in one microblock",
                        r.index
                    );
                }
                for r in accts.iter().filter(|r| !r.writable) {
                    assert!(
                        !writes.contains(&r.index),
                        "read after write of {} in one microblock",
                        r.index
                    );
                    reads.insert(r.index);
                }
            }
        }
    }
    assert!(microblocks > 0);

    // The ledger's hash chain verifies from the genesis hash and records every landed
    // transaction.
    let ledger = r
        .ledger_check
        .clone()
        .expect("store enabled")
        .expect("chain verifies");
    assert_eq!(ledger.records, f.executed + f.failed);
    assert!(ledger.ticks > 0);
    let tampered = std::fs::read(r.ledger.as_ref().unwrap()).unwrap();
    let mut bad = tampered.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let p = dir.path().join("tampered.bin");
    std::fs::write(&p, &bad).unwrap();
    assert!(dyno_tiles::ledger::verify_ledger(&p, a.genesis_hash).is_err());
}

#[test]
fn whole_pipeline_is_correct_with_reliable_ingress() {
    check(true);
}

#[test]
fn whole_pipeline_is_correct_with_lossy_ingress() {
    check(false);
}

/// A progress callback that panics (as `eprintln!` does on a closed pipe) must not leave
/// the tiles running with the caller waiting for them forever.
#[test]
fn a_panicking_progress_callback_stops_the_tiles() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path(), true);
        cfg.workspace.name = "pipeline-test-panic".into();
        cfg.bench.presign = 1000;
        let opts = BenchOptions {
            duration: Duration::ZERO,
            audit: false,
            verify_ledger: false,
        };
        let result = std::panic::catch_unwind(|| {
            run_bench(&cfg, &opts, &AtomicBool::new(false), &mut |p| {
                if let dyno_pipeline::Progress::Second { .. } = p {
                    panic!("the callback failed");
                }
            })
        });
        let _ = tx.send(result.is_err());
    });
    let panicked = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("run_bench did not return within 120 s after its callback panicked");
    assert!(panicked, "the panic reached the caller");
}
