//! What a byzantine fault did: the lies the struck node told (its `misbehaved` events)
//! and what the honest nodes did about them, from their logs: blocks rejected with which
//! reason, bodies and connections refused, fetches given up, links cut, equivocations
//! recorded as evidence; whether an honest node adopted a lie; and how much later blocks
//! reached 80% of nodes while it held than before it.
//!
//! Reactions are counted from the fault's start to [`AFTERMATH_S`] after its end (or to
//! the next byzantine fault's start, if sooner): an honest node gives a withheld block up
//! after five requests a second apart, so the last refusals of a lie told in the fault's
//! last slot come after it ended.

pub use crate::chain_events::Reaction;
use crate::chain_events::{ChainEvent, RunFacts, Timed};
use crate::faults::{FaultRecord, INVALID_FLAVOURS};
use crate::propagation::BlockPropagation;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// Seconds after a byzantine fault's end in which honest nodes' reactions still count.
pub const AFTERMATH_S: f64 = 6.0;

/// What a byzantine fault did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByzantineOutcome {
    /// Lies the struck node logged (`misbehaved`): blocks for the leader's lies, the
    /// flood's start and end for garbage.
    pub lies: u64,
    /// Nodes that stayed honest.
    pub honest_nodes: usize,
    /// Honest nodes that did what they should about it: refused a lie (rejected it with
    /// the reason its kind calls for, gave up a withheld block, refused or cut the
    /// flooder) or, for an equivocation, recorded the evidence.
    pub nodes_refusing: usize,
    /// The reaction that counts as refusing for this kind (`rejected:state_mismatch`,
    /// `equivocation`, `fetch_abandoned`, `peer_cut or refused`).
    pub expected: String,
    /// Every reaction of the honest nodes in the window, summed over them, by name.
    pub reactions: BTreeMap<String, u64>,
    /// Honest nodes that adopted a block the struck node spoiled (should be none; an
    /// equivocation's or a withheld block is valid, and adopting it is no lie taken).
    pub nodes_adopting_lies: usize,
    /// Median adoption on 80% of nodes of the blocks forged while it held, minus the
    /// pre-fault median: how much later blocks reached most nodes (negative: sooner).
    pub delay_s: Option<f64>,
}

/// Whether a fault kind (as a record names it) is byzantine.
pub fn is_byzantine(kind: &str) -> bool {
    ["equivocate", "invalid_block", "withhold", "garbage"].contains(&kind)
}

/// The outcome of byzantine fault `r` (none for another kind), from the chain events of
/// the run, when it ended and the next byzantine fault started, the blocks forged while
/// it held, and the pre-fault median adoption with the index of the 80% fraction.
pub fn outcome(
    r: &FaultRecord,
    events: &[Timed],
    run: &RunFacts,
    (end_ns, next_ns): (Option<u64>, Option<u64>),
    within: &[&BlockPropagation],
    (pre_fault_p50_s, f80): (Option<f64>, usize),
) -> Option<ByzantineOutcome> {
    let expected = match r.kind.as_str() {
        "equivocate" => "equivocation".to_string(),
        "withhold" => "fetch_abandoned".to_string(),
        "garbage" => "peer_cut or refused".to_string(),
        "invalid_block" => {
            let flavour = r.flavour.as_deref()?;
            let reason = INVALID_FLAVOURS.iter().find(|f| f.0 == flavour)?.1;
            format!("rejected:{reason}")
        }
        _ => return None,
    };
    let liar: HashSet<&str> = r.nodes.iter().map(String::as_str).collect();
    let from = r.start_ns?;
    let until = end_ns
        .unwrap_or(u64::MAX)
        .saturating_add((AFTERMATH_S * 1e9) as u64);
    // The next byzantine fault's reactions are its own from its first nanosecond.
    let next = next_ns.unwrap_or(u64::MAX);
    let window = |e: &&Timed| e.ts_ns >= from && e.ts_ns <= until && e.ts_ns < next;
    let mut lies = 0;
    let mut lie_blocks = HashSet::new();
    for e in events.iter().filter(window) {
        if let (true, ChainEvent::Byzantine(Reaction::Lied { block, .. })) =
            (liar.contains(e.node.as_str()), &e.what)
        {
            lies += 1;
            lie_blocks.extend(block.clone());
        }
    }
    // An equivocation's blocks are both valid, and so is a withheld block (served again
    // once the fault ends, so the chain converges): adopting one is no lie taken.
    let adopting_is_a_lie = !matches!(r.kind.as_str(), "equivocate" | "withhold");
    if r.kind == "equivocate" {
        lie_blocks.clear();
    }
    let honest: Vec<&str> = run
        .nodes
        .iter()
        .map(String::as_str)
        .filter(|n| !liar.contains(n) && !run.gone.iter().any(|g| g == n))
        .collect();
    let mut reactions = BTreeMap::new();
    let mut refusing = HashSet::new();
    let mut adopting = HashSet::new();
    for e in events.iter().filter(window) {
        if !honest.contains(&e.node.as_str()) {
            continue;
        }
        match &e.what {
            ChainEvent::Adopted { block, .. }
                if adopting_is_a_lie && lie_blocks.contains(block) =>
            {
                adopting.insert(e.node.as_str());
            }
            ChainEvent::Byzantine(x) => {
                let Some(key) = x.key() else { continue };
                let counts = if r.kind == "garbage" {
                    key == "peer_cut" || key.starts_with("refused:")
                } else {
                    key == expected
                };
                if counts && about(x, &liar, &lie_blocks, &r.kind) {
                    refusing.insert(e.node.as_str());
                }
                *reactions.entry(key).or_insert(0) += 1;
            }
            _ => {}
        }
    }
    let during: Vec<f64> = within.iter().filter_map(|b| b.fractions[f80]).collect();
    let delay_s = match (pre_fault_p50_s, during.is_empty()) {
        (Some(pre), false) => Some(median(during) - pre),
        _ => None,
    };
    Some(ByzantineOutcome {
        lies,
        honest_nodes: honest.len(),
        nodes_refusing: refusing.len(),
        expected,
        reactions,
        nodes_adopting_lies: adopting.len(),
        delay_s,
    })
}

