//! Exports: every format carries every column and every value back bit-exactly.

mod common;

use common::*;
use dyno_model::{RunStatus, Sample};
use dyno_store::{ExportFormat, Store, StoreError};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::RowAccessor;
use proptest::prelude::*;

const HEADER: [&str; 13] = [
    "run_id",
    "command",
    "started_at",
    "hostname",
    "cpu_model",
    "subject_kind",
    "subject",
    "metric",
    "unit",
    "direction",
    "repetition",
    "value",
    "labels",
];

/// A store with two runs; returns the run ids.
fn two_runs(store: &mut Store) -> (i64, i64) {
    let a = store
        .begin_run(
            &info("machine", "node, \"v1\"", "bench-01", 1_795_303_031.9),
            &metrics(),
        )
        .unwrap();
    store
        .add_samples(
            a,
            &[
                sample("Blake2256", 1, 2.5),
                sample("Blake2256", 0, 0.1 + 0.2),
                sample("Sr25519Verify", 0, 31_000.0),
            ],
        )
        .unwrap();
    store.finish_run(a, RunStatus::Complete).unwrap();
    let b = store
        .begin_run(&info("tune", "lto\nfat", "bench-02", 0.0), &metrics())
        .unwrap();
    store
        .add_labeled_samples(
            b,
            &[(
                sample("Blake2256", 0, -1e-310),
                serde_json::json!({ "variant": "a,b", "round": 1 }),
            )],
        )
        .unwrap();
    (a, b)
}

/// The rows `two_runs` must export, as CSV fields.
fn expected_rows(a: i64, b: i64) -> Vec<Vec<String>> {
    let cpu = |h: &str| format!("Test CPU, \"{h}\" edition");
    let row = |id: i64,
               cmd: &str,
               at: &str,
               h: &str,
               subj: &str,
               m: &str,
               unit: &str,
               rep: u32,
               v: &str,
               l: &str| {
        [
            &id.to_string(),
            cmd,
            at,
            h,
            &cpu(h),
            "build_variant",
            subj,
            m,
            unit,
            "higher_is_better",
            &rep.to_string(),
            v,
            l,
        ]
        .map(String::from)
        .to_vec()
    };
    vec![
        row(
            a,
            "machine",
            "2026-11-21T23:17:11Z",
            "bench-01",
            "node, \"v1\"",
            "Sr25519Verify",
            "/s",
            0,
            "31000",
            "",
        ),
        row(
            a,
            "machine",
            "2026-11-21T23:17:11Z",
            "bench-01",
            "node, \"v1\"",
            "Blake2256",
            "B/s",
            0,
            "0.30000000000000004",
            "",
        ),
        row(
            a,
            "machine",
            "2026-11-21T23:17:11Z",
            "bench-01",
            "node, \"v1\"",
            "Blake2256",
            "B/s",
            1,
            "2.5",
            "",
        ),
        row(
            b,
            "tune",
            "1970-01-01T00:00:00Z",
            "bench-02",
            "lto\nfat",
            "Blake2256",
            "B/s",
            0,
            "-1e-310",
            r#"{"round":1,"variant":"a,b"}"#,
        ),
    ]
}

fn export(store: &Store, runs: &[i64], format: ExportFormat) -> (u64, Vec<u8>) {
    let mut out = Vec::new();
    let n = store.export(runs, format, &mut out).unwrap();
    (n, out)
}

#[test]
fn csv_has_a_header_and_one_quoted_row_per_sample() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let (a, b) = two_runs(&mut store);
    let (n, out) = export(&store, &[], ExportFormat::Csv);
    assert_eq!(n, 4);
    let rows = parse_csv(std::str::from_utf8(&out).unwrap());
    assert_eq!(rows[0], HEADER);
    assert_eq!(rows[1..], expected_rows(a, b));
    // Asking for runs picks them, in the order asked, each once.
    let (n, out) = export(&store, &[b, a, b], ExportFormat::Csv);
    assert_eq!(n, 4);
    let rows = parse_csv(std::str::from_utf8(&out).unwrap());
    assert_eq!(rows[1][0], b.to_string());
    assert_eq!(rows[2][0], a.to_string());
}

#[test]
fn json_lines_carry_the_same_rows() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let (a, b) = two_runs(&mut store);
    let (n, out) = export(&store, &[], ExportFormat::JsonLines);
    assert_eq!(n, 4);
    let lines: Vec<serde_json::Value> = std::str::from_utf8(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (line, row) in lines.iter().zip(expected_rows(a, b)) {
        for (key, want) in HEADER.iter().zip(&row) {
            let got = match &line[key] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => String::new(),
                v => v.to_string(),
            };
            assert_eq!(&got, want, "column {key}");
        }
    }
    assert_eq!(lines[3]["labels"]["variant"], "a,b");
    assert_eq!(
        lines[1]["value"].as_f64().unwrap().to_bits(),
        (0.1f64 + 0.2).to_bits()
    );
}

#[test]
fn parquet_reads_back_with_typed_columns() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let (a, b) = two_runs(&mut store);
    let (n, out) = export(&store, &[], ExportFormat::Parquet);
    assert_eq!(n, 4);
    let rows = read_parquet(out);
    assert_eq!(rows, expected_rows(a, b));
}

