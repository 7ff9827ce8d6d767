//! The fault schedule of a cluster file (`[[fault]]`): what goes wrong, where and when.
//!
//! Process faults (`kill`, `restart`, `pause`, `resume`, `upgrade`) are signals and
//! restarts the launcher gives any node command. Network faults (`partition`, `link`)
//! and `clock_skew` change a running reference node through its control file
//! (dyno-node's `control` module): the node's user-space link shaping takes them, since
//! this kernel has no netem. A node command other than the reference node cannot take
//! them, and the file is refused before anything starts.
//!
//! Byzantine faults (`equivocate`, `invalid_block`, `withhold`, `garbage`) make a
//! reference node lie on purpose, through the same control file (its `[misbehave]`
//! switch, which nothing but a fault schedule turns on); the other nodes stay honest,
//! and the report says what they did about it.
//!
//! Slots count from slot 0 of the run (the genesis), as the node logs do; the run's
//! slots are its warm-up plus its measured window.

use serde::Serialize;

/// One scheduled fault.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fault {
    /// Its place among the file's `[[fault]]` tables (0-based).
    pub index: usize,
    /// What happens.
    #[serde(flatten)]
    pub kind: FaultKind,
    /// The slot it starts at.
    pub at_slot: u64,
    /// How many slots it lasts; `None`: to the end of the run (`kill`, `upgrade`, a
    /// `pause` a later `resume` ends) or an instant (`resume`).
    pub slots: Option<u64>,
    /// The nodes it strikes (ids), sorted.
    pub nodes: Vec<usize>,
    /// For `link`: the nodes at the other end of the changed links (sorted); every
    /// other node when the file does not say. For `partition`: every node not in
    /// `nodes`.
    pub to: Vec<usize>,
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultKind {
    /// SIGKILL; the node stays down.
    Kill,
    /// SIGKILL, then the same command with the same config and data after `slots`.
    Restart,
    /// SIGSTOP; SIGCONT after `slots`, or at a later `resume`.
    Pause,
    /// SIGCONT to a node a `pause` without `slots` froze.
    Resume,
    /// SIGKILL, then another node command (a release) after `slots` (default 0): a
    /// rolling upgrade is one per node at successive slots.
    Upgrade {
        /// The new command, with the node command's placeholders.
        command: Vec<String>,
    },
    /// The nodes are cut off from the rest: nothing passes either way.
    Partition,
    /// The links between `nodes` and `to` change, both directions.
    Link {
        /// Added one-way latency, ms.
        extra_latency_ms: f64,
        /// Jitter, ms either way.
        jitter_ms: f64,
        /// Fraction of frames lost.
        loss: f64,
        /// Bandwidth cap, Mbit/s.
        bandwidth_mbit: Option<f64>,
    },
    /// The nodes' slot clocks run `skew_ms` ahead (negative: behind).
    ClockSkew {
        /// The offset, ms.
        skew_ms: f64,
    },
    /// Byzantine: in each slot it leads, the node sends two different valid blocks, one
    /// to half its peers and one to the rest.
    Equivocate,
    /// Byzantine: in each slot it leads, the node announces a block that fails
    /// validation as `flavour` says (`bad_signature`, `state_hash` or `poh`).
    InvalidBlock {
        /// What is wrong with the block.
        flavour: String,
    },
    /// Byzantine: in each slot it leads, the node announces a valid block and never
    /// serves it.
    Withhold,
    /// Byzantine: the node sends its peers malformed and oversized frames as fast as its
    /// links take them.
    Garbage,
}

/// The `flavour`s of an `invalid_block` fault, and the rejection an honest node logs for
/// each.
pub const INVALID_FLAVOURS: [(&str, &str); 3] = [
    ("bad_signature", "bad_leader_signature"),
    ("state_hash", "state_mismatch"),
    ("poh", "bad_poh"),
];

impl FaultKind {
    /// The kind's name in the file.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Restart => "restart",
            FaultKind::Pause => "pause",
            FaultKind::Resume => "resume",
            FaultKind::Upgrade { .. } => "upgrade",
            FaultKind::Partition => "partition",
            FaultKind::Link { .. } => "link",
            FaultKind::ClockSkew { .. } => "clock_skew",
            FaultKind::Equivocate => "equivocate",
            FaultKind::InvalidBlock { .. } => "invalid_block",
            FaultKind::Withhold => "withhold",
            FaultKind::Garbage => "garbage",
        }
    }

    /// Whether it acts through the node's control file (the reference node only).
    pub fn needs_control(&self) -> bool {
        matches!(
            self,
            FaultKind::Partition | FaultKind::Link { .. } | FaultKind::ClockSkew { .. }
        ) || self.is_byzantine()
    }

    /// Whether the struck node lies on purpose (the other nodes stay honest).
    pub fn is_byzantine(&self) -> bool {
        matches!(
            self,
            FaultKind::Equivocate
                | FaultKind::InvalidBlock { .. }
                | FaultKind::Withhold
                | FaultKind::Garbage
        )
    }

    /// Whether it is a leader's lie (a block), so the node must lead slots.
    pub fn needs_leader(&self) -> bool {
        self.is_byzantine() && *self != FaultKind::Garbage
    }

    /// The control file's `[misbehave]` table of a byzantine kind.
    pub(crate) fn misbehave_toml(&self) -> Option<String> {
        match self {
            FaultKind::InvalidBlock { flavour } => Some(format!(
                "\n[misbehave]\nkind = \"invalid_block\"\nflavour = \"{flavour}\"\n"
            )),
            k if k.is_byzantine() => Some(format!("\n[misbehave]\nkind = \"{}\"\n", k.name())),
            _ => None,
        }
    }
}

/// Every kind's name, for error messages.
pub const KINDS: [&str; 12] = [
    "kill",
    "restart",
    "pause",
    "resume",
    "upgrade",
    "partition",
    "link",
    "clock_skew",
    "equivocate",
    "invalid_block",
    "withhold",
    "garbage",
];

impl Fault {
    /// The slot it ends at (exclusive); `None` when it lasts to the end of the run.
    pub fn end_slot(&self) -> Option<u64> {
        match self.kind {
            FaultKind::Resume => Some(self.at_slot),
            FaultKind::Restart | FaultKind::Upgrade { .. } => {
                Some(self.at_slot + self.slots.unwrap_or(0))
            }
            _ => self.slots.map(|s| self.at_slot + s),
        }
    }
}

/// What a run did of one scheduled fault: when it really started and ended (the
/// launcher applies a step up to 100 ms after its slot starts).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct FaultRecord {
    /// Its place among the file's `[[fault]]` tables.
    pub index: usize,
    /// The kind's name.
    pub kind: String,
    /// A line naming it (`restart n3 at slot 10 for 4 slots`).
    pub what: String,
    /// The nodes it struck.
    pub nodes: Vec<String>,
    /// The slot it was scheduled to start at.
    pub at_slot: u64,
    /// The slot it was scheduled to end at (none: it lasts to the end of the run).
    pub end_slot: Option<u64>,
    /// When it started, Unix ns (none: the run ended first).
    pub start_ns: Option<u64>,
    /// When it ended, Unix ns (none: it lasted to the end, or the run ended first).
    pub end_ns: Option<u64>,
    /// An `invalid_block`'s flavour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavour: Option<String>,
}
