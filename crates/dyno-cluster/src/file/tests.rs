use super::*;

const EXAMPLE: &str = include_str!("../example.toml");

fn parse(text: &str) -> Result<ClusterSpec, ClusterError> {
    ClusterSpec::parse(Path::new("c.toml"), text)
}

/// The error's (line, key, message) for a file the example becomes after `edit`.
fn error_of(from: &str, to: &str) -> (usize, String, String) {
    assert!(EXAMPLE.contains(from), "{from:?} not in the example");
    match parse(&EXAMPLE.replacen(from, to, 1)) {
        Err(ClusterError::File(d)) => (
            d.line().expect("a located error"),
            d.key.clone().expect("a key"),
            d.message.clone(),
        ),
        other => panic!("expected a file error, got {other:?}"),
    }
}

fn line_of(needle: &str, text: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn the_example_parses_into_cardanos_shape_in_miniature() {
    let spec = parse(EXAMPLE).unwrap();
    assert_eq!(spec.nodes.len(), 9);
    assert_eq!(spec.regions.len(), 3);
    assert_eq!(spec.producers().collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(spec.nodes[4].region, 1);
    assert_eq!(spec.nodes[4].role, Role::Relay);
    assert_eq!(spec.regions[2].latency_ms, vec![145.0, 100.0, 1.0]);
    assert_eq!(spec.topology_kind, TopologyKind::DenseTorus);
    assert!(spec.topology.unreachable().is_empty());
    assert_eq!(spec.command, NodeCommand::Reference);
    assert_eq!(spec.ports(2), (31006, 31007, 31008));
    assert_eq!(spec.workload.targets, vec![0, 1, 2]);
    assert_eq!(spec.hop_processing_ms, 5.0);
}

#[test]
fn an_unknown_key_names_its_line_and_key() {
    let (line, key, message) = error_of("warmup_s = 30", "warmup_s = 30\nwarmpu = 3");
    assert_eq!(line, line_of("warmup_s", EXAMPLE) + 1);
    assert_eq!(key, "cluster.warmpu");
    assert!(message.contains("unknown field `warmpu`"), "{message}");
}

#[test]
fn a_negative_latency_names_the_matrix_entry() {
    let (line, key, message) = error_of("us-east-1 = 1, ap", "us-east-1 = -3, ap");
    assert_eq!(line, line_of("us-east-1 = 1, ap", EXAMPLE));
    assert_eq!(key, "region[1].latency_ms.us-east-1");
    assert!(message.contains("non-negative"), "{message}");
}

#[test]
fn a_missing_latency_names_the_pair() {
    let (line, key, message) = error_of(
        "{ eu-central-1 = 145, us-east-1 = 100, ap-southeast-2 = 1 }",
        "{ eu-central-1 = 145, ap-southeast-2 = 1 }",
    );
    assert_eq!(line, line_of("eu-central-1 = 145", EXAMPLE));
    assert_eq!(key, "region[2].latency_ms");
    assert!(message.contains("ap-southeast-2 -> us-east-1"), "{message}");
}

#[test]
fn a_latency_to_an_unknown_region_is_refused() {
    let (_, key, message) = error_of("us-east-1 = 1, ap", "us-east-2 = 1, ap");
    assert_eq!(key, "region[1].latency_ms.us-east-2");
    assert!(message.contains("no region is named"), "{message}");
}

#[test]
fn an_empty_region_is_refused() {
    let (line, key, message) = error_of("count = 9", "count = 2");
    assert_eq!(line, line_of("count = 9", EXAMPLE));
    assert_eq!(key, "nodes.count");
    assert!(message.contains("empty"), "{message}");
}

#[test]
fn a_disconnected_edge_list_is_refused() {
    let (line, key, message) = error_of(
        "kind = \"dense_torus\"",
        "kind = \"explicit\"\nedges = [[0, 1], [1, 2], [3, 4], [4, 5], [5, 6], [6, 7], [7, 8]]",
    );
    assert_eq!(line, line_of("[topology]", EXAMPLE));
    assert_eq!(key, "topology");
    assert!(
        message.contains("6 node(s) cannot reach n0 (n3, n4, n5, n6, n7, n8)"),
        "{message}"
    );
}

#[test]
fn bad_edges_are_refused() {
    let (_, key, message) = error_of(
        "kind = \"dense_torus\"",
        "kind = \"explicit\"\nedges = [[0, 1], [1, 9]]",
    );
    assert_eq!(key, "topology.edges");
    assert!(message.contains("[1, 9]"), "{message}");
    let (_, key, _) = error_of(
        "kind = \"dense_torus\"",
        "kind = \"ring\"\nedges = [[0, 1]]",
    );
    assert_eq!(key, "topology.edges");
    let (_, key, message) = error_of("kind = \"dense_torus\"", "kind = \"hypercube\"");
    assert_eq!(key, "topology.kind");
    assert!(message.contains("unknown variant"), "{message}");
}

#[test]
fn a_node_command_that_is_not_executable_is_refused() {
    let (line, key, message) = error_of(
        "ready_timeout_s = 60",
        "command = [\"./no-such-node\", \"--id\", \"{id}\"]\nready_timeout_s = 60",
    );
    assert_eq!(line, line_of("ready_timeout_s = 60", EXAMPLE));
    assert_eq!(key, "node.command");
    assert!(message.contains("not an executable file"), "{message}");
    let (_, _, message) = error_of(
        "ready_timeout_s = 60",
        "command = [\"sh\", \"--id\", \"{ident}\"]\nready_timeout_s = 60",
    );
    assert!(message.contains("unknown placeholder {ident}"), "{message}");
    let spec = parse(&EXAMPLE.replacen(
        "ready_timeout_s = 60",
        "command = [\"sh\", \"-c\", \"{id} {peers}\"]\nready_timeout_s = 60",
        1,
    ))
    .unwrap();
    assert!(matches!(spec.command, NodeCommand::Argv(ref a) if a[0] == "sh"));
}

#[test]
fn counts_and_stakes_must_agree() {
    let (_, key, message) = error_of("stake = [1, 1, 1]", "stake = [1, 1]");
    assert_eq!(key, "nodes.stake");
    assert!(message.contains("2 entries for 3 producers"), "{message}");
    let (_, key, _) = error_of("producers = 3 ", "producers = 10 ");
    assert_eq!(key, "nodes.producers");
    let (_, key, _) = error_of("base_port = 31000", "base_port = 65530");
    assert_eq!(key, "cluster.base_port");
    let (_, key, _) = error_of("targets = [0, 1, 2]", "targets = [0, 11]");
    assert_eq!(key, "workload.targets");
}

#[test]
fn threads_beyond_the_cores_warn() {
    let spec = parse(&EXAMPLE.replacen("# threads = 1", "threads = 4", 1)).unwrap();
    let warnings = spec.warnings(2);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("9 nodes x 4 threads = 36 busy threads on 2 cores"));
    assert!(spec.warnings(64).is_empty());
    // Undeclared (the example), nothing is predicted: the run measures what nodes used.
    let spec = parse(EXAMPLE).unwrap();
    assert_eq!(spec.threads_per_node, None);
    assert!(spec.warnings(1).is_empty());
}

#[test]
fn a_taken_port_is_named() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    // Node 0's metrics port is base + 2.
    let Some(base) = port.checked_sub(2) else {
        return;
    };
    let spec =
        parse(&EXAMPLE.replacen("base_port = 31000", &format!("base_port = {base}"), 1)).unwrap();
    match spec.check_ports() {
        Err(ClusterError::PortTaken {
            port: p,
            node: 0,
            role: "metrics",
            ..
        }) => assert_eq!(p, port),
        other => panic!("expected node 0's metrics port to be taken, got {other:?}"),
    }
}

