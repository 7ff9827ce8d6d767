//! A Nomad job: one group per region (constrained to clients whose `meta.region` is that
//! region, as Cardano's cloud backend tags its clients), `count` members each, one node
//! per client (static ports), peers found through Nomad's own service discovery.

use super::{dns_name, member_script, reference_config_head, reference_peer, ReferenceGenesis};
use crate::error::ClusterError;
use crate::file::{ClusterSpec, NodeCommand};
use crate::topology::region_members;
use std::fmt::Write;

/// A Nomad service name for node `id`: `<cluster>-<region>-<index in region>`, the same
/// name the member registers with `${NOMAD_ALLOC_INDEX}`.
fn service(spec: &ClusterSpec, id: usize) -> String {
    let r = spec.nodes[id].region;
    let k = region_members(spec.nodes.len(), spec.regions.len())[r]
        .iter()
        .position(|&n| n == id)
        .unwrap_or(0);
    format!(
        "{}-{}-{k}",
        dns_name(&spec.name),
        dns_name(&spec.regions[r].name)
    )
}

/// HCL string literal (JSON escapes are valid HCL escapes), with `${`/`%{` kept literal.
fn hcl(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_default()
        .replace("${", "$${")
        .replace("%{", "%%{")
}

/// The job in HCL. The reference node (no `node.command`) needs `genesis`; each member
/// then runs `dyno node run` with a config rendered by Nomad's template from its peers'
/// registered services (address and port as Nomad knows them, re-rendered with a restart
/// when a peer registers or moves), and the genesis as a second template.
pub fn nomad(
    spec: &ClusterSpec,
    image: &str,
    genesis: Option<ReferenceGenesis<'_>>,
) -> Result<String, ClusterError> {
    let script = member_script(spec, genesis, "/local/node.env", "/local/node.toml")?;
    let reference = match (&spec.command, genesis) {
        (NodeCommand::Reference, Some(g)) => Some(g.0),
        _ => None,
    };
    let job = dns_name(&spec.name);
    let (peer, ingress, metrics) = spec.ports(0);
    let members = region_members(spec.nodes.len(), spec.regions.len());
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(s, "# dyno cluster {}: {} nodes over {} regions ({} topology), rendered by `dyno cluster export --nomad`.", spec.name, spec.nodes.len(), spec.regions.len(), spec.topology_kind.name());
    let _ = writeln!(s, "# Clients carry `meta {{ region = \"...\" }}`; latency between regions is the real network's.");
    let _ = writeln!(
        s,
        "job {} {{\n  type        = \"service\"\n  datacenters = [\"*\"]\n",
        hcl(&job)
    );
    for (r, region) in spec.regions.iter().enumerate() {
        let group = dns_name(&region.name);
        let _ = writeln!(
            s,
            "  group {} {{\n    count = {}\n",
            hcl(&group),
            members[r].len()
        );
        let _ = writeln!(s, "    constraint {{\n      attribute = \"${{meta.region}}\"\n      value     = {}\n    }}\n", hcl(&region.name));
        let _ = writeln!(s, "    network {{\n      port \"peer\" {{ static = {peer} }}\n      port \"ingress\" {{ static = {ingress} }}\n      port \"metrics\" {{ static = {metrics} }}\n    }}\n");
        let _ = writeln!(s, "    service {{\n      provider = \"nomad\"\n      name     = \"{job}-{group}-${{NOMAD_ALLOC_INDEX}}\"\n      port     = \"peer\"\n    }}\n");
        let _ = writeln!(s, "    service {{\n      provider = \"nomad\"\n      name     = \"{job}-{group}-metrics\"\n      port     = \"metrics\"\n      check {{\n        type     = \"http\"\n        path     = \"/ready\"\n        interval = \"1s\"\n        timeout  = \"1s\"\n      }}\n    }}\n");
        let _ = writeln!(s, "    task \"node\" {{\n      driver = \"docker\"\n      config {{\n        image        = {}\n        network_mode = \"host\"\n        command      = \"/bin/sh\"\n        args         = [\"-c\", {}]\n      }}\n", hcl(image), hcl(&script));
        if let Some(genesis) = reference {
            let _ = writeln!(s, "      template {{\n        destination = \"local/genesis.toml\"\n        data        = <<-EOT\n{}        EOT\n      }}\n", indent(&genesis.replace("${", "$${"), 8));
            let mut data = String::new();
            for (k, &id) in members[r].iter().enumerate() {
                let _ = write!(
                    data,
                    "{{{{ if eq (env \"NOMAD_ALLOC_INDEX\") \"{k}\" }}}}{}",
                    reference_config_head(spec, id, "genesis.toml", "/alloc/logs")
                );
                for p in spec.topology.peers(id) {
                    // A peer not registered yet is left out; the restart on change adds it.
                    let entry = reference_peer(&spec.nodes[p].name, "{{ .Address }}:{{ .Port }}");
                    let _ = write!(
                        data,
                        "{{{{ range nomadService \"{}\" }}}}{entry}{{{{ end }}}}",
                        service(spec, p)
                    );
                }
                let _ = write!(data, "{{{{ end }}}}");
            }
            let _ = writeln!(s, "      template {{\n        destination = \"local/node.toml\"\n        change_mode = \"restart\"\n        data        = <<-EOT\n{}        EOT\n      }}\n    }}\n  }}\n", indent(&data, 8));
            continue;
        }
        // Member k of this region is the region's k-th node; its peers are looked up by
        // service name, and the node restarts once when a late peer registers.
        let mut data = String::new();
        for (k, &id) in members[r].iter().enumerate() {
            let n = &spec.nodes[id];
            let _ = write!(data, "{{{{ if eq (env \"NOMAD_ALLOC_INDEX\") \"{k}\" }}}}DYNO_ID='{}'\nDYNO_LOG='/alloc/logs/{}.log'\nDYNO_PEERS='", n.name, n.name);
            let peers: Vec<String> = spec
                .topology
                .peers(id)
                .map(|p| format!("{{{{ range nomadService \"{}\" }}}}{{{{ .Address }}}}:{{{{ .Port }}}}{{{{ end }}}}", service(spec, p)))
                .collect();
            let _ = write!(data, "{}'\n{{{{ end }}}}", peers.join(","));
        }
        let _ = write!(data, "DYNO_LISTEN='0.0.0.0:{peer}'\nDYNO_INGRESS='0.0.0.0:{ingress}'\nDYNO_METRICS='0.0.0.0:{metrics}'\n");
        let _ = writeln!(s, "      template {{\n        destination = \"local/node.env\"\n        change_mode = \"restart\"\n        data        = <<-EOT\n{}        EOT\n      }}\n    }}\n  }}\n", indent(&data, 8));
    }
    s.push_str("}\n");
    Ok(s)
}

fn indent(text: &str, by: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect()
}
