//! What the report and the store tests build a fault's outcome from: a restart of the
//! nodes named, with the recoveries given, and a report of such outcomes without forks.

use super::{FaultOutcome, FaultReport, Forks, NodeRecovery};
use crate::faults::FaultRecord;

/// A restart (fault `index` of the file) of the nodes in `back`, each with its seconds
/// back at the tip, adoption back at pace after `recovered` and the nodes agreeing
/// again after `converged` (`None`: not within the run).
pub(crate) fn restart(
    index: usize,
    back: &[(&str, Option<f64>)],
    recovered: Option<f64>,
    converged: Option<f64>,
) -> FaultOutcome {
    let nodes: Vec<String> = back.iter().map(|b| b.0.to_string()).collect();
    FaultOutcome {
        record: FaultRecord {
            index,
            kind: "restart".into(),
            what: format!("restart {} at slot 2 for 1 slot", nodes.join(",")),
            nodes,
            at_slot: 2,
            end_slot: Some(3),
            start_ns: Some(1),
            end_ns: Some(2),
            flavour: None,
        },
        nodes_recovered: back
            .iter()
            .map(|&(node, s)| NodeRecovery {
                node: node.into(),
                back_at_tip_s: s,
                synced_blocks: None,
                sync_rounds: None,
            })
            .collect(),
        converged_s: converged,
        pre_fault_p50_s: Some(0.1),
        adoption_recovered_s: recovered,
        blocks_during: 1,
        blocks_not_everywhere: 0,
        byzantine: None,
    }
}

/// The report of `faults`: no fork, every block everywhere.
pub(crate) fn report(faults: Vec<FaultOutcome>) -> FaultReport {
    FaultReport {
        windows: faults.iter().map(|_| (2, 3)).collect(),
        faults,
        forks: Forks {
            contested_heights: 0,
            reorgs: Vec::new(),
            max_depth: 0,
            resolved: true,
        },
        blocks_not_everywhere: 0,
        adoption_during_faults: None,
        adoption_outside_faults: None,
    }
}
