//! Cost per unit of work: CPU seconds and memory per unit a node did, for any node.
//!
//! With a fixed offered rate, CPU % moves with the work, but "CPU seconds per transaction"
//! says it directly and stays comparable when the achieved rate differs between
//! releases. A workload names its unit of work (`work` in the comparison file):
//!
//! ```toml
//! [[workload]]
//! name = "kv-200"
//! rate = 200
//! measure_s = 20
//! work = "node:cometbft_consensus_total_txs"           # unit named after the metric
//! # work = { metric = "load:achieved_tps", unit = "tx" }  # or named explicitly
//! ```
//!
//! From it dyno derives, per execution:
//! - `cpu_s_per_<unit>`: the node's CPU seconds over the window (the process tree's
//!   utime + stime growth, see [`crate::values::window_mean`]) divided by the units
//!   done in it, i.e. mean cores used / work rate;
//! - `rss_per_<unit>`: the median RSS divided by the work rate (bytes per unit/s): at a
//!   fixed rate it moves with the memory, and when the achieved rate differs it says what
//!   each unit of throughput holds resident.
//!
//! The work rate is read from the metric's series as its kind says: a counter (or a
//! gauge that only counts up, such as a chain's height or total transactions) by its
//! growth over the window; a rate (unit `/s`, e.g. a load's `achieved_tps`) by its mean;
//! per-line counts of a load (e.g. `"confirmed": 48` once a second) by their sum over the
//! window. dyno's reference node needs no `work`: its `cpu_s_per_tx` and `bank_s_per_tx`
//! come from its JSON lines ([`reference_values`]).

use crate::values::{counter_rate, run_values, window_mean, RunValue, REFERENCE_METRIC};
use dyno_exec::{Series, SeriesKind};
use dyno_model::{Direction, Metric, Unit};
use serde::{Deserialize, Serialize};

/// A workload's unit of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkUnit {
    /// The metric that counts the work, as reports name it (`node:...`, `load:...`,
    /// `jsonl:...`).
    pub metric: String,
    /// The unit's name in derived metrics (`cpu_s_per_<unit>`).
    pub unit: String,
}

impl WorkUnit {
    /// `cpu_s_per_<unit>`.
    pub fn cpu_metric(&self) -> Metric {
        Metric::new(
            format!("cpu_s_per_{}", self.unit),
            Unit::Seconds,
            Direction::LowerIsBetter,
        )
    }

    /// `rss_per_<unit>`.
    pub fn rss_metric(&self) -> Metric {
        Metric::new(
            format!("rss_per_{}", self.unit),
            Unit::Bytes,
            Direction::LowerIsBetter,
        )
    }

    /// The units done per second in an execution whose window lasted `window_s`, or
    /// `None` when its series has no such metric or no usable points.
    pub fn rate(&self, series: &[Series], window_s: f64) -> Option<f64> {
        work_rate(self.series(series)?, window_s)
    }

    /// The series counting the work: the one named exactly, else the only series of that
    /// Prometheus family (`node:x_total` matches `node:x_total{chain_id="a"}` when no
    /// other label set of `x_total` is there: a family with several is ambiguous).
    pub fn series<'a>(&self, series: &'a [Series]) -> Option<&'a Series> {
        if let Some(s) = series.iter().find(|s| s.metric.name == self.metric) {
            return Some(s);
        }
        let family = format!("{}{{", self.metric);
        let mut matching = series.iter().filter(|s| s.metric.name.starts_with(&family));
        match (matching.next(), matching.next()) {
            (Some(one), None) => Some(one),
            _ => None,
        }
    }

    /// `cpu_s_per_<unit>` and `rss_per_<unit>` of one execution, when its series hold the
    /// node's CPU and a positive work rate.
    pub fn values(&self, series: &[Series], window_s: f64) -> Vec<RunValue> {
        let Some(rate) = self.rate(series, window_s).filter(|r| *r > 0.0) else {
            return Vec::new();
        };
        let find = |name: &str| series.iter().find(|s| s.metric.name == name);
        let mut out = Vec::new();
        if let Some(cpu) = find("cpu_percent").and_then(|s| window_mean(&s.points)) {
            out.push(RunValue {
                metric: self.cpu_metric(),
                value: cpu / 100.0 / rate,
            });
        }
        let rss: Option<Vec<f64>> =
            find("rss_bytes").map(|s| s.points.iter().map(|p| p.1).collect());
        if let Some(rss) = rss.as_deref().and_then(dyno_stats::median) {
            out.push(RunValue {
                metric: self.rss_metric(),
                value: rss / rate,
            });
        }
        out
    }
}

