//! The node event log (JSON lines, `"kind":"event"`), parsed into typed events.
//!
//! The contract is the node log schema shared with dyno-node: every event line carries
//! `event`, `ts_ns` (wall clock, Unix nanoseconds) and `node`. Other line kinds (per-second
//! and per-block figures) share the file and are skipped, as are event names this version
//! does not know, so a newer node's log still reads.

use crate::error::ClusterError;
use serde::Deserialize;
use std::path::Path;

/// One propagation event from a node log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The node that logged it.
    pub node: String,
    /// When, Unix epoch nanoseconds (CLOCK_REALTIME).
    pub ts_ns: u64,
    /// What happened.
    pub what: EventKind,
}

/// The events the analysis uses, with their keys from the schema.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The node is up.
    Started {
        /// Unix ns of slot 0's start.
        genesis_time_ns: u64,
        /// Slot length, ns.
        slot_ns: u64,
    },
    /// The leader's loop began a slot.
    SlotStart {
        /// Slot.
        slot: u64,
        /// When the slot was due (genesis + slot * slot length).
        scheduled_ns: u64,
    },
    /// Leadership was checked.
    LeadershipChecked {
        /// Slot.
        slot: u64,
        /// Whether this node leads the slot.
        leader: bool,
    },
    /// Ledger advanced to the slot.
    Ticked {
        /// Slot.
        slot: u64,
    },
    /// Mempool snapshot taken.
    Snapshot {
        /// Slot.
        slot: u64,
    },
    /// A block was forged.
    Forged {
        /// Slot.
        slot: u64,
        /// Block hash, hex.
        block: String,
    },
    /// The header was sent to peers.
    Announced {
        /// Slot.
        slot: u64,
        /// Block hash, hex.
        block: String,
    },
    /// A header arrived from a peer.
    HeaderReceived {
        /// Slot.
        slot: u64,
        /// Block hash, hex.
        block: String,
    },
    /// A body was requested from a peer.
    FetchRequested {
        /// Slot (absent when the node asks for a parent whose slot it does not know yet).
        #[serde(default)]
        slot: Option<u64>,
        /// Block hash, hex.
        block: String,
    },
    /// A body arrived.
    FetchCompleted {
        /// Slot.
        slot: u64,
        /// Block hash, hex.
        block: String,
    },
    /// The block joined this node's chain.
    Adopted {
        /// Slot.
        slot: u64,
        /// Block hash, hex.
        block: String,
    },
}

impl EventKind {
    /// The slot the event is about (`None` for `started`).
    pub fn slot(&self) -> Option<u64> {
        match self {
            EventKind::Started { .. } => None,
            EventKind::SlotStart { slot, .. }
            | EventKind::LeadershipChecked { slot, .. }
            | EventKind::Ticked { slot }
            | EventKind::Snapshot { slot }
            | EventKind::Forged { slot, .. }
            | EventKind::Announced { slot, .. }
            | EventKind::HeaderReceived { slot, .. }
            | EventKind::FetchCompleted { slot, .. }
            | EventKind::Adopted { slot, .. } => Some(*slot),
            EventKind::FetchRequested { slot, .. } => *slot,
        }
    }
}

/// Event names the schema defines but the analysis does not need.
const KNOWN_UNUSED: [&str; 2] = ["validated", "rejected"];

#[derive(Deserialize)]
struct Line {
    kind: Option<String>,
}

#[derive(Deserialize)]
struct Head {
    event: String,
    ts_ns: u64,
    node: String,
}

/// Parses the event lines of one node log; `path` names the file in errors.
pub fn parse_log(path: &Path, text: &str) -> Result<Vec<Event>, ClusterError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        events.extend(event_line(path, i + 1, line)?);
    }
    Ok(events)
}

