//! A cluster file's fault schedule as a Chaos Mesh Workflow (chaos-mesh.org/v1alpha1),
//! for the Kubernetes export: each fault a branch of one Parallel template that waits
//! (Suspend) until its slot and then holds its chaos for its slots.
//!
//! | fault | Chaos Mesh |
//! |---|---|
//! | `kill` | PodChaos `pod-failure` to the end of the run |
//! | `restart` | PodChaos `container-kill` (no downtime) or `pod-failure` for `slots` (the container comes back in the same pod, its log volume kept) |
//! | `partition` | NetworkChaos `partition`, both directions, target: every other pod |
//! | `link` | NetworkChaos `netem` (delay, jitter, loss) and/or `bandwidth`, both directions, target: the `to` pods |
//! | `clock_skew` | TimeChaos `timeOffset` (fakes the container's clock: unlike the local run, its log times move too) |
//! | `pause`, `resume`, `upgrade` | not rendered: Chaos Mesh has no SIGSTOP, and an upgrade is a rollout of the StatefulSet's image; the header says which were left out |
//! | `equivocate`, `invalid_block`, `withhold`, `garbage` | not rendered: a byzantine fault is the reference node lying on purpose (its control file's test-only switch); Chaos Mesh injects faults from outside a pod and cannot make a node lie |
//!
//! Pods are selected by the StatefulSet's own `statefulset.kubernetes.io/pod-name`
//! label, so the rendering needs no namespace. Offsets count from the Workflow's
//! creation: apply it when the network's slot 0 starts.

use super::dns_name;
use super::kubernetes::pod;
use crate::faults::{Fault, FaultKind};
use crate::file::ClusterSpec;
use serde_json::{json, Value};

/// The fault schedule as a Chaos Mesh Workflow document (YAML), its header saying how to
/// apply it and which faults it leaves out; `None` when no fault can be rendered.
pub fn chaos_mesh(spec: &ClusterSpec) -> Option<String> {
    let (workflow, left_out) = workflow(spec);
    let workflow = workflow?;
    let mut header = format!(
        "# dyno cluster {}: its fault schedule as a Chaos Mesh Workflow, rendered by `dyno cluster export --chaos-mesh`.\n\
         # Needs Chaos Mesh in the cluster; pods are the StatefulSets of `dyno cluster export --kubernetes`.\n\
         # Every wait counts from the Workflow's creation: apply it when slot 0 starts.\n",
        spec.name
    );
    for line in left_out {
        header.push_str(&format!("# Not rendered: {line}.\n"));
    }
    Some(format!("{header}---\n{}", super::yaml::document(&workflow)))
}

/// The Workflow (none when no fault can be rendered) and a line per fault left out.
pub(super) fn workflow(spec: &ClusterSpec) -> (Option<Value>, Vec<String>) {
    let mut templates = Vec::new();
    let mut branches = Vec::new();
    let mut left_out = Vec::new();
    let end = spec.run_slots();
    for f in &spec.faults {
        let chaos = chaos_of(spec, f, end);
        if chaos.is_empty() {
            left_out.push(format!(
                "fault[{}] {}: {}",
                f.index,
                f.describe(spec),
                match f.kind {
                    FaultKind::Upgrade { .. } =>
                        "an upgrade is a rollout of the StatefulSet's image",
                    ref k if k.is_byzantine() =>
                        "not expressible in Chaos Mesh: a byzantine fault is the node itself lying (the reference node's test-only control switch), and Chaos Mesh only injects faults from outside a pod",
                    _ => "Chaos Mesh has no SIGSTOP/SIGCONT chaos",
                }
            ));
            continue;
        }
        for (j, (kind, key, body, slots)) in chaos.into_iter().enumerate() {
            let branch = format!("fault-{}-{j}", f.index);
            templates.push(json!({
                "name": format!("{branch}-wait"),
                "templateType": "Suspend",
                "deadline": seconds(spec, f.at_slot),
            }));
            templates.push(json!({
                "name": format!("{branch}-{}", kind.to_lowercase()),
                "templateType": kind,
                "deadline": seconds(spec, slots),
                key: body,
            }));
            templates.push(json!({
                "name": branch,
                "templateType": "Serial",
                "children": [format!("{branch}-wait"), format!("{branch}-{}", kind.to_lowercase())],
            }));
            branches.push(branch);
        }
    }
    if branches.is_empty() {
        return (None, left_out);
    }
    templates.insert(
        0,
        json!({"name": "faults", "templateType": "Parallel", "children": branches}),
    );
    let doc = json!({
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": format!("{}-faults", dns_name(&spec.name))},
        "spec": {"entry": "faults", "templates": templates},
    });
    (Some(doc), left_out)
}

