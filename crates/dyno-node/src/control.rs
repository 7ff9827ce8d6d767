//! The fault control file: what a fault schedule changes in a running node.
//!
//! `dyno cluster run` writes one per node (its config's `control` key names it) and
//! replaces it, by rename, whenever a network fault or a clock skew starts or ends; the
//! node looks at it every [`CONTROL_POLL`] and applies the whole file each time it
//! changes: every link it lists gets that fault, every other link none.
//!
//! ```toml
//! clock_skew_ms = 500          # the node's slot clock runs 500 ms ahead
//!
//! [[links]]
//! peer = "n3"
//! extra_latency_ms = 100       # added to the link's own latency
//! jitter_ms = 20               # +-20 ms per frame, still in order
//! loss = 0.1                   # 10% of frames lost
//! bandwidth_mbit = 1           # at most this
//! blocked = false              # true: a partition, nothing passes
//!
//! [misbehave]                  # test only: this node turns byzantine until removed
//! kind = "invalid_block"       # equivocate, invalid_block, withhold or garbage
//! flavour = "state_hash"       # invalid_block: bad_signature, state_hash or poh
//! ```
//!
//! `[misbehave]` is the switch a cluster's byzantine faults turn on (`dyno cluster run`
//! writes it; a node never writes its own control file): an honest node has none, and
//! nothing else in the node makes it lie. See [`Misbehave`].

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use dyno_net::LinkFault;

use crate::error::{invalid, parse_toml, Error, Result};

/// How often the node looks at its control file (a `stat`, and a read only when it
/// changed): a fault starts within this of its scheduled time.
pub const CONTROL_POLL: Duration = Duration::from_millis(50);

/// A control file's content.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// Slot clock offset, ms (positive: ahead of the wall clock).
    #[serde(default)]
    pub clock_skew_ms: f64,
    /// Faults on the links to peers.
    #[serde(default)]
    pub links: Vec<LinkControl>,
    /// How this node misbehaves while the file says so (none: it is honest).
    #[serde(default)]
    pub misbehave: Option<Misbehave>,
}

/// A byzantine behaviour of a node under test, switched on by its control file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawMisbehave")]
pub enum Misbehave {
    /// In each slot it leads, two different valid blocks: one header to half its peers,
    /// the other to the rest (the canonical proposer misbehaviour).
    Equivocate,
    /// In each slot it leads, a block that fails validation in the given way, announced
    /// to every peer (it keeps none of it itself).
    InvalidBlock {
        /// What is wrong with it.
        flavour: InvalidFlavour,
    },
    /// In each slot it leads, a valid block announced and never served.
    Withhold,
    /// Malformed frames (messages that do not decode), oversized frames and bytes that
    /// are no frame at all, to every peer as fast as its links take them.
    Garbage,
}

/// What is wrong with an `invalid_block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidFlavour {
    /// The leader's signature does not verify (`bad_leader_signature`).
    BadSignature,
    /// Signed, but the header's state hash is not what replay gives (`state_mismatch`).
    StateHash,
    /// Signed, but an entry's hash breaks the PoH chain (`bad_poh`).
    Poh,
}

/// `[misbehave]` as written: a kind, and a flavour for `invalid_block` only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMisbehave {
    kind: String,
    flavour: Option<InvalidFlavour>,
}

impl TryFrom<RawMisbehave> for Misbehave {
    type Error = String;

    fn try_from(r: RawMisbehave) -> std::result::Result<Misbehave, String> {
        let m = match r.kind.as_str() {
            "equivocate" => Misbehave::Equivocate,
            "withhold" => Misbehave::Withhold,
            "garbage" => Misbehave::Garbage,
            "invalid_block" => {
                let Some(flavour) = r.flavour else {
                    return Err(
                        "misbehave.flavour: an invalid_block needs one (bad_signature, state_hash or poh)"
                            .into(),
                    );
                };
                return Ok(Misbehave::InvalidBlock { flavour });
            }
            other => {
                return Err(format!(
                    "misbehave.kind: {other:?} is not one of equivocate, invalid_block, withhold, garbage"
                ))
            }
        };
        if r.flavour.is_some() {
            return Err(format!(
                "misbehave.flavour: only an invalid_block takes one, not {}",
                r.kind
            ));
        }
        Ok(m)
    }
}

impl Misbehave {
    /// The kind's name (as the cluster file and the log write it).
    pub fn name(self) -> &'static str {
        match self {
            Misbehave::Equivocate => "equivocate",
            Misbehave::InvalidBlock { .. } => "invalid_block",
            Misbehave::Withhold => "withhold",
            Misbehave::Garbage => "garbage",
        }
    }
}

impl InvalidFlavour {
    /// The flavour's name.
    pub fn name(self) -> &'static str {
        match self {
            InvalidFlavour::BadSignature => "bad_signature",
            InvalidFlavour::StateHash => "state_hash",
            InvalidFlavour::Poh => "poh",
        }
    }
}

