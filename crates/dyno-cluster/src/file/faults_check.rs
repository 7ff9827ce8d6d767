//! The cluster file's `[[fault]]` tables, checked before anything starts: a slot outside
//! the run, an unknown node or region, a key the kind does not take, a network fault on
//! a node command that cannot take it, two process faults on one node at once, a
//! byzantine fault on a node that never leads or on every node.

use super::{
    placeholders, resolve_executable, ClusterSpec, Cx, NodeCommand, NodeSpec, Region, PLACEHOLDERS,
};
use crate::error::ClusterError;
use crate::faults::{Fault, FaultKind, FaultRecord, INVALID_FLAVOURS, KINDS};
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    kind: Spanned<String>,
    at_slot: Spanned<u64>,
    slots: Option<Spanned<u64>>,
    node: Option<Spanned<String>>,
    nodes: Option<Spanned<Vec<String>>>,
    region: Option<Spanned<String>>,
    to: Option<Spanned<Vec<String>>>,
    to_region: Option<Spanned<String>>,
    command: Option<Spanned<Vec<String>>>,
    extra_latency_ms: Option<Spanned<f64>>,
    jitter_ms: Option<Spanned<f64>>,
    loss: Option<Spanned<f64>>,
    bandwidth_mbit: Option<Spanned<f64>>,
    skew_ms: Option<Spanned<f64>>,
    flavour: Option<Spanned<String>>,
}

/// What the checks need to know of the rest of the file.
pub(super) struct Context<'a> {
    pub nodes: &'a [NodeSpec],
    pub regions: &'a [Region],
    pub command: &'a NodeCommand,
    /// Slots in the run (warm-up plus window).
    pub run_slots: u64,
    /// The same, said for a message: "slots 0..60 (10 s warm-up + 50 s window at 1000 ms)".
    pub run_said: String,
}

pub(super) fn faults(
    cx: &Cx,
    raw: &[Spanned<RawFault>],
    c: &Context,
) -> Result<Vec<Fault>, ClusterError> {
    let mut out: Vec<Fault> = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let f = one(cx, i, r.get_ref(), c)?;
        overlap(cx, i, r.get_ref(), &f, &out, c)?;
        out.push(f);
    }
    Ok(out)
}

fn one(cx: &Cx, i: usize, r: &RawFault, c: &Context) -> Result<Fault, ClusterError> {
    let name = known_kind(cx, i, r)?;
    no_foreign_keys(cx, i, r, name)?;
    let kind = kind(cx, i, r, name)?;
    command_takes(cx, i, r, &kind, name, c)?;
    let at_slot = at_slot(cx, i, r, c)?;
    let slots = slots(cx, i, r, &kind, c)?;
    let nodes = targets(cx, i, r, c)?;
    if nodes.is_empty() || (kind == FaultKind::Partition && nodes.len() == c.nodes.len()) {
        return Err(cx.err(
            r.kind.span().start,
            key_of(i, "nodes"),
            "a partition must leave some nodes on the other side",
        ));
    }
    byzantine_targets(cx, i, r, &kind, &nodes, c)?;
    let to = far_ends(cx, i, r, &kind, &nodes, c)?;
    Ok(Fault {
        index: i,
        kind,
        at_slot,
        slots,
        nodes,
        to,
    })
}

/// `fault[i].k`, the key an error names.
fn key_of(i: usize, k: &str) -> String {
    format!("fault[{i}].{k}")
}

/// The fault's kind, one of [`KINDS`].
fn known_kind<'r>(cx: &Cx, i: usize, r: &'r RawFault) -> Result<&'r str, ClusterError> {
    let name = r.kind.get_ref().as_str();
    if !KINDS.contains(&name) {
        return Err(cx.err(
            r.kind.span().start,
            key_of(i, "kind"),
            format!("{name:?} is not one of {}", KINDS.join(", ")),
        ));
    }
    Ok(name)
}