#[test]
fn placeholders_are_found() {
    assert_eq!(placeholders("--peers={peers},{id}"), vec!["peers", "id"]);
    assert!(placeholders("plain").is_empty());
}

#[test]
fn a_workload_command_and_a_ready_url_are_checked() {
    let rate = EXAMPLE.lines().find(|l| l.starts_with("rate_tps")).unwrap();
    let (line, key, message) = error_of(
        rate,
        &format!("{rate}\ncommand = [\"./no-such-load\", \"{{target}}\"]"),
    );
    assert_eq!(
        (line, key.as_str()),
        (line_of(rate, EXAMPLE) + 1, "workload.command")
    );
    assert!(message.contains("not an executable file"), "{message}");
    let (_, _, message) = error_of(rate, &format!("{rate}\ncommand = [\"sh\", \"{{tps}}\"]"));
    assert!(message.contains("unknown placeholder {tps}"), "{message}");
    let spec = parse(&EXAMPLE.replacen(
        rate,
        &format!("{rate}\ncommand = [\"sh\", \"{{target}}\", \"{{rate}}\"]"),
        1,
    ))
    .unwrap();
    assert_eq!(spec.workload.command.as_ref().unwrap()[1], "{target}");
    let (_, key, message) = error_of(
        "ready_timeout_s = 60",
        "ready_timeout_s = 60\nready_url = \"tcp://{ingress}\"",
    );
    assert_eq!(key, "node.ready_url");
    assert!(message.contains("http://"), "{message}");
}

