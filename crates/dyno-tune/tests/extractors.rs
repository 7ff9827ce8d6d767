//! Every metric extractor on recorded outputs (fixtures/), at full precision.

use dyno_model::{Direction, Unit};
use dyno_tune::extract::DirectionSpec;
use dyno_tune::Extract;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn dyno_json_keeps_full_precision_and_filters() {
    let out = fixture("dyno-machine.json");
    let e = Extract::DynoJson {
        metrics: Some(vec!["Blake2256".into(), "Ed25519Verify".into()]),
    };
    let r = e.read(&out, 3.0).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].metric.name, "Blake2256");
    assert_eq!(r[0].value, 1189084567.1234567);
    assert_eq!(r[0].metric.unit, Unit::BytesPerSecond);
    assert_eq!(r[1].metric.unit, Unit::PerSecond);
    assert_eq!(r[1].metric.direction, Direction::HigherIsBetter);
    let all = Extract::DynoJson { metrics: None }.read(&out, 0.0).unwrap();
    assert_eq!(all.len(), 3);
    let missing = Extract::DynoJson {
        metrics: Some(vec!["MemCopy".into()]),
    };
    assert!(missing.read(&out, 0.0).unwrap_err().0.contains("MemCopy"));
    assert!(e.read("", 0.0).is_err());
}

#[test]
fn substrate_table_rows_in_upstream_layout() {
    let out = fixture("substrate-machine.txt");
    let r = Extract::SubstrateTable { metrics: None }
        .read(&out, 0.0)
        .unwrap();
    let names: Vec<&str> = r.iter().map(|x| x.metric.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "BLAKE2-256",
            "SR25519-Verify",
            "Copy",
            "Seq Write",
            "Rnd Write"
        ]
    );
    assert_eq!(r[0].value, 1.02 * 1024.0 * 1024.0 * 1024.0);
    assert_eq!(r[1].value, 822.51 * 1024.0);
    assert_eq!(r[4].value, 431.84 * 1024.0 * 1024.0);
    assert!(r.iter().all(|x| x.metric.unit == Unit::BytesPerSecond
        && x.metric.direction == Direction::HigherIsBetter));
    let some = Extract::SubstrateTable {
        metrics: Some(vec!["SR25519-Verify".into()]),
    }
    .read(&out, 0.0)
    .unwrap();
    assert_eq!(some.len(), 1);
    assert!(Extract::SubstrateTable { metrics: None }
        .read("Error: no table\n", 0.0)
        .is_err());
}

#[test]
fn regex_on_extrinsic_output() {
    let out = fixture("extrinsic.txt");
    let e = Extract::Regex {
        pattern: r"Median: (?P<value>[0-9.]+)".into(),
        metric: "remark".into(),
        unit: "ns".into(),
        direction: DirectionSpec::Lower,
    };
    let r = e.read(&out, 0.0).unwrap();
    assert_eq!(r[0].value, 1519808.0);
    assert_eq!(r[0].metric.unit, Unit::Nanoseconds);
    assert_eq!(r[0].metric.direction, Direction::LowerIsBetter);
}

#[test]
fn json_pointer_on_dyno_json_and_wall_time() {
    let out = fixture("dyno-machine.json");
    let e = Extract::JsonPointer {
        pointer: "/results/1/score".into(),
        metric: "sr".into(),
        unit: "KiB/s".into(),
        direction: DirectionSpec::Higher,
    };
    assert_eq!(e.read(&out, 0.0).unwrap()[0].value, 931234.5 * 1024.0);
    let w = Extract::WallTime {
        metric: Some("t".into()),
    }
    .read("whatever", 2.5)
    .unwrap();
    assert_eq!((w[0].metric.name.as_str(), w[0].value), ("t", 2.5));
    assert_eq!(w[0].metric.unit, Unit::Seconds);
}