/// Whether a reaction concerns the liar: its peer is the liar, or its block one of the
/// lies (a transport refusal names no peer: for garbage it counts, as the flood is the
/// only source of refusals in such a run).
fn about(x: &Reaction, liar: &HashSet<&str>, lie_blocks: &HashSet<String>, kind: &str) -> bool {
    let by_peer = |p: &Option<String>| p.as_deref().is_some_and(|p| liar.contains(p));
    match x {
        Reaction::Rejected { peer, block, .. } => {
            by_peer(peer) || block.as_ref().is_some_and(|b| lie_blocks.contains(b))
        }
        Reaction::FetchAbandoned { block } => {
            block.as_ref().is_some_and(|b| lie_blocks.contains(b))
        }
        Reaction::PeerCut { peer } => by_peer(peer),
        Reaction::Refused { peer, .. } => peer.is_none() && kind == "garbage" || by_peer(peer),
        Reaction::Equivocation => kind == "equivocate",
        Reaction::Lied { .. } => false,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn record(kind: &str, flavour: Option<&str>) -> FaultRecord {
        FaultRecord {
            index: 0,
            kind: kind.into(),
            what: format!("{kind} n0"),
            nodes: vec!["n0".into()],
            at_slot: 1,
            end_slot: Some(3),
            start_ns: Some(S),
            end_ns: Some(3 * S),
            flavour: flavour.map(String::from),
        }
    }

    fn ev(node: &str, ts_ns: u64, what: ChainEvent) -> Timed {
        Timed {
            node: node.into(),
            ts_ns,
            what,
        }
    }

    fn rejected(reason: &str, block: &str) -> ChainEvent {
        ChainEvent::Byzantine(Reaction::Rejected {
            reason: reason.into(),
            peer: Some("n0".into()),
            block: Some(block.into()),
        })
    }

    #[test]
    fn honest_refusals_count_by_the_reason_the_lie_calls_for_and_adopted_lies_are_caught() {
        let nodes: Vec<String> = ["n0", "n1", "n2", "n3"].map(String::from).to_vec();
        let run = RunFacts {
            nodes,
            genesis_time_ns: 0,
            slot_ns: S,
            end_slot: 10,
            gone: &[],
        };
        let lie = ChainEvent::Byzantine(Reaction::Lied {
            lie: "invalid_block".into(),
            block: Some("bad".into()),
        });
        let events = vec![
            ev("n0", S + 1, lie),
            ev("n1", S + 2, rejected("state_mismatch", "bad")),
            ev("n2", S + 3, rejected("state_mismatch", "bad")),
            // Another reason is counted, but is not the refusal this lie calls for.
            ev("n3", S + 4, rejected("bad_poh", "bad")),
            // Past the aftermath: not this fault's.
            ev("n3", 10 * S, rejected("state_mismatch", "bad")),
        ];
        let r = record("invalid_block", Some("state_hash"));
        let o = outcome(&r, &events, &run, (Some(3 * S), None), &[], (None, 1)).unwrap();
        assert_eq!(o.lies, 1);
        assert_eq!(o.honest_nodes, 3);
        assert_eq!(o.expected, "rejected:state_mismatch");
        assert_eq!(o.nodes_refusing, 2);
        assert_eq!(o.reactions["rejected:state_mismatch"], 2);
        assert_eq!(o.reactions["rejected:bad_poh"], 1);
        assert_eq!(o.nodes_adopting_lies, 0);
        // An honest node that adopted the spoiled block is named as such.
        let mut taken = events.clone();
        taken.push(ev(
            "n3",
            S + 5,
            ChainEvent::Adopted {
                block: "bad".into(),
                slot: 1,
                height: 1,
            },
        ));
        let o = outcome(&r, &taken, &run, (Some(3 * S), None), &[], (None, 1)).unwrap();
        assert_eq!(o.nodes_adopting_lies, 1);
        // The next byzantine fault's start ends this one's window.
        let o = outcome(
            &r,
            &events,
            &run,
            (Some(3 * S), Some(S + 3)),
            &[],
            (None, 1),
        )
        .unwrap();
        assert_eq!(o.nodes_refusing, 1);
        // Not a byzantine kind: no outcome.
        assert!(outcome(
            &record("restart", None),
            &events,
            &run,
            (None, None),
            &[],
            (None, 1)
        )
        .is_none());
    }
}
