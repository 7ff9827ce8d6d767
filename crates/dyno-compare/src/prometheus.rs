//! A node's own metrics, scraped from a Prometheus or OpenMetrics text endpoint.
//!
//! Both text formats are read the same way ([`parse_text`]): a family's kind comes from
//! its `# TYPE` line, and each sample line gets a [`Role`] in its family:
//! - counters: `x` (Prometheus text, where the family is usually named `x_total`) or
//!   `x_total` (OpenMetrics and the `prometheus-client` crates, where the family is `x`);
//!   `x_created` (a creation time, not a count) is ignored, including the separate
//!   `x_created` gauge family the Python client writes in Prometheus text;
//! - gauges and untyped samples: the value;
//! - histograms: `x_bucket{le=..}`, `x_sum`, `x_count`;
//! - summaries: `x{quantile=..}`, `x_sum`, `x_count`.
//!
//! Labels are kept as written. Exemplars (`# {..} v ts` after an OpenMetrics sample) and
//! timestamps are skipped; label values may hold spaces, braces and escaped quotes. The
//! lines are read by dyno-obs' reader, the one `dyno serve`'s live view reads with.
//!
//! Over the measured window ([`Scrapes`]), counters become per-second rates; gauges and
//! summary quantiles keep their values; a histogram's quantiles (p50, p90, p99) and mean
//! come from the observations made *during the window* (bucket counts at the last scrape
//! minus those at the first), with linear interpolation inside a bucket as Prometheus'
//! `histogram_quantile` does; a summary's window mean is Δsum / Δcount.

use crate::execution::{guess_direction, Series, SeriesKind};
use dyno_model::{Metric, Unit};
use dyno_obs::read::{self, parse_value};
use dyno_obs::write::render_labels;
use std::collections::{BTreeMap, HashMap};

pub use dyno_proc::http::Endpoint;

/// Kind of a metric family, from its `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyKind {
    /// Monotonic: reported as a rate per second.
    Counter,
    /// A level: reported as is (also untyped and unknown families).
    Gauge,
    /// Observations in cumulative buckets.
    Histogram,
    /// Observations summarised by the client as quantiles.
    Summary,
}

/// What a sample line is within its family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Role {
    /// A counter's count or a gauge's level.
    Value,
    /// A histogram bucket: observations at or below `le`.
    Bucket(f64),
    /// A summary's quantile.
    Quantile(f64),
    /// Sum of a histogram's or summary's observations.
    Sum,
    /// Number of a histogram's or summary's observations.
    Count,
}

/// One sample line of a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    /// Family name (as declared by `# TYPE`, else the sample name).
    pub family: String,
    /// Sample name with labels as written, e.g. `dyno_link_frags_total{link="a"}`.
    pub series: String,
    /// The labels, in the order written, without `le` (buckets) and `quantile`
    /// (summaries), rendered as `{k="v",...}` or empty: what groups a histogram's lines.
    pub group: String,
    /// Kind of the family.
    pub kind: FamilyKind,
    /// Its role in the family.
    pub role: Role,
    /// The value.
    pub value: f64,
}