/// `(template type, embedded key, spec, slots it holds)` for each chaos a fault becomes.
fn chaos_of(
    spec: &ClusterSpec,
    f: &Fault,
    end: u64,
) -> Vec<(&'static str, &'static str, Value, u64)> {
    let nodes = selector(spec, &f.nodes);
    let held = f.slots.unwrap_or(0).max(1);
    let mut out = Vec::new();
    match &f.kind {
        FaultKind::Kill => {
            let slots = end.saturating_sub(f.at_slot).max(1);
            out.push(("PodChaos", "podChaos", json!({"action": "pod-failure", "mode": "all", "selector": nodes, "duration": seconds(spec, slots)}), slots));
        }
        FaultKind::Restart if f.slots.unwrap_or(0) == 0 => {
            out.push(("PodChaos", "podChaos", json!({"action": "container-kill", "mode": "all", "selector": nodes, "containerNames": ["node"]}), 1));
        }
        FaultKind::Restart => {
            out.push(("PodChaos", "podChaos", json!({"action": "pod-failure", "mode": "all", "selector": nodes, "duration": seconds(spec, held)}), held));
        }
        FaultKind::Partition => {
            out.push((
                "NetworkChaos",
                "networkChaos",
                json!({
                    "action": "partition", "mode": "all", "selector": nodes, "direction": "both",
                    "target": {"mode": "all", "selector": selector(spec, &f.to)},
                }),
                held,
            ));
        }
        FaultKind::Link {
            extra_latency_ms,
            jitter_ms,
            loss,
            bandwidth_mbit,
        } => {
            let target = json!({"mode": "all", "selector": selector(spec, &f.to)});
            let mut netem = json!({"action": "netem", "mode": "all", "selector": nodes, "direction": "both", "target": target});
            if *extra_latency_ms > 0.0 || *jitter_ms > 0.0 {
                netem["delay"] = json!({"latency": format!("{extra_latency_ms}ms"), "jitter": format!("{jitter_ms}ms")});
            }
            if *loss > 0.0 {
                netem["loss"] = json!({"loss": format!("{}", loss * 100.0)});
            }
            if netem.get("delay").is_some() || netem.get("loss").is_some() {
                out.push(("NetworkChaos", "networkChaos", netem, held));
            }
            if let Some(mbit) = bandwidth_mbit {
                // tc's rate unit `bps` is bytes per second; a tenth of a second of traffic
                // may queue, and a bucket of a hundredth bursts (at least a frame or two).
                let bytes = (mbit * 1e6 / 8.0).round().max(1.0) as u64;
                out.push(("NetworkChaos", "networkChaos", json!({
                    "action": "bandwidth", "mode": "all", "selector": nodes, "direction": "both", "target": target,
                    "bandwidth": {"rate": format!("{bytes}bps"), "limit": (bytes / 10).max(3_000), "buffer": (bytes / 100).max(1_600)},
                }), held));
            }
        }
        FaultKind::ClockSkew { skew_ms } => {
            out.push((
                "TimeChaos",
                "timeChaos",
                json!({"mode": "all", "selector": nodes, "timeOffset": format!("{skew_ms}ms")}),
                held,
            ));
        }
        FaultKind::Pause
        | FaultKind::Resume
        | FaultKind::Upgrade { .. }
        | FaultKind::Equivocate
        | FaultKind::InvalidBlock { .. }
        | FaultKind::Withhold
        | FaultKind::Garbage => {}
    }
    out
}

/// The pods of `nodes`, by the label every StatefulSet pod carries.
fn selector(spec: &ClusterSpec, nodes: &[usize]) -> Value {
    let pods: Vec<String> = nodes.iter().map(|&n| pod(spec, n)).collect();
    json!({"expressionSelectors": [{"key": "statefulset.kubernetes.io/pod-name", "operator": "In", "values": pods}]})
}

/// `slots` as a Go duration string (what Chaos Mesh's deadlines and durations parse).
fn seconds(spec: &ClusterSpec, slots: u64) -> String {
    let ms = slots * spec.slot_ms;
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