/// Keys a kind does not take are refused, so a typo'd plan cannot half-run.
fn no_foreign_keys(cx: &Cx, i: usize, r: &RawFault, name: &str) -> Result<(), ClusterError> {
    let link_keys = [
        ("extra_latency_ms", &r.extra_latency_ms),
        ("jitter_ms", &r.jitter_ms),
        ("loss", &r.loss),
        ("bandwidth_mbit", &r.bandwidth_mbit),
    ];
    let foreign: Vec<(&str, usize)> = [
        (
            "command",
            r.command.as_ref().map(|v| v.span().start),
            "upgrade",
        ),
        ("to", r.to.as_ref().map(|v| v.span().start), "link"),
        (
            "to_region",
            r.to_region.as_ref().map(|v| v.span().start),
            "link",
        ),
        (
            "skew_ms",
            r.skew_ms.as_ref().map(|v| v.span().start),
            "clock_skew",
        ),
        (
            "flavour",
            r.flavour.as_ref().map(|v| v.span().start),
            "invalid_block",
        ),
    ]
    .into_iter()
    .chain(
        link_keys
            .iter()
            .map(|(k, v)| (*k, v.as_ref().map(|v| v.span().start), "link")),
    )
    .filter_map(|(k, at, only)| at.filter(|_| only != name).map(|at| (k, at)))
    .collect();
    match foreign.first() {
        Some((k, at)) => Err(cx.err(*at, key_of(i, k), format!("is not a key of a {name} fault"))),
        None => Ok(()),
    }
}

/// A fault that needs the reference node (its lies, its link shaping and slot clock)
/// is refused on another node command.
fn command_takes(
    cx: &Cx,
    i: usize,
    r: &RawFault,
    kind: &FaultKind,
    name: &str,
    c: &Context,
) -> Result<(), ClusterError> {
    if *c.command == NodeCommand::Reference {
        return Ok(());
    }
    let why = if kind.is_byzantine() {
        format!(
            "a {name} fault makes the reference node lie through its control file's test-only \
             switch; node.command runs another node, which has no such switch"
        )
    } else if kind.needs_control() {
        format!(
            "a {name} fault acts through the reference node's link shaping and slot clock; \
             node.command runs another node, which takes only kill, restart, pause, resume and upgrade"
        )
    } else {
        return Ok(());
    };
    Err(cx.err(r.kind.span().start, key_of(i, "kind"), why))
}

/// The slot the fault strikes at: inside the run, and not slot 0.
fn at_slot(cx: &Cx, i: usize, r: &RawFault, c: &Context) -> Result<u64, ClusterError> {
    let at_slot = *r.at_slot.get_ref();
    if at_slot == 0 || at_slot >= c.run_slots {
        return Err(cx.err(
            r.at_slot.span().start,
            key_of(i, "at_slot"),
            format!(
                "slot {at_slot} is outside the run: {} (slot 0 cannot be struck: nodes are still starting)",
                c.run_said
            ),
        ));
    }
    Ok(at_slot)
}

/// The other ends of the links the fault changes: a link fault's `to` or `to_region`,
/// else every node not struck; never a struck node.
fn far_ends(
    cx: &Cx,
    i: usize,
    r: &RawFault,
    kind: &FaultKind,
    nodes: &[usize],
    c: &Context,
) -> Result<Vec<usize>, ClusterError> {
    let key = |k: &str| key_of(i, k);
    let to = match (kind, &r.to, &r.to_region) {
        (FaultKind::Link { .. }, Some(_), Some(t)) => {
            return Err(cx.err(
                t.span().start,
                key("to_region"),
                "give `to` or `to_region`, not both",
            ))
        }
        (FaultKind::Link { .. }, Some(names), None) => {
            node_ids(cx, &key("to"), names.span().start, names.get_ref(), c.nodes)?
        }
        (FaultKind::Link { .. }, None, Some(region)) => {
            region_nodes(cx, &key("to_region"), region, c)?
        }
        _ => (0..c.nodes.len()).filter(|n| !nodes.contains(n)).collect(),
    };
    if let Some(both) = to.iter().find(|n| nodes.contains(n)) {
        return Err(cx.err(
            r.kind.span().start,
            key("to"),
            format!(
                "{} is on both ends of the changed links",
                c.nodes[*both].name
            ),
        ));
    }
    Ok(to)
}