/// The fault on the direction from this node to one peer.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkControl {
    /// The peer's id.
    pub peer: String,
    /// Added latency, ms.
    #[serde(default)]
    pub extra_latency_ms: f64,
    /// Jitter, ms (each frame's latency varies by up to this either way).
    #[serde(default)]
    pub jitter_ms: f64,
    /// Fraction of frames lost, 0 to 1.
    #[serde(default)]
    pub loss: f64,
    /// Bandwidth cap, Mbit/s.
    #[serde(default)]
    pub bandwidth_mbit: Option<f64>,
    /// Nothing passes.
    #[serde(default)]
    pub blocked: bool,
}

impl LinkControl {
    /// The transport's fault.
    pub fn fault(&self) -> LinkFault {
        LinkFault {
            extra_latency: Duration::from_secs_f64(self.extra_latency_ms / 1e3),
            jitter: Duration::from_secs_f64(self.jitter_ms / 1e3),
            loss: self.loss,
            bandwidth_bps: self.bandwidth_mbit.map(|m| (m * 1e6) as u64),
            blocked: self.blocked,
        }
    }
}

impl Control {
    /// Parses and checks a control file: values in range, peers among `peers`.
    pub fn parse(path: &Path, text: &str, peers: &[String]) -> Result<Control> {
        let c: Control = parse_toml(path, text)?;
        let bad = |key: String, why: &str| invalid(path, text, &key, why.to_string());
        if !(c.clock_skew_ms.is_finite() && c.clock_skew_ms.abs() <= 3_600_000.0) {
            return Err(bad(
                "clock_skew_ms".into(),
                "must be within an hour either way",
            ));
        }
        for (i, l) in c.links.iter().enumerate() {
            if !peers.contains(&l.peer) {
                return Err(bad(
                    format!("links[{i}].peer"),
                    "is not a peer of this node",
                ));
            }
            for (key, v, max) in [
                ("extra_latency_ms", l.extra_latency_ms, 60_000.0),
                ("jitter_ms", l.jitter_ms, 60_000.0),
                ("loss", l.loss, 1.0),
            ] {
                if !(v.is_finite() && (0.0..=max).contains(&v)) {
                    return Err(bad(
                        format!("links[{i}].{key}"),
                        &format!("must be between 0 and {max}"),
                    ));
                }
            }
            if l.bandwidth_mbit
                .is_some_and(|b| !(b.is_finite() && b > 0.0))
            {
                return Err(bad(
                    format!("links[{i}].bandwidth_mbit"),
                    "must be a positive number",
                ));
            }
        }
        Ok(c)
    }

    /// The skew in ns.
    pub fn clock_skew_ns(&self) -> i64 {
        (self.clock_skew_ms * 1e6) as i64
    }

    /// Every peer's fault: the listed ones, and none for the rest.
    pub fn faults<'a>(&'a self, peers: &'a [String]) -> impl Iterator<Item = (&'a str, LinkFault)> {
        peers.iter().map(|p| {
            let f = self
                .links
                .iter()
                .find(|l| &l.peer == p)
                .map_or(LinkFault::default(), LinkControl::fault);
            (p.as_str(), f)
        })
    }
}

/// A control file watched for changes.
#[derive(Debug)]
pub struct ControlWatch {
    path: PathBuf,
    seen: Option<(SystemTime, u64, u64)>,
}

impl ControlWatch {
    /// Watches `path` (it may not exist yet: no fault).
    pub fn new(path: PathBuf) -> ControlWatch {
        ControlWatch { path, seen: None }
    }

    /// The file's content when it changed since the last call (a rename counts: the
    /// inode changes), `Ok(None)` otherwise. A file that went away reads as no fault.
    pub fn changed(&mut self, peers: &[String]) -> Result<Option<Control>> {
        use std::os::unix::fs::MetadataExt;
        let stamp = std::fs::metadata(&self.path).ok().map(|m| {
            (
                m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                m.len(),
                m.ino(),
            )
        });
        if stamp == self.seen {
            return Ok(None);
        }
        self.seen = stamp;
        if stamp.is_none() {
            return Ok(Some(Control::default()));
        }
        let text = std::fs::read_to_string(&self.path).map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })?;
        Control::parse(&self.path, &text, peers).map(Some)
    }
}

/// What the control file changes in a running node besides its links.
pub(crate) struct Controlled {
    /// The slot clock's skew, ns.
    pub skew: std::sync::Arc<std::sync::atomic::AtomicI64>,
    /// The misbehaviour switched on now (the node loop reads it as it leads).
    pub misbehave: std::sync::Arc<std::sync::Mutex<Option<Misbehave>>>,
    /// The event log.
    pub log: std::sync::Arc<crate::log::EventLog>,
}

