use super::*;
use kubernetes::pod;
use std::path::Path;
use std::process::Command;

fn spec(command: Option<&str>) -> ClusterSpec {
    let mut text = crate::EXAMPLE.to_string();
    if let Some(c) = command {
        text = text.replacen(
            "ready_timeout_s = 60",
            &format!("command = {c}\nready_timeout_s = 60"),
            1,
        );
    }
    ClusterSpec::parse(Path::new("c.toml"), &text).unwrap()
}

const NODE: &str = r#"["sh", "-c", "echo $0 {id} {peers}", "it's \"quoted\" `x`"]"#;

#[test]
fn the_reference_node_and_launcher_files_are_refused() {
    let e = kubernetes(&spec(None), "img", None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`node.command`: exporting the reference node needs its genesis"),
        "{e}"
    );
    let e = nomad(&spec(Some(r#"["sh", "{config}"]"#)), "img", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("{config} cannot be exported"), "{e}");
}

/// A stand-in genesis: the real one is rendered by the binary with dyno-node's writer
/// (and checked there by the node's parser); the exporter only carries its text.
const GENESIS: &str = "network = \"mini-torus\"\nslot_ms = 1000\n";

#[test]
fn the_reference_node_runs_with_a_config_per_member_naming_peers_by_host_name() {
    let s = spec(None);
    let yaml = kubernetes(&s, "dyno:1", Some(ReferenceGenesis(GENESIS))).unwrap();
    assert!(
        yaml.contains("\"genesis.toml\": |\n    network = \"mini-torus\"\n"),
        "{yaml}"
    );
    assert!(yaml.contains("exec dyno node run --quiet --config /etc/dyno/$(hostname).toml"));
    // Every node's config, with each topology peer by its pod's DNS name.
    for n in &s.nodes {
        let head = format!("\"{}.toml\": |\n    # {} of cluster", pod(&s, n.id), n.name);
        assert!(yaml.contains(&head), "{head}");
        for p in s.topology.peers(n.id) {
            let addr = format!("addr = \"{}.mini-torus:31000\"", pod(&s, p));
            assert!(yaml.contains(&addr), "{addr}");
        }
    }
    assert!(
        !yaml.contains(".env\": |"),
        "no environment files for the reference node"
    );
    let hcl = nomad(&s, "dyno:1", Some(ReferenceGenesis(GENESIS))).unwrap();
    assert_eq!(
        hcl.matches("destination = \"local/genesis.toml\"").count(),
        3
    );
    assert!(hcl.contains("{{ range nomadService \"mini-torus-us-east-1-0\" }}\n        [[peers]]\n        id = \"n1\"\n        addr = \"{{ .Address }}:{{ .Port }}\""), "{hcl}");
    assert!(hcl.contains("--config /local/node.toml"));
    // Without the genesis the reference node still cannot be exported.
    assert!(kubernetes(&s, "dyno:1", None).is_err());
}

#[test]
fn the_shell_command_quotes_literals_and_expands_placeholders() {
    let script = shell_command(&spec(Some(NODE)), "/e.env").unwrap();
    assert_eq!(
        script,
        r#". /e.env && exec "sh" "-c" "echo \$0 ${DYNO_ID} ${DYNO_PEERS}" "it's \"quoted\" \`x\`""#
    );
    // The shell agrees: run it with a stand-in environment file.
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("e.env");
    std::fs::write(&env, "DYNO_ID='n4'\nDYNO_PEERS='a:1,b:2'\n").unwrap();
    let script = shell_command(
        &spec(Some(r#"["printf", "%s|", "{id}", "$HOME {peers}", "`x`"]"#)),
        &env.display().to_string(),
    )
    .unwrap();
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "n4|$HOME a:1,b:2|`x`|"
    );
}

#[test]
fn kubernetes_has_a_statefulset_per_region_and_an_env_file_per_pod() {
    let yaml = kubernetes(&spec(Some(NODE)), "registry.example/node:1", None).unwrap();
    assert_eq!(yaml.matches("\"kind\": \"StatefulSet\"").count(), 3);
    assert_eq!(yaml.matches("\"replicas\": 3").count(), 3);
    assert_eq!(yaml.matches("\"clusterIP\": \"None\"").count(), 1);
    assert!(yaml.contains("\"topology.kubernetes.io/region\": \"ap-southeast-2\""));
    // n4 is us-east-1's second node: pod mini-torus-us-east-1-1; its peers by DNS name.
    assert!(yaml.contains("\"mini-torus-us-east-1-1.env\": |"));
    let spec = spec(Some(NODE));
    let peers: Vec<String> = spec
        .topology
        .peers(4)
        .map(|p| format!("{}.mini-torus:31000", pod(&spec, p)))
        .collect();
    assert!(
        yaml.contains(&format!("DYNO_PEERS='{}'", peers.join(","))),
        "{yaml}"
    );
    assert!(peers.contains(&"mini-torus-eu-central-1-1.mini-torus:31000".to_string()));
}

#[test]
fn nomad_has_a_group_per_region_with_a_region_constraint() {
    let hcl = nomad(&spec(Some(NODE)), "node:1", None).unwrap();
    assert_eq!(hcl.matches("\n  group ").count(), 3);
    assert!(hcl.contains("group \"us-east-1\" {\n    count = 3"));
    assert!(hcl.contains("attribute = \"${meta.region}\"\n      value     = \"us-east-1\""));
    assert!(hcl.contains("name     = \"mini-torus-us-east-1-${NOMAD_ALLOC_INDEX}\""));
    assert!(hcl.contains("{{ if eq (env \"NOMAD_ALLOC_INDEX\") \"1\" }}DYNO_ID='n4'"));
    // The shell's ${DYNO_ID} survives HCL interpolation as a literal.
    assert!(hcl.contains("$${DYNO_ID}"));
    assert_eq!(hcl.matches('{').count(), hcl.matches('}').count());
}

/// Without an API server, kubectl's client-side dry run cannot map kinds to resources,
/// but `kubectl set env --local` decodes every document into kubectl's typed objects
/// (a wrong type fails; unknown fields are not detected) and edits pod templates (it refuses
/// the ConfigMap and Service, which have none), so it checks the YAML parses, each kind
/// exists with the right field types, and each StatefulSet has a pod template.
#[test]
fn kubectl_decodes_the_manifests() {
    let Ok(kubectl) = which("kubectl") else {
        println!("note: kubectl not found on PATH; Kubernetes manifests not validated");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.yaml");
    let reference = kubernetes(&spec(None), "dyno:1", Some(ReferenceGenesis(GENESIS))).unwrap();
    for manifests in [
        reference,
        kubernetes(&spec(Some(NODE)), "node:1", None).unwrap(),
    ] {
        std::fs::write(&file, manifests).unwrap();
        decodes(&kubectl, &file);
    }
    // A manifest with a wrong type is refused, so the check can fail.
    let broken = std::fs::read_to_string(&file).unwrap().replacen(
        "\"replicas\": 3",
        "\"replicas\": \"three\"",
        1,
    );
    std::fs::write(&file, broken).unwrap();
    let out = Command::new(&kubectl)
        .args(["set", "env", "--local", "-o", "yaml", "DYNO_CHECK=1", "-f"])
        .arg(&file)
        .env("KUBECONFIG", dir.path().join("none"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unable to decode") && stderr.contains("replicas"),
        "{stderr}"
    );
}

fn decodes(kubectl: &Path, file: &Path) {
    let out = Command::new(kubectl)
        .args(["set", "env", "--local", "-o", "yaml", "DYNO_CHECK=1", "-f"])
        .arg(file)
        .env("KUBECONFIG", file.with_file_name("none"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Only the two objects without a pod template may be refused, and only for that.
    let refusals: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(refusals.len(), 2, "{stderr}");
    assert!(
        refusals
            .iter()
            .all(|l| l.contains("does not have a pod template")),
        "{stderr}"
    );
    assert_eq!(
        stdout.matches("kind: StatefulSet").count(),
        3,
        "{stdout}{stderr}"
    );
    assert_eq!(
        stdout.matches("name: DYNO_CHECK").count(),
        3,
        "{stdout}{stderr}"
    );
}

fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    crate::file::resolve_executable(program, Path::new(".")).ok_or(())
}

#[test]
fn a_fault_schedule_becomes_a_chaos_mesh_workflow_of_waits_and_chaos() {
    let text = format!(
        "{}\n{}",
        crate::EXAMPLE,
        r#"
[[fault]]
kind = "restart"
node = "n1"
at_slot = 40

[[fault]]
kind = "restart"
node = "n4"
at_slot = 50
slots = 5

[[fault]]
kind = "partition"
region = "ap-southeast-2"
at_slot = 60
slots = 20

[[fault]]
kind = "link"
node = "n0"
to_region = "us-east-1"
at_slot = 100
slots = 10
extra_latency_ms = 80
jitter_ms = 20
loss = 0.05
bandwidth_mbit = 10

[[fault]]
kind = "pause"
node = "n3"
at_slot = 120
slots = 2

[[fault]]
kind = "clock_skew"
node = "n5"
at_slot = 130
slots = 3
skew_ms = -400

[[fault]]
kind = "kill"
node = "n8"
at_slot = 300
"#
    );
    let s = ClusterSpec::parse(Path::new("c.toml"), &text).unwrap();
    let (wf, left_out) = chaos_mesh::workflow(&s);
    let wf = wf.unwrap();
    assert_eq!(wf["kind"], "Workflow");
    assert_eq!(wf["apiVersion"], "chaos-mesh.org/v1alpha1");
    assert_eq!(left_out.len(), 1);
    assert!(left_out[0].starts_with("fault[4] pause n3"), "{left_out:?}");
    let templates = wf["spec"]["templates"].as_array().unwrap();
    let by_name = |n: &str| {
        templates
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("no template {n}"))
    };
    let names: std::collections::HashSet<&str> = templates
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), templates.len(), "names are unique");
    // Every child a template names exists; the entry runs one branch per chaos.
    for t in templates {
        for c in t["children"].as_array().into_iter().flatten() {
            assert!(names.contains(c.as_str().unwrap()), "{c}");
        }
    }
    let entry = by_name(wf["spec"]["entry"].as_str().unwrap());
    assert_eq!(entry["templateType"], "Parallel");
    // restart x2, partition, link (netem and bandwidth), clock skew, kill.
    assert_eq!(entry["children"].as_array().unwrap().len(), 7);
    assert_eq!(by_name("fault-0-0-wait")["deadline"], "40s");
    let kill = &by_name("fault-0-0-podchaos")["podChaos"];
    assert_eq!(kill["action"], "container-kill");
    assert_eq!(kill["containerNames"], serde_json::json!(["node"]));
    let pods = |v: &serde_json::Value| v["selector"]["expressionSelectors"][0]["values"].clone();
    assert_eq!(pods(kill), serde_json::json!([pod(&s, 1)]));
    let failure = &by_name("fault-1-0-podchaos");
    assert_eq!(failure["deadline"], "5s");
    assert_eq!(failure["podChaos"]["action"], "pod-failure");
    let cut = &by_name("fault-2-0-networkchaos")["networkChaos"];
    assert_eq!(cut["action"], "partition");
    assert_eq!(cut["direction"], "both");
    assert_eq!(
        pods(cut),
        serde_json::json!([pod(&s, 2), pod(&s, 5), pod(&s, 8)])
    );
    assert_eq!(pods(&cut["target"]).as_array().unwrap().len(), 6);
    let netem = &by_name("fault-3-0-networkchaos")["networkChaos"];
    assert_eq!(netem["action"], "netem");
    assert_eq!(netem["delay"]["latency"], "80ms");
    assert_eq!(netem["delay"]["jitter"], "20ms");
    assert_eq!(netem["loss"]["loss"], "5");
    assert_eq!(
        pods(&netem["target"]),
        serde_json::json!([pod(&s, 1), pod(&s, 4), pod(&s, 7)])
    );
    // tc's `bps` is bytes per second: 10 Mbit/s.
    let bw = &by_name("fault-3-1-networkchaos")["networkChaos"];
    assert_eq!(bw["bandwidth"]["rate"], "1250000bps");
    let skew = &by_name("fault-5-0-timechaos")["timeChaos"];
    assert_eq!(skew["timeOffset"], "-400ms");
    // A kill holds to the end of the run: slots 300..330.
    assert_eq!(by_name("fault-6-0-podchaos")["deadline"], "30s");
    let yaml = chaos_mesh(&s).unwrap();
    assert!(yaml.contains("# Not rendered: fault[4] pause n3"), "{yaml}");
    assert!(yaml.contains("\"kind\": \"Workflow\""), "{yaml}");
    let manifests = kubernetes(&s, "dyno:1", Some(ReferenceGenesis(GENESIS))).unwrap();
    assert!(manifests.contains("`dyno cluster export --chaos-mesh`"));
    assert!(
        !manifests.contains("\"kind\": \"Workflow\""),
        "the manifests stay apart"
    );
}

#[test]
fn byzantine_faults_are_named_as_not_expressible_in_chaos_mesh() {
    let text = format!(
        "{}\n[[fault]]\nkind = \"equivocate\"\nnode = \"n0\"\nat_slot = 10\nslots = 4\n",
        crate::EXAMPLE
    );
    let s = ClusterSpec::parse(Path::new("c.toml"), &text).unwrap();
    let (wf, left_out) = chaos_mesh::workflow(&s);
    assert!(wf.is_none(), "a byzantine fault was rendered");
    assert_eq!(left_out.len(), 1);
    assert!(
        left_out[0].starts_with("fault[0] equivocate n0"),
        "{left_out:?}"
    );
    assert!(
        left_out[0].contains("not expressible in Chaos Mesh"),
        "{left_out:?}"
    );
}