/// Line `number` of a node log: the event it holds, `None` for another line (a blank
/// line, a metrics line, an event the analysis does not need).
fn event_line(path: &Path, number: usize, line: &str) -> Result<Option<Event>, ClusterError> {
    let err = |message: String| ClusterError::Log {
        path: path.to_path_buf(),
        line: number,
        message,
    };
    if line.trim().is_empty() {
        return Ok(None);
    }
    if line.len() > dyno_proc::lines::MAX_LINE_BYTES {
        return Err(too_long(path, number));
    }
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
    let kind: Line =
        serde_json::from_value(value.clone()).map_err(|e| err(format!("`kind`: {e}")))?;
    if kind.kind.as_deref() != Some("event") {
        return Ok(None);
    }
    let head: Head =
        serde_json::from_value(value.clone()).map_err(|e| err(format!("event line: {e}")))?;
    if KNOWN_UNUSED.contains(&head.event.as_str()) {
        return Ok(None);
    }
    let what = match serde_json::from_value::<EventKind>(value) {
        Ok(what) => what,
        Err(e) if e.to_string().starts_with("unknown variant") => return Ok(None),
        Err(e) => return Err(err(format!("event `{}`: {e}", head.event))),
    };
    Ok(Some(Event {
        node: head.node,
        ts_ns: head.ts_ns,
        what,
    }))
}

/// Reads and parses a node log file, line by line (a log is never read whole, and a line
/// over dyno-proc's line cap is refused, not held).
pub fn read_log(path: &Path) -> Result<Vec<Event>, ClusterError> {
    let mut events = Vec::new();
    for_each_line(path, |number, line, cut| {
        if cut {
            return Err(too_long(path, number));
        }
        events.extend(event_line(path, number, line)?);
        Ok(())
    })?;
    Ok(events)
}

/// A log line over dyno-proc's line cap, refused.
fn too_long(path: &Path, number: usize) -> ClusterError {
    ClusterError::Log {
        path: path.to_path_buf(),
        line: number,
        message: format!(
            "longer than {} KiB: no node writes such a line",
            dyno_proc::lines::MAX_LINE_BYTES / 1024
        ),
    }
}

/// Calls `each` with every line of the file at `path`: its 1-based number, its text (cut
/// at dyno-proc's line cap) and whether it was cut. The file is read through a buffer,
/// never whole.
pub(crate) fn for_each_line(
    path: &Path,
    mut each: impl FnMut(usize, &str, bool) -> Result<(), ClusterError>,
) -> Result<(), ClusterError> {
    let io = |source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut lines = dyno_proc::lines::BoundedLines::new(std::io::BufReader::new(file));
    let mut line = Vec::new();
    let mut number = 0;
    let mut cut = 0;
    while lines.next_line(&mut line).map_err(io)? {
        number += 1;
        let was_cut = lines.dropped().cut_lines > cut;
        cut = lines.dropped().cut_lines;
        each(number, &String::from_utf8_lossy(&line), was_cut)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_are_read_and_others_skipped() {
        let log = r#"{"kind":"second","t":1.0,"tps":20.0}
{"kind":"event","event":"started","ts_ns":5,"node":"n0","genesis_hash":"ab","genesis_time_ns":1000,"slot_ns":100,"peers":["n1"]}

{"kind":"event","event":"forged","ts_ns":1150,"node":"n0","slot":1,"block":"aa","height":1,"parent":"00","txs":3,"bytes":900}
{"kind":"event","event":"validated","ts_ns":1160,"node":"n0","slot":1,"block":"aa"}
{"kind":"event","event":"gossip_sent","ts_ns":1170,"node":"n0"}
{"kind":"block","t":1.2,"slot":1,"txs":3}"#;
        let events = parse_log(Path::new("n0.log"), log).unwrap();
        assert_eq!(
            events,
            vec![
                Event {
                    node: "n0".into(),
                    ts_ns: 5,
                    what: EventKind::Started {
                        genesis_time_ns: 1000,
                        slot_ns: 100
                    }
                },
                Event {
                    node: "n0".into(),
                    ts_ns: 1150,
                    what: EventKind::Forged {
                        slot: 1,
                        block: "aa".into()
                    }
                },
            ]
        );
    }

    #[test]
    fn a_broken_line_names_file_and_line() {
        let log =
            "{\"kind\":\"event\",\"event\":\"adopted\",\"ts_ns\":1,\"node\":\"n1\",\"slot\":1}\n";
        let e = parse_log(Path::new("n1.log"), &format!("\n{log}")).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("n1.log:2: event `adopted`: missing field `block`"),
            "{text}"
        );
        let e = parse_log(Path::new("n1.log"), "{not json").unwrap_err();
        assert!(e.to_string().starts_with("n1.log:1: not JSON"), "{e}");
        let e = parse_log(
            Path::new("n1.log"),
            r#"{"kind":"event","event":"x","node":"n"}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("missing field `ts_ns`"), "{e}");
    }
}
