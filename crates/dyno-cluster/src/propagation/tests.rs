use super::*;
use crate::events::parse_log;
use std::path::Path;

const G: u64 = 1_000_000_000; // genesis: Unix second 1
const MS: u64 = 1_000_000;

/// A node log line: `ev("n0", ms after genesis, "forged", r#""slot":2,"block":"b1""#)`.
fn ev(node: &str, at_ms: u64, event: &str, extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    format!(
        r#"{{"kind":"event","event":"{event}","ts_ns":{},"node":"{node}"{sep}{extra}}}"#,
        G + at_ms * MS
    )
}

fn started(node: &str) -> String {
    ev(
        node,
        0,
        "started",
        &format!(
            r#""genesis_hash":"00","genesis_time_ns":{G},"slot_ns":{},"peers":[]"#,
            1000 * MS
        ),
    )
}

/// Four nodes; b1 (slot 2, n0) spreads to n1 and n2 but never to n3; b2 (slot 3, n1)
/// reaches everyone; b3 (slot 5, n2) has no slot_start, so its slot start comes from genesis.
fn run() -> Vec<Event> {
    let b1 = r#""slot":2,"block":"b1""#;
    let b2 = r#""slot":3,"block":"b2""#;
    let b3 = r#""slot":5,"block":"b3""#;
    let lines = [
        started("n0"),
        started("n1"),
        started("n2"),
        started("n3"),
        // b1 on its leader: slot 2 is due at 2000 ms after genesis.
        ev(
            "n0",
            2010,
            "slot_start",
            &format!(r#""slot":2,"scheduled_ns":{}"#, G + 2000 * MS),
        ),
        ev(
            "n0",
            2012,
            "leadership_checked",
            r#""slot":2,"leader":true"#,
        ),
        ev(
            "n1",
            2013,
            "leadership_checked",
            r#""slot":2,"leader":false"#,
        ),
        ev("n0", 2015, "ticked", r#""slot":2"#),
        ev("n0", 2020, "snapshot", r#""slot":2,"txs":4"#),
        ev(
            "n0",
            2050,
            "forged",
            &format!(r#"{b1},"height":1,"parent":"00","txs":4,"bytes":900"#),
        ),
        ev(
            "n0",
            2052,
            "adopted",
            &format!(r#"{b1},"height":1,"state_hash":"aa""#),
        ),
        ev("n0", 2055, "announced", b1),
        // b1 on n1: two headers, the first counts.
        ev(
            "n1",
            2100,
            "header_received",
            &format!(r#"{b1},"peer":"n0""#),
        ),
        ev(
            "n1",
            2105,
            "fetch_requested",
            &format!(r#"{b1},"peer":"n0""#),
        ),
        ev(
            "n1",
            2150,
            "header_received",
            &format!(r#"{b1},"peer":"n2""#),
        ),
        ev(
            "n1",
            2205,
            "fetch_completed",
            &format!(r#"{b1},"peer":"n0","bytes":900"#),
        ),
        ev("n1", 2210, "validated", b1),
        ev(
            "n1",
            2215,
            "adopted",
            &format!(r#"{b1},"height":1,"state_hash":"aa""#),
        ),
        ev("n1", 2220, "announced", b1),
        // b1 on n2: adopted, never announced.
        ev(
            "n2",
            2300,
            "header_received",
            &format!(r#"{b1},"peer":"n1""#),
        ),
        ev(
            "n2",
            2310,
            "fetch_requested",
            &format!(r#"{b1},"peer":"n1""#),
        ),
        ev(
            "n2",
            2400,
            "fetch_completed",
            &format!(r#"{b1},"peer":"n1","bytes":900"#),
        ),
        ev(
            "n2",
            2420,
            "adopted",
            &format!(r#"{b1},"height":1,"state_hash":"aa""#),
        ),
        // b1 on n3: a header, then nothing.
        ev(
            "n3",
            2500,
            "header_received",
            &format!(r#"{b1},"peer":"n2""#),
        ),
        // b2: slot 3 due at 3000 ms; only adoptions logged besides the leader's start.
        ev(
            "n1",
            3004,
            "slot_start",
            &format!(r#""slot":3,"scheduled_ns":{}"#, G + 3000 * MS),
        ),
        ev(
            "n1",
            3030,
            "forged",
            &format!(r#"{b2},"height":2,"parent":"b1","txs":0,"bytes":100"#),
        ),
        ev(
            "n1",
            3031,
            "adopted",
            &format!(r#"{b2},"height":2,"state_hash":"bb""#),
        ),
        ev(
            "n0",
            3100,
            "adopted",
            &format!(r#"{b2},"height":2,"state_hash":"bb""#),
        ),
        ev(
            "n2",
            3200,
            "adopted",
            &format!(r#"{b2},"height":2,"state_hash":"bb""#),
        ),
        ev(
            "n3",
            3300,
            "adopted",
            &format!(r#"{b2},"height":2,"state_hash":"bb""#),
        ),
        // Slot 4: n2 starts it late and forges nothing.
        ev(
            "n2",
            4007,
            "slot_start",
            &format!(r#""slot":4,"scheduled_ns":{}"#, G + 4000 * MS),
        ),
        // b3: forged 40 ms into slot 5 (due at 5000 ms), no slot_start logged.
        ev(
            "n2",
            5040,
            "forged",
            &format!(r#"{b3},"height":3,"parent":"b2","txs":0,"bytes":100"#),
        ),
        ev(
            "n2",
            5041,
            "adopted",
            &format!(r#"{b3},"height":3,"state_hash":"cc""#),
        ),
        ev(
            "n2",
            5060,
            "rejected",
            &format!(r#"{b3},"peer":"n1","reason":"bad_poh""#),
        ),
    ];
    parse_log(Path::new("run.log"), &lines.join("\n")).unwrap()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

#[test]
fn forging_loop_of_a_block_with_every_event() {
    let a = analyse(&run(), 4);
    let b1 = &a.blocks[0];
    assert_eq!(
        (b1.block.as_str(), b1.slot, b1.leader.as_str()),
        ("b1", 2, "n0")
    );
    assert_eq!(b1.slot_start_ns, G + 2000 * MS);
    let f = &b1.forging;
    assert!(close(f.loop_start_s, 0.010));
    assert!(close(f.leadership_check_s, 0.002));
    assert!(close(f.ledger_ticking_s, 0.003));
    assert!(close(f.mempool_snapshot_s, 0.005));
    assert!(close(f.leadership_to_forged_s, 0.038));
    assert!(close(f.forged_to_announced_s, 0.005));
    assert!(close(f.forged_to_self_adopted_s, 0.002));
    assert!(close(f.slot_start_to_announced_s, 0.055));
}

#[test]
fn peer_metrics_per_node() {
    let a = analyse(&run(), 4);
    let peers = &a.blocks[0].peers;
    assert_eq!(
        peers.iter().map(|p| p.node.as_str()).collect::<Vec<_>>(),
        ["n1", "n2", "n3"]
    );
    let (n1, n2, n3) = (&peers[0], &peers[1], &peers[2]);
    assert!(close(n1.first_notice_s, 0.100));
    assert!(close(n1.notice_to_fetch_s, 0.005));
    assert!(close(n1.fetch_s, 0.100));
    assert!(close(n1.fetched_to_announced_s, 0.015));
    assert!(close(n1.fetched_to_adopted_s, 0.010));
    assert!(close(n2.first_notice_s, 0.300));
    assert!(close(n2.notice_to_fetch_s, 0.010));
    assert!(close(n2.fetch_s, 0.090));
    assert_eq!(n2.fetched_to_announced_s, None);
    assert!(close(n2.fetched_to_adopted_s, 0.020));
    assert!(close(n3.first_notice_s, 0.500));
    assert_eq!(
        (n3.notice_to_fetch_s, n3.fetch_s, n3.fetched_to_adopted_s),
        (None, None, None)
    );
}

#[test]
fn adoption_fractions_count_every_node() {
    let a = analyse(&run(), 4);
    // b1: adopted by 3 of 4 nodes at 52, 215, 420 ms: 50% (2 nodes) at 215 ms, no more.
    let b1 = &a.blocks[0].fractions;
    assert!(close(b1[0], 0.215));
    assert!(b1[1..].iter().all(Option::is_none));
    // b2: 31, 100, 200, 300 ms: 50% at the 2nd, 80% (4 nodes of 4) and beyond at the 4th.
    let b2 = &a.blocks[1].fractions;
    assert!(close(b2[0], 0.100));
    assert!(b2[1..].iter().all(|f| close(*f, 0.300)));
    // A cluster of 5 where one node logged nothing: b2 never reaches 100%.
    let a5 = analyse(&run(), 5);
    assert_eq!(a5.node_count, 5);
    assert!(close(a5.blocks[1].fractions[1], 0.300)); // 80% of 5 = 4 nodes
    assert_eq!(a5.blocks[1].fractions[7], None);
}

#[test]
fn slot_start_falls_back_to_genesis_and_lateness_covers_every_slot() {
    let a = analyse(&run(), 4);
    let b3 = &a.blocks[2];
    assert_eq!((b3.block.as_str(), b3.slot_start_ns), ("b3", G + 5000 * MS));
    assert_eq!(b3.forging.loop_start_s, None);
    assert!(close(b3.forging.forged_to_self_adopted_s, 0.001));
    assert_eq!(b3.fractions[0], None);
    assert_eq!(b3.adoption_s, vec![("n2".to_string(), 0.041)]);
    assert_eq!(a.slot_start_lateness_s, vec![0.004, 0.007, 0.010]);
    assert_eq!(a.blocks_without_slot_start, 0);
    // Without any genesis or slot_start, a block has no reference point and is counted.
    let lone = parse_log(
        Path::new("x"),
        &ev("n9", 1, "forged", r#""slot":1,"block":"zz""#),
    )
    .unwrap();
    let a = analyse(&lone, 1);
    assert!(a.blocks.is_empty());
    assert_eq!(a.blocks_without_slot_start, 1);
}

#[test]
fn distributions_and_summaries() {
    let a = analyse(&run(), 4);
    let d = a.distributions();
    let get = |k: &str| d.iter().find(|x| x.key == k).unwrap();
    let fetch = get("peer.fetch");
    assert_eq!(fetch.values_s, vec![0.090, 0.100]);
    // b1: n1, n2, n3 (n3 never fetched); b2: n0, n2, n3 adopted without fetch events.
    assert_eq!(fetch.missing, 4);
    let adopt50 = get("adoption_0.50");
    assert_eq!(adopt50.values_s, vec![0.100, 0.215]);
    assert_eq!(adopt50.missing, 1); // b3 reached only its leader
    let s = adopt50.summary().unwrap();
    assert_eq!(
        (s.count, s.min_s, s.p50_s, s.max_s),
        (2, 0.100, 0.100, 0.215)
    );
    assert!((s.mean_s - 0.1575).abs() < 1e-12);
    let full = get("adoption_1.00");
    assert_eq!((full.values_s.clone(), full.missing), (vec![0.300], 2));
    assert_eq!(get("forging.mempool_snapshot").missing, 2);
    assert_eq!(get("slot_start_lateness").summary().unwrap().p99_s, 0.010);
    // The network's part: each block's adoption less its leader's slot start to
    // announced, for the blocks that have both.
    let mut want: Vec<f64> = a
        .blocks
        .iter()
        .filter_map(|b| Some(b.fractions[0]? - b.forging.slot_start_to_announced_s?))
        .collect();
    want.sort_by(f64::total_cmp);
    let net = get("announced_to_adoption_0.50");
    let mut got = net.values_s.clone();
    got.sort_by(f64::total_cmp);
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert_eq!(net.family, Family::Network);
    assert_eq!(d.len(), 8 + 5 + 8 + 8 + 1);
    assert!(get("forging.ledger_ticking").summary().is_some());
}

#[test]
fn nodes_needed_rounds_up() {
    assert_eq!(nodes_needed(0.8, 10), 8);
    assert_eq!(nodes_needed(0.5, 9), 5);
    assert_eq!(nodes_needed(1.0, 52), 52);
    assert_eq!(nodes_needed(0.98, 52), 51);
    assert_eq!(nodes_needed(0.5, 1), 1);
}
