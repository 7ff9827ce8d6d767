//! The chain events of reference-node logs that the fault analyses read: starts,
//! adoptions with their height, range syncs, and what nodes did about a byzantine lie
//! (or the lie they told). Below both [`crate::fault_analysis`] and
//! [`crate::byzantine_analysis`], which read them.

use crate::error::ClusterError;
use serde::Deserialize;
use std::path::PathBuf;

/// One chain event of a node log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainEvent {
    /// The node (re)started: its chain starts again from genesis.
    Started,
    /// A block joined its best chain.
    Adopted {
        /// Block hash, hex.
        block: String,
        /// Its slot.
        slot: u64,
        /// Its height.
        height: u64,
    },
    /// A range sync reached the block it was told of.
    CaughtUp {
        /// Blocks the sync brought.
        blocks: u64,
        /// Range requests it took.
        rounds: u64,
    },
    /// What a node did about another one's lie, or a lie it told (byzantine faults).
    Byzantine(Reaction),
}

/// A chain event with its node and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    /// Node name.
    pub node: String,
    /// Unix ns.
    pub ts_ns: u64,
    /// What.
    pub what: ChainEvent,
}

#[derive(Deserialize)]
struct Line {
    kind: Option<String>,
    event: Option<String>,
    node: Option<String>,
    ts_ns: Option<u64>,
    block: Option<String>,
    slot: Option<u64>,
    height: Option<u64>,
    /// A count for `caught_up`; the two blocks of an equivocation for `misbehaved`.
    blocks: Option<serde_json::Value>,
    rounds: Option<u64>,
    reason: Option<String>,
    peer: Option<String>,
    lie: Option<String>,
    flavour: Option<String>,
}

/// Reads the chain events of reference-node logs, in time order.
pub fn read_chain_events(logs: &[PathBuf]) -> Result<Vec<Timed>, ClusterError> {
    let mut out = Vec::new();
    for path in logs {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Io {
            path: path.clone(),
            source,
        })?;
        for (i, line) in text.lines().enumerate() {
            let l: Line = match serde_json::from_str(line) {
                Ok(l) => l,
                // The propagation analysis has already refused a broken line by now.
                Err(_) => continue,
            };
            let (Some("event"), Some(node), Some(ts_ns)) = (l.kind.as_deref(), l.node, l.ts_ns)
            else {
                continue;
            };
            let what = match (l.event.as_deref(), l.block, l.slot, l.height) {
                (Some("started"), ..) => ChainEvent::Started,
                (Some("adopted"), Some(block), Some(slot), Some(height)) => {
                    ChainEvent::Adopted {
                        block,
                        slot,
                        height,
                    }
                }
                (Some("adopted"), ..) => {
                    return Err(ClusterError::Log {
                        path: path.clone(),
                        line: i + 1,
                        message: "event `adopted` without `block`, `slot` and `height`: the fault analysis needs the reference node's log".into(),
                    })
                }
                (Some("caught_up"), ..) => ChainEvent::CaughtUp {
                    blocks: l.blocks.as_ref().and_then(|b| b.as_u64()).unwrap_or(0),
                    rounds: l.rounds.unwrap_or(0),
                },
                (Some(e), block, ..) => {
                    match Reaction::of(
                        e,
                        l.reason,
                        l.peer,
                        block,
                        l.lie,
                        l.flavour,
                    ) {
                        Some(r) => ChainEvent::Byzantine(r),
                        None => continue,
                    }
                }
                _ => continue,
            };
            out.push(Timed { node, ts_ns, what });
        }
    }
    out.sort_by_key(|e| e.ts_ns);
    Ok(out)
}

/// What the fault analysis needs of the run besides its logs.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    /// Node names.
    pub nodes: Vec<String>,
    /// Unix ns of slot 0.
    pub genesis_time_ns: u64,
    /// Slot length, ns.
    pub slot_ns: u64,
    /// The run's last slot (exclusive).
    pub end_slot: u64,
    /// Nodes killed for good (they never come back, and are not waited for).
    pub gone: &'a [String],
}

/// One thing a node logged about a lie (or a lie it told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// The node told a lie (`misbehaved`): which, and the block it concerned.
    Lied {
        /// `equivocate`, `invalid_block`, `withhold` or `garbage`.
        lie: String,
        /// The block (none for garbage).
        block: Option<String>,
    },
    /// A block it fetched failed validation (`rejected`).
    Rejected {
        /// The rejection's reason.
        reason: String,
        /// The peer that served it.
        peer: Option<String>,
        /// The block.
        block: Option<String>,
    },
    /// A connection or a body was refused (`refused`): by the transport (the peer is
    /// then unknown) or a body that is no block.
    Refused {
        /// Why.
        reason: String,
        /// The peer, when known.
        peer: Option<String>,
    },
    /// A block was given up on after every request went unanswered.
    FetchAbandoned {
        /// The block.
        block: Option<String>,
    },
    /// A peer's link was cut for messages that are not the protocol.
    PeerCut {
        /// The peer.
        peer: Option<String>,
    },
    /// An equivocation was recorded with both signed headers.
    Equivocation,
}

impl Reaction {
    /// The reaction a node-log event is, if it is one.
    pub fn of(
        event: &str,
        reason: Option<String>,
        peer: Option<String>,
        block: Option<String>,
        lie: Option<String>,
        _flavour: Option<String>,
    ) -> Option<Reaction> {
        Some(match event {
            "misbehaved" => Reaction::Lied { lie: lie?, block },
            "rejected" => Reaction::Rejected {
                reason: reason?,
                peer,
                block,
            },
            "refused" => Reaction::Refused {
                reason: reason?,
                peer,
            },
            "fetch_abandoned" => Reaction::FetchAbandoned { block },
            "peer_cut" => Reaction::PeerCut { peer },
            "equivocation" => Reaction::Equivocation,
            _ => return None,
        })
    }

    /// The name a report counts it under: `rejected:state_mismatch`,
    /// `refused:oversized`, `fetch_abandoned`, `peer_cut`, `equivocation`.
    pub(crate) fn key(&self) -> Option<String> {
        match self {
            Reaction::Lied { .. } => None,
            Reaction::Rejected { reason, .. } => Some(format!("rejected:{reason}")),
            Reaction::Refused { reason, .. } => Some(format!("refused:{reason}")),
            Reaction::FetchAbandoned { .. } => Some("fetch_abandoned".into()),
            Reaction::PeerCut { .. } => Some("peer_cut".into()),
            Reaction::Equivocation => Some("equivocation".into()),
        }
    }
}
