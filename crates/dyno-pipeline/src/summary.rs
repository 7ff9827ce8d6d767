//! A bench as people read it: a line per event while it runs, the summary after each
//! layout and the table after a sweep. The binary prints them; the JSON document is
//! [`crate::session::BenchRun::document`].

use crate::report::{BenchReport, Latency};
use crate::Progress;
use std::fmt::Write as _;

/// What a bench's event says on the terminal: the signing before the window, the tiles
/// started, each second's TPS, the drain, a warning. A block says nothing (the node log
/// takes it).
pub fn progress_line(p: &Progress) -> Option<String> {
    Some(match p {
        Progress::Presigning { count } => format!(
            "signing {count} transactions before the measured window (benchg signs live once they run out)"
        ),
        Progress::Started { tiles, workspace } => format!(
            "running {} tiles ({}); watch with: dyno pipeline monitor --name {workspace}",
            tiles.len(),
            tiles.join(" ")
        ),
        Progress::Second { t, tps, .. } => format!("{t:6.1} s  {tps:>10.0} TPS"),
        Progress::Block { .. } => return None,
        Progress::Draining => "stopping benchg; draining the pipeline".into(),
        Progress::Warning(w) => format!("warning: {w}"),
    })
}

fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn latency(l: &Latency) -> String {
    if l.count == 0 {
        return "no samples".into();
    }
    format!(
        "p50 {}, p90 {}, p99 {}, max {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.max)
    )
}

/// The summary people read after a bench (`dyno pipeline bench`, `--format table`):
/// layout, TPS, latency, fates, conservation, ledger, PoH, benchg, the bottleneck with its
/// notes and warnings, the tiles' time shares, and the run it was saved as.
pub fn summary_text(r: &BenchReport, run_id: Option<i64>) -> String {
    let mut o = String::new();
    throughput_lines(&mut o, r);
    accounting_lines(&mut o, r);
    ledger_line(&mut o, r);
    poh_and_benchg_lines(&mut o, r);
    let _ = writeln!(o, "bottleneck: {}", r.diagnosis.summary);
    for n in &r.diagnosis.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    for w in &r.warnings {
        let _ = writeln!(o, "  warning: {w}");
    }
    tile_shares(&mut o, r);
    if let Some(id) = run_id {
        let _ = writeln!(o, "Saved as run {id} (dyno results show {id}).");
    }
    o
}

/// The layout, TPS and the two latencies.
fn throughput_lines(o: &mut String, r: &BenchReport) {
    let _ = writeln!(
        o,
        "layout: {} verify, {} bank ({} tiles on {} CPUs online), window {:.1} s, drained in {:.2} s",
        r.verify_tiles,
        r.bank_tiles,
        r.tiles.len(),
        r.cpus_online,
        r.window_s,
        r.drain_s
    );
    let _ = writeln!(
        o,
        "TPS (executed + failed, per second): median {:.0}, min {:.0}, max {:.0} over {} s; whole window {:.0}",
        r.tps.median,
        r.tps.min,
        r.tps.max,
        r.tps.per_second.len(),
        r.tps.overall
    );
    let _ = writeln!(
        o,
        "latency generation -> execution: {}",
        latency(&r.latency_exec)
    );
    let _ = writeln!(
        o,
        "latency generation -> PoH:       {}",
        latency(&r.latency_poh)
    );
}

/// Where every transaction went, and whether the balances add up.
fn accounting_lines(o: &mut String, r: &BenchReport) {
    let f = &r.fates;
    let _ = writeln!(
        o,
        "fates: {} generated = {} executed + {} failed + {} invalid signature + {} duplicate + {} overrun at ingress + {} dropped by pack + {} in flight at shutdown",
        f.generated, f.executed, f.failed, f.invalid_signature, f.duplicate, f.overrun_ingress, f.pack_dropped, f.in_flight
    );
    let _ = writeln!(
        o,
        "conservation: balances + fees = {} (genesis {}): {}",
        r.final_total,
        r.genesis_total,
        if r.conserved { "ok" } else { "VIOLATED" }
    );
}

/// The ledger the store wrote, and whether its hash chain verifies.
fn ledger_line(o: &mut String, r: &BenchReport) {
    let _ = match (&r.ledger, &r.ledger_check) {
        (None, _) => writeln!(o, "ledger: store disabled"),
        (Some(p), Some(Ok(s))) => writeln!(
            o,
            "ledger: {} ({} entries: {} ticks, {} microblocks, {} transactions); hash chain verifies from genesis",
            p.display(),
            s.entries,
            s.ticks,
            s.microblocks,
            s.records
        ),
        (Some(p), Some(Err(e))) => {
            writeln!(o, "ledger: {}: CHAIN DOES NOT VERIFY: {e}", p.display())
        }
        (Some(p), None) => writeln!(o, "ledger: {} (not checked)", p.display()),
    };
}

/// PoH's rate and counts, and whether benchg's pre-signed pool lasted.
fn poh_and_benchg_lines(o: &mut String, r: &BenchReport) {
    let _ = writeln!(
        o,
        "poh: {:.2} M hashes/s while hashing, {} ticks, {} slots",
        r.poh_hash_rate / 1e6,
        r.poh_ticks,
        r.poh_slots
    );
    let _ = match r.pool_exhausted_after_s {
        Some(s) => writeln!(
            o,
            "benchg: {} pre-signed before the window; the pool ran out after {s:.1} s and benchg signed live after that",
            r.presigned
        ),
        None => writeln!(o, "benchg: {} pre-signed before the window; signing never competed with the tiles", r.presigned),
    };
}

/// Each tile's share of its loop time by bucket over the window.
fn tile_shares(o: &mut String, r: &BenchReport) {
    let _ = writeln!(
        o,
        "{:<10} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "tile", "finish", "backp", "wait", "hkeep", "ovrn"
    );
    for t in &r.window.tiles {
        let s = t.time_ns.shares();
        let _ = writeln!(
            o,
            "{:<10} {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}%",
            t.name,
            100.0 * s[7],
            100.0 * s[1],
            100.0 * s[2],
            100.0 * s[0],
            100.0 * (s[3] + s[4])
        );
    }
}

/// The table after a sweep: one line per (verify, bank) layout with its TPS and bottleneck.
pub fn sweep_table(rows: &[(usize, usize, BenchReport)]) -> String {
    let mut o = String::from("\nverify  bank  TPS median  TPS min  TPS max  bottleneck\n");
    for (v, b, r) in rows {
        let _ = writeln!(
            o,
            "{v:>6}  {b:>4}  {:>10.0}  {:>7.0}  {:>7.0}  {}",
            r.tps.median, r.tps.min, r.tps.max, r.diagnosis.bottleneck
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_but_a_block_says_one_line() {
        let second = Progress::Second {
            t: 2.0,
            tps: 1234.4,
            latency: Latency::default(),
        };
        assert_eq!(
            progress_line(&second).as_deref(),
            Some("   2.0 s        1234 TPS")
        );
        let started = Progress::Started {
            tiles: vec!["verify".into(), "bank".into()],
            workspace: "dyno".into(),
        };
        assert_eq!(
            progress_line(&started).as_deref(),
            Some("running 2 tiles (verify bank); watch with: dyno pipeline monitor --name dyno")
        );
        assert_eq!(
            progress_line(&Progress::Warning("short pool".into())).as_deref(),
            Some("warning: short pool")
        );
        assert!(progress_line(&Progress::Draining).is_some());
        assert!(progress_line(&Progress::Presigning { count: 9 })
            .unwrap()
            .starts_with("signing 9 transactions"));
    }
}