/// Every per-run value of one execution's series: the recorded metrics' values
/// ([`crate::values::run_values`]) and the costs per unit of work derived from them (the reference
/// node's, and `work`'s when the workload names one).
pub fn execution_values(series: &[Series], work: Option<&WorkUnit>) -> Vec<RunValue> {
    let per_unit = work
        .map(|w| w.values(series, window_s(series)))
        .unwrap_or_default();
    run_values(series)
        .into_iter()
        .filter(|v| v.metric.name != REFERENCE_METRIC)
        .chain(reference_values(series))
        .chain(per_unit)
        .collect()
}

/// The length of an execution's measured window in seconds: the end of its CPU series
/// (the sampler's last interval), else the latest point of any series.
pub fn window_s(series: &[Series]) -> f64 {
    let last = |s: &Series| s.points.last().map(|p| p.0);
    series
        .iter()
        .find(|s| s.metric.name == "cpu_percent")
        .and_then(last)
        .unwrap_or_else(|| series.iter().filter_map(last).fold(0.0, f64::max))
}

/// Units per second of a series counting work, read as its kind says (module docs).
fn work_rate(s: &Series, window_s: f64) -> Option<f64> {
    let values: Vec<f64> = s.points.iter().map(|p| p.1).collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let per_second = s.metric.unit == Unit::PerSecond;
    match s.kind {
        SeriesKind::Rate => window_mean(&s.points),
        SeriesKind::Counter | SeriesKind::Peak => counter_rate(&s.points),
        SeriesKind::Gauge if per_second => mean(&values),
        SeriesKind::Gauge => counter_rate(&s.points),
        SeriesKind::Observations if per_second => mean(&values),
        SeriesKind::Observations => {
            (window_s > 0.0 && !values.is_empty()).then(|| values.iter().sum::<f64>() / window_s)
        }
    }
}

