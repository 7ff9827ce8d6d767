//! The fault driver of a local run: each scheduled fault's start and end, applied as the
//! run's clock reaches their slots (the launcher's loop looks every 100 ms, so a fault
//! starts up to that late; the record keeps the time it really started).
//!
//! Process faults are signals to the node's process group and restarts through the same
//! guard as the first start. Network faults and clock skews rewrite the control files
//! of the nodes they touch (by rename, so a node never reads half a file); the
//! reference node applies each within its control poll (50 ms).

use super::{io, launch_error, Launch, Node};
use crate::error::ClusterError;
use crate::faults::{Fault, FaultKind, FaultRecord};
use crate::file::ClusterSpec;
use dyno_proc::{GuardedChild, Signal};
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

/// What happens at one moment of a fault.
#[derive(Debug, Clone, PartialEq)]
enum Action {
    /// SIGKILL to the node's group; it is down until started again.
    Kill,
    /// The node's command (or an upgrade's) started again.
    Start(Option<Vec<String>>),
    /// SIGSTOP.
    Freeze,
    /// SIGCONT.
    Thaw,
    /// The control files are written again from the faults active now.
    Control,
}

#[derive(Debug, PartialEq)]
struct Step {
    at_ns: u64,
    /// Index into the spec's faults.
    fault: usize,
    /// The fault's first step (its start) or its last (its end).
    starts: bool,
    action: Action,
}

impl Step {
    fn rank(&self, f: &Fault) -> u8 {
        match (self.starts, f.end_slot() == Some(f.at_slot)) {
            (false, false) => 0,
            (true, _) => 1,
            (false, true) => 2,
        }
    }
}

/// The schedule in time order, and what it has done.
pub(super) struct FaultDriver<'a> {
    spec: &'a ClusterSpec,
    steps: Vec<Step>,
    next: usize,
    /// Network faults in force now.
    active: Vec<usize>,
    /// Control files as last written, by node.
    written: Vec<Option<String>>,
    down: HashSet<usize>,
    frozen: HashSet<usize>,
    /// One per fault, in file order.
    pub(super) records: Vec<FaultRecord>,
    /// The run's group guard, for restarted nodes.
    guard: Option<std::sync::Arc<dyno_proc::GroupGuard>>,
}

