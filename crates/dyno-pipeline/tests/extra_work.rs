//! `[bank] extra_work_per_tx`: every landed transaction costs exactly N more hashes, and
//! nothing else changes (balances conserved, the ledger's hash chain verifies).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_pipeline::{run_bench, BenchConfig, BenchOptions};

fn run(dir: &std::path::Path, rounds: u64) -> dyno_pipeline::bench::BenchReport {
    let text = format!(
        r#"
[layout]
idle = "park"
[workspace]
name = "extra-work-test-{rounds}"
dir = "{d}"
size_mb = 64
[genesis]
fund_initial_accounts = 256
[bench]
presign = 2000
rate = 1000
[poh]
hashes_per_tick = 200
tick_ns = 2000000
ticks_per_slot = 8
[bank]
extra_work_per_tx = {rounds}
[store]
enabled = true
dir = "{d}"
"#,
        d = dir.display(),
    );
    let cfg = BenchConfig::from_toml(&text, "test.toml").unwrap();
    let opts = BenchOptions {
        duration: Duration::from_secs(1),
        audit: true,
        verify_ledger: true,
    };
    run_bench(&cfg, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

#[test]
fn extra_work_scales_with_n_and_changes_no_state() {
    let dir = tempfile::tempdir().unwrap();
    for rounds in [0, 40] {
        let r = run(dir.path(), rounds);
        let banks = &r.audit.as_ref().unwrap().banks;
        let landed: u64 = banks.iter().map(|b| b.executed + b.failed).sum();
        let hashes: u64 = banks.iter().map(|b| b.extra_hashes).sum();
        assert!(landed > 0, "nothing landed: {:?}", r.fates);
        assert_eq!(hashes, landed * rounds, "rounds {rounds}");
        assert_eq!(banks.iter().any(|b| b.extra_digest != 0), rounds > 0);
        assert!(r.conserved, "rounds {rounds}");
        assert!(
            matches!(r.ledger_check, Some(Ok(_))),
            "rounds {rounds}: {:?}",
            r.ledger_check
        );
    }
}

#[test]
fn too_much_extra_work_names_its_key() {
    let err = BenchConfig::from_toml("[bank]\nextra_work_per_tx = 100001\n", "w.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("extra_work_per_tx"), "{err}");
    assert!(err.contains("w.toml"), "{err}");
}
