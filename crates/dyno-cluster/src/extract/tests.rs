//! The extract rules of examples/cluster-cometbft on recorded CometBFT output.
//!
//! Fixtures (src/fixtures/cometbft-<release>-n<i>.log): the lines about heights 3 and 4
//! from a 4-validator `cometbft testnet` on 127.0.0.1 run with
//! examples/cluster-cometbft/run-node.sh (releases v0.38.17 and v1.0.1 built by
//! examples/compare-cometbft/install.sh), plain log format, info level. The messages
//! come from CometBFT's consensus/state.go ("received proposal", "received complete
//! proposal block", "finalizing commit of block") and state/execution.go ("finalized
//! block", "committed state"); v1.0 capitalises them.

use super::*;
use crate::propagation::{analyse_extracted, FRACTIONS};
use crate::ClusterSpec;
use std::path::Path;

const V038: [&str; 4] = [
    include_str!("../fixtures/cometbft-v0.38.17-n0.log"),
    include_str!("../fixtures/cometbft-v0.38.17-n1.log"),
    include_str!("../fixtures/cometbft-v0.38.17-n2.log"),
    include_str!("../fixtures/cometbft-v0.38.17-n3.log"),
];
const V100: [&str; 4] = [
    include_str!("../fixtures/cometbft-v1.0.1-n0.log"),
    include_str!("../fixtures/cometbft-v1.0.1-n1.log"),
    include_str!("../fixtures/cometbft-v1.0.1-n2.log"),
    include_str!("../fixtures/cometbft-v1.0.1-n3.log"),
];

/// The rules as the example cluster files give them.
fn cometbft() -> Extractors {
    let example = include_str!("../../../../examples/cluster-cometbft/v0.38.toml");
    let table: toml::Table = toml::from_str(example).unwrap();
    let x = table["extract"].as_table().unwrap();
    let rules: Vec<(RuleEvent, &str)> = RuleEvent::ALL
        .iter()
        .filter_map(|e| x.get(e.key()).map(|r| (*e, r.as_str().unwrap())))
        .collect();
    Extractors::new(&rules, x["time_format"].as_str()).unwrap()
}

fn ns(text: &str) -> u64 {
    TimeFormat::parse("%Y-%m-%d|%H:%M:%S%.f")
        .unwrap()
        .unix_ns(text)
        .unwrap()
}

fn events(logs: [&str; 4]) -> Vec<Event> {
    let rules = cometbft();
    let mut out = Vec::new();
    for (i, log) in logs.iter().enumerate() {
        out.extend(
            rules
                .parse_log(Path::new("n.log"), &format!("n{i}"), log)
                .unwrap(),
        );
    }
    out
}

#[test]
fn time_formats_read_utc_and_fractions() {
    // 2026-11-24 04:19:59.703 UTC, by `date -u -d '2026-11-24 04:19:59' +%s`: 1795493999.
    assert_eq!(ns("2026-11-24|04:19:59.703"), 1_795_493_999_703_000_000);
    assert_eq!(ns("1970-01-01|00:00:00.000000001"), 1);
    let f = TimeFormat::parse("%s%.f").unwrap();
    assert_eq!(f.unix_ns("12.5"), Some(12_500_000_000));
    assert_eq!(f.unix_ns("12.5x"), None);
    assert!(TimeFormat::parse("%Y-%m-%d %H:%M").is_err());
    let e = TimeFormat::parse("%Y %q").unwrap_err();
    assert!(e.to_string().contains("unknown directive %q"), "{e}");
}

