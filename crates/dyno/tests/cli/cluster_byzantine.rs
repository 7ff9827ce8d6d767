//! `dyno cluster run` with byzantine faults: one reference node of nine lies on purpose
//! (two blocks for a slot, invalid blocks of each flavour, blocks it never serves, a flood
//! of garbage frames) while the other eight stay honest. The report must say, per fault,
//! that honest nodes refused the lie with the reason they logged (or recorded the
//! equivocation), that none adopted a lie, and that the chain converged; bad schedules
//! exit 2 naming file, line and key. Assertions are about structure, not speed.

use crate::harness::{dyno, events, heavy};
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const REGIONS3: &str = r#"
[[region]]
name = "eu"
latency_ms = { eu = 1, us = 20, ap = 40 }

[[region]]
name = "us"
latency_ms = { eu = 20, us = 1, ap = 30 }

[[region]]
name = "ap"
latency_ms = { eu = 40, us = 30, ap = 1 }
"#;

/// Nine nodes, three producers; n0 holds 20 of 22 stake so it leads nearly every slot of
/// each fault (four slots each: all four led by another with odds of about 1 in 15,000).
fn cluster(dir: &Path, name: &str, base_port: u16, duration_s: u64, faults: &str) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            r#"[cluster]
name = "{name}"
slot_ms = 500
duration_s = {duration_s}
warmup_s = 2
base_port = {base_port}

[node]
forge = "sequential"

[nodes]
count = 9
producers = 3
stake = [20, 1, 1]
{REGIONS3}
[links]
bandwidth_mbit = 100

[topology]
kind = "dense_torus"

[workload]
rate_tps = 5
{faults}"#
        ),
    )
    .unwrap();
    file
}

fn fault(kind: &str, node: &str, at: u64, slots: u64, extra: &str) -> String {
    format!("\n[[fault]]\nkind = \"{kind}\"\nnode = \"{node}\"\nat_slot = {at}\nslots = {slots}\n{extra}")
}

#[test]
fn nine_nodes_with_one_byzantine_of_each_kind_refuse_record_and_converge() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let faults = [
        fault("equivocate", "n0", 6, 4, ""),
        fault("invalid_block", "n0", 12, 4, "flavour = \"state_hash\"\n"),
        fault(
            "invalid_block",
            "n0",
            18,
            4,
            "flavour = \"bad_signature\"\n",
        ),
        fault("invalid_block", "n0", 24, 4, "flavour = \"poh\"\n"),
        // Longer than an honest node's five fetch tries a second apart, so they give up.
        fault("withhold", "n0", 30, 12, ""),
        fault("garbage", "n0", 44, 4, ""),
    ]
    .concat();
    // Slots 0..56: 8 slots after the last fault for the links and chains to settle.
    let file = cluster(dir.path(), "byz", 25100, 26, &faults);
    let run_dir = dir.path().join("run");
    let html = dir.path().join("byz.html");
    let out = dyno()
        .args(["cluster", "run", "--no-save", "--format", "json", "--dir"])
        .arg(&run_dir)
        .arg("--html")
        .arg(&html)
        .arg(&file)
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let faults = v["faults"]["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 6, "{v}");
    let byz = |i: usize| &faults[i]["byzantine"];
    for (i, f) in faults.iter().enumerate() {
        let b = byz(i);
        assert!(
            b["lies"].as_u64().unwrap() >= 1,
            "fault {i} told no lie: {f}"
        );
        assert_eq!(b["honest_nodes"], 8, "{f}");
        assert!(
            b["nodes_refusing"].as_u64().unwrap() >= 1,
            "fault {i}: no honest node did what it should: {f}"
        );
        assert_eq!(b["nodes_adopting_lies"], 0, "fault {i}: {f}");
    }
    // Each kind is refused with the reason its lie calls for.
    assert_eq!(byz(0)["expected"], "equivocation");
    assert_eq!(byz(1)["expected"], "rejected:state_mismatch");
    assert_eq!(byz(2)["expected"], "rejected:bad_leader_signature");
    assert_eq!(byz(3)["expected"], "rejected:bad_poh");
    assert_eq!(byz(4)["expected"], "fetch_abandoned");
    for (i, reason) in [
        (1, "rejected:state_mismatch"),
        (2, "rejected:bad_leader_signature"),
        (3, "rejected:bad_poh"),
        (4, "fetch_abandoned"),
    ] {
        assert!(
            byz(i)["reactions"][reason].as_u64().unwrap() >= 1,
            "{}",
            faults[i]
        );
    }
    assert!(
        byz(5)["reactions"]["peer_cut"].as_u64().unwrap_or(0)
            + byz(5)["reactions"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| k.starts_with("refused:"))
                .map(|(_, n)| n.as_u64().unwrap())
                .sum::<u64>()
            >= 1,
        "{}",
        faults[5]
    );
    // The evidence is both signed headers, on the honest node that recorded it.
    let recorded: Vec<Value> = (1..9)
        .flat_map(|n| events(&run_dir.join(format!("n{n}.jsonl")), "equivocation"))
        .collect();
    assert!(!recorded.is_empty());
    let e = &recorded[0];
    assert_eq!(e["leader"], "n0");
    assert_eq!(e["evidence"]["headers"].as_array().unwrap().len(), 2);
    assert_ne!(e["blocks"][0], e["blocks"][1]);
    // The liar said what it did, and the chain came back together after the last lie.
    assert!(!events(&run_dir.join("n0.jsonl"), "misbehaved").is_empty());
    assert_eq!(
        v["faults"]["forks"]["resolved"], true,
        "{}",
        v["faults"]["forks"]
    );
    // The report's sentences say it in words.
    let page = std::fs::read_to_string(&html).unwrap();
    for sentence in [
        "n0 sent two different blocks for",
        "recorded the equivocation with both signed headers as evidence",
        "invalid block(s) (state_hash)",
        "honest nodes refused them as invalid (rejected:state_mismatch",
        "no honest node adopted one",
        "block(s) it never served",
        "gave up fetching them (fetch_abandoned",
        "flooded its peers with malformed and oversized frames",
    ] {
        assert!(page.contains(sentence), "the report lacks {sentence:?}");
    }
}

