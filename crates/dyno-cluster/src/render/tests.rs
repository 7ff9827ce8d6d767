use super::*;
use crate::events::{Event, EventKind};
use crate::propagation::analyse;
use crate::resources::NodeResources;
use dyno_report::TableRenderer;
use std::path::Path;

const G: u64 = 1_000_000_000;

fn event(node: &str, ms: u64, what: EventKind) -> Event {
    Event {
        node: node.into(),
        ts_ns: G + ms * 1_000_000,
        what,
    }
}

/// Three blocks on three nodes of the example's first three ids; n0 adopts each block
/// first, then n1, then n2 (b3 never reaches n2).
fn analysis() -> Analysis {
    let mut events = Vec::new();
    for node in ["n0", "n1", "n2"] {
        events.push(event(
            node,
            0,
            EventKind::Started {
                genesis_time_ns: G,
                slot_ns: 1_000_000_000,
            },
        ));
    }
    for (slot, block, delays) in [
        (1u64, "b1", vec![10u64, 200, 400]),
        (2, "b2", vec![20, 300, 500]),
        (3, "b3", vec![30, 250]),
    ] {
        let at = slot * 1000;
        events.push(event(
            "n0",
            at + 2,
            EventKind::SlotStart {
                slot,
                scheduled_ns: G + at * 1_000_000,
            },
        ));
        events.push(event(
            "n0",
            at + 5,
            EventKind::Forged {
                slot,
                block: block.into(),
            },
        ));
        for (node, d) in ["n0", "n1", "n2"].iter().zip(delays) {
            events.push(event(
                node,
                at + d,
                EventKind::Adopted {
                    slot,
                    block: block.into(),
                },
            ));
        }
    }
    analyse(&events, 3)
}

#[test]
fn json_carries_schema_version_and_base_units() {
    let spec = ClusterSpec::parse(Path::new("c.toml"), crate::EXAMPLE).unwrap();
    let report = ClusterReport::new(&analysis(), Some(&spec));
    let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(v["schema"], "dyno.cluster.report/1");
    assert_eq!(v["cluster"], "mini-torus");
    assert_eq!(v["blocks"], 3);
    let m = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "adoption_0.50")
        .unwrap();
    // 50% of 3 nodes = 2 nodes: 0.200, 0.300, 0.250 s.
    assert_eq!(m["values_s"], serde_json::json!([0.2, 0.25, 0.3]));
    assert_eq!(m["summary"]["p50_s"], 0.25);
    let full = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "adoption_1.00")
        .unwrap();
    assert_eq!(full["missing"], 1);
    assert_eq!(v["per_block"][2]["adoption_s"][7], serde_json::Value::Null);
    assert_eq!(v["predicted"].as_array().unwrap().len(), 3);
    assert_eq!(v["predicted"][0]["producer"], "n0");
}

#[test]
fn headline_reads_as_the_issue_asks() {
    let report = ClusterReport::new(&analysis(), None);
    let lines = headline(&report);
    assert_eq!(
        lines[0],
        "adopted on 50% of nodes after 250 ms (p50 over 3 blocks)"
    );
    assert_eq!(
        lines[1],
        "adopted on 80% of nodes after 400 ms (p50 over 2 blocks; 1 of 3 blocks never got there)"
    );
    let t = tables(&report);
    // adoption, announced to adopted, forging, peer, slot; no cluster file: no
    // prediction table; no run: no cost table.
    assert_eq!(t.len(), 5);
    let with_cost = ClusterReport::new(&analysis(), None).with_resources(&[NodeResources {
        node: "n0".into(),
        cpu_percent: vec![90.0, 95.0, 10.0],
        rss_bytes: vec![2.0 * 1024.0 * 1024.0; 3],
        rss_anon_bytes: vec![1024.0 * 1024.0; 3],
    }]);
    let cost: String = tables(&with_cost)
        .iter()
        .map(|t| dyno_report::MarkdownTable.render(t))
        .collect();
    assert!(
        cost.contains("| n0 | 3 | 65.00% | 95.00% | 2.00 MiB | 1.00 MiB | 1 | 2 slots |"),
        "{cost}"
    );
    let text: String = t
        .iter()
        .map(|t| dyno_report::MarkdownTable.render(t))
        .collect();
    assert!(
        text.contains(
            "| adopted on 100% of nodes | 2 | 1 | 400 ms | 500 ms | 500 ms | 500 ms | 450 ms |"
        ),
        "{text}"
    );
    assert!(
        text.contains("| slot-start lateness | 3 | 0 | 2.0 ms |"),
        "{text}"
    );
}