impl<'a> FaultDriver<'a> {
    pub(super) fn new(
        spec: &'a ClusterSpec,
        genesis_time_ns: u64,
        guard: Option<std::sync::Arc<dyno_proc::GroupGuard>>,
    ) -> FaultDriver<'a> {
        let slot_ns = spec.slot_ms * 1_000_000;
        let at = |slot: u64| genesis_time_ns + slot * slot_ns;
        let mut steps = Vec::new();
        for (i, f) in spec.faults.iter().enumerate() {
            let (first, last) = match &f.kind {
                FaultKind::Kill => (Action::Kill, None),
                FaultKind::Restart => (Action::Kill, Some(Action::Start(None))),
                FaultKind::Upgrade { command } => {
                    (Action::Kill, Some(Action::Start(Some(command.clone()))))
                }
                FaultKind::Pause => (Action::Freeze, f.slots.map(|_| Action::Thaw)),
                FaultKind::Resume => (Action::Thaw, None),
                _ => (Action::Control, Some(Action::Control)),
            };
            steps.push(Step {
                at_ns: at(f.at_slot),
                fault: i,
                starts: true,
                action: first,
            });
            if let (Some(action), Some(end)) = (last, f.end_slot()) {
                steps.push(Step {
                    at_ns: at(end),
                    fault: i,
                    starts: false,
                    action,
                });
            }
        }
        // At one moment: ends of other faults first (a node restarted at slot s may be
        // struck again at s), then starts, then the ends of faults that take no time (a
        // restart with no downtime kills before it starts again).
        steps.sort_by_key(|s| (s.at_ns, s.rank(&spec.faults[s.fault]), s.fault));
        let records = spec
            .faults
            .iter()
            .map(|f| FaultRecord::scheduled(spec, f))
            .collect();
        FaultDriver {
            spec,
            steps,
            next: 0,
            active: Vec::new(),
            written: vec![None; spec.nodes.len()],
            down: HashSet::new(),
            frozen: HashSet::new(),
            records,
            guard,
        }
    }

    /// Whether node `id` is down by a fault (its exit is no problem).
    pub(super) fn is_down(&self, id: usize) -> bool {
        self.down.contains(&id)
    }

    /// Applies every step due by `now_ns`; returns a line per fault started or ended
    /// (for progress) and whether a node's process changed (the sampler re-reads pids).
    pub(super) fn apply_due(
        &mut self,
        now_ns: u64,
        nodes: &mut [Node],
        launch: &Launch,
    ) -> Result<(Vec<String>, bool), ClusterError> {
        let mut lines = Vec::new();
        let mut respawned = false;
        while let Some(step) = self.steps.get(self.next).filter(|s| s.at_ns <= now_ns) {
            let (fault, starts, action) = (step.fault, step.starts, step.action.clone());
            self.next += 1;
            let f = &self.spec.faults[fault];
            respawned |= self.act(f, starts, &action, nodes, launch)?;
            let at = super::dyno_now_ns();
            let r = &mut self.records[fault];
            if starts {
                r.start_ns = Some(at);
            }
            if !starts || f.kind == FaultKind::Resume {
                r.end_ns = Some(at);
            }
            let what = if starts { "starts" } else { "ends" };
            lines.push(format!("{} {what}", f.describe(self.spec)));
        }
        Ok((lines, respawned))
    }

    fn act(
        &mut self,
        f: &Fault,
        starts: bool,
        action: &Action,
        nodes: &mut [Node],
        launch: &Launch,
    ) -> Result<bool, ClusterError> {
        match action {
            Action::Control => {
                if starts {
                    self.active.push(f.index);
                } else {
                    self.active.retain(|&i| i != f.index);
                }
                self.write_controls(launch)?;
                Ok(false)
            }
            Action::Kill => {
                for &id in &f.nodes {
                    let _ = nodes[id].child.signal(Signal::Kill);
                    self.down.insert(id);
                }
                Ok(false)
            }
            Action::Freeze | Action::Thaw => {
                let (sig, freeze) = match action {
                    Action::Freeze => (Signal::Stop, true),
                    _ => (Signal::Cont, false),
                };
                for &id in &f.nodes {
                    let _ = nodes[id].child.signal(sig);
                    if freeze {
                        self.frozen.insert(id);
                    } else {
                        self.frozen.remove(&id);
                    }
                }
                Ok(false)
            }
            Action::Start(command) => {
                for &id in &f.nodes {
                    let cmd = match command {
                        None => launch.command(self.spec, id),
                        Some(argv) => launch.argv_command(self.spec, id, argv),
                    };
                    let name = &self.spec.nodes[id].name;
                    let child = GuardedChild::spawn(cmd, &launch.node_options(name, &self.guard))
                        .map_err(|e| launch_error(format!("{name} (restart): {e}")))?;
                    let old = std::mem::replace(&mut nodes[id].child, child);
                    // Reaped (it was SIGKILLed at the fault's start).
                    let _ = old.stop(Duration::ZERO);
                    self.down.remove(&id);
                }
                Ok(true)
            }
        }
    }

    fn write_controls(&mut self, launch: &Launch) -> Result<(), ClusterError> {
        let active: Vec<&Fault> = self.active.iter().map(|&i| &self.spec.faults[i]).collect();
        for n in &self.spec.nodes {
            let text = control_file(self.spec, n.id, &active);
            if self.written[n.id].as_deref() == Some(text.as_str()) {
                continue;
            }
            let path = control_path(launch, &n.name);
            let tmp = path.with_extension("toml.tmp");
            std::fs::write(&tmp, &text).map_err(io(&tmp))?;
            std::fs::rename(&tmp, &path).map_err(io(&path))?;
            self.written[n.id] = Some(text);
        }
        Ok(())
    }

    /// Before the stop: frozen nodes are thawed (a stopped process would sit out the
    /// stop signal's grace period).
    pub(super) fn release(&mut self, nodes: &[Node]) {
        for &id in &self.frozen {
            let _ = nodes[id].child.signal(Signal::Cont);
        }
        self.frozen.clear();
    }
}

