//! The fault figures on hand-written chains with known answers.

use super::*;
use crate::propagation::BlockPropagation;

const G: u64 = 1_000_000_000_000;
const SLOT: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn at(slot: u64, ms: u64) -> u64 {
    G + slot * SLOT + ms * MS
}

fn adopted(node: &str, ts_ns: u64, block: &str, slot: u64, height: u64) -> Timed {
    Timed {
        node: node.into(),
        ts_ns,
        what: ChainEvent::Adopted {
            block: block.into(),
            slot,
            height,
        },
    }
}

fn started(node: &str, ts_ns: u64) -> Timed {
    Timed {
        node: node.into(),
        ts_ns,
        what: ChainEvent::Started,
    }
}

/// One block per slot; `late` gives a slot's adoption at 80% in ms.
fn analysis(
    slots: std::ops::Range<u64>,
    nodes: usize,
    late: impl Fn(u64) -> (u64, usize),
) -> Analysis {
    let blocks = slots
        .map(|s| {
            let (ms, by) = late(s);
            let mut fractions = vec![None; FRACTIONS.len()];
            fractions[1] = Some(ms as f64 / 1e3);
            BlockPropagation {
                block: format!("b{s}"),
                slot: s,
                leader: "n0".into(),
                slot_start_ns: at(s, 0),
                forging: Default::default(),
                peers: Vec::new(),
                adoption_s: (0..by)
                    .map(|n| (format!("n{n}"), ms as f64 / 1e3))
                    .collect(),
                fractions,
            }
        })
        .collect();
    Analysis {
        node_count: nodes,
        blocks,
        slot_start_lateness_s: Vec::new(),
        blocks_without_slot_start: 0,
        measured_from: "slot start",
        unavailable: Vec::new(),
    }
}

fn record(kind: &str, nodes: &[&str], at_slot: u64, end_slot: u64) -> FaultRecord {
    FaultRecord {
        index: 0,
        kind: kind.into(),
        what: format!("{kind} test"),
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        at_slot,
        end_slot: Some(end_slot),
        start_ns: Some(at(at_slot, 50)),
        end_ns: Some(at(end_slot, 50)),
        flavour: None,
    }
}

fn facts(gone: &[String]) -> RunFacts<'_> {
    RunFacts {
        nodes: vec!["n0".into(), "n1".into(), "n2".into()],
        genesis_time_ns: G,
        slot_ns: SLOT,
        end_slot: 12,
        gone,
    }
}

#[test]
fn a_restarted_node_is_back_at_the_tip_when_its_sync_reaches_the_others() {
    let mut ev = Vec::new();
    for n in ["n0", "n1", "n2"] {
        ev.push(started(n, G - SLOT));
    }
    for h in 1..=10u64 {
        for n in ["n0", "n1"] {
            ev.push(adopted(n, at(h, 100), &format!("b{h}"), h, h));
        }
        if h <= 4 || h >= 8 {
            ev.push(adopted("n2", at(h, 120), &format!("b{h}"), h, h));
        }
    }
    // n2 is killed at slot 5, started again at slot 7 from genesis, and syncs 1..7 at
    // slot 7 + 400 ms in one range.
    ev.push(started("n2", at(7, 60)));
    for h in 1..=7u64 {
        ev.push(adopted("n2", at(7, 400), &format!("b{h}"), h, h));
    }
    ev.push(Timed {
        node: "n2".into(),
        ts_ns: at(7, 401),
        what: ChainEvent::CaughtUp {
            blocks: 7,
            rounds: 1,
        },
    });
    ev.sort_by_key(|e| e.ts_ns);
    // Before: 100 ms; slots 5 and 6 only two of three nodes; 7 slow; 8 on as before.
    let a = analysis(1..11, 3, |s| match s {
        5 | 6 => (100, 2),
        7 => (400, 3),
        _ => (100, 3),
    });
    let r = analyse_faults(&[record("restart", &["n2"], 5, 7)], &a, &ev, &facts(&[]));
    let f = &r.faults[0];
    assert_eq!(f.nodes_recovered.len(), 1);
    let n2 = &f.nodes_recovered[0];
    assert_eq!(n2.node, "n2");
    assert!((n2.back_at_tip_s.unwrap() - 0.350).abs() < 1e-9, "{n2:?}");
    assert_eq!((n2.synced_blocks, n2.sync_rounds), (Some(7), Some(1)));
    assert_eq!(f.pre_fault_p50_s, Some(0.1));
    // Slot 7's block (400 ms) is not yet back to pace; slot 8's is: 1 s after the end
    // at slot 7 + 50 ms, less those 50 ms.
    assert!(
        (f.adoption_recovered_s.unwrap() - 0.950).abs() < 1e-9,
        "{f:?}"
    );
    assert_eq!((f.blocks_during, f.blocks_not_everywhere), (2, 2));
    // A restart starts a chain again from genesis: that is no fork.
    assert_eq!(r.forks.reorgs, Vec::new());
    assert_eq!(r.forks.contested_heights, 0);
    assert!(r.forks.resolved);
    assert_eq!(r.blocks_not_everywhere, 2);
    assert_eq!(r.adoption_during_faults.as_ref().unwrap().count, 2);
    assert_eq!(r.adoption_outside_faults.as_ref().unwrap().count, 8);
    assert_eq!(r.windows, vec![(5, 7)]);
}

