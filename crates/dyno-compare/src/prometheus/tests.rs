//! The parser on text as real exporters write it. Each fixture reproduces the exposition
//! of one client library, its format taken from the library's own source and tests:
//! - `rust_prometheus_client.txt`: the `prometheus-client` crate's OpenMetrics text
//!   encoder (`src/encoding/text.rs` of prometheus/client_rust and the expected strings
//!   of its tests): a counter family `x` with samples `x_total`, histograms as `_sum`,
//!   `_count`, then buckets with exemplars, `# UNIT`, `# EOF`;
//! - `python_prometheus_client.txt`: `generate_latest` of prometheus/client_python
//!   (`prometheus_client/exposition.py`): counters declared as `x_total`, and every
//!   `_created` sample moved into a gauge family of its own at the end of the metric;
//! - `python_openmetrics.txt`: the same client's OpenMetrics encoder: family `x`,
//!   samples `x_total` and `x_created` in it;
//! - `go_client_golang.txt`: client_golang's text format (expfmt): a summary with
//!   `quantile` labels (`go_gc_duration_seconds`), a histogram whose buckets carry other
//!   labels before `le`, Go's float formatting (`2.1e-05`);
//! - `cometbft.txt`: CometBFT's `/metrics` (client_golang through go-kit, namespace
//!   `cometbft`, a `chain_id` label on everything): the consensus block-interval
//!   histogram, the state block-processing histogram with linear buckets, gauges such as
//!   height and mempool size, a `_total` counter;
//! - `cometbft_v0.38.17_recorded.txt`: recorded, not reproduced: `curl /metrics` of
//!   CometBFT v0.38.17 (built with `examples/compare-cometbft/install.sh`) running the
//!   kvstore app under `load.py` for 8 s on this machine.
use super::*;

const RUST: &str = include_str!("fixtures/rust_prometheus_client.txt");
const PYTHON: &str = include_str!("fixtures/python_prometheus_client.txt");
const PYTHON_OM: &str = include_str!("fixtures/python_openmetrics.txt");
const GO: &str = include_str!("fixtures/go_client_golang.txt");
const COMETBFT: &str = include_str!("fixtures/cometbft.txt");
const RECORDED: &str = include_str!("fixtures/cometbft_v0.38.17_recorded.txt");

#[test]
fn a_recorded_cometbft_scrape_reads_right() {
    let s = parse_text(RECORDED, &[]);
    let chain = "{chain_id=\"test-chain-oJwsaM\"}";
    // A gauge whose name ends in `_total` stays a gauge: the TYPE line decides.
    let total = find(&s, &format!("cometbft_consensus_total_txs{chain}"));
    assert_eq!((total.kind, total.value), (FamilyKind::Gauge, 732.0));
    let inf = find(
        &s,
        "cometbft_consensus_block_interval_seconds_bucket{chain_id=\"test-chain-oJwsaM\",le=\"+Inf\"}",
    );
    assert_eq!(
        (inf.kind, inf.role, inf.value),
        (FamilyKind::Histogram, Role::Bucket(f64::INFINITY), 10.0)
    );
    assert_eq!(inf.group, chain);
    let gc = find(&s, "go_gc_duration_seconds{quantile=\"0.25\"}");
    assert_eq!((gc.role, gc.value), (Role::Quantile(0.25), 5.1466e-5));
    let frees = find(&s, "go_memstats_frees_total");
    assert_eq!((frees.kind, frees.value), (FamilyKind::Counter, 120679.0));
    // Every sample line of the scrape is read: none is silently dropped.
    let lines = RECORDED
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count();
    assert_eq!(s.len(), lines);
}

fn find<'a>(s: &'a [PromSample], series: &str) -> &'a PromSample {
    s.iter()
        .find(|x| x.series == series)
        .unwrap_or_else(|| panic!("no {series} in {s:#?}"))
}

#[test]
fn openmetrics_counters_named_without_total_are_counters() {
    let s = parse_text(RUST, &[]);
    let get = find(&s, "requests_total{method=\"GET\",path=\"/a b{}\"}");
    assert_eq!(
        (get.family.as_str(), get.kind, get.role, get.value),
        ("requests", FamilyKind::Counter, Role::Value, 1027.0)
    );
    assert_eq!(find(&s, "in_flight").kind, FamilyKind::Gauge);
    // Exemplars after the value are not values.
    let b = find(&s, "processing_times_seconds_bucket{le=\"1.0\"}");
    assert_eq!((b.role, b.value), (Role::Bucket(1.0), 1.0));
    assert_eq!(b.group, "");
    let inf = find(&s, "processing_times_seconds_bucket{le=\"+Inf\"}");
    assert_eq!(inf.role, Role::Bucket(f64::INFINITY));
    assert_eq!(find(&s, "processing_times_seconds_sum").role, Role::Sum);
    assert_eq!(find(&s, "processing_times_seconds_count").value, 2.0);
    assert_eq!(s.len(), 9);
}