fn kind(cx: &Cx, i: usize, r: &RawFault, name: &str) -> Result<FaultKind, ClusterError> {
    Ok(match name {
        "kill" => FaultKind::Kill,
        "restart" => FaultKind::Restart,
        "pause" => FaultKind::Pause,
        "resume" => FaultKind::Resume,
        "partition" => FaultKind::Partition,
        "upgrade" => upgrade(cx, i, r)?,
        "equivocate" => FaultKind::Equivocate,
        "withhold" => FaultKind::Withhold,
        "garbage" => FaultKind::Garbage,
        "invalid_block" => invalid_block(cx, i, r)?,
        "clock_skew" => clock_skew(cx, i, r)?,
        _ => link(cx, i, r)?,
    })
}

/// An upgrade: the new release's node command.
fn upgrade(cx: &Cx, i: usize, r: &RawFault) -> Result<FaultKind, ClusterError> {
    let Some(argv) = &r.command else {
        return Err(cx.err(
            r.kind.span().start,
            key_of(i, "command"),
            "an upgrade needs the new release's node command (argv, with the node command's placeholders)",
        ));
    };
    command(cx, &key_of(i, "command"), argv)?;
    Ok(FaultKind::Upgrade {
        command: argv.get_ref().clone(),
    })
}

/// An invalid block: its flavour, one of [`INVALID_FLAVOURS`].
fn invalid_block(cx: &Cx, i: usize, r: &RawFault) -> Result<FaultKind, ClusterError> {
    let names = INVALID_FLAVOURS.map(|f| f.0);
    match &r.flavour {
        Some(f) if names.contains(&f.get_ref().as_str()) => Ok(FaultKind::InvalidBlock {
            flavour: f.get_ref().clone(),
        }),
        Some(f) => Err(cx.err(
            f.span().start,
            key_of(i, "flavour"),
            format!("{:?} is not one of {}", f.get_ref(), names.join(", ")),
        )),
        None => Err(cx.err(
            r.kind.span().start,
            key_of(i, "flavour"),
            format!(
                "an invalid_block needs a flavour: what is wrong with the block ({})",
                names.join(", ")
            ),
        )),
    }
}

/// A clock skew: non-zero, within an hour either way.
fn clock_skew(cx: &Cx, i: usize, r: &RawFault) -> Result<FaultKind, ClusterError> {
    let Some(s) = &r.skew_ms else {
        return Err(cx.err(
            r.kind.span().start,
            key_of(i, "skew_ms"),
            "a clock_skew needs skew_ms",
        ));
    };
    let v = *s.get_ref();
    if !(v.is_finite() && v.abs() <= 3_600_000.0 && v != 0.0) {
        return Err(cx.err(
            s.span().start,
            key_of(i, "skew_ms"),
            "must be a non-zero number of ms within an hour either way",
        ));
    }
    Ok(FaultKind::ClockSkew { skew_ms: v })
}

/// A link fault: what it changes, each within its range, at least one given.
fn link(cx: &Cx, i: usize, r: &RawFault) -> Result<FaultKind, ClusterError> {
    let value = |v: &Option<Spanned<f64>>, k: &str, max: f64| match v {
        None => Ok(0.0),
        Some(s) if s.get_ref().is_finite() && (0.0..=max).contains(s.get_ref()) => Ok(*s.get_ref()),
        Some(s) => Err(cx.err(
            s.span().start,
            key_of(i, k),
            format!("must be between 0 and {max}"),
        )),
    };
    let bandwidth_mbit = match &r.bandwidth_mbit {
        Some(b) if !(b.get_ref().is_finite() && *b.get_ref() > 0.0) => {
            return Err(cx.err(
                b.span().start,
                key_of(i, "bandwidth_mbit"),
                "must be a positive number",
            ))
        }
        b => b.as_ref().map(|b| *b.get_ref()),
    };
    let k = FaultKind::Link {
        extra_latency_ms: value(&r.extra_latency_ms, "extra_latency_ms", 60_000.0)?,
        jitter_ms: value(&r.jitter_ms, "jitter_ms", 60_000.0)?,
        loss: value(&r.loss, "loss", 1.0)?,
        bandwidth_mbit,
    };
    if [
        &r.extra_latency_ms,
        &r.jitter_ms,
        &r.loss,
        &r.bandwidth_mbit,
    ]
    .iter()
    .all(|v| v.is_none())
    {
        return Err(cx.err(
            r.kind.span().start,
            key_of(i, "kind"),
            "a link fault changes something: give extra_latency_ms, jitter_ms, loss or bandwidth_mbit",
        ));
    }
    Ok(k)
}