#[test]
fn v0_38_lines_become_received_fetched_adopted() {
    let rules = cometbft();
    let line = |l: &str| rules.line("n1", l, None).unwrap();
    let got: Vec<Event> = V038[1].lines().filter_map(line).collect();
    let kinds: Vec<(&str, u64, u64)> = got
        .iter()
        .map(|e| match &e.what {
            EventKind::HeaderReceived { slot, .. } => ("received", *slot, e.ts_ns),
            EventKind::FetchCompleted { slot, .. } => ("fetched", *slot, e.ts_ns),
            EventKind::Adopted { slot, .. } => ("adopted", *slot, e.ts_ns),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds[..3],
        [
            ("received", 3, ns("2026-11-24|04:19:59.803")),
            ("fetched", 3, ns("2026-11-24|04:19:59.803")),
            ("adopted", 3, ns("2026-11-24|04:20:00.087")),
        ]
    );
    // "Timed out", "finalizing commit", "finalized block", "executed block" match no rule.
    assert_eq!(got.len(), 6, "{got:?}");
}

#[test]
fn recorded_v0_38_height_3_spreads_as_computed_by_hand() {
    let events = events(V038);
    let a = analyse_extracted(&events, 4, &cometbft().unavailable());
    assert_eq!(a.blocks.len(), 2);
    let b = &a.blocks[0];
    assert_eq!((b.block.as_str(), b.slot), ("3", 3));
    // n0 saw the proposal first (04:19:59.703): it proposed height 3.
    assert_eq!(b.leader, "n0");
    assert_eq!(b.slot_start_ns, ns("2026-11-24|04:19:59.703"));
    // Committed at .087 (n1), .088 (n0, n2), 04:20:00.112 (n3).
    let adopted: Vec<(&str, i64)> = b
        .adoption_s
        .iter()
        .map(|(n, s)| (n.as_str(), (s * 1e3).round() as i64))
        .collect();
    assert_eq!(
        adopted,
        [("n1", 384), ("n0", 385), ("n2", 385), ("n3", 409)]
    );
    let ms = |i: usize| b.fractions[i].map(|s| (s * 1e3).round() as i64);
    assert_eq!(FRACTIONS[0], 0.5);
    assert_eq!(ms(0), Some(385));
    assert_eq!(ms(7), Some(409));
    // n3 got the proposal 203 ms after n0 and the whole block at the same moment.
    let n3 = b.peers.iter().find(|p| p.node == "n3").unwrap();
    assert_eq!(n3.first_notice_s.map(|s| (s * 1e3).round()), Some(203.0));
    assert_eq!(
        n3.fetched_to_adopted_s.map(|s| (s * 1e3).round()),
        Some(206.0)
    );
}

#[test]
fn metrics_the_rules_cannot_give_are_not_available_rather_than_zero() {
    let a = analyse_extracted(&events(V100), 4, &cometbft().unavailable());
    assert_eq!(a.blocks.len(), 2);
    let d = a.distributions();
    let get = |k: &str| d.iter().find(|m| m.key == k).unwrap();
    for k in [
        "forging.loop_start",
        "peer.fetch",
        "slot_start_lateness",
        "forging.forged_to_self_adopted",
    ] {
        assert!(!get(k).available, "{k}");
        assert!(get(k).values_s.is_empty(), "{k}");
    }
    for k in [
        "adoption_1.00",
        "peer.first_notice",
        "peer.fetched_to_adopted",
    ] {
        assert!(get(k).available, "{k}");
        assert!(!get(k).values_s.is_empty(), "{k}");
    }
    // Every v1.0.1 block reached all four nodes.
    assert_eq!(get("adoption_1.00").values_s.len(), 2);
    assert_eq!(get("adoption_1.00").missing, 0);
}

fn spec_with(extract: &str) -> Result<ClusterSpec, crate::ClusterError> {
    let text = format!(
        "[cluster]\nname = \"x\"\nslot_ms = 1000\nduration_s = 5\nbase_port = 36300\n\
         [node]\ncommand = [\"/bin/sh\"]\n[nodes]\ncount = 2\nproducers = 2\n\
         [[region]]\nname = \"a\"\nlatency_ms = {{ a = 0 }}\n[links]\nbandwidth_mbit = 1\n\
         [topology]\nkind = \"line\"\n[extract]\n{extract}"
    );
    ClusterSpec::parse(Path::new("c.toml"), &text)
}

#[test]
fn bad_rules_name_file_line_and_key() {
    let ok = spec_with("adopted = 'height=(?P<height>\\d+)'\n").unwrap();
    assert!(ok.extract.is_some());
    let cases = [
        (
            "adopted = 'committed state'\n",
            "c.toml:19:",
            "`extract.adopted`",
            "(?P<height>",
        ),
        (
            "fetched = 'x (?P<height>\\d+)'\nadopted = 'y (?P<block>\\w+)'\n",
            "c.toml:19:",
            "`extract.fetched`",
            "every rule must name blocks the same way",
        ),
        (
            "received = '(?P<height>\\d+'\nadopted = 'h(?P<height>\\d)'\n",
            "c.toml:19:",
            "`extract.received`",
            "bad regex",
        ),
        (
            "time_format = \"%Y-%m-%d %Q\"\nadopted = '(?P<ts>\\S+) (?P<height>\\d+)'\n",
            "c.toml:19:",
            "`extract.time_format`",
            "unknown directive %Q",
        ),
        (
            "adopted = '(?P<ts>\\S+) (?P<height>\\d+)'\n",
            "c.toml:19:",
            "`extract.adopted`",
            "no time_format",
        ),
        (
            "received = 'x(?P<height>\\d+)'\n",
            "c.toml:19:",
            "`extract.adopted`",
            "is required",
        ),
    ];
    for (extract, place, key, what) in cases {
        let e = spec_with(extract).unwrap_err().to_string();
        assert!(
            e.starts_with(place) && e.contains(key) && e.contains(what),
            "{extract}: {e}"
        );
    }
}

#[test]
fn a_line_whose_time_does_not_fit_names_the_rule() {
    let rules = cometbft();
    let e = rules
        .parse_log(
            Path::new("n0.out"),
            "n0",
            "x\nI[2026-13-24|04:19:59.703] committed state module=state height=3\n",
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("n0.out:2: adopted: time \"2026-13-24|04:19:59.703\""),
        "{e}"
    );
}

#[test]
fn a_rule_without_ts_stamps_the_time_the_line_was_read() {
    let rules = Extractors::new(
        &[(
            RuleEvent::Adopted,
            r"committed state .*height=(?P<height>\d+)",
        )],
        None,
    )
    .unwrap();
    assert!(!rules.timed_in_line());
    let line = V038[2]
        .lines()
        .find(|l| l.contains("committed state"))
        .unwrap();
    let e = rules.line("n2", line, Some(42)).unwrap().unwrap();
    assert_eq!(e.ts_ns, 42);
    assert_eq!(
        e.what,
        EventKind::Adopted {
            slot: 3,
            block: "3".into()
        }
    );
    // Read back from a file, the moment is gone: the error says why.
    let err = rules.line("n2", line, None).unwrap_err().to_string();
    assert!(err.contains("only `dyno cluster run` knows"), "{err}");
}

/// Fuzzing found it (fuzz/ extract_rules, crash-cefe201c): a year past 2554 overflowed
/// the nanoseconds since 1970 and panicked; such a time is no time.
#[test]
fn fuzz_crash_cefe201c_a_time_past_2554_is_no_time_not_an_overflow() {
    let f = TimeFormat::parse("%Y-%m-%dT%H:%M:%S%.fZ").unwrap();
    assert_eq!(f.unix_ns("2826-01-02T03:04:05.123456Z"), None);
    assert_eq!(
        f.unix_ns("2554-07-21T23:34:33.5Z"),
        Some(18_446_744_073_500_000_000)
    );
    assert_eq!(f.unix_ns("2554-07-21T23:34:34.0Z"), None);
    let epoch = TimeFormat::parse("%s").unwrap();
    assert_eq!(epoch.unix_ns("99999999999999999"), None);
}