/// Parses Prometheus or OpenMetrics text, keeping families in `keep` (all when empty; a
/// name in `keep` matches a family or a sample name). Lines that do not parse, and lines
/// over dyno-obs' line cap, are skipped.
pub fn parse_text(text: &str, keep: &[String]) -> Vec<PromSample> {
    let mut kinds: HashMap<String, FamilyKind> = HashMap::new();
    let mut lines = Vec::new();
    // Lines over the reader's cap are no real node's and are skipped unparsed.
    for line in text.lines().filter(|l| l.len() <= read::MAX_LINE_BYTES) {
        let line = line.trim();
        if let Some((name, kind)) = read::type_line(line) {
            let kind = match kind {
                "counter" => FamilyKind::Counter,
                "histogram" | "gaugehistogram" => FamilyKind::Histogram,
                "summary" => FamilyKind::Summary,
                _ => FamilyKind::Gauge,
            };
            kinds.insert(name.to_string(), kind);
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(parsed) = read::sample_line(line) {
            lines.push(parsed);
        }
    }
    let mut out = Vec::new();
    for read::Sample {
        name,
        labels,
        value,
    } in lines
    {
        let Some((family, kind, role)) = classify(&name, &labels, &kinds) else {
            continue;
        };
        if !keep.is_empty() && !keep.iter().any(|k| *k == family || *k == name) {
            continue;
        }
        let group: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .filter(|(k, _)| {
                !matches!(
                    (kind, role, *k),
                    (_, Role::Bucket(_), "le") | (_, Role::Quantile(_), "quantile")
                )
            })
            .collect();
        out.push(PromSample {
            series: format!("{name}{}", render_labels(&labels)),
            group: render_labels(&group),
            family,
            kind,
            role,
            value,
        });
    }
    out
}

/// The family, kind and role of sample `name`; `None` for lines to ignore (`_created`).
fn classify(
    name: &str,
    labels: &[(String, String)],
    kinds: &HashMap<String, FamilyKind>,
) -> Option<(String, FamilyKind, Role)> {
    let label = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let typed = |f: &str| kinds.get(f).copied();
    // A `_created` line is a creation time: ignored when it belongs to a counter,
    // histogram or summary `base`, whether inside that family (OpenMetrics) or as a gauge
    // family of its own (the Python client's Prometheus text).
    if let Some(base) = name.strip_suffix("_created") {
        let owner = [base.to_string(), format!("{base}_total")]
            .into_iter()
            .any(|f| typed(&f).is_some_and(|k| k != FamilyKind::Gauge));
        if owner {
            return None;
        }
    }
    if let Some(kind) = typed(name) {
        let role = match (kind, label("quantile")) {
            (FamilyKind::Summary, Some(q)) => Role::Quantile(parse_value(q)?),
            (FamilyKind::Histogram | FamilyKind::Summary, _) => return None,
            _ => Role::Value,
        };
        return Some((name.to_string(), kind, role));
    }
    for (suffix, kinds_with_it) in [
        ("_total", &[FamilyKind::Counter][..]),
        ("_bucket", &[FamilyKind::Histogram][..]),
        ("_sum", &[FamilyKind::Histogram, FamilyKind::Summary][..]),
        ("_count", &[FamilyKind::Histogram, FamilyKind::Summary][..]),
        ("_gsum", &[FamilyKind::Histogram][..]),
        ("_gcount", &[FamilyKind::Histogram][..]),
    ] {
        let Some(base) = name.strip_suffix(suffix) else {
            continue;
        };
        let Some(kind) = typed(base).filter(|k| kinds_with_it.contains(k)) else {
            continue;
        };
        let role = match suffix {
            "_total" => Role::Value,
            "_bucket" => Role::Bucket(parse_value(label("le")?)?),
            "_sum" | "_gsum" => Role::Sum,
            _ => Role::Count,
        };
        return Some((base.to_string(), kind, role));
    }
    Some((name.to_string(), FamilyKind::Gauge, Role::Value))
}

/// The unit of a family from its name's suffix (the naming convention of both formats).
fn unit_of(family: &str) -> Unit {
    if family.ends_with("_seconds") {
        Unit::Seconds
    } else if family.ends_with("_bytes") {
        Unit::Bytes
    } else {
        Unit::Count
    }
}

/// A histogram or summary group's counters at one scrape.
#[derive(Debug, Clone, Default)]
struct Distribution {
    buckets: Vec<(f64, f64)>,
    sum: Option<f64>,
    count: Option<f64>,
}

/// The scrapes of one measured window, turned into series at its end.
#[derive(Debug, Default)]
pub struct Scrapes {
    series: BTreeMap<String, Series>,
    /// Per `family{group}`: (kind, first scrape, last scrape with its time).
    distributions: BTreeMap<String, (FamilyKind, String, Distribution, (f64, Distribution))>,
}

impl Scrapes {
    /// Adds one scrape's samples, taken `t` seconds into the window.
    pub fn add(&mut self, t: f64, samples: &[PromSample]) {
        let mut now: BTreeMap<String, (FamilyKind, String, Distribution)> = BTreeMap::new();
        for s in samples {
            let value_series = match (s.kind, s.role) {
                (FamilyKind::Counter, Role::Value) => Some(SeriesKind::Counter),
                (FamilyKind::Gauge, Role::Value) | (_, Role::Quantile(_)) => {
                    Some(SeriesKind::Gauge)
                }
                _ => None,
            };
            if let Some(kind) = value_series {
                let name = format!("node:{}", s.series);
                let unit = match kind {
                    SeriesKind::Counter => Unit::Count,
                    _ => unit_of(&s.family),
                };
                let metric = Metric::new(name.clone(), unit, guess_direction(&s.family));
                self.series
                    .entry(name)
                    .or_insert_with(|| Series {
                        metric,
                        kind,
                        points: Vec::new(),
                    })
                    .points
                    .push((t, s.value));
            }
            if matches!(s.kind, FamilyKind::Histogram | FamilyKind::Summary) {
                let key = format!("{}{}", s.family, s.group);
                let d = &mut now
                    .entry(key)
                    .or_insert_with(|| (s.kind, s.family.clone(), Distribution::default()))
                    .2;
                match s.role {
                    Role::Bucket(le) => d.buckets.push((le, s.value)),
                    Role::Sum => d.sum = Some(s.value),
                    Role::Count => d.count = Some(s.value),
                    _ => {}
                }
            }
        }
        for (key, (kind, family, mut d)) in now {
            d.buckets
                .sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
            match self.distributions.get_mut(&key) {
                Some(entry) => entry.3 = (t, d),
                None => {
                    self.distributions
                        .insert(key, (kind, family, d.clone(), (t, d)));
                }
            }
        }
    }

    /// The window's series: counters and gauges point by point; per histogram group
    /// `:p50`, `:p90`, `:p99` and `:mean` of the window's observations, per summary group
    /// `:mean`, and the observations' count as a counter (`_count`), each at the last
    /// scrape. A group with no observation during the window yields no quantile or mean.
    pub fn into_series(self) -> Vec<Series> {
        let mut out: Vec<Series> = self.series.into_values().collect();
        for (key, (kind, family, first, (t, last))) in self.distributions {
            let unit = unit_of(&family);
            let direction = guess_direction(&family);
            let one = |suffix: &str, value: f64| Series {
                metric: Metric::new(format!("node:{key}:{suffix}"), unit, direction),
                kind: SeriesKind::Gauge,
                points: vec![(t, value)],
            };
            let observed = match (first.count, last.count) {
                (Some(a), Some(b)) if b >= a => b - a,
                _ => 0.0,
            };
            if let (Some(a), Some(b)) = (first.count, last.count) {
                let (name, labels) = key.split_at(family.len());
                out.push(Series {
                    metric: Metric::new(
                        format!("node:{name}_count{labels}"),
                        Unit::Count,
                        direction,
                    ),
                    kind: SeriesKind::Counter,
                    points: vec![(0.0, a), (t, b)],
                });
            }
            if observed <= 0.0 {
                continue;
            }
            if kind == FamilyKind::Histogram {
                let window = bucket_delta(&first.buckets, &last.buckets);
                for (q, suffix) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
                    if let Some(v) = bucket_quantile(q, &window) {
                        out.push(one(suffix, v));
                    }
                }
            }
            if let (Some(a), Some(b)) = (first.sum, last.sum) {
                out.push(one("mean", (b - a) / observed));
            }
        }
        out
    }
}