#[test]
fn created_samples_are_ignored_in_both_formats() {
    for text in [PYTHON, PYTHON_OM] {
        let s = parse_text(text, &[]);
        assert!(s.iter().all(|x| !x.series.contains("_created")), "{s:#?}");
        let txs = find(&s, "txs_total{kind=\"transfer\"}");
        assert_eq!((txs.kind, txs.value), (FamilyKind::Counter, 1500.0));
    }
    let s = parse_text(PYTHON, &[]);
    assert_eq!(
        find(&s, "python_gc_collections_total{generation=\"1\"}").kind,
        FamilyKind::Counter
    );
    assert_eq!(
        find(&s, "process_resident_memory_bytes").value,
        21_544_960.0
    );
    let count = find(&s, "request_processing_seconds_count");
    assert_eq!(
        (count.kind, count.role, count.family.as_str()),
        (
            FamilyKind::Summary,
            Role::Count,
            "request_processing_seconds"
        )
    );
    // A gauge family that merely ends in `_created` is kept.
    let s = parse_text("# TYPE accounts_created gauge\naccounts_created 7\n", &[]);
    assert_eq!(s[0].value, 7.0);
}

#[test]
fn go_summaries_and_labelled_histograms() {
    let s = parse_text(GO, &[]);
    let q = find(&s, "go_gc_duration_seconds{quantile=\"0.5\"}");
    assert_eq!(
        (q.kind, q.role, q.value),
        (FamilyKind::Summary, Role::Quantile(0.5), 4.5e-5)
    );
    assert_eq!(q.group, "");
    let b = find(
        &s,
        "http_request_duration_seconds_bucket{handler=\"/rpc\",le=\"0.2\"}",
    );
    assert_eq!((b.role, b.value), (Role::Bucket(0.2), 100392.0));
    assert_eq!(b.group, "{handler=\"/rpc\"}");
    assert_eq!(
        find(&s, "process_cpu_seconds_total").kind,
        FamilyKind::Counter
    );
    let kept = parse_text(
        GO,
        &["go_goroutines".into(), "process_cpu_seconds_total".into()],
    );
    assert_eq!(kept.len(), 2);
}

#[test]
fn label_values_may_hold_escapes_braces_and_spaces() {
    let s = parse_text(
        "# TYPE m gauge\nm{a=\"x \\\"q\\\" } y\",b=\"\\\\\"} 3 1700000000000\nm{} 4\nbroken{a=\"x} 5\n",
        &[],
    );
    assert_eq!(s.len(), 2, "{s:#?}");
    assert_eq!(s[0].value, 3.0);
    assert_eq!(s[0].series, "m{a=\"x \\\"q\\\" } y\",b=\"\\\\\"}");
    assert_eq!(s[1].series, "m");
}

#[test]
fn bucket_quantiles_interpolate_as_prometheus_does() {
    // 10 observations: 4 in (0, 1], 4 in (1, 2], 2 above 4.
    let b = [(1.0, 4.0), (2.0, 8.0), (4.0, 8.0), (f64::INFINITY, 10.0)];
    assert_eq!(bucket_quantile(0.2, &b), Some(0.5));
    assert_eq!(bucket_quantile(0.5, &b), Some(1.25));
    assert_eq!(bucket_quantile(0.8, &b), Some(2.0));
    // In the +Inf bucket: the largest finite bound.
    assert_eq!(bucket_quantile(0.9, &b), Some(4.0));
    assert_eq!(
        bucket_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 0.0)]),
        None
    );
    assert_eq!(bucket_quantile(0.5, &[]), None);
}