#[test]
fn extract_rules_are_refused_for_the_reference_node() {
    let text = format!("{EXAMPLE}\n[extract]\nadopted = 'h=(?P<height>\\d+)'\n");
    match parse(&text) {
        Err(ClusterError::File(d)) => {
            assert_eq!(
                (d.line(), d.key.as_deref()),
                (Some(text.lines().count()), Some("extract"))
            );
        }
        other => panic!("expected a file error, got {other:?}"),
    }
}

#[test]
fn forge_chooses_how_the_reference_node_forges_and_nothing_else() {
    // A cluster's reference node is lean unless the file asks for the tiles.
    let spec = parse(EXAMPLE).unwrap();
    assert_eq!(
        spec.forge.as_deref(),
        Some("sequential"),
        "the cluster's default"
    );
    let config: toml::Table = toml::from_str(&crate::launch::node_config(&spec, 0)).unwrap();
    assert_eq!(config["forge"].as_str(), Some("sequential"));
    assert!(
        config.get("verify_tiles").is_none(),
        "the node's own default"
    );
    // Not the node's own default (one per core): a cluster's node stays lean.
    assert_eq!(config["replay_threads"].as_integer(), Some(1));
    let tiles = EXAMPLE.replacen(
        "# forge = \"sequential\"",
        "forge = \"tiles\"\nverify_tiles = 4\nreplay_threads = 3",
        1,
    );
    let spec = parse(&tiles).unwrap();
    let config: toml::Table = toml::from_str(&crate::launch::node_config(&spec, 0)).unwrap();
    assert_eq!(config["forge"].as_str(), Some("tiles"));
    assert_eq!(config["verify_tiles"].as_integer(), Some(4));
    assert_eq!(config["replay_threads"].as_integer(), Some(3));
    let (_, key, message) = error_of("# forge = \"sequential\"", "replay_threads = 257");
    assert_eq!(key, "node.replay_threads");
    assert!(message.contains("must be 1 to 256"), "{message}");
    let (line, key, message) = error_of("# forge = \"sequential\"", "verify_tiles = 0");
    assert_eq!(line, line_of("# forge = \"sequential\"", EXAMPLE));
    assert_eq!(key, "node.verify_tiles");
    assert!(message.contains("must be 1 to 256"), "{message}");
    let seq = EXAMPLE.replacen("# forge = \"sequential\"", "forge = \"sequential\"", 1);

    let (line, key, message) = error_of("# forge = \"sequential\"", "forge = \"threads\"");
    assert_eq!(line, line_of("# forge = \"sequential\"", EXAMPLE));
    assert_eq!(key, "node.forge");
    assert!(message.contains("\"tiles\""), "{message}");

    let own = seq.replacen(
        "# command = [\"/usr/local/bin/mynode\"",
        "command = [\"sh\"]\n# [",
        1,
    );
    match parse(&own) {
        Err(ClusterError::File(d)) => {
            assert_eq!(d.key.as_deref(), Some("node.forge"));
            assert!(d.message.contains("reference node"), "{}", d.message);
        }
        other => panic!("expected node.forge refused with a command, got {other:?}"),
    }
}

#[test]
fn forge_at_reaches_every_reference_node_and_bad_values_are_refused() {
    assert_eq!(
        parse(EXAMPLE).unwrap().forge_at,
        None,
        "the node's own default"
    );
    let at = EXAMPLE.replacen(
        "# forge_at = \"slot_start\"",
        "forge_at = \"slot_start\"",
        1,
    );
    let spec = parse(&at).unwrap();
    assert_eq!(spec.forge_at.as_deref(), Some("slot_start"));
    let config: toml::Table = toml::from_str(&crate::launch::node_config(&spec, 0)).unwrap();
    assert_eq!(config["forge_at"].as_str(), Some("slot_start"));
    let (line, key, message) = error_of("# forge_at = \"slot_start\"", "forge_at = \"midslot\"");
    assert_eq!(line, line_of("# forge_at = \"slot_start\"", EXAMPLE));
    assert_eq!(key, "node.forge_at");
    assert!(
        message.contains("\"whole_slot\", \"slot_start\""),
        "{message}"
    );
}