/// What applies a running node's control file: each change to the peer links, the slot
/// clock and the misbehaviour switch, logged (`control_applied`, or `control_refused`
/// with the reason for a file that does not parse: the faults then stay as they were).
/// [`ControlApplier::step`] runs every [`CONTROL_POLL`], as a task on the node's I/O
/// thread. While `garbage` is on, the flood runs (a thread of its own, only then);
/// dropping the applier stops it.
pub(crate) struct ControlApplier {
    pub(crate) watch: ControlWatch,
    pub(crate) peers: Vec<String>,
    pub(crate) net: std::sync::Arc<dyno_net::PeerNet>,
    pub(crate) to: Controlled,
    pub(crate) flood: Option<crate::flood::Flood>,
}

impl ControlApplier {
    /// Looks at the file once and applies it if it changed.
    pub(crate) fn step(&mut self) {
        use std::sync::atomic::Ordering;
        match self.watch.changed(&self.peers) {
            Ok(None) => {}
            Ok(Some(c)) => {
                for (peer, fault) in c.faults(&self.peers) {
                    self.net.set_fault(peer, fault);
                }
                let to = &self.to;
                to.skew.store(c.clock_skew_ns(), Ordering::Relaxed);
                *to.misbehave.lock().unwrap_or_else(|p| p.into_inner()) = c.misbehave;
                let faulty: Vec<&str> = c.links.iter().map(|l| l.peer.as_str()).collect();
                let mut e = serde_json::json!({"links": faulty, "clock_skew_ms": c.clock_skew_ms});
                if let Some(m) = c.misbehave {
                    e["misbehave"] = serde_json::json!(m.name());
                }
                to.log.event("control_applied", e);
                let garbage = c.misbehave == Some(Misbehave::Garbage);
                match (garbage, self.flood.take()) {
                    (true, None) => {
                        self.flood = Some(crate::flood::Flood::start(
                            self.net.clone(),
                            self.peers.clone(),
                            to.log.clone(),
                        ))
                    }
                    (true, Some(f)) => self.flood = Some(f),
                    (false, Some(f)) => f.stop(),
                    (false, None) => {}
                }
            }
            Err(e) => self.to.log.event(
                "control_refused",
                serde_json::json!({"reason": e.to_string()}),
            ),
        }
    }
}

impl Drop for ControlApplier {
    fn drop(&mut self) {
        // The flood's thread holds the peer network: it ends with the applier.
        if let Some(f) = self.flood.take() {
            f.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_file_sets_listed_links_and_clears_the_rest() {
        let peers = vec!["n1".to_string(), "n2".to_string()];
        let text = "clock_skew_ms = -250\n[[links]]\npeer = \"n2\"\nblocked = true\n";
        let c = Control::parse(Path::new("n0.control.toml"), text, &peers).unwrap();
        assert_eq!(c.clock_skew_ns(), -250_000_000);
        let f: Vec<(&str, LinkFault)> = c.faults(&peers).collect();
        assert!(f[0].1.is_none());
        assert!(f[1].1.blocked);
        let bad = "[[links]]\npeer = \"n9\"\n";
        let e = Control::parse(Path::new("n0.control.toml"), bad, &peers).unwrap_err();
        assert!(e.to_string().contains("links[0].peer"), "{e}");
        let bad = "[[links]]\npeer = \"n1\"\nloss = 1.5\n";
        let e = Control::parse(Path::new("n0.control.toml"), bad, &peers).unwrap_err();
        assert!(e.to_string().contains("links[0].loss"), "{e}");
    }

    #[test]
    fn the_misbehaviour_switch_parses_and_an_invalid_block_needs_its_flavour() {
        let peers = vec!["n1".to_string()];
        let p = Path::new("n0.control.toml");
        let c = Control::parse(p, "[misbehave]\nkind = \"equivocate\"\n", &peers).unwrap();
        assert_eq!(c.misbehave, Some(Misbehave::Equivocate));
        let text = "[misbehave]\nkind = \"invalid_block\"\nflavour = \"poh\"\n";
        let c = Control::parse(p, text, &peers).unwrap();
        assert_eq!(
            c.misbehave,
            Some(Misbehave::InvalidBlock {
                flavour: InvalidFlavour::Poh
            })
        );
        assert_eq!(Control::parse(p, "", &peers).unwrap().misbehave, None);
        for bad in [
            "[misbehave]\nkind = \"invalid_block\"\n",
            "[misbehave]\nkind = \"withhold\"\nflavour = \"poh\"\n",
            "[misbehave]\nkind = \"lie\"\n",
        ] {
            let e = Control::parse(p, bad, &peers).unwrap_err();
            assert!(e.to_string().contains("n0.control.toml"), "{e}");
        }
    }

    #[test]
    fn a_watch_sees_each_replacement_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let peers = vec!["n1".to_string()];
        let mut w = ControlWatch::new(path.clone());
        // No file yet: nothing to apply.
        assert_eq!(w.changed(&peers).unwrap(), None);
        let tmp = dir.path().join("c.tmp");
        std::fs::write(&tmp, "clock_skew_ms = 5\n").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(w.changed(&peers).unwrap().unwrap().clock_skew_ms, 5.0);
        assert_eq!(w.changed(&peers).unwrap(), None);
        // Removed: every fault ends.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(w.changed(&peers).unwrap(), Some(Control::default()));
    }
}