#[test]
fn byzantine_schedules_a_node_cannot_carry_out_exit_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, faults: &str, key: &str, says: &str, needle: &str| {
        let file = cluster(dir.path(), name, 24700, 6, faults);
        let text = std::fs::read_to_string(&file).unwrap();
        let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
        dyno()
            .args(["cluster", "check"])
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{name}.toml:{line}:")))
            .stderr(predicate::str::contains(format!("key `{key}`")))
            .stderr(predicate::str::contains(says));
    };
    // n5 is a relay: it never leads, so it has nothing to equivocate with.
    check(
        "relay",
        &fault("equivocate", "n5", 4, 2, ""),
        "fault[0].node",
        "n5 is a relay (nodes.producers does not reach it): it never leads a slot, so it has no block to equivocate with",
        "node = \"n5\"",
    );
    check(
        "flavourless",
        &fault("invalid_block", "n0", 4, 2, ""),
        "fault[0].flavour",
        "an invalid_block needs a flavour",
        "kind = \"invalid_block\"",
    );
    check(
        "flavour",
        &fault("invalid_block", "n0", 4, 2, "flavour = \"late\"\n"),
        "fault[0].flavour",
        "\"late\" is not one of bad_signature, state_hash, poh",
        "flavour = \"late\"",
    );
    check(
        "twice",
        &[
            fault("withhold", "n0", 4, 4, ""),
            fault("garbage", "n0", 6, 2, ""),
        ]
        .concat(),
        "fault[1].at_slot",
        "n0 already misbehaves by fault[0] (withhold) then",
        "at_slot = 6",
    );
    // A node other than the reference node has no misbehaviour switch.
    let other = format!(
        "{}\n{}",
        "[node]\ncommand = [\"/bin/sleep\", \"60\"]\n",
        fault("garbage", "n1", 4, 2, "")
    );
    let file = cluster(dir.path(), "other", 24700, 6, "");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("[node]\nforge = \"sequential\"\n", "")
        + &other;
    std::fs::write(&file, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("kind = \"garbage\""))
        .unwrap()
        + 1;
    dyno()
        .args(["cluster", "check"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("other.toml:{line}:")))
        .stderr(predicate::str::contains("key `fault[0].kind`"))
        .stderr(predicate::str::contains(
            "node.command runs another node, which has no such switch",
        ));
    assert!(!dir.path().join("cluster-runs").exists(), "nothing started");
}