/// Bucket counts of the window: last minus first, per upper bound (a bucket the first
/// scrape did not have counts whole).
fn bucket_delta(first: &[(f64, f64)], last: &[(f64, f64)]) -> Vec<(f64, f64)> {
    last.iter()
        .map(|&(le, n)| {
            let before = first
                .iter()
                .find(|(l, _)| *l == le)
                .map_or(0.0, |(_, m)| *m);
            (le, (n - before).max(0.0))
        })
        .collect()
}

/// The `q` quantile of cumulative `buckets` (sorted by upper bound, the last `+Inf`),
/// interpolated linearly inside the bucket that holds it, as Prometheus'
/// `histogram_quantile` does: the first bucket's lower bound is 0 (or its upper bound
/// when that is negative), and a quantile in the `+Inf` bucket is the largest finite
/// bound. `None` without observations.
pub fn bucket_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total.is_nan() || total <= 0.0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let rank = q * total;
    let mut lower_bound = 0.0f64;
    let mut lower_count = 0.0;
    for (i, &(le, count)) in buckets.iter().enumerate() {
        if count >= rank && count > lower_count {
            if le.is_infinite() {
                return buckets[..i].last().map(|b| b.0).or(Some(lower_bound));
            }
            if i == 0 && le <= 0.0 {
                return Some(le);
            }
            let within = (rank - lower_count) / (count - lower_count);
            return Some(lower_bound + (le - lower_bound) * within);
        }
        lower_bound = le;
        lower_count = count;
    }
    None
}

#[cfg(test)]
mod tests;
