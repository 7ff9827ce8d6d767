//! Kubernetes manifests: a ConfigMap with the topology and one environment file per pod,
//! a headless Service (stable DNS names for peers), and a StatefulSet per region pinned
//! to nodes with the well-known `topology.kubernetes.io/region` label.

use super::{dns_name, env_file, member_script, yaml};
use super::{reference_config_head, reference_peer, ReferenceGenesis};
use crate::error::ClusterError;
use crate::file::{ClusterSpec, NodeCommand, Role};
use crate::shape::link_shapes;
use crate::topology::region_members;
use serde_json::{json, Value};

/// The pod name of node `id`: `<cluster>-<region>-<index in region>`.
pub(super) fn pod(spec: &ClusterSpec, id: usize) -> String {
    let r = spec.nodes[id].region;
    let k = region_members(spec.nodes.len(), spec.regions.len())[r]
        .iter()
        .position(|&n| n == id)
        .unwrap_or(0);
    format!("{}-{}", set_name(spec, r), k)
}

fn set_name(spec: &ClusterSpec, region: usize) -> String {
    format!(
        "{}-{}",
        dns_name(&spec.name),
        dns_name(&spec.regions[region].name)
    )
}

/// The topology as JSON, for humans and tools reading the ConfigMap.
fn topology_json(spec: &ClusterSpec) -> String {
    let nodes: Vec<Value> = spec
        .nodes
        .iter()
        .map(|n| {
            json!({
                "id": n.name,
                "region": spec.regions[n.region].name,
                "pod": pod(spec, n.id),
                "stake": match n.role { Role::Producer { stake } => stake, Role::Relay => 0 },
                "peers": spec.topology.peers(n.id).map(|p| spec.nodes[p].name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let links: Vec<Value> = link_shapes(spec)
        .iter()
        .map(|l| json!({"from": spec.nodes[l.from].name, "to": spec.nodes[l.to].name, "latency_ms": l.latency_ms, "bandwidth_mbit": l.bandwidth_mbit}))
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({
        "cluster": spec.name,
        "slot_ms": spec.slot_ms,
        "topology": spec.topology_kind.name(),
        "nodes": nodes,
        "links": links,
    }))
    .unwrap_or_default();
    text.push('\n');
    text
}

/// The manifests, as one multi-document YAML stream. The reference node (no
/// `node.command`) needs `genesis`; each pod then runs `dyno node run` with its own config
/// from the ConfigMap, its peers named by their StatefulSet pod DNS names through the
/// headless Service (`<pod>.<service>:<port>`), which the node resolves on each dial.
pub fn kubernetes(
    spec: &ClusterSpec,
    image: &str,
    genesis: Option<ReferenceGenesis<'_>>,
) -> Result<String, ClusterError> {
    let script = member_script(
        spec,
        genesis,
        "/etc/dyno/$(hostname).env",
        "/etc/dyno/$(hostname).toml",
    )?;
    let name = dns_name(&spec.name);
    let labels = json!({"app.kubernetes.io/name": "dyno-node", "dyno/cluster": name});
    let (peer, ingress, metrics) = spec.ports(0);
    let data = config_data(spec, genesis, &name, peer);
    let mut docs = vec![
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-topology"), "labels": labels},
            "data": data,
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": true,
                "selector": labels,
                "ports": [
                    {"name": "peer", "port": peer, "protocol": "TCP"},
                    {"name": "ingress", "port": ingress, "protocol": "UDP"},
                    {"name": "metrics", "port": metrics, "protocol": "TCP"},
                ],
            },
        }),
    ];
    for (r, region) in spec.regions.iter().enumerate() {
        let mut pod_labels = labels.clone();
        pod_labels["dyno/region"] = json!(dns_name(&region.name));
        docs.push(stateful_set(spec, r, &pod_labels, image, &script));
    }
    let mut header = format!(
        "# dyno cluster {}: {} nodes over {} regions ({} topology), rendered by `dyno cluster export --kubernetes`.\n\
         # Latency between regions is the real network's: nothing here shapes links.\n",
        spec.name,
        spec.nodes.len(),
        spec.regions.len(),
        spec.topology_kind.name()
    );
    if !spec.faults.is_empty() {
        header.push_str(
            "# The cluster file schedules faults: `dyno cluster export --chaos-mesh` renders them as a\n\
             # Chaos Mesh Workflow, to apply when slot 0 starts.\n",
        );
    }
    let body: Vec<String> = docs.iter().map(yaml::document).collect();
    Ok(format!("{header}---\n{}", body.join("---\n")))
}

/// The ConfigMap's files: the topology, and per pod its node config (the reference node,
/// with the genesis) or its environment file (any other node command).
fn config_data(
    spec: &ClusterSpec,
    genesis: Option<ReferenceGenesis<'_>>,
    name: &str,
    peer: u16,
) -> serde_json::Map<String, Value> {
    let mut data = serde_json::Map::new();
    data.insert("topology.json".into(), Value::String(topology_json(spec)));
    let reference = match (&spec.command, genesis) {
        (NodeCommand::Reference, Some(g)) => {
            data.insert("genesis.toml".into(), Value::String(g.0.to_string()));
            true
        }
        _ => false,
    };
    for n in &spec.nodes {
        let peers: Vec<(String, String)> = spec
            .topology
            .peers(n.id)
            .map(|p| {
                let addr = format!("{}.{name}:{peer}", pod(spec, p));
                (spec.nodes[p].name.clone(), addr)
            })
            .collect();
        if reference {
            let mut text =
                reference_config_head(spec, n.id, "/etc/dyno/genesis.toml", "/var/log/dyno");
            for (id, addr) in &peers {
                text.push_str(&reference_peer(id, addr));
            }
            data.insert(format!("{}.toml", pod(spec, n.id)), Value::String(text));
        } else {
            let addrs: Vec<String> = peers.into_iter().map(|(_, a)| a).collect();
            data.insert(
                format!("{}.env", pod(spec, n.id)),
                Value::String(env_file(spec, n.id, &addrs)),
            );
        }
    }
    data
}

/// The StatefulSet of region `r`: its members' pods, pinned to the region's nodes.
fn stateful_set(
    spec: &ClusterSpec,
    r: usize,
    pod_labels: &Value,
    image: &str,
    script: &str,
) -> Value {
    let name = dns_name(&spec.name);
    let (peer, ingress, metrics) = spec.ports(0);
    let members = region_members(spec.nodes.len(), spec.regions.len());
    let region = &spec.regions[r];
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": set_name(spec, r), "labels": pod_labels},
        "spec": {
            "serviceName": name,
            "replicas": members[r].len(),
            // Peers must all start for blocks to flow; no pod waits for another.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "nodeSelector": {"topology.kubernetes.io/region": region.name},
                    "containers": [{
                        "name": "node",
                        "image": image,
                        "command": ["/bin/sh", "-c", script],
                        "ports": [
                            {"name": "peer", "containerPort": peer, "protocol": "TCP"},
                            {"name": "ingress", "containerPort": ingress, "protocol": "UDP"},
                            {"name": "metrics", "containerPort": metrics, "protocol": "TCP"},
                        ],
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": "metrics"}, "periodSeconds": 1},
                        "volumeMounts": [
                            {"name": "topology", "mountPath": "/etc/dyno", "readOnly": true},
                            {"name": "logs", "mountPath": "/var/log/dyno"},
                        ],
                    }],
                    "volumes": [
                        {"name": "topology", "configMap": {"name": format!("{name}-topology")}},
                        {"name": "logs", "emptyDir": {}},
                    ],
                },
            },
        },
    })
}