#[test]
fn a_window_of_cometbft_scrapes_becomes_rates_levels_and_distributions() {
    // Two scrapes 10 s apart: 5 more blocks, intervals between 1 and 2.5 s.
    let later = COMETBFT
        .replace("le=\"2.5\"} 40", "le=\"2.5\"} 45")
        .replace("le=\"5\"} 41", "le=\"5\"} 46")
        .replace("le=\"10\"} 41", "le=\"10\"} 46")
        .replace("le=\"+Inf\"} 41\ncometbft_consensus_block_interval_seconds_sum{chain_id=\"dyno-bench\"} 43.51\ncometbft_consensus_block_interval_seconds_count{chain_id=\"dyno-bench\"} 41",
                 "le=\"+Inf\"} 46\ncometbft_consensus_block_interval_seconds_sum{chain_id=\"dyno-bench\"} 53.51\ncometbft_consensus_block_interval_seconds_count{chain_id=\"dyno-bench\"} 46")
        .replace("} 91234", "} 101234")
        .replace("chain_id=\"dyno-bench\"} 42", "chain_id=\"dyno-bench\"} 47");
    let mut w = Scrapes::default();
    w.add(0.0, &parse_text(COMETBFT, &[]));
    w.add(10.0, &parse_text(&later, &[]));
    let series = w.into_series();
    let get = |name: &str| {
        series
            .iter()
            .find(|s| s.metric.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "no {name} in {:#?}",
                    series.iter().map(|s| &s.metric.name).collect::<Vec<_>>()
                )
            })
    };
    let key = "node:cometbft_consensus_block_interval_seconds{chain_id=\"dyno-bench\"}";
    let p50 = get(&format!("{key}:p50"));
    // The window's 5 observations all lie in (1, 2.5]: the median is interpolated there.
    assert_eq!(p50.points, vec![(10.0, 1.0 + 1.5 * 0.5)]);
    assert_eq!(p50.metric.unit, Unit::Seconds);
    assert_eq!(get(&format!("{key}:mean")).points, vec![(10.0, 2.0)]);
    let count =
        get("node:cometbft_consensus_block_interval_seconds_count{chain_id=\"dyno-bench\"}");
    assert_eq!(
        (count.kind, count.points.clone()),
        (SeriesKind::Counter, vec![(0.0, 41.0), (10.0, 46.0)])
    );
    let bytes = get("node:cometbft_p2p_message_receive_bytes_total{chain_id=\"dyno-bench\",message_type=\"consensus_Vote\"}");
    assert_eq!(bytes.kind, SeriesKind::Counter);
    let height = get("node:cometbft_consensus_height{chain_id=\"dyno-bench\"}");
    assert_eq!(
        (height.kind, height.points.clone()),
        (SeriesKind::Gauge, vec![(0.0, 42.0), (10.0, 47.0)])
    );
    // Block processing saw no new block in this window: no quantile, no mean.
    assert!(series.iter().all(|s| !s
        .metric
        .name
        .contains("block_processing_time{chain_id=\"dyno-bench\"}:")));
}

#[test]
fn summaries_give_their_quantiles_and_window_mean() {
    let later = GO
        .replace(
            "go_gc_duration_seconds_sum 0.0042",
            "go_gc_duration_seconds_sum 0.0052",
        )
        .replace(
            "go_gc_duration_seconds_count 60",
            "go_gc_duration_seconds_count 70",
        );
    let mut w = Scrapes::default();
    w.add(1.0, &parse_text(GO, &[]));
    w.add(2.0, &parse_text(&later, &[]));
    let series = w.into_series();
    let mean = series
        .iter()
        .find(|s| s.metric.name == "node:go_gc_duration_seconds:mean")
        .unwrap();
    assert!((mean.points[0].1 - 1e-4).abs() < 1e-12, "{mean:?}");
    let q = series
        .iter()
        .find(|s| s.metric.name == "node:go_gc_duration_seconds{quantile=\"0.99\"}");
    assert!(q.is_none());
    let q = series
        .iter()
        .find(|s| s.metric.name == "node:go_gc_duration_seconds{quantile=\"1\"}")
        .unwrap();
    assert_eq!(q.points, vec![(1.0, 0.000312), (2.0, 0.000312)]);
}

mod props {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsing_never_panics(s in "(#? ?[a-z_{}=\",.0-9 +\\\\]{0,40}\n){0,8}") {
            let _ = parse_text(&s, &[]);
        }

        /// Against the exact quantile of the observations: the interpolated value lies in
        /// the bucket that holds the exact one.
        #[test]
        fn bucket_quantile_lies_in_the_right_bucket(
            obs in proptest::collection::vec(0.0f64..100.0, 1..200),
            q in 0.01f64..0.99,
        ) {
            let bounds = [1.0, 5.0, 10.0, 25.0, 50.0, 100.0, f64::INFINITY];
            let buckets: Vec<(f64, f64)> = bounds
                .iter()
                .map(|&le| (le, obs.iter().filter(|&&o| o <= le).count() as f64))
                .collect();
            let mut sorted = obs.clone();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
            let exact = sorted[rank - 1];
            let v = bucket_quantile(q, &buckets).unwrap();
            let upper = bounds.iter().copied().find(|&b| exact <= b).unwrap();
            let lower = bounds.iter().copied().rfind(|&b| b < upper).unwrap_or(0.0);
            prop_assert!(v >= lower - 1e-9 && v <= upper + 1e-9, "{v} not in [{lower}, {upper}] (exact {exact})");
        }
    }
}