/// The reference node's costs per transaction, when the series they need are there
/// (dyno's node writes `tps` and per-block `txs` and `stage_forged_s` to its JSON lines):
/// `cpu_s_per_tx` (the tree's CPU seconds over the window per transaction: mean cores
/// used / mean `tps`) and `bank_s_per_tx` (the bank stage's busy time per executed
/// transaction).
pub fn reference_values(series: &[Series]) -> Vec<RunValue> {
    let find = |name: &str| series.iter().find(|s| s.metric.name == name);
    let mean = |s: &Series| {
        (!s.points.is_empty())
            .then(|| s.points.iter().map(|p| p.1).sum::<f64>() / s.points.len() as f64)
    };
    let total = |s: &Series| s.points.iter().map(|p| p.1).sum::<f64>();
    let lower = Direction::LowerIsBetter;
    let mut out = Vec::new();
    let cpu = find("cpu_percent").and_then(|s| match s.kind {
        SeriesKind::Rate => window_mean(&s.points),
        // Stored before CPU was a window total: the per-second values' mean.
        _ => mean(s),
    });
    if let (Some(cpu), Some(tps)) = (cpu, find("jsonl:tps").and_then(mean)) {
        if tps > 0.0 {
            out.push(RunValue {
                metric: Metric::new("cpu_s_per_tx", Unit::Seconds, lower),
                value: cpu / 100.0 / tps,
            });
        }
    }
    if let (Some(busy), Some(txs)) = (find("jsonl:stage_forged_s"), find("jsonl:txs")) {
        let txs = total(txs);
        if txs > 0.0 {
            out.push(RunValue {
                metric: Metric::new("bank_s_per_tx", Unit::Seconds, lower),
                value: total(busy) / txs,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(metric: &str, unit: &str) -> WorkUnit {
        WorkUnit {
            metric: metric.into(),
            unit: unit.into(),
        }
    }

    fn series(name: &str, unit: Unit, kind: SeriesKind, points: &[(f64, f64)]) -> Series {
        Series {
            metric: Metric::new(name, unit, Direction::HigherIsBetter),
            kind,
            points: points.to_vec(),
        }
    }

    #[test]
    fn cost_per_unit_from_a_counter_a_rate_and_per_line_counts() {
        let cpu = series(
            "cpu_percent",
            Unit::Percent,
            SeriesKind::Rate,
            &[(1.0, 10.0), (2.0, 30.0), (4.0, 20.0)], // 0.8 CPU s over 4 s
        );
        let rss = series(
            "rss_bytes",
            Unit::Bytes,
            SeriesKind::Gauge,
            &[(1.0, 4e6), (2.0, 6e6), (4.0, 5e6)],
        );
        let counter = series(
            "node:chain_txs_total",
            Unit::Count,
            SeriesKind::Counter,
            &[(0.5, 1000.0), (2.5, 1200.0), (4.5, 1400.0)], // 100 tx/s
        );
        let w = unit("node:chain_txs_total", "chain_txs");
        let v = w.values(&[cpu.clone(), rss.clone(), counter], 4.0);
        assert_eq!(v.len(), 2);
        assert!((v[0].value - 0.2 / 100.0).abs() < 1e-15, "{}", v[0].value);
        assert_eq!(v[1].value, 5e6 / 100.0);
        // A rate: its mean; per-line counts: their sum over the window.
        let tps = series(
            "load:achieved_tps",
            Unit::PerSecond,
            SeriesKind::Observations,
            &[(1.0, 40.0), (2.0, 60.0)],
        );
        let w = unit("load:achieved_tps", "achieved_tps");
        assert_eq!(w.rate(&[tps], 4.0), Some(50.0));
        let confirmed = series(
            "load:confirmed",
            Unit::Count,
            SeriesKind::Observations,
            &[(1.0, 40.0), (2.0, 60.0)],
        );
        let w = unit("load:confirmed", "confirmed");
        assert_eq!(w.rate(std::slice::from_ref(&confirmed), 4.0), Some(25.0));
        // No work, or no such series: nothing derived.
        let idle = series(
            "load:confirmed",
            Unit::Count,
            SeriesKind::Observations,
            &[(1.0, 0.0)],
        );
        assert!(w.values(&[cpu.clone(), idle], 4.0).is_empty());
        assert!(w.values(&[cpu, rss], 4.0).is_empty());
    }

    #[test]
    fn a_family_name_finds_its_only_label_set() {
        let pts = [(0.0, 10.0), (10.0, 30.0)];
        let one = series(
            "node:txs{chain=\"a\"}",
            Unit::Count,
            SeriesKind::Gauge,
            &pts,
        );
        let w = unit("node:txs", "txs");
        assert_eq!(w.rate(std::slice::from_ref(&one), 10.0), Some(2.0));
        let two = series(
            "node:txs{chain=\"b\"}",
            Unit::Count,
            SeriesKind::Gauge,
            &pts,
        );
        assert!(w.series(&[one, two]).is_none(), "ambiguous");
    }

    #[test]
    fn a_height_gauge_counts_by_its_growth() {
        let h = series(
            "node:height",
            Unit::Count,
            SeriesKind::Gauge,
            &[(0.0, 10.0), (5.0, 20.0), (10.0, 30.0)],
        );
        let w = unit("node:height", "height");
        assert_eq!(w.rate(&[h], 10.0), Some(2.0));
    }
}