/// The control file of node `name` in the run directory (its config's `control`).
fn control_path(launch: &Launch, name: &str) -> PathBuf {
    launch.dir.join(format!("{name}.control.toml"))
}

/// The control file of node `id` while `active` network faults hold: each link of the
/// node that a fault touches, with the faults on it combined (latencies add, the worst
/// loss and the lowest bandwidth count, a cut wins), and the node's clock skew.
pub(crate) fn control_file(spec: &ClusterSpec, id: usize, active: &[&Fault]) -> String {
    let mut skew = 0.0;
    let mut out = String::new();
    for f in active {
        if let (FaultKind::ClockSkew { skew_ms }, true) = (&f.kind, f.nodes.contains(&id)) {
            skew += skew_ms;
        }
    }
    out.push_str(&format!("clock_skew_ms = {skew:?}\n"));
    // A node struck by two byzantine faults at once is refused before the run, so at
    // most one table.
    if let Some(m) = active
        .iter()
        .filter(|f| f.nodes.contains(&id))
        .find_map(|f| f.kind.misbehave_toml())
    {
        out.push_str(&m);
    }
    for p in spec.topology.peers(id) {
        let mut blocked = false;
        let (mut latency, mut jitter, mut loss) = (0.0f64, 0.0f64, 0.0f64);
        let mut bandwidth: Option<f64> = None;
        let mut touched = false;
        for f in active {
            let across = (f.nodes.contains(&id) && f.to.contains(&p))
                || (f.nodes.contains(&p) && f.to.contains(&id));
            if !across {
                continue;
            }
            match &f.kind {
                FaultKind::Partition => blocked = true,
                FaultKind::Link {
                    extra_latency_ms,
                    jitter_ms,
                    loss: l,
                    bandwidth_mbit,
                } => {
                    latency += extra_latency_ms;
                    jitter = jitter.max(*jitter_ms);
                    loss = loss.max(*l);
                    bandwidth = match (bandwidth, bandwidth_mbit) {
                        (Some(a), Some(b)) => Some(a.min(*b)),
                        (a, b) => a.or(*b),
                    };
                }
                _ => continue,
            }
            touched = true;
        }
        if !touched {
            continue;
        }
        out.push_str(&format!(
            "\n[[links]]\npeer = \"{}\"\nextra_latency_ms = {latency:?}\njitter_ms = {jitter:?}\nloss = {loss:?}\nblocked = {blocked}\n",
            spec.nodes[p].name
        ));
        if let Some(b) = bandwidth {
            out.push_str(&format!("bandwidth_mbit = {b:?}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_fault_without_downtime_kills_before_it_starts_again_and_ends_come_first() {
        let text = format!(
            "{}\n[[fault]]\nkind = \"restart\"\nnode = \"n1\"\nat_slot = 40\n\n\
             [[fault]]\nkind = \"pause\"\nnode = \"n2\"\nat_slot = 30\nslots = 10\n\n\
             [[fault]]\nkind = \"partition\"\nnode = \"n2\"\nat_slot = 40\nslots = 5\n",
            crate::EXAMPLE
        );
        let spec = ClusterSpec::parse(Path::new("c.toml"), &text).unwrap();
        let d = FaultDriver::new(&spec, 0, None);
        let order: Vec<(usize, bool)> = d.steps.iter().map(|s| (s.fault, s.starts)).collect();
        // Slot 30: the pause. Slot 40: the pause's end, the starts of the restart and the
        // partition, then the restart's own end. Slot 45: the partition's end.
        assert_eq!(
            order,
            [
                (1, true),
                (1, false),
                (0, true),
                (2, true),
                (0, false),
                (2, false)
            ]
        );
        assert_eq!(d.steps[2].action, Action::Kill);
        assert_eq!(d.steps[4].action, Action::Start(None));
    }
}