#[test]
fn a_partition_shows_a_fork_its_depth_and_its_resolution() {
    let mut ev = Vec::new();
    for h in 1..=2u64 {
        for n in ["n0", "n1", "n2"] {
            ev.push(adopted(n, at(h, 100), &format!("a{h}"), h, h));
        }
    }
    // Cut off for slots 3..6: n2 forges its own b3, b4; the others a3, a4, a5.
    for h in 3..=5u64 {
        for n in ["n0", "n1"] {
            ev.push(adopted(n, at(h, 100), &format!("a{h}"), h, h));
        }
    }
    ev.push(adopted("n2", at(3, 10), "b3", 3, 3));
    ev.push(adopted("n2", at(4, 10), "b4", 4, 4));
    // Healed at slot 6: n2 hears of a6 and switches to the longer chain, oldest first.
    for h in 3..=6u64 {
        ev.push(adopted("n2", at(6, 300), &format!("a{h}"), h, h));
    }
    ev.push(adopted("n0", at(6, 100), "a6", 6, 6));
    ev.push(adopted("n1", at(6, 100), "a6", 6, 6));
    ev.sort_by_key(|e| e.ts_ns);
    let a = analysis(1..7, 3, |_| (100, 3));
    let r = analyse_faults(&[record("partition", &["n2"], 3, 6)], &a, &ev, &facts(&[]));
    assert_eq!(r.forks.contested_heights, 2, "{:?}", r.forks);
    assert_eq!(r.forks.reorgs.len(), 1);
    assert_eq!(
        (r.forks.reorgs[0].node.as_str(), r.forks.reorgs[0].depth),
        ("n2", 2)
    );
    assert_eq!(r.forks.max_depth, 2);
    assert!(r.forks.resolved);
    // a6 (slot 6) is on every node at slot 6 + 300 ms; the partition ended at + 50 ms.
    let f = &r.faults[0];
    assert!((f.converged_s.unwrap() - 0.250).abs() < 1e-9, "{f:?}");
    // n2 held b4 (height 4) while the others were at a5 and a6: it is back at the tip
    // once it holds a6, as they do.
    let n2 = &f.nodes_recovered[0];
    assert_eq!(n2.node, "n2");
    assert!((n2.back_at_tip_s.unwrap() - 0.250).abs() < 1e-9, "{n2:?}");
    assert_eq!(n2.synced_blocks, None, "it logged no range sync");
}

#[test]
fn a_node_on_a_fork_of_equal_height_is_not_at_the_tip() {
    let ev = vec![
        adopted("n0", at(3, 100), "a3", 3, 3),
        adopted("n1", at(3, 100), "a3", 3, 3),
        adopted("n2", at(3, 100), "b3", 3, 3),
        adopted("n2", at(4, 200), "a3", 3, 3),
    ];
    let a = analysis(1..4, 3, |_| (100, 2));
    let r = analyse_faults(&[record("partition", &["n2"], 1, 3)], &a, &ev, &facts(&[]));
    // Ended at slot 3 + 50 ms; n2 left b3 for a3 at slot 4 + 200 ms.
    let back = r.faults[0].nodes_recovered[0].back_at_tip_s.unwrap();
    assert!((back - 1.150).abs() < 1e-9, "{back}");
}

#[test]
fn a_fork_never_settled_is_not_resolved_and_a_node_killed_for_good_is_not_waited_for() {
    let ev = vec![
        adopted("n0", at(3, 100), "a3", 3, 3),
        adopted("n1", at(3, 100), "a3", 3, 3),
        adopted("n2", at(3, 100), "b3", 3, 3),
    ];
    let a = analysis(1..4, 3, |_| (100, 2));
    let r = analyse_faults(&[record("partition", &["n2"], 1, 2)], &a, &ev, &facts(&[]));
    assert!(!r.forks.resolved);
    assert_eq!(r.faults[0].converged_s, None);
    let gone = vec!["n2".to_string()];
    let r = analyse_faults(
        &[record("partition", &["n2"], 1, 2)],
        &a,
        &ev,
        &facts(&gone),
    );
    assert!(r.forks.resolved, "n2 is gone: n0 and n1 agree");
}

#[test]
fn an_equivocation_logged_with_both_blocks_is_read_as_a_lie() {
    // The node logs an equivocation's two blocks as an array under `blocks`, where
    // `caught_up` logs a count: a line of either shape is read, not skipped.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("n0.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"kind":"event","event":"misbehaved","node":"n0","ts_ns":5,"lie":"equivocate","slot":7,"blocks":["aa","bb"]}"#,
            "\n",
            r#"{"kind":"event","event":"caught_up","node":"n0","ts_ns":9,"blocks":3,"rounds":1}"#,
            "\n"
        ),
    )
    .unwrap();
    let events = read_chain_events(&[log]).unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(
        &events[0].what,
        ChainEvent::Byzantine(crate::byzantine_analysis::Reaction::Lied { lie, .. }) if lie == "equivocate"
    ));
    assert!(matches!(
        events[1].what,
        ChainEvent::CaughtUp {
            blocks: 3,
            rounds: 1
        }
    ));
}
