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