fn slots(
    cx: &Cx,
    i: usize,
    r: &RawFault,
    kind: &FaultKind,
    c: &Context,
) -> Result<Option<u64>, ClusterError> {
    let key = format!("fault[{i}].slots");
    let name = kind.name();
    let at_slot = *r.at_slot.get_ref();
    match (&r.slots, kind) {
        (Some(s), FaultKind::Kill | FaultKind::Resume) => Err(cx.err(
            s.span().start,
            key,
            if *kind == FaultKind::Kill {
                "a killed node stays down: use kind = \"restart\" for one that comes back after some slots"
            } else {
                "a resume is an instant: the pause it ends sets how long"
            },
        )),
        (None, k) if k.needs_control() => Err(
            cx.err(r.kind.span().start, key, format!("a {name} fault needs `slots`, how long it lasts")),
        ),
        (Some(s), _) if *s.get_ref() == 0 && kind.needs_control() => {
            Err(cx.err(s.span().start, key, "must be at least 1"))
        }
        (Some(s), _) if at_slot + s.get_ref() >= c.run_slots => Err(cx.err(
            s.span().start,
            key,
            format!(
                "slots {at_slot}..{} run past the end of the run: {}",
                at_slot + s.get_ref(),
                c.run_said
            ),
        )),
        (s, _) => Ok(s.as_ref().map(|s| *s.get_ref())),
    }
}

