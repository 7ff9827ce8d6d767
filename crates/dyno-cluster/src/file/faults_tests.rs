//! The `[[fault]]` checks: each bad schedule names its line and key.

use super::*;
use crate::faults::{Fault, FaultKind};
use crate::launch::control_file;

const EXAMPLE: &str = include_str!("../example.toml");

fn with_faults(faults: &str) -> String {
    format!("{EXAMPLE}\n{faults}")
}

fn error_of(faults: &str) -> (usize, String, String) {
    let text = with_faults(faults);
    match ClusterSpec::parse(Path::new("c.toml"), &text) {
        Err(ClusterError::File(d)) => (
            d.line().expect("a located error"),
            d.key.clone().expect("a key"),
            d.message.clone(),
        ),
        other => panic!("expected a file error, got {other:?}"),
    }
}

/// The line of `needle` in the faults appended (the example's comments may hold it too).
fn line_in(faults: &str, needle: &str) -> usize {
    let text = with_faults(faults);
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().rposition(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_schedule_of_every_kind_parses() {
    let text = with_faults(
        r#"
[[fault]]
kind = "restart"
node = "n3"
at_slot = 40
slots = 5

[[fault]]
kind = "partition"
region = "ap-southeast-2"
at_slot = 60
slots = 20

[[fault]]
kind = "link"
nodes = ["n0", "n1"]
to_region = "ap-southeast-2"
at_slot = 100
slots = 10
extra_latency_ms = 80
jitter_ms = 20
loss = 0.05

[[fault]]
kind = "pause"
node = "n4"
at_slot = 50

[[fault]]
kind = "resume"
node = "n4"
at_slot = 55

[[fault]]
kind = "clock_skew"
node = "n5"
at_slot = 120
slots = 10
skew_ms = -400

[[fault]]
kind = "kill"
node = "n8"
at_slot = 300
"#,
    );
    let spec = ClusterSpec::parse(Path::new("c.toml"), &text).unwrap();
    let f = &spec.faults;
    assert_eq!(f.len(), 7);
    assert_eq!(
        (f[0].kind.clone(), f[0].nodes.clone()),
        (FaultKind::Restart, vec![3])
    );
    assert_eq!(f[0].end_slot(), Some(45));
    // Region ap-southeast-2 holds nodes 2, 5, 8 (round robin over 3 regions).
    assert_eq!(f[1].nodes, vec![2, 5, 8]);
    assert_eq!(f[1].to, vec![0, 1, 3, 4, 6, 7]);
    assert_eq!(f[2].to, vec![2, 5, 8]);
    assert_eq!(f[3].end_slot(), None);
    assert_eq!(f[6].end_slot(), None);
    // While the partition holds, n2 cuts every peer outside its region and nothing else.
    let control = control_file(&spec, 2, &[&f[1]]);
    let parsed: toml::Table = toml::from_str(&control).unwrap();
    let links = parsed["links"].as_array().unwrap();
    for l in links {
        let peer = l["peer"].as_str().unwrap();
        assert!(!["n5", "n8"].contains(&peer), "{control}");
        assert_eq!(l["blocked"].as_bool(), Some(true));
    }
    let outside = spec
        .topology
        .peers(2)
        .filter(|p| spec.nodes[*p].region != 2)
        .count();
    assert_eq!(links.len(), outside);
    // A node untouched by any fault gets an empty control file (every link clear).
    let calm = control_file(&spec, 4, &[&f[2]]);
    assert!(!calm.contains("[[links]]"), "{calm}");
}

#[test]
fn a_slot_outside_the_run_names_at_slot() {
    // 30 s warm-up + 300 s window at 1000 ms: slots 0..330.
    let faults = "[[fault]]\nkind = \"restart\"\nnode = \"n1\"\nat_slot = 400\n";
    let (line, key, message) = error_of(faults);
    assert_eq!(line, line_in(faults, "at_slot = 400"));
    assert_eq!(key, "fault[0].at_slot");
    assert!(
        message.contains("outside the run: slots 0..330"),
        "{message}"
    );
    let faults = "[[fault]]\nkind = \"partition\"\nnode = \"n1\"\nat_slot = 320\nslots = 20\n";
    let (line, key, message) = error_of(faults);
    assert_eq!(
        (line, key.as_str()),
        (line_in(faults, "slots = 20"), "fault[0].slots")
    );
    assert!(message.contains("past the end of the run"), "{message}");
}

#[test]
fn an_unknown_node_or_region_is_named() {
    let faults = "[[fault]]\nkind = \"kill\"\nnode = \"n12\"\nat_slot = 40\n";
    let (line, key, message) = error_of(faults);
    assert_eq!(line, line_in(faults, "n12"));
    assert_eq!(key, "fault[0].node");
    assert!(
        message.contains("no node is named \"n12\" (nodes n0 .. n8)"),
        "{message}"
    );
    let faults = "[[fault]]\nkind = \"partition\"\nregion = \"mars\"\nat_slot = 40\nslots = 3\n";
    let (_, key, message) = error_of(faults);
    assert_eq!(key, "fault[0].region");
    assert!(
        message.contains("eu-central-1, us-east-1, ap-southeast-2"),
        "{message}"
    );
}

#[test]
fn a_network_fault_on_another_node_command_is_refused() {
    let text = EXAMPLE.replacen(
        "# command = [\"/usr/local/bin/mynode\"",
        "command = [\"/bin/sh\", \"-c\", \"sleep 1\"]\n# [",
        1,
    );
    let text = format!(
        "{text}\n[[fault]]\nkind = \"partition\"\nnode = \"n1\"\nat_slot = 40\nslots = 3\n"
    );
    match ClusterSpec::parse(Path::new("c.toml"), &text) {
        Err(ClusterError::File(d)) => {
            assert_eq!(d.key.as_deref(), Some("fault[0].kind"));
            assert!(
                d.message
                    .contains("only kill, restart, pause, resume and upgrade"),
                "{}",
                d.message
            );
        }
        other => panic!("{other:?}"),
    }
    // A process fault on the same node command is fine.
    let ok = text.replace("kind = \"partition\"", "kind = \"pause\"");
    assert_eq!(
        ClusterSpec::parse(Path::new("c.toml"), &ok)
            .unwrap()
            .faults
            .len(),
        1
    );
}

#[test]
fn keys_a_kind_does_not_take_and_missing_ones_are_named() {
    let (_, key, message) =
        error_of("[[fault]]\nkind = \"kill\"\nnode = \"n1\"\nat_slot = 40\nslots = 4\n");
    assert_eq!(key, "fault[0].slots");
    assert!(message.contains("use kind = \"restart\""), "{message}");
    let (_, key, _) =
        error_of("[[fault]]\nkind = \"pause\"\nnode = \"n1\"\nat_slot = 40\nloss = 0.5\n");
    assert_eq!(key, "fault[0].loss");
    let (_, key, _) = error_of("[[fault]]\nkind = \"upgrade\"\nnode = \"n1\"\nat_slot = 40\n");
    assert_eq!(key, "fault[0].command");
    let (_, key, message) = error_of("[[fault]]\nkind = \"partition\"\nat_slot = 40\nslots = 2\n");
    assert_eq!(key, "fault[0].node");
    assert!(
        message.contains("exactly one of node, nodes or region"),
        "{message}"
    );
    let (_, key, message) = error_of("[[fault]]\nkind = \"flood\"\nnode = \"n1\"\nat_slot = 40\n");
    assert_eq!(key, "fault[0].kind");
    assert!(message.contains("kill, restart"), "{message}");
    let (_, key, _) =
        error_of("[[fault]]\nkind = \"link\"\nnode = \"n1\"\nat_slot = 40\nslots = 2\nloss = 2\n");
    assert_eq!(key, "fault[0].loss");
    let (_, key, _) =
        error_of("[[fault]]\nkind = \"link\"\nnode = \"n1\"\nat_slot = 40\nslots = 2\n");
    assert_eq!(key, "fault[0].kind");
}

#[test]
fn two_process_faults_on_one_node_at_once_are_refused() {
    let faults = "[[fault]]\nkind = \"pause\"\nnode = \"n1\"\nat_slot = 40\nslots = 10\n\n[[fault]]\nkind = \"restart\"\nnodes = [\"n2\", \"n1\"]\nat_slot = 45\n";
    let (line, key, message) = error_of(faults);
    assert_eq!(line, line_in(faults, "at_slot = 45"));
    assert_eq!(key, "fault[1].at_slot");
    assert!(
        message.contains("n1 is already struck by fault[0] (pause)"),
        "{message}"
    );
    let (_, key, message) = error_of("[[fault]]\nkind = \"resume\"\nnode = \"n1\"\nat_slot = 40\n");
    assert_eq!(key, "fault[0].kind");
    assert!(message.contains("no pause"), "{message}");
    let (_, key, _) = error_of("[[fault]]\nkind = \"kill\"\nnode = \"n1\"\nat_slot = 40\n\n[[fault]]\nkind = \"restart\"\nnode = \"n1\"\nat_slot = 60\n");
    assert_eq!(key, "fault[1].at_slot");
}

#[test]
fn byzantine_faults_parse_reach_the_struck_nodes_control_file_and_refuse_what_cannot_lie() {
    let faults = r#"
[[fault]]
kind = "invalid_block"
flavour = "poh"
node = "n1"
at_slot = 10
slots = 4

[[fault]]
kind = "garbage"
node = "n5"
at_slot = 10
slots = 4
"#;
    let spec = ClusterSpec::parse(Path::new("c.toml"), &with_faults(faults)).unwrap();
    assert_eq!(
        spec.faults[0].kind,
        FaultKind::InvalidBlock {
            flavour: "poh".into()
        }
    );
    assert!(spec.faults[0]
        .describe(&spec)
        .starts_with("invalid_block n1 (poh)"));
    let active: Vec<&Fault> = spec.faults.iter().collect();
    let n1 = control_file(&spec, 1, &active);
    assert!(
        n1.contains("[misbehave]\nkind = \"invalid_block\"\nflavour = \"poh\"\n"),
        "{n1}"
    );
    assert!(control_file(&spec, 5, &active).contains("kind = \"garbage\""));
    // An honest node's file has no switch, and no link a byzantine fault touched.
    let n0 = control_file(&spec, 0, &active);
    assert!(
        !n0.contains("misbehave") && !n0.contains("[[links]]"),
        "{n0}"
    );
    // A relay never leads: no block to withhold.
    let relay = "\n[[fault]]\nkind = \"withhold\"\nnode = \"n4\"\nat_slot = 10\nslots = 2\n";
    let (line, key, message) = error_of(relay);
    assert_eq!(
        (line, key.as_str()),
        (line_in(relay, "node = \"n4\""), "fault[0].node")
    );
    assert!(message.contains("n4 is a relay"), "{message}");
    // A flavour belongs to invalid_block alone.
    let stray = "\n[[fault]]\nkind = \"equivocate\"\nnode = \"n0\"\nat_slot = 10\nslots = 2\nflavour = \"poh\"\n";
    let (_, key, message) = error_of(stray);
    assert_eq!(key, "fault[0].flavour");
    assert!(
        message.contains("not a key of a equivocate fault"),
        "{message}"
    );
    // Byzantine faults last some slots.
    let (_, key, _) = error_of("\n[[fault]]\nkind = \"garbage\"\nnode = \"n0\"\nat_slot = 10\n");
    assert_eq!(key, "fault[0].slots");
}