#[test]
fn html_holds_cdf_topology_and_regions() {
    let spec = ClusterSpec::parse(Path::new("c.toml"), crate::EXAMPLE).unwrap();
    let report = ClusterReport::new(&analysis(), Some(&spec));
    let html = html_report(&report, Some(&spec));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Adoption time from slot start"));
    assert!(html.contains("ap-southeast-2 (3 nodes)"));
    assert!(html.contains("stroke-dasharray"));
    let svg = topology_svg(&spec);
    assert_eq!(
        svg.matches("<rect x=").count(),
        3,
        "one square per producer"
    );
    assert_eq!(svg.matches("<line ").count(), spec.topology.edges().len());
    assert_eq!(
        svg.matches("<circle cx").count(),
        6 + 3,
        "6 relays and 3 legend marks"
    );
}

#[test]
fn metrics_a_log_extractor_cannot_give_read_not_available() {
    let mut events = Vec::new();
    for (node, ms) in [("n0", 5u64), ("n1", 80), ("n2", 120)] {
        let what = |block: &str| EventKind::Adopted {
            slot: 7,
            block: block.into(),
        };
        events.push(event(node, ms, what("7")));
    }
    let unavailable = vec!["peer.fetch".to_string(), "slot_start_lateness".to_string()];
    let a = crate::propagation::analyse_extracted(&events, 3, &unavailable);
    let report = ClusterReport::new(&a, None);
    let text: String = tables(&report)
        .iter()
        .map(|t| dyno_report::MarkdownTable.render(t))
        .collect();
    assert!(
        text.contains("End-to-end adoption (from first sighting, per block)"),
        "{text}"
    );
    assert!(
        text.contains("| fetch duration | not available |"),
        "{text}"
    );
    assert!(
        text.contains("| slot-start lateness | not available |"),
        "{text}"
    );
    // n0 saw it first (5 ms) and stands as leader; n2 adopted it 115 ms later.
    assert!(
        text.contains("| adopted on 100% of nodes | 1 | 0 | 115 ms |"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["measured_from"], "first sighting");
    let fetch = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "peer.fetch")
        .unwrap();
    assert_eq!(fetch["available"], false);
    assert!(fetch["summary"].is_null());
}

#[test]
fn the_html_report_answers_first_and_says_each_fault_sentence_once() {
    use crate::fault_analysis::fixtures;
    let spec = ClusterSpec::parse(Path::new("c.toml"), crate::EXAMPLE).unwrap();
    let restart = fixtures::restart(0, &[("n1", Some(0.4))], Some(0.9), Some(0.5));
    let faults = fixtures::report(vec![restart]);
    let report = ClusterReport::new(&analysis(), Some(&spec)).with_faults(Some(faults.clone()));
    let html = html_report(&report, Some(&spec));
    for line in fault_lines(&faults) {
        let shown = dyno_report::escape_html(&line);
        assert_eq!(html.matches(&shown).count(), 1, "{line}:\n{html}");
    }
    // The terminal's headline still carries them (it has no section of its own).
    assert!(headline(&report)
        .iter()
        .any(|l| l.contains("n1 back at the tip")));
    let answer = html.find("<section id=\"answer\"").expect("an answer");
    assert!(answer < html.find("<h2>Faults</h2>").unwrap());
    assert!(html[answer..]
        .starts_with("<section id=\"answer\" class=\"answer\">\n<h2>Propagation</h2>"));
}