/// Reads a Parquet export into CSV-like fields, checking the physical types on the way.
fn read_parquet(bytes: Vec<u8>) -> Vec<Vec<String>> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(file.path()).unwrap()).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr();
    let names: Vec<_> = schema
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(names, HEADER);
    let types: Vec<_> = schema
        .columns()
        .iter()
        .map(|c| c.physical_type().to_string())
        .collect();
    assert_eq!(types[0], "INT64");
    assert_eq!(types[10], "INT32");
    assert_eq!(types[11], "DOUBLE");
    assert!(types[1..10].iter().all(|t| t == "BYTE_ARRAY"));
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            let mut fields = vec![row.get_long(0).unwrap().to_string()];
            fields.extend((1..10).map(|i| row.get_string(i).unwrap().clone()));
            fields.push(row.get_int(10).unwrap().to_string());
            fields.push(format_like_csv(row.get_double(11).unwrap()));
            fields.push(row.get_string(12).cloned().unwrap_or_default());
            fields
        })
        .collect()
}

fn format_like_csv(v: f64) -> String {
    let a = v.abs();
    if v.is_finite() && a != 0.0 && !(1e-5..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[test]
fn an_unknown_run_fails_before_anything_is_written() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let (a, _) = two_runs(&mut store);
    for format in [
        ExportFormat::Csv,
        ExportFormat::JsonLines,
        ExportFormat::Parquet,
    ] {
        let mut out = Vec::new();
        let err = store.export(&[a, 999], format, &mut out).unwrap_err();
        assert!(matches!(err, StoreError::UnknownRun(999)), "{err:?}");
        assert!(out.is_empty());
    }
}

#[test]
fn exports_span_many_parquet_row_groups_and_flushes() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let id = store
        .begin_run(&info("machine", "a", "h", 1.0), &metrics())
        .unwrap();
    let n = 150_000u32;
    let samples: Vec<_> = (0..n)
        .map(|r| sample("Blake2256", r, r as f64 * 0.5))
        .collect();
    store.add_samples(id, &samples).unwrap();
    let (rows, out) = export(&store, &[id], ExportFormat::Parquet);
    assert_eq!(rows, u64::from(n));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &out).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(file.path()).unwrap()).unwrap();
    assert_eq!(reader.metadata().num_row_groups(), 3);
    for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
        let row = row.unwrap();
        assert_eq!(row.get_int(10).unwrap(), i as i32);
        assert_eq!(row.get_double(11).unwrap(), i as f64 * 0.5);
    }
    let (rows, csv) = export(&store, &[id], ExportFormat::Csv);
    assert_eq!(rows, u64::from(n));
    assert_eq!(csv.iter().filter(|&&b| b == b'\n').count(), n as usize + 1);
}

/// Any f64 bit pattern: normal, subnormal, huge, zeroes, infinities, NaN.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        (0u64..1 << 52).prop_map(f64::from_bits), // subnormals
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(-0.0),
        Just(f64::INFINITY),
    ]
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn values_survive_the_store_csv_and_parquet_bit_for_bit(values in prop::collection::vec(any_f64(), 1..40)) {
        let (_dir, path) = temp_store();
        let mut store = Store::open(&path).unwrap();
        let id = store.begin_run(&info("machine", "a", "h", 1.0), &metrics()).unwrap();
        let samples: Vec<Sample> = values.iter().enumerate().map(|(i, &v)| sample("Blake2256", i as u32, v)).collect();
        store.add_samples(id, &samples).unwrap();

        let stored = store.run(id).unwrap().samples;
        prop_assert_eq!(stored.len(), values.len());
        for (s, &v) in stored.iter().zip(&values) {
            prop_assert!(same(s.value, v), "store: {} != {}", s.value, v);
        }

        let (_, csv) = export(&store, &[id], ExportFormat::Csv);
        let rows = parse_csv(std::str::from_utf8(&csv).unwrap());
        for (row, &v) in rows[1..].iter().zip(&values) {
            let back: f64 = row[11].parse().unwrap();
            prop_assert!(same(back, v), "csv: {} != {}", row[11], v);
        }

        let (_, jsonl) = export(&store, &[id], ExportFormat::JsonLines);
        for (line, &v) in std::str::from_utf8(&jsonl).unwrap().lines().zip(&values) {
            // serde_json's default float parser is not correctly rounded (its
            // float_roundtrip feature is), so the number's text is parsed with Rust's.
            serde_json::from_str::<serde_json::Value>(line).unwrap();
            let text = line.split("\"value\":").nth(1).unwrap().split(",\"labels\"").next().unwrap();
            let back: f64 = text.trim_matches('"').parse().unwrap();
            prop_assert!(same(back, v), "jsonl: {} != {}", text, v);
        }

        let (_, parquet) = export(&store, &[id], ExportFormat::Parquet);
        let rows = read_parquet(parquet);
        for (row, &v) in rows.iter().zip(&values) {
            let back: f64 = row[11].parse().unwrap();
            prop_assert!(same(back, v), "parquet: {} != {}", row[11], v);
        }
    }
}