/// A byzantine fault leaves some node honest, and a leader's lie (a block) needs a node
/// that leads slots: a producer with stake.
fn byzantine_targets(
    cx: &Cx,
    i: usize,
    r: &RawFault,
    kind: &FaultKind,
    nodes: &[usize],
    c: &Context,
) -> Result<(), ClusterError> {
    if !kind.is_byzantine() {
        return Ok(());
    }
    let (key, at) = target_key(i, r);
    if nodes.len() == c.nodes.len() {
        return Err(cx.err(
            at,
            key,
            format!(
                "a {} fault on every node leaves no honest node to refuse anything",
                kind.name()
            ),
        ));
    }
    if !kind.needs_leader() {
        return Ok(());
    }
    for &n in nodes {
        let node = &c.nodes[n];
        let never = match node.role {
            crate::file::Role::Relay => Some("a relay (nodes.producers does not reach it)"),
            crate::file::Role::Producer { stake: 0 } => Some("a producer with stake 0"),
            crate::file::Role::Producer { .. } => None,
        };
        if let Some(why) = never {
            return Err(cx.err(
                at,
                key,
                format!(
                    "{} is {why}: it never leads a slot, so it has no block to {}",
                    node.name,
                    match kind {
                        FaultKind::Equivocate => "equivocate with",
                        FaultKind::Withhold => "withhold",
                        _ => "spoil",
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// The key naming a fault's nodes (`node`, `nodes` or `region`) and where it is.
fn target_key(i: usize, r: &RawFault) -> (String, usize) {
    let (k, at) = match (&r.node, &r.nodes, &r.region) {
        (Some(n), _, _) => ("node", n.span().start),
        (_, Some(n), _) => ("nodes", n.span().start),
        (_, _, Some(n)) => ("region", n.span().start),
        _ => ("kind", r.kind.span().start),
    };
    (key_of(i, k), at)
}

fn targets(cx: &Cx, i: usize, r: &RawFault, c: &Context) -> Result<Vec<usize>, ClusterError> {
    let key = |k: &str| key_of(i, k);
    match (&r.node, &r.nodes, &r.region) {
        (Some(n), None, None) => node_ids(
            cx,
            &key("node"),
            n.span().start,
            std::slice::from_ref(n.get_ref()),
            c.nodes,
        ),
        (None, Some(ns), None) => {
            node_ids(cx, &key("nodes"), ns.span().start, ns.get_ref(), c.nodes)
        }
        (None, None, Some(region)) => region_nodes(cx, &key("region"), region, c),
        _ => Err(cx.err(
            r.kind.span().start,
            key("node"),
            "name the fault's nodes with exactly one of node, nodes or region",
        )),
    }
}

fn node_ids(
    cx: &Cx,
    key: &str,
    at: usize,
    names: &[String],
    nodes: &[NodeSpec],
) -> Result<Vec<usize>, ClusterError> {
    let mut ids = Vec::new();
    for name in names {
        let Some(n) = nodes.iter().find(|n| &n.name == name) else {
            return Err(cx.err(
                at,
                key,
                format!(
                    "no node is named {name:?} (nodes n0 .. n{})",
                    nodes.len() - 1
                ),
            ));
        };
        ids.push(n.id);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

fn region_nodes(
    cx: &Cx,
    key: &str,
    region: &Spanned<String>,
    c: &Context,
) -> Result<Vec<usize>, ClusterError> {
    let Some(r) = c.regions.iter().position(|r| &r.name == region.get_ref()) else {
        let names: Vec<&str> = c.regions.iter().map(|r| r.name.as_str()).collect();
        return Err(cx.err(
            region.span().start,
            key,
            format!(
                "no region is named {:?} (regions: {})",
                region.get_ref(),
                names.join(", ")
            ),
        ));
    };
    Ok(c.nodes
        .iter()
        .filter(|n| n.region == r)
        .map(|n| n.id)
        .collect())
}

fn command(cx: &Cx, key: &str, argv: &Spanned<Vec<String>>) -> Result<(), ClusterError> {
    let at = argv.span().start;
    let Some(program) = argv.get_ref().first() else {
        return Err(cx.err(
            at,
            key,
            "is empty: give the new release's program and its arguments",
        ));
    };
    if let Some((arg, p)) = argv.get_ref().iter().find_map(|a| {
        placeholders(a)
            .into_iter()
            .find(|p| !PLACEHOLDERS.contains(p))
            .map(|p| (a, p))
    }) {
        return Err(cx.err(
            at,
            key,
            format!(
                "unknown placeholder {{{p}}} in {arg:?} (known: {})",
                PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
            ),
        ));
    }
    if resolve_executable(program, cx.path.parent().unwrap_or(Path::new("."))).is_none() {
        return Err(cx.err(at, key, format!("{program:?} is not an executable file (relative paths start at the cluster file's directory; bare names are looked up on PATH)")));
    }
    Ok(())
}

/// Process faults on one node must not overlap (a node killed for good takes no later
/// fault; a resume needs an open pause).
fn overlap(
    cx: &Cx,
    i: usize,
    r: &RawFault,
    f: &Fault,
    before: &[Fault],
    c: &Context,
) -> Result<(), ClusterError> {
    if f.kind.is_byzantine() {
        return byzantine_overlap(cx, i, r, f, before, c);
    }
    if f.kind.needs_control() {
        return Ok(());
    }
    let at = r.at_slot.span().start;
    for &n in &f.nodes {
        let name = &c.nodes[n].name;
        let earlier: Vec<&Fault> = before
            .iter()
            .filter(|b| !b.kind.needs_control() && b.nodes.contains(&n))
            .collect();
        let open_pause = earlier
            .iter()
            .rev()
            .find(|b| matches!(b.kind, FaultKind::Pause | FaultKind::Resume));
        let paused_open =
            open_pause.is_some_and(|b| b.kind == FaultKind::Pause && b.slots.is_none());
        if f.kind == FaultKind::Resume {
            if !paused_open {
                return Err(cx.err(
                    at,
                    format!("fault[{i}].kind"),
                    format!("{name} has no pause without `slots` before it to resume"),
                ));
            }
            if let Some(p) = open_pause.filter(|p| p.at_slot >= f.at_slot) {
                return Err(cx.err(
                    at,
                    format!("fault[{i}].at_slot"),
                    format!(
                        "the resume of {name} must come after its pause (fault[{}] at slot {})",
                        p.index, p.at_slot
                    ),
                ));
            }
            continue;
        }
        for b in &earlier {
            let busy = match b.kind {
                FaultKind::Resume => continue,
                FaultKind::Pause if b.slots.is_none() => {
                    // Held until its resume, if any.
                    let resumed = before.iter().find(|x| {
                        x.kind == FaultKind::Resume && x.nodes.contains(&n) && x.index > b.index
                    });
                    b.at_slot..resumed.map_or(u64::MAX, |x| x.at_slot)
                }
                _ => b.at_slot..b.end_slot().unwrap_or(u64::MAX).max(b.at_slot + 1),
            };
            let mine = f.at_slot..f.end_slot().unwrap_or(u64::MAX).max(f.at_slot + 1);
            if busy.start < mine.end && mine.start < busy.end {
                return Err(cx.err(
                    at,
                    format!("fault[{i}].at_slot"),
                    format!(
                        "{name} is already struck by fault[{}] ({}) then: one process fault per node at a time",
                        b.index,
                        b.kind.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// How a fault of a cluster file reads with the file's node names (here, beside the
/// schedule's checks, so the fault types below the file know nothing of it).
impl Fault {
    /// A line naming it: `restart n3 at slot 10 for 4 slots`.
    pub fn describe(&self, spec: &ClusterSpec) -> String {
        let names: Vec<&str> = self
            .nodes
            .iter()
            .map(|&n| spec.nodes[n].name.as_str())
            .collect();
        let mut names = if names.len() > 4 {
            format!("{} nodes", names.len())
        } else {
            names.join(",")
        };
        if let FaultKind::InvalidBlock { flavour } = &self.kind {
            names = format!("{names} ({flavour})");
        }
        match self.slots {
            Some(s) => format!(
                "{} {names} at slot {} for {s} slots",
                self.kind.name(),
                self.at_slot
            ),
            None => format!("{} {names} at slot {}", self.kind.name(), self.at_slot),
        }
    }
}

impl FaultRecord {
    /// The record of `f` before the run applies it.
    pub fn scheduled(spec: &ClusterSpec, f: &Fault) -> FaultRecord {
        FaultRecord {
            index: f.index,
            kind: f.kind.name().to_string(),
            what: f.describe(spec),
            nodes: f
                .nodes
                .iter()
                .map(|&n| spec.nodes[n].name.clone())
                .collect(),
            at_slot: f.at_slot,
            end_slot: f.end_slot(),
            start_ns: None,
            end_ns: None,
            flavour: match &f.kind {
                FaultKind::InvalidBlock { flavour } => Some(flavour.clone()),
                _ => None,
            },
        }
    }
}

/// One byzantine fault per node at a time: the control file has one misbehaviour switch.
fn byzantine_overlap(
    cx: &Cx,
    i: usize,
    r: &RawFault,
    f: &Fault,
    before: &[Fault],
    c: &Context,
) -> Result<(), ClusterError> {
    let span = |x: &Fault| x.at_slot..x.end_slot().unwrap_or(u64::MAX);
    for b in before.iter().filter(|b| b.kind.is_byzantine()) {
        let (mine, theirs) = (span(f), span(b));
        let Some(&n) = f.nodes.iter().find(|n| b.nodes.contains(n)) else {
            continue;
        };
        if mine.start < theirs.end && theirs.start < mine.end {
            return Err(cx.err(
                r.at_slot.span().start,
                format!("fault[{i}].at_slot"),
                format!(
                    "{} already misbehaves by fault[{}] ({}) then: one byzantine fault per node at a time",
                    c.nodes[n].name,
                    b.index,
                    b.kind.name()
                ),
            ));
        }
    }
    Ok(())
}
